//! Microsoft Teams through the Bot Framework: `rules` (pure) the token check
//! and where the bot's token may go; `wire` (pure) activities in and out;
//! `settings` (pure) what `/api/status` says; `client` the signing keys and
//! the bot's own token, each cached in the isolate; `webhook` the messaging
//! endpoint; `buttons` an approval pressed; `messenger` the connector calls.

pub mod rules;
pub mod settings;
pub mod verifier;
pub mod wire;

#[cfg(target_arch = "wasm32")]
pub mod buttons;
#[cfg(target_arch = "wasm32")]
pub mod client;
#[cfg(target_arch = "wasm32")]
pub mod messenger;
#[cfg(target_arch = "wasm32")]
pub mod webhook;
