//! Slack: `wire` (pure) its events, signatures and Block Kit; `messenger` the
//! Web API calls.

pub mod wire;

#[cfg(target_arch = "wasm32")]
pub mod messenger;
