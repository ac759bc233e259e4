//! Discord: `wire` (pure) interactions and signatures; `message` and
//! `gateway` (pure) what the Gateway hears and its session rules; `settings`
//! (pure) what `/api/status` says of its configuration; `webhook` the
//! interactions endpoint; `gateway_route` (pure) the Gateway object's routes; `buttons` an approval pressed; `messenger` the REST
//! calls; `gateway_stub` the way to the Gateway object;
//! `shards` (pure) the Gateway's shards, their IDENTIFY gate and handover.

pub mod gateway;
pub mod gateway_route;
pub mod message;
pub mod settings;
pub mod shards;
pub mod wire;

#[cfg(target_arch = "wasm32")]
pub mod buttons;
#[cfg(target_arch = "wasm32")]
pub mod gateway_stub;
#[cfg(target_arch = "wasm32")]
pub mod messenger;
#[cfg(target_arch = "wasm32")]
pub mod webhook;
