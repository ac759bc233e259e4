//! Links between agents (issue 36): the operator says which agent may talk to
//! which (`links` in D1, `/api/links`), and a linked agent's channel gets the
//! tools `send_agent_message` and `conclude_link`. A link conversation is a
//! channel like any other, keyed `link:{self}:{peer}` (history, budgets, the
//! dashboard and exactly-once come with it); a message sent over a link is an
//! inbound of the peer's side, in the envelope format. `rules` is pure; `store`
//! (D1), `api` (the admin routes), `tools` (the model's tools) and `deliver`
//! (the hand-over to a channel object) are the Workers-facing edges.

pub mod arguments;
pub mod rules;

#[cfg(target_arch = "wasm32")]
pub mod api;
#[cfg(target_arch = "wasm32")]
pub mod deliver;
#[cfg(target_arch = "wasm32")]
pub mod store;
#[cfg(target_arch = "wasm32")]
pub mod tools;
