//! `GET /api/status`: `rules` (pure) what it says; `setup` (pure) what a
//! deployment still lacks; `api` gathers it from the runtime.

pub mod rules;
pub mod setup;

#[cfg(target_arch = "wasm32")]
pub mod api;
