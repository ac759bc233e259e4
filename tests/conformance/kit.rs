//! The interface every messenger's adapter implements, and what the
//! behaviours read through it.

use std::time::{Duration, Instant};

use edgebot::redact::Redactor;
use edgebot::reply::markup::Flavor;
use edgebot::reply::pieces::prepare;
use serde_json::{json, Value};

use crate::harness::fake_api::{Call, FakeApi};
use crate::harness::{wait_for, TestEnv, LLM_KEY};

/// Whether a messenger does something; when not, why (the behaviour then
/// asserts the documented alternative).
#[derive(Debug)]
pub enum Support<T> {
    Yes(T),
    Unsupported(&'static str),
}

/// What a person saw change on the platform, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Shown while the reply is written, not a message (the web chat's draft line).
    Draft,
    /// A new message (on Discord, a command's deferred response getting its first words).
    Post,
    Edit,
    Delete,
}

#[derive(Debug, Clone)]
pub struct Update {
    pub at: Instant,
    pub change: Change,
    pub text: String,
}

/// A forged delivery and how the Worker answered it.
#[derive(Debug)]
pub struct Forged {
    pub what: &'static str,
    pub status: u16,
    pub body: Value,
}

/// How docs/delivery.md says a send that got no answer is settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settlement {
    /// Sent once more, marked as a possible repeat (Telegram).
    ResentMarked,
    /// Looked up on the platform, found, not sent again (Slack).
    LookedUp,
    /// Sent again where sending again shows one message (a Discord
    /// command's deferred response is edited again).
    SentAgain,
}

/// A file that arrived on the platform.
#[derive(Debug, Clone)]
pub struct SentFile {
    pub name: String,
    /// The call's body as text (its bytes among it).
    pub body: String,
}

/// A file made ready to send with a message: its id in edgebot, and what the
/// adapter needs to name it in the message.
#[derive(Debug, Clone)]
pub struct Attachment {
    pub id: String,
    pub name: String,
    pub size: usize,
    pub handle: String,
}

/// One messenger as the conformance behaviours drive it: one person in one
/// direct conversation with the bot (and, for buttons, one other person).
pub trait Messenger: Sized {
    /// Its name in `STREAM_REPLIES`.
    const NAME: &'static str;
    /// The longest message the platform takes, in characters.
    const LIMIT: usize;
    /// How replies are rendered for it.
    const FLAVOR: Flavor;

    /// A fresh world with `vars` set.
    async fn start(vars: &[(&str, &str)]) -> Self;
    /// A fresh world where a person can send a file with a message (a
    /// Discord command carries none, so its adapter connects the Gateway).
    async fn start_for_attachments(vars: &[(&str, &str)]) -> Self {
        Self::start(vars).await
    }
    fn env(&self) -> &TestEnv;
    /// Kills the Worker and starts it again on the same state.
    async fn crash_and_restart(&mut self);
    /// The conversation's key in the admin API.
    fn conversation(&self) -> String;

    /// The person says `text` as delivery `n` (a new `n` is a new message).
    async fn say(&self, n: u64, text: &str);
    /// The platform delivers `n` again, as it does when unsure it arrived.
    async fn say_again(&self, n: u64, text: &str);
    /// Deliveries a forger could make of `text`: each must be refused.
    async fn forge(&self, n: u64, text: &str) -> Vec<Forged>;

    /// The bot's messages the person sees now (after every edit and delete), oldest first.
    async fn shown(&self) -> Vec<String>;
    /// Everything the person saw change, in order.
    fn updates(&self) -> Vec<Update>;

    /// Makes the platform refuse the next send with 429 and a wait of `seconds`.
    fn rate_limit_next_send(&self, seconds: u64) -> Support<()>;
    /// When each call that sent a reply's first piece reached the platform.
    fn send_attempts(&self) -> Vec<Instant>;
    /// Makes the platform take the next send and never answer it; says how
    /// delivery settles such a send.
    fn hang_next_send(&self) -> Support<Settlement>;
    /// How many times the Worker read the conversation back (looking a send up).
    fn lookups(&self) -> usize;
    /// Whether a message the bot posted can be deleted.
    fn deletes(&self) -> Support<()>;
    /// Whether a reply can show while the model writes it (a draft that
    /// grows); where not, the finished reply is sent once.
    fn streams(&self) -> Support<()> {
        Support::Yes(())
    }

