//! Hands messages over links to the channel objects: a message to the peer's
//! side, the closing note to both sides, an outcome to the opener's
//! conversation. Each is an inbound of that conversation, with a delivery id
//! its inbox dedupes on.

use serde_json::json;
use worker::{Env, Result};

use crate::inbound::{Author, InboundEvent, ReplyAddress};
use crate::links::rules::{link_key, TURN_CAP};
use crate::links::store::Exchange;
use crate::platforms::webhooks::deliver;

/// An agent as the author of what it sends over a link.
fn agent_author(agent: &str) -> Author {
    Author { id: agent.to_string(), name: agent.to_string(), is_bot: false }
}

fn failed(error: crate::api_error::ApiError) -> worker::Error {
    worker::Error::RustError(format!("a link delivery failed: {error}"))
}

/// `from`'s message `text` to `to`: an inbound of `link:{to}:{from}`, which
/// `to`'s channel answers (a link conversation is one person and one agent,
/// so every message is addressed, as in a DM).
pub async fn hand_over(env: &Env, from: &str, to: &str, text: &str, delivery_id: &str, now_ms: i64) -> Result<()> {
    let mut event = InboundEvent::new(
        link_key(to, from),
        delivery_id.to_string(),
        delivery_id.to_string(),
        agent_author(from),
        text.to_string(),
        ReplyAddress::Link { agent: to.to_string(), peer: from.to_string() },
    );
    event.is_dm = true;
    event.timestamp_ms = now_ms;
    deliver(env, &event).await.map_err(failed)?;
    Ok(())
}

/// The closing note, to both sides of the exchange between `a` and `b`: kept
/// in each side's conversation (observed, never answered: nothing more runs).
pub async fn tell_closed(env: &Env, a: &str, b: &str, pair: &str, now_ms: i64) -> Result<()> {
    for (agent, peer) in [(a, b), (b, a)] {
        let text = crate::prompt::render("link_closed", json!({ "agent": agent, "peer": peer, "cap": TURN_CAP }))
            .map_err(|error| worker::Error::RustError(error.to_string()))?;
        let id = format!("link-closed:{pair}:{agent}");
        let mut event = InboundEvent::new(
            link_key(agent, peer),
            id.clone(),
            id,
            Author { id: "link".into(), name: "link".into(), is_bot: true },
            text,
            ReplyAddress::Link { agent: agent.to_string(), peer: peer.to_string() },
        );
        // Aimed elsewhere: the ladder observes it (a note in the history, no turn).
        event.mentions_others = true;
        event.timestamp_ms = now_ms;
        deliver(env, &event).await.map_err(failed)?;
    }
    Ok(())
}

/// `from`'s outcome of the exchange, to the conversation its opener opened it
/// from (a hierarchical hand-off: the manager's conversation with a person,
/// so it can tell them). Addressed to that conversation's agent as a command is.
pub async fn hand_outcome(env: &Env, exchange: &Exchange, from: &str, text: &str, now_ms: i64) -> Result<bool> {
    let Some(address) = exchange.origin_address() else {
        return Ok(false);
    };
    let id = format!("link-outcome:{}:{}", exchange.pair, exchange.turns);
    let mut event =
        InboundEvent::new(exchange.origin_key.clone(), id.clone(), id, agent_author(from), text.to_string(), address);
    event.is_command = true;
    event.timestamp_ms = now_ms;
    deliver(env, &event).await.map_err(failed)?;
    Ok(true)
}
