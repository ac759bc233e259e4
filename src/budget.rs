//! Budgets: `rules` (pure) what a call cost and whether a turn may run;
//! `prices` the model price table; `store` today's spend and limits in D1;
//! `usage` token usage rolled up per process and day; `api` the admin views
//! and limit overrides.

pub mod metered;
pub mod prices;
pub mod rules;

#[cfg(target_arch = "wasm32")]
pub mod api;
#[cfg(target_arch = "wasm32")]
pub mod store;
#[cfg(target_arch = "wasm32")]
pub mod tool_runs;
#[cfg(target_arch = "wasm32")]
pub mod usage;
