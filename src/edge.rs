//! The Workers-facing edges: routes, bindings and outbound HTTP. Each
//! piece gathers inputs from the runtime, calls the pure core and carries out
//! what it returns.

mod admin;
pub mod approvals;
mod buttons;
pub mod channel_stub;
mod chat_files;
pub mod config;
pub mod conversations;
pub mod cortex;
pub mod cron;
pub mod d1;
pub mod discord;
pub mod durable;
mod failure;
pub mod files;
pub mod gateway;
pub mod history;
pub mod http;
pub mod identity;
pub mod jobs;
pub mod log;
pub mod mcp;
mod mcp_admin;
pub mod memory;
pub mod messenger;
pub mod model;
pub mod outbound;
pub mod people;
pub mod router;
pub mod schedule_tool;
pub mod schedules;
mod sessions;
pub mod slack;
pub mod spend;

pub mod status;
pub mod tasks;
pub mod telegram;
pub mod usage;
pub mod web;
pub mod web_chat;
pub mod webhooks;
pub mod zones;
