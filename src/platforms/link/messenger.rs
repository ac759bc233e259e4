//! The link messenger: a reply in `link:{agent}:{peer}` is counted against the
//! exchange's cap, checked before it is sent, and handed to the peer's side
//! as its inbound, in the envelope format. At the cap the exchange closes,
//! both sides get the closing note, and the reply (like anything after it)
//! is not sent: nothing more runs.

use worker::State;

use crate::channel::participants::MembershipCount;
use crate::config::Config;
use crate::inbound::{InboundEvent, ReplyAddress};
use crate::links::deliver::{hand_over, tell_closed};
use crate::links::rules::{envelope, envelope_text};
use crate::links::store::{self as links, Counted};
use crate::log_line::LogLine;
use crate::platforms::messenger::{Interrupted, Messenger, Piece, SendFailure};
use crate::process::envelope::MessageType;
use crate::runtime::config::{bindings, DATABASE_BINDING};
use crate::runtime::http::now_ms;
use crate::runtime::log::Emit;

pub use crate::platforms::link::wire::MESSAGE_LIMIT;

/// The message id a reply that was not sent (the exchange is closed) gets.
const NOT_SENT: &str = "link-closed";

/// Sends over links (to other channel objects, through the Worker's bindings).
pub struct Link<'a> {
    _config: std::marker::PhantomData<&'a Config>,
}

impl<'a> Link<'a> {
    /// The messenger for a reply ([`crate::platforms::outbound`]'s one way to make each).
    pub fn new(_config: &'a Config, _state: &'a State) -> Self {
        Link { _config: std::marker::PhantomData }
    }
}

fn failure(error: worker::Error) -> SendFailure {
    // D1 or the peer's object erred: worth trying again (the count and the inbox dedupe a repeat).
    SendFailure { message: format!("link: {error}"), retryable: true, retry_after_ms: None, ambiguous: true }
}

impl Messenger for Link<'_> {
    fn message_limit(&self) -> usize {
        MESSAGE_LIMIT
    }

    async fn send(&self, address: &ReplyAddress, piece: &Piece<'_>) -> Result<String, SendFailure> {
        let ReplyAddress::Link { agent, peer } = address else {
            return Err(SendFailure::permanent("not a link's address".into()));
        };
        let env = bindings();
        let db = env.d1(DATABASE_BINDING).map_err(failure)?;
        let pair = links::pair(agent, peer);
        let now = now_ms();
        let turn = match links::count(&db, &pair, piece.id, now).await.map_err(failure)? {
            Counted::Turn(turn) => turn,
            Counted::Repeat => 0,
            Counted::CapReached => {
                LogLine::warn("link_cap_reached").field("pair", pair.as_str()).emit();
                tell_closed(&env, agent, peer, &pair, now).await.map_err(failure)?;
                return Ok(NOT_SENT.into());
            }
            Counted::Closed => {
                LogLine::info("link_closed_reply_dropped").field("pair", pair.as_str()).emit();
                return Ok(NOT_SENT.into());
            }
        };
        let text = envelope_text(&envelope(agent, peer, MessageType::Review, turn as u32, now, piece.text));
        let delivery_id = format!("link:{}", piece.id);
        hand_over(&env, agent, peer, &text, &delivery_id, now).await.map_err(failure)?;
        Ok(delivery_id)
    }

    /// Sending again is harmless: the count and the peer's inbox both dedupe by the piece.
    async fn interrupted(&self, _address: &ReplyAddress, _piece: &Piece<'_>, _since_ms: i64) -> Interrupted {
        Interrupted::Resend
    }

    async fn show_working(&self, _event: &InboundEvent) {}

    async fn renew_working(&self, _event: &InboundEvent) {}

    async fn clear_working(&self, _event: &InboundEvent) {}

    /// A link conversation is one agent and its peer.
    async fn member_count(&self, _event: &InboundEvent, _now_ms: i64) -> Option<MembershipCount> {
        None
    }

    async fn react(&self, _event: &InboundEvent, _reaction: &crate::reply::reaction::Reaction) {}
}
