//! The web as workers read it: `guard` (pure) which addresses a fetch may
//! reach; `search` (pure) the search provider's wire format; `tools` the
//! `http_fetch` and `web_search` tools.

pub mod arguments;
pub mod guard;
pub mod search;

#[cfg(target_arch = "wasm32")]
pub mod tools;
