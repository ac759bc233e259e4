//! Telegram: `wire` (pure) its updates and API shapes; `messenger` the Bot
//! API calls.

pub mod wire;

#[cfg(target_arch = "wasm32")]
pub mod messenger;
