//! The runtime plumbing every room uses: outbound HTTP with deadlines, D1 and
//! Durable Object storage (counted), the way to the channel object, loading
//! the configuration, logging and the one way a failure becomes an answer.

pub mod channel_stub;
pub mod config;
pub mod d1;
pub mod durable;
pub mod failure;
pub mod http;
pub mod incoming;
pub mod log;
pub mod queue;
pub mod settled;
