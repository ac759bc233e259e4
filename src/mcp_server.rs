//! edgebot as a remote MCP server (issue 36): other agents reach an agent's
//! tools at `/mcp` with a bearer token per client. `rules` (pure) the
//! protocol and scopes; `store` the clients, their counters and call log in
//! D1; `api` the operator's routes; `endpoint` the streamable HTTP transport;
//! `tools` what each tool does.

pub mod rules;

#[cfg(target_arch = "wasm32")]
pub mod api;
#[cfg(target_arch = "wasm32")]
pub mod endpoint;
#[cfg(target_arch = "wasm32")]
pub mod store;
#[cfg(target_arch = "wasm32")]
pub mod tools;
