//! Identity documents (SOUL, IDENTITY, USER and a conversation's override):
//! `rules` (pure) names, limits and the prompt block; `store` the read a turn
//! makes; `api` the admin routes.

pub mod rules;

#[cfg(target_arch = "wasm32")]
pub mod api;
#[cfg(target_arch = "wasm32")]
pub mod store;
