//! Remote MCP servers: `rules` (pure) the protocol; `client` the streamable
//! HTTP exchange; `servers` their settings and state in D1; `toolbox` the
//! tools a process is offered; `api` the admin routes.

pub mod rules;

#[cfg(target_arch = "wasm32")]
pub mod api;
#[cfg(target_arch = "wasm32")]
pub mod client;
#[cfg(target_arch = "wasm32")]
pub mod servers;
#[cfg(target_arch = "wasm32")]
pub mod toolbox;
