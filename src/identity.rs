//! Identity documents (SOUL, IDENTITY, USER and a conversation's override):
//! `rules` (pure) names, limits and the prompt block; `store` the D1 rows and
//! their admin routes.

pub mod rules;

#[cfg(target_arch = "wasm32")]
pub mod store;
