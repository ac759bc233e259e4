//! edgebot: a serverless AI agent for Slack, Discord, Telegram and the web on Cloudflare Workers.
//!
//! The crate is a house of rooms: one folder per capability (people, identity,
//! schedules, tasks, memory, files, mcp, approvals, budget, …), each holding its
//! pure rules (`rules.rs` and other plain-data files, tested natively with
//! `cargo test`) and its Workers-facing parts (`store.rs` for D1, `api.rs` for
//! admin routes, `tools.rs` for model tools), the latter compiled only for
//! `wasm32`. A messenger is a folder under `platforms/`. `channel/` and
//! `process/` are pure; `runtime/` is the plumbing every room uses; `jobs`,
//! `cron` and `router` are the entry points' dispatchers. ARCHITECTURE.md has
//! the layer rule per file role and the checklists for adding a room.

pub mod agents;
pub mod api_error;
pub mod approvals;
pub mod awaits;
pub mod bindings;
pub mod budget;
pub mod channel;
pub mod config;
pub mod files;
pub mod identity;
pub mod inbound;
pub mod links;
pub mod llm;
pub mod log_line;
pub mod mcp;
pub mod mcp_server;
pub mod memory;
pub mod named;
pub mod ops;
pub mod people;
pub mod platforms;
pub mod process;
pub mod prompt;
pub mod redact;
pub mod reply;
pub mod routes;
pub mod sandbox;
pub mod schedules;
pub mod secret;
pub mod security;
pub mod sessions;
pub mod shards;
pub mod skills;
pub mod sorting;
pub mod status;
pub mod tasks;
pub mod time;
pub mod verb;
pub mod web_tools;
pub mod workspace;

#[cfg(target_arch = "wasm32")]
mod conversations;
#[cfg(target_arch = "wasm32")]
mod cron;
#[cfg(target_arch = "wasm32")]
mod jobs;
#[cfg(target_arch = "wasm32")]
mod router;
#[cfg(target_arch = "wasm32")]
mod runtime;

#[cfg(target_arch = "wasm32")]
#[path = "../durable_objects/mod.rs"]
mod durable_objects;

#[cfg(target_arch = "wasm32")]
mod entry;
