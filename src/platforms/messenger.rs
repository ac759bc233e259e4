//! What every platform does for the channel ([`Messenger`]) and the types its
//! calls speak: one piece of a reply, why a send failed, what became of a send
//! that was interrupted. The platforms implement it; [`crate::platforms::outbound`]
//! chooses one per reply address.

use crate::channel::participants::MembershipCount;
use crate::files::rules::{Refusal, StoredFile};
use crate::inbound::{Attachment, InboundEvent, ReplyAddress};
use crate::reply::reaction::Reaction;
use crate::runtime::config::redactor;

/// How long one platform API call may take.
pub const API_TIMEOUT_MS: u64 = 10_000;
/// How long an upload may take.
pub const UPLOAD_TIMEOUT_MS: u64 = 60_000;

/// Why a send failed, and whether (and when) trying again may help.
#[derive(Debug)]
pub struct SendFailure {
    pub message: String,
    pub retryable: bool,
    /// The platform asked to wait this long first (a rate limit).
    pub retry_after_ms: Option<u64>,
    /// No answer came (a timeout, a dropped connection): the platform may
    /// have taken the message all the same.
    pub ambiguous: bool,
}

impl SendFailure {
    pub fn permanent(message: String) -> Self {
        let message = redactor().redact(&message).into_owned();
        SendFailure { message, retryable: false, retry_after_ms: None, ambiguous: false }
    }

    /// Classifies an HTTP failure: 429 and 5xx are worth retrying.
    pub fn from_status(platform: &str, status: u16, detail: &str, retry_after_ms: Option<u64>) -> Self {
        SendFailure {
            message: redactor().redact(&format!("{platform} answered {status}: {detail}")).into_owned(),
            retryable: status == 429 || status >= 500,
            retry_after_ms: if status == 429 { retry_after_ms.or(Some(1_000)) } else { None },
            ambiguous: false,
        }
    }

    pub fn network(platform: &str, failure: crate::runtime::http::HttpFailure) -> Self {
        let message = redactor().redact(&format!("{platform}: {failure:?}")).into_owned();
        SendFailure { message, retryable: true, retry_after_ms: None, ambiguous: true }
    }
}

/// One outgoing piece of a reply.
pub struct Piece<'a> {
    /// Unique to this piece (conversation, turn, place), so it can be found again.
    pub id: &'a str,
    /// Its place in the reply (Discord edits the deferred response with piece 0).
    pub index: usize,
    pub text: &'a str,
    /// The platform message it quotes, if any.
    pub reply_to: Option<&'a str>,
    /// A file the piece sends (its text is then the file's caption).
    pub file: Option<&'a FileBody>,
    /// Approve and Deny buttons under the text, or their removal by an edit.
    pub buttons: Buttons<'a>,
    /// A later turn's answer to an inbound already answered (a worker's
    /// outcome after a command): a platform that answers an inbound once
    /// (Discord's deferred response) sends it as a message of its own.
    pub follow_up: bool,
}

/// The buttons a piece carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Buttons<'a> {
    #[default]
    None,
    /// Approve and Deny for the approval with this id.
    Approval(&'a str),
    /// An edit that takes the buttons away (the approval was decided).
    Cleared,
}

/// A file to send: what the conversation kept, with its bytes.
pub struct FileBody {
    pub file: StoredFile,
    pub bytes: Vec<u8>,
    /// Where the web chat downloads it (a signed, expiring link).
    pub link: Option<String>,
}

/// What became of a send that may have landed: the Worker stopped during the
/// call (a crash, an eviction), so its answer was never recorded.
#[derive(Debug, PartialEq, Eq)]
pub enum Interrupted {
    /// The platform has it: this is its message id.
    Landed(String),
    /// It did not land, or sending it again is harmless: send it.
    Resend,
    /// No way to tell: sent again, marked as a possible repeat, since a person
    /// who may have nothing must not be left waiting in silence.
    Unsure,
}

/// What every platform does for the channel.
#[allow(async_fn_in_trait)] // Workers are single-threaded; futures need not be Send.
pub trait Messenger {
    /// The longest message the platform takes; replies are split to fit.
    fn message_limit(&self) -> usize;
    /// Sends one piece; returns the platform's id for the sent message.
    async fn send(&self, address: &ReplyAddress, piece: &Piece<'_>) -> Result<String, SendFailure>;
    /// Decides what to do with a piece whose send was interrupted; the
    /// attempt began after `since_ms`.
    async fn interrupted(&self, address: &ReplyAddress, piece: &Piece<'_>, since_ms: i64) -> Interrupted;
    /// Shows that a turn started on this message (typing, a reaction); best effort.
    async fn show_working(&self, event: &InboundEvent);
    /// Keeps a working signal that fades (a typing indicator) alive while the
    /// turn goes on; called every few seconds until the answer is ready.
    async fn renew_working(&self, event: &InboundEvent);
    /// Takes the working signal away again; called on every way a turn ends.
    async fn clear_working(&self, event: &InboundEvent);
    /// A read of the conversation's members, when the platform can give one:
    /// everyone but this bot, peer bots included (the channel takes off the
    /// peer bots it knows when it uses the count).
    async fn member_count(&self, event: &InboundEvent, now_ms: i64) -> Option<MembershipCount>;
    /// Reacts to the message with an emoji (the `react` tool); best effort.
    async fn react(&self, event: &InboundEvent, reaction: &Reaction);
    /// How replies show while the model writes them (`STREAM_REPLIES`).
    fn streaming(&self) -> Streaming {
        Streaming::Off
    }
    /// Shows what of the reply is ready so far where drafts are not messages
    /// ([`Streaming::Socket`]); the final reply replaces it.
    async fn show_draft(&self, _event: &InboundEvent, _text: &str) {}
    /// Replaces the text of a message this bot sent (a draft of `piece`) with
    /// the piece's text. Editing to the text it already shows succeeds.
    async fn edit(&self, _address: &ReplyAddress, _message_id: &str, _piece: &Piece<'_>) -> Result<(), SendFailure> {
        Err(SendFailure::permanent("this platform does not edit messages".into()))
    }
    /// Deletes a draft message the finished reply did not need; best effort.
    async fn withdraw(&self, _address: &ReplyAddress, _message_id: &str) {}
    /// The bytes of a file sent with a message, from the platform's own file
    /// host only, at most [`crate::files::rules::FILE_LIMIT_BYTES`].
    async fn download(&self, _address: &ReplyAddress, _attachment: &Attachment) -> Result<Vec<u8>, Refusal> {
        Err(Refusal::Unreachable)
    }
}

/// How a platform shows a reply the model is still writing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Streaming {
    /// Only the finished reply is sent.
    Off,
    /// Drafts are pushed to the page; the finished reply is a new message.
    Socket,
    /// Each piece is sent as soon as it has words, then edited as it grows (at
    /// most once every `edit_every_ms`, the platform's edit rate); the final
    /// edit makes it the finished piece.
    Messages { edit_every_ms: u64 },
}
