//! Remote MCP servers: `rules` (pure) the protocol; `client` the streamable
//! HTTP exchange; `servers` their settings and state in D1; `toolbox` the
//! tools a process is offered; `api` the admin routes; `stream` (pure) reading
//! and resuming a request's event stream; `form` (pure) and `elicit` a
//! server's question to the person who started the work.

pub mod form;
pub mod rules;
pub mod stream;

#[cfg(target_arch = "wasm32")]
pub mod api;
#[cfg(target_arch = "wasm32")]
pub mod client;
#[cfg(target_arch = "wasm32")]
pub mod elicit;
#[cfg(target_arch = "wasm32")]
pub mod servers;
#[cfg(target_arch = "wasm32")]
pub mod toolbox;
