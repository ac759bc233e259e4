//! The Durable Object classes: the conversation's channel, the Discord Gateway
//! connection and the sign-in rate limiter.
//!
//! The folder sits at the top of the repository, beside `src/`, because the
//! design card fixes the top level; Cargo finds modules only under `src/`, so
//! `lib.rs` points at this file with the one `#[path]` in the crate, and every
//! module below it is an ordinary one.

pub mod channel_object;
pub mod gateway_gate;
pub mod gateway_object;
pub mod sign_in_object;
