//! A link between two agents as a messenger: a reply in `link:{self}:{peer}`
//! becomes an inbound of the peer's side, `link:{peer}:{self}` (see
//! `crate::links`). `wire` (pure) is its limit; `messenger` counts each
//! message against the link's cap and hands it over.

pub mod wire;

#[cfg(target_arch = "wasm32")]
pub mod messenger;
