//! Browser sessions and sign-in: `rules` (pure) signed cookie values;
//! `limit` (pure) limits on guessing tokens; `api` the sign-in routes.

pub mod limit;
pub mod rules;

#[cfg(target_arch = "wasm32")]
pub mod api;
