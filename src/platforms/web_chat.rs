//! The web chat: `messenger` pushes replies over the browser's WebSocket.

#[cfg(target_arch = "wasm32")]
pub mod messenger;
