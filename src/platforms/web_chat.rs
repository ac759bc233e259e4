//! The web chat: `wire` (pure) the page's messages; `messenger` pushes
//! replies over the browser's WebSocket; `buttons` an approval pressed in the
//! page.

pub mod wire;

#[cfg(target_arch = "wasm32")]
pub mod buttons;
#[cfg(target_arch = "wasm32")]
pub mod messenger;
