//! Telegram: `wire` (pure) its updates and API shapes; `settings` (pure) what
//! `/api/status` says of its configuration; `webhook` the updates it posts;
//! `buttons` an approval pressed; `messenger` the Bot API calls.

pub mod settings;
pub mod wire;

#[cfg(target_arch = "wasm32")]
pub mod buttons;
#[cfg(target_arch = "wasm32")]
pub mod messenger;
#[cfg(target_arch = "wasm32")]
pub mod webhook;
