//! Remote MCP servers: `rules` (pure) the protocol; `client` the HTTP
//! exchange and the tools a process is offered; `api` the admin routes.

pub mod rules;

#[cfg(target_arch = "wasm32")]
pub mod api;
#[cfg(target_arch = "wasm32")]
pub mod client;