    /// Whether the person sees Approve and Deny for `approval`.
    async fn shows_buttons(&self, approval: &str) -> bool;
    /// A press of `choice` on `approval`'s buttons, by the asker or by
    /// someone else; returns what was answered to the presser alone, if anything.
    async fn press(&self, n: u64, by_asker: bool, choice: &str, approval: &str) -> Option<String>;

    /// Makes `bytes` ready to send as `name`.
    async fn attach(&self, name: &str, bytes: &[u8]) -> Attachment;
    /// The person says `text` with the file.
    async fn say_with_file(&self, n: u64, text: &str, file: &Attachment);
    /// The files that arrived on the platform.
    async fn files_sent(&self) -> Vec<SentFile>;

    /// The person edits their message `n` to `text`, as delivery `delivery`.
    async fn edit(&self, delivery: u64, n: u64, text: &str) -> Support<()>;
    /// The person deletes their message `n`, as delivery `delivery`.
    async fn delete_own(&self, delivery: u64, n: u64) -> Support<()>;
    /// The person reacts to the bot's message `bot_message` (its platform id,
    /// as the history keeps it), as delivery `delivery`.
    async fn react(&self, delivery: u64, bot_message: &str) -> Support<()>;
}

/// The pieces the person should see for `answer`: rendered, split and
/// redacted the way every reply is.
pub fn expected<M: Messenger>(answer: &str) -> Vec<String> {
    let redactor = Redactor::new([("OPENAI_API_KEY", LLM_KEY, None)]);
    prepare(&[answer.to_string()], M::FLAVOR, M::LIMIT, &redactor).pieces
}

/// Waits until the person sees exactly `pieces`, then a little longer to see it stays so.
pub async fn shows<M: Messenger>(messenger: &M, pieces: &[String]) {
    let mut last = Vec::new();
    let waited = tokio::time::timeout(Duration::from_secs(45), async {
        loop {
            last = messenger.shown().await;
            if last == pieces {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "{}: the person never saw {pieces:?}; they see {last:?}", M::NAME);
    messenger.env().settle().await;
    assert_eq!(messenger.shown().await, pieces, "{}: and nothing after it", M::NAME);
}

/// The conversation's stored inbound events.
pub async fn events<M: Messenger>(messenger: &M) -> Vec<Value> {
    let path = format!("/api/channels/{}/events", encode(&messenger.conversation()));
    messenger.env().admin(&path).await.as_array().cloned().unwrap_or_default()
}

/// The conversation's outbox rows.
pub async fn outbox<M: Messenger>(messenger: &M) -> Vec<Value> {
    let path = format!("/api/channels/{}/outbox", encode(&messenger.conversation()));
    messenger.env().admin(&path).await.as_array().cloned().unwrap_or_default()
}

/// The conversation's history (what the model remembers).
pub async fn history<M: Messenger>(messenger: &M) -> Value {
    let path = format!("/api/channels/{}/messages", encode(&messenger.conversation()));
    messenger.env().admin(&path).await
}

/// A conversation key as one path segment.
pub fn encode(key: &str) -> String {
    key.replace(':', "%3A")
}

/// Waits for `what` in `check`, with the kit's patience.
pub async fn eventually<T, F, Fut>(what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    wait_for(what, Duration::from_secs(40), check).await
}

/// The files a platform fake took (multipart bodies naming a file).
pub fn files_in_calls(api: &FakeApi) -> Vec<SentFile> {
    api.requests()
        .into_iter()
        .filter_map(|call| {
            let body = call.body.as_str()?.to_string();
            let name = body.split("filename=\"").nth(1)?.split('"').next()?.to_string();
            Some(SentFile { name, body })
        })
        .collect()
}

/// A call's text (Telegram and Slack `text`, Discord `content`).
pub fn text_of(call: &Call) -> String {
    call.body["text"].as_str().or(call.body["content"].as_str()).unwrap_or_default().to_string()
}

/// An update for a call.
pub fn update(call: &Call, change: Change) -> Update {
    Update { at: call.at, change, text: text_of(call) }
}

/// The body of a WebSocket upgrade request.
pub fn upgrade_headers() -> [(&'static str, String); 4] {
    [
        ("upgrade", "websocket".into()),
        ("connection", "Upgrade".into()),
        ("sec-websocket-version", "13".into()),
        ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==".into()),
    ]
}

/// A forged delivery's answer, read.
pub async fn forged(what: &'static str, response: reqwest::Response) -> Forged {
    let status = response.status().as_u16();
    Forged { what, status, body: response.json().await.unwrap_or(json!(null)) }
}
