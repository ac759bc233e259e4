//! Slack: `wire` (pure) its events, signatures and Block Kit; `settings`
//! (pure) what `/api/status` says of its configuration; `webhook` the Events
//! API, slash commands and button presses; `buttons` an approval pressed;
//! `messenger` the Web API calls; `install` "Add to Slack" for many workspaces;
//! `heard` (pure) edits, deletions, reactions and modal submissions.

pub mod heard;
pub mod install;
pub mod settings;
pub mod wire;

#[cfg(target_arch = "wasm32")]
pub mod buttons;
#[cfg(target_arch = "wasm32")]
pub mod messenger;
#[cfg(target_arch = "wasm32")]
pub mod webhook;
