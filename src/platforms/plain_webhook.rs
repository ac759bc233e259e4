//! The plain webhook: any system without an adapter reaches the agent with
//! signed JSON. `wire` (pure) the signature, requests and callback bodies;
//! `settings` (pure) what `/api/status` says; `webhook` the inbound route;
//! `buttons` an approval pressed; `messenger` the callback POSTs.

pub mod settings;
pub mod wire;

#[cfg(target_arch = "wasm32")]
pub mod buttons;
#[cfg(target_arch = "wasm32")]
pub mod messenger;
#[cfg(target_arch = "wasm32")]
pub mod webhook;
