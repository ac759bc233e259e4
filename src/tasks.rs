//! The task board: `rules` (pure) the legal status changes; `arguments`
//! (pure) its tools' arguments; `store` the board in D1; `api` the admin routes.

pub mod arguments;
pub mod rules;

#[cfg(target_arch = "wasm32")]
pub mod api;
#[cfg(target_arch = "wasm32")]
pub mod store;
