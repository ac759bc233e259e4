//! The web as workers read it: `guard` (pure) which addresses a fetch may
//! reach; `search` (pure) the search provider's wire format; `tools` the
//! `http_fetch` and `web_search` tools; `cdp` (pure) what `browse` says to a
//! browser and makes of its answers; `browse` the `browse` tool (Browser Rendering).

pub mod arguments;
pub mod cdp;
pub mod guard;
pub mod search;

#[cfg(target_arch = "wasm32")]
pub mod browse;
#[cfg(target_arch = "wasm32")]
pub mod tools;
