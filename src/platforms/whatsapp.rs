//! WhatsApp (the Cloud API): `wire` (pure) its webhook's handshake,
//! signatures and notifications and the Graph API bodies; `settings` (pure)
//! what `/api/status` says of its configuration; `webhook` the handshake and
//! notifications; `buttons` an approval pressed; `messenger` the Graph API calls.

pub mod settings;
pub mod wire;

#[cfg(target_arch = "wasm32")]
pub mod buttons;
#[cfg(target_arch = "wasm32")]
pub mod messenger;
#[cfg(target_arch = "wasm32")]
pub mod webhook;
