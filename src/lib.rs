//! edgebot: a serverless AI agent for Slack, Discord, Telegram and the web on Cloudflare Workers.
//!
//! The crate is split along one seam: a pure core (everything declared first
//! below) that knows nothing of the Workers runtime and is tested natively with
//! `cargo test`, and thin edges (compiled only for `wasm32`) that gather inputs
//! from the runtime, call the core and carry out what it returns.

pub mod api_error;
pub mod approval;
pub mod budget;
pub mod channel;
pub mod config;
pub mod download_link;
pub mod files;
pub mod identity;
pub mod inbound;
pub mod llm;
pub mod log_line;
pub mod mcp;
pub mod memory;
pub mod ops;
pub mod people;
pub mod platforms;
pub mod process;
pub mod prompt;
pub mod redact;
pub mod reply;
pub mod routes;
pub mod schedule;
pub mod secret;
pub mod security;
pub mod session;
pub mod setup;
pub mod sign_in_limit;
pub mod sorting;
pub mod status;
pub mod tasks;
pub mod time;

#[cfg(target_arch = "wasm32")]
mod edge;

#[cfg(target_arch = "wasm32")]
#[path = "../durable_objects/mod.rs"]
mod durable_objects;

#[cfg(target_arch = "wasm32")]
mod entry;
