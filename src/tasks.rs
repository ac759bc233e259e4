//! The task board: `rules` (pure) the legal status changes; `store` the
//! board in D1.

pub mod arguments;
pub mod rules;

#[cfg(target_arch = "wasm32")]
pub mod api;
#[cfg(target_arch = "wasm32")]
pub mod store;
