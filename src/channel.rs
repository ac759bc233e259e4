//! The channel: the user-facing process of one conversation. This module holds
//! its pure logic; the Durable Object in durable_objects/ carries it out.

pub mod actions;
pub mod checkpoint;
pub mod counts;
pub mod deliveries;
pub mod engagement;
pub mod held;
pub mod history_mirror;
pub mod loop_guard;
pub mod memo;
pub mod participants;
pub mod processes;
pub mod routes;
pub mod schema;
pub mod state;
pub mod sticky;
pub mod tool_set;
pub mod turn;
pub mod versioned;
