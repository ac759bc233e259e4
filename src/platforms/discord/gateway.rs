//! The Discord Gateway session as a pure state machine: frames and timer ticks
//! in, the next moves out (send this, deliver that, reconnect, stop). The
//! Gateway Durable Object only carries the moves out on a real WebSocket.
//!
//! The rules are Discord's (Gateway v10): HELLO starts heartbeats (the first
//! jittered) and is answered by IDENTIFY, or by RESUME when a session is held;
//! a heartbeat not ACKed before the next one means a zombie connection; op 7
//! and resumable close codes RESUME; op 9 and the other close codes start a new
//! session; bad token and intent close codes stop for good.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use thiserror::Error;

/// GUILDS, GUILD_MESSAGES, GUILD_MESSAGE_REACTIONS, DIRECT_MESSAGES, DIRECT_MESSAGE_REACTIONS
/// (reactions to the bot in DMs are heard too), MESSAGE_CONTENT.
pub const INTENTS: u64 = (1 << 0) | (1 << 9) | (1 << 10) | (1 << 12) | (1 << 13) | (1 << 15);
/// The query every Gateway URL carries.
pub const GATEWAY_QUERY: &str = "v=10&encoding=json";
/// Reconnect backoff: the first wait, and the longest.
pub const BACKOFF_BASE_MS: u64 = 1_000;
pub const BACKOFF_MAX_MS: u64 = 60_000;
/// Thread ids remembered (to mark messages in threads), newest kept.
const MAX_KNOWN_THREADS: usize = 1_000;

/// Opcodes (Gateway v10).
const DISPATCH: u8 = 0;
const HEARTBEAT: u8 = 1;
const IDENTIFY: u8 = 2;
const RESUME: u8 = 6;
const RECONNECT: u8 = 7;
const INVALID_SESSION: u8 = 9;
const HELLO: u8 = 10;
const HEARTBEAT_ACK: u8 = 11;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum GatewayError {
    #[error("malformed gateway frame: {0}")]
    Malformed(String),
}

/// What survives the connection (and the object): kept in storage so an
/// evicted or restarted object RESUMEs instead of identifying again.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    pub session_id: Option<String>,
    pub seq: Option<u64>,
    pub resume_url: Option<String>,
    /// The bot's own user id, from READY: its messages are ignored, its mentions engage.
    pub bot_user_id: Option<String>,
    /// Why the session stopped for good (a bad token, disallowed intents).
    pub failure: Option<String>,
    pub reconnects: u64,
    #[serde(default)]
    pub threads: Vec<String>,
    /// This connection's shard `[i, K]` (None: the one unsharded connection, `[0, 1]`).
    #[serde(default)]
    pub shard: Option<[u32; 2]>,
    /// Discord's `max_concurrency` (IDENTIFY rate-limit keys), from the gate's plan.
    #[serde(default)]
    pub max_concurrency: Option<u32>,
}

/// One frame from the Gateway.
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    Hello {
        heartbeat_interval_ms: u64,
    },
    Dispatch {
        seq: Option<u64>,
        kind: String,
        data: Value,
    },
    /// The server asks for a heartbeat now.
    HeartbeatRequest,
    HeartbeatAck,
    Reconnect,
    InvalidSession {
        resumable: bool,
    },
    Other(u8),
}

#[derive(Deserialize)]
struct RawFrame {
    op: u8,
    #[serde(default)]
    d: Value,
    #[serde(default)]
    s: Option<u64>,
    #[serde(default)]
    t: Option<String>,
}

/// Parses a text frame.
pub fn parse_frame(text: &str) -> Result<Frame, GatewayError> {
    let raw: RawFrame = serde_json::from_str(text).map_err(|error| GatewayError::Malformed(error.to_string()))?;
    Ok(match raw.op {
        HELLO => {
            let interval = raw.d["heartbeat_interval"].as_u64();
            Frame::Hello {
                heartbeat_interval_ms: interval.ok_or(GatewayError::Malformed("HELLO without interval".into()))?,
            }
        }
        DISPATCH => Frame::Dispatch { seq: raw.s, kind: raw.t.unwrap_or_default(), data: raw.d },
        HEARTBEAT => Frame::HeartbeatRequest,
        HEARTBEAT_ACK => Frame::HeartbeatAck,
        RECONNECT => Frame::Reconnect,
        INVALID_SESSION => Frame::InvalidSession { resumable: raw.d.as_bool().unwrap_or(false) },
        other => Frame::Other(other),
    })
}

/// A move the object makes.
#[derive(Debug, Clone, PartialEq)]
pub enum Move {
    /// Send this payload on the socket.
    Send(Value),
    /// Heartbeat every `interval_ms`, the first after `first_after_ms`.
    StartHeartbeats { interval_ms: u64, first_after_ms: u64 },
    /// Ask the gate for an IDENTIFY, then send [`Gateway::identify`].
    Identify,
    /// Hand this dispatch to the channels.
    Deliver { kind: String, data: Value },
    /// The session changed: persist it.
    Persist,
    /// Close this socket (with a code that keeps the session resumable) and
    /// connect again after `after_ms`; `resume` says whether to RESUME.
    Reconnect { resume: bool, after_ms: u64 },
    /// Stop for good: the reason is in the session.
    Stop,
}

/// Why a close ends the session for good, by close code.
fn fatal_close(code: u16) -> Option<&'static str> {
    match code {
        4004 => Some("authentication failed (4004): check DISCORD_BOT_TOKEN"),
        4010 => Some("invalid shard (4010)"),
        4011 => Some("sharding required (4011): the bot is in too many guilds for one connection"),
        4012 => Some("invalid API version (4012)"),
        4013 => Some("invalid intents (4013)"),
        4014 => Some("disallowed intents (4014): enable the Message Content intent in the Developer Portal"),
        _ => None,
    }
}

/// Close codes after which the session cannot be resumed (a new IDENTIFY).
fn session_lost(code: u16) -> bool {
    matches!(code, 4007 | 4009)
}

/// The Gateway client's state: the persisted session plus this connection's.
#[derive(Debug, Clone, Default)]
pub struct Gateway {
    pub session: Session,
    /// Whether the current connection RESUMEs (decided when it was opened).
    resuming: bool,
    /// A heartbeat was sent and its ACK has not come.
    awaiting_ack: bool,
    /// Consecutive failed connections, for the backoff.
    failed_attempts: u32,
    /// `seq` moved since the session was last saved, and when that was.
    seq_dirty: bool,
    seq_saved_at: i64,
}

impl Gateway {
    pub fn new(session: Session) -> Self {
        Gateway { session, ..Gateway::default() }
    }

    /// Where to connect: the resume URL when resuming a held session.
    pub fn connect_url(&mut self, default_url: &str) -> String {
        self.resuming = self.session.session_id.is_some();
        let base = match (&self.session.resume_url, self.resuming) {
            (Some(url), true) => url.as_str(),
            _ => default_url,
        };
        format!("{}/?{GATEWAY_QUERY}", base.trim_end_matches('/'))
    }

    /// Whether it stopped for good.
    pub fn is_stopped(&self) -> bool {
        self.session.failure.is_some()
    }

    /// Takes one frame. `token` is the bot token (for IDENTIFY and RESUME);
    /// `jitter` in [0, 1) spreads the first heartbeat.
    pub fn on_frame(&mut self, frame: Frame, token: &str, jitter: f64) -> Vec<Move> {
        match frame {
            Frame::Hello { heartbeat_interval_ms } => {
                self.awaiting_ack = false;
                let first_after_ms = (heartbeat_interval_ms as f64 * jitter.clamp(0.0, 1.0)) as u64;
                let hello = self.hello_answer(token);
                vec![hello, Move::StartHeartbeats { interval_ms: heartbeat_interval_ms, first_after_ms }]
            }
            Frame::Dispatch { seq, kind, data } => {
                let mut moves = Vec::new();
                if seq.is_some() && seq > self.session.seq {
                    // Saved every few seconds, not every frame (see `seq_save_due`).
                    self.session.seq = seq;
                    self.seq_dirty = true;
                }
                match kind.as_str() {
                    "READY" => {
                        self.failed_attempts = 0;
                        self.session.session_id = data["session_id"].as_str().map(str::to_string);
                        self.session.resume_url = data["resume_gateway_url"].as_str().map(str::to_string);
                        self.session.bot_user_id = data["user"]["id"].as_str().map(str::to_string);
                        moves.push(Move::Persist);
                    }
                    "RESUMED" => self.failed_attempts = 0,
                    "GUILD_CREATE" => {
                        let threads = data["threads"].as_array().into_iter().flatten();
                        let ids: Vec<String> =
                            threads.filter_map(|thread| thread["id"].as_str()).map(str::to_string).collect();
                        if self.remember_threads(ids) {
                            moves.push(Move::Persist);
                        }
                    }
                    "THREAD_CREATE" => {
                        if let Some(id) = data["id"].as_str() {
                            if self.remember_threads([id.to_string()]) {
                                moves.push(Move::Persist);
                            }
                        }
                    }
                    _ => moves.push(Move::Deliver { kind, data }),
                }
                moves
            }
            Frame::HeartbeatRequest => vec![Move::Send(self.heartbeat())],
            Frame::HeartbeatAck => {
                self.awaiting_ack = false;
                Vec::new()
            }
            Frame::Reconnect => vec![self.reconnect(true)],
            Frame::InvalidSession { resumable } => {
                if !resumable {
                    self.forget_session();
                }
                vec![Move::Persist, self.reconnect(resumable)]
            }
            Frame::Other(_) => Vec::new(),
        }
    }

    /// The heartbeat timer fired: heartbeat, or give up on a zombie connection.
    pub fn on_heartbeat_due(&mut self) -> Move {
        if self.awaiting_ack {
            self.awaiting_ack = false;
            return self.reconnect(true);
        }
        self.awaiting_ack = true;
        Move::Send(self.heartbeat())
    }

    /// The socket closed (or failed to open: code 1006) with this code.
    pub fn on_close(&mut self, code: u16) -> Move {
        if let Some(reason) = fatal_close(code) {
            self.session.failure = Some(reason.to_string());
            return Move::Stop;
        }
        if session_lost(code) {
            self.forget_session();
        }
        let next = self.reconnect(self.session.session_id.is_some());
        self.failed_attempts = self.failed_attempts.saturating_add(1);
        next
    }

    /// A fresh start (the admin's start route): forget a past failure.
    pub fn restart(&mut self) {
        self.session.failure = None;
        self.failed_attempts = 0;
    }

    /// Consecutive failed connections so far.
    pub fn failed_attempts(&self) -> u32 {
        self.failed_attempts
    }

    /// RESUME before IDENTIFY always: a held session resumes; only without
    /// one does the shard ask the gate for an IDENTIFY.
    fn hello_answer(&self, token: &str) -> Move {
        match (&self.session.session_id, self.resuming) {
            (Some(session_id), true) => Move::Send(json!({
                "op": RESUME,
                "d": { "token": token, "session_id": session_id, "seq": self.session.seq }
            })),
            _ => Move::Identify,
        }
    }

    /// The IDENTIFY payload, with this connection's shard.
    pub fn identify(&self, token: &str) -> Value {
        json!({
            "op": IDENTIFY,
            "d": {
                "token": token,
                "intents": INTENTS,
                "shard": self.session.shard.unwrap_or([0, 1]),
                "properties": { "os": "cloudflare-workers", "browser": "edgebot", "device": "edgebot" }
            }
        })
    }

    /// Whether to save the session now for its `seq` (see `seq_save_due`).
    pub fn seq_save_due(&self, now_ms: i64) -> bool {
        crate::platforms::discord::shards::seq_save_due(self.seq_dirty, self.seq_saved_at, now_ms)
    }

    /// The session was saved at `now_ms`.
    pub fn saved(&mut self, now_ms: i64) {
        self.seq_dirty = false;
        self.seq_saved_at = now_ms;
    }

    fn heartbeat(&self) -> Value {
        json!({ "op": HEARTBEAT, "d": self.session.seq })
    }

    fn reconnect(&mut self, resume: bool) -> Move {
        self.session.reconnects += 1;
        Move::Reconnect {
            resume: resume && self.session.session_id.is_some(),
            after_ms: backoff_ms(self.failed_attempts),
        }
    }

    fn forget_session(&mut self) {
        self.session.session_id = None;
        self.session.seq = None;
        self.session.resume_url = None;
    }

    fn remember_threads(&mut self, ids: impl IntoIterator<Item = String>) -> bool {
        let mut changed = false;
        for id in ids {
            if !self.session.threads.contains(&id) {
                self.session.threads.push(id);
                changed = true;
            }
        }
        let excess = self.session.threads.len().saturating_sub(MAX_KNOWN_THREADS);
        self.session.threads.drain(..excess);
        changed
    }
}

/// The wait before reconnect attempt `failed` (0 for the first): doubling
/// from [`BACKOFF_BASE_MS`] up to [`BACKOFF_MAX_MS`]. A connection that simply
/// dropped is retried at once.
pub fn backoff_ms(failed: u32) -> u64 {
    match failed {
        0 => 0,
        failed => BACKOFF_BASE_MS.saturating_mul(1 << (failed - 1).min(16)).min(BACKOFF_MAX_MS),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "bot-token";

    fn hello() -> Frame {
        Frame::Hello { heartbeat_interval_ms: 41_250 }
    }

    fn dispatch(seq: u64, kind: &str, data: Value) -> Frame {
        Frame::Dispatch { seq: Some(seq), kind: kind.into(), data }
    }

    fn ready(gateway: &mut Gateway) {
        gateway.connect_url("wss://gateway.example");
        gateway.on_frame(hello(), TOKEN, 0.5);
        let data = json!({"session_id": "s1", "resume_gateway_url": "wss://resume.example", "user": {"id": "B"}});
        gateway.on_frame(dispatch(1, "READY", data), TOKEN, 0.0);
    }

    fn sent(moves: &[Move]) -> Vec<Value> {
        moves
            .iter()
            .filter_map(|next| if let Move::Send(payload) = next { Some(payload.clone()) } else { None })
            .collect()
    }

    #[test]
    fn frames_parse_by_opcode() {
        let cases = [
            (r#"{"op":10,"d":{"heartbeat_interval":41250}}"#, hello()),
            (
                r#"{"op":0,"s":3,"t":"MESSAGE_CREATE","d":{"id":"1"}}"#,
                dispatch(3, "MESSAGE_CREATE", json!({"id": "1"})),
            ),
            (r#"{"op":1,"d":null}"#, Frame::HeartbeatRequest),
            (r#"{"op":11}"#, Frame::HeartbeatAck),
            (r#"{"op":7,"d":null}"#, Frame::Reconnect),
            (r#"{"op":9,"d":true}"#, Frame::InvalidSession { resumable: true }),
            (r#"{"op":9,"d":false}"#, Frame::InvalidSession { resumable: false }),
            (r#"{"op":3,"d":{}}"#, Frame::Other(3)),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_frame(text), Ok(expected), "{text}");
        }
        assert!(parse_frame("not json").is_err());
        assert!(parse_frame(r#"{"op":10,"d":{}}"#).is_err(), "HELLO needs its interval");
    }

    #[test]
    fn hello_identifies_with_the_intents_and_starts_jittered_heartbeats() {
        let mut gateway = Gateway::default();
        assert_eq!(gateway.connect_url("wss://gateway.example/"), "wss://gateway.example/?v=10&encoding=json");
        gateway.session.shard = Some([2, 4]);
        let moves = gateway.on_frame(hello(), TOKEN, 0.25);
        assert_eq!(moves[0], Move::Identify, "the gate grants it first");
        let identify = &gateway.identify(TOKEN);
        assert_eq!(identify["d"]["shard"], json!([2, 4]));
        assert_eq!(identify["op"], 2);
        assert_eq!(identify["d"]["token"], TOKEN);
        assert_eq!(
            identify["d"]["intents"], 46_593,
            "GUILDS | GUILD_MESSAGES | REACTIONS | DMS | DM REACTIONS | MESSAGE_CONTENT"
        );
        assert!(moves.contains(&Move::StartHeartbeats { interval_ms: 41_250, first_after_ms: 10_312 }));
    }

    #[test]
    fn ready_keeps_the_session_and_dispatches_are_delivered_with_their_seq() {
        let mut gateway = Gateway::default();
        ready(&mut gateway);
        assert_eq!(gateway.session.session_id.as_deref(), Some("s1"));
        assert_eq!(gateway.session.bot_user_id.as_deref(), Some("B"));
        let moves = gateway.on_frame(dispatch(2, "MESSAGE_CREATE", json!({"id": "m"})), TOKEN, 0.0);
        assert_eq!(moves, vec![Move::Deliver { kind: "MESSAGE_CREATE".into(), data: json!({"id": "m"}) }]);
        assert_eq!(gateway.session.seq, Some(2));
        // The seq is saved every few seconds, not with every frame.
        gateway.saved(1_000);
        gateway.on_frame(dispatch(3, "MESSAGE_CREATE", json!({"id": "n"})), TOKEN, 0.0);
        assert!(!gateway.seq_save_due(2_000));
        assert!(gateway.seq_save_due(6_000));
        gateway.saved(6_000);
        assert!(!gateway.seq_save_due(60_000), "nothing new since");
        // A replayed older event is still delivered (the channel dedupes) but never moves seq back.
        gateway.on_frame(dispatch(1, "MESSAGE_CREATE", json!({"id": "old"})), TOKEN, 0.0);
        assert_eq!(gateway.session.seq, Some(3));
    }

    #[test]
    fn heartbeats_carry_the_last_seq_and_a_missing_ack_means_a_zombie() {
        let mut gateway = Gateway::default();
        ready(&mut gateway);
        assert_eq!(gateway.on_heartbeat_due(), Move::Send(json!({"op": 1, "d": 1})));
        gateway.on_frame(Frame::HeartbeatAck, TOKEN, 0.0);
        assert_eq!(gateway.on_heartbeat_due(), Move::Send(json!({"op": 1, "d": 1})));
        // No ACK before the next beat: close and RESUME.
        assert_eq!(gateway.on_heartbeat_due(), Move::Reconnect { resume: true, after_ms: 0 });
        assert_eq!(sent(&gateway.on_frame(Frame::HeartbeatRequest, TOKEN, 0.0)), vec![json!({"op": 1, "d": 1})]);
    }

    #[test]
    fn a_held_session_resumes_at_its_resume_url_with_its_seq() {
        let mut gateway = Gateway::default();
        ready(&mut gateway);
        gateway.on_frame(dispatch(5, "MESSAGE_CREATE", json!({})), TOKEN, 0.0);
        assert_eq!(gateway.on_frame(Frame::Reconnect, TOKEN, 0.0), vec![Move::Reconnect { resume: true, after_ms: 0 }]);
        // A restarted object gets the same from storage.
        let mut restarted = Gateway::new(gateway.session.clone());
        assert_eq!(restarted.connect_url("wss://gateway.example"), "wss://resume.example/?v=10&encoding=json");
        let resume = &sent(&restarted.on_frame(hello(), TOKEN, 0.0))[0];
        assert_eq!(resume, &json!({"op": 6, "d": {"token": TOKEN, "session_id": "s1", "seq": 5}}));
    }

    #[test]
    fn close_codes_resume_reidentify_or_stop() {
        for (code, expected) in
            [(1006, "resume"), (4000, "resume"), (4008, "resume"), (4007, "identify"), (4009, "identify")]
        {
            let mut gateway = Gateway::default();
            ready(&mut gateway);
            let Move::Reconnect { resume, .. } = gateway.on_close(code) else { panic!("{code} reconnects") };
            assert_eq!(if resume { "resume" } else { "identify" }, expected, "close {code}");
            assert_eq!(gateway.session.session_id.is_some(), expected == "resume", "close {code}");
        }
        for code in [4004, 4010, 4011, 4012, 4013, 4014] {
            let mut gateway = Gateway::default();
            ready(&mut gateway);
            assert_eq!(gateway.on_close(code), Move::Stop, "close {code}");
            assert!(gateway.is_stopped());
            assert!(gateway.session.failure.as_deref().unwrap().contains(&code.to_string()));
            gateway.restart();
            assert!(!gateway.is_stopped(), "the admin's start clears it");
        }
    }

    #[test]
    fn invalid_session_resumes_only_when_discord_says_so() {
        let mut gateway = Gateway::default();
        ready(&mut gateway);
        assert!(gateway
            .on_frame(Frame::InvalidSession { resumable: true }, TOKEN, 0.0)
            .contains(&Move::Reconnect { resume: true, after_ms: 0 }));
        assert!(gateway
            .on_frame(Frame::InvalidSession { resumable: false }, TOKEN, 0.0)
            .contains(&Move::Reconnect { resume: false, after_ms: 0 }));
        assert_eq!(gateway.session.session_id, None);
        gateway.connect_url("wss://gateway.example");
        assert_eq!(gateway.on_frame(hello(), TOKEN, 0.0)[0], Move::Identify, "a fresh IDENTIFY");
    }

    #[test]
    fn failed_connections_back_off_doubling_to_a_cap_and_reset_on_ready() {
        assert_eq!(
            (0..9).map(backoff_ms).collect::<Vec<_>>(),
            [0, 1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000]
        );
        let mut gateway = Gateway::default();
        let waits: Vec<u64> = (0..4)
            .map(|_| match gateway.on_close(1006) {
                Move::Reconnect { after_ms, .. } => after_ms,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(waits, [0, 1_000, 2_000, 4_000]);
        ready(&mut gateway);
        assert_eq!(gateway.failed_attempts(), 0);
        assert_eq!(gateway.session.reconnects, 4);
    }

    #[test]
    fn threads_are_remembered_from_guild_create_and_thread_create() {
        let mut gateway = Gateway::default();
        ready(&mut gateway);
        gateway.on_frame(dispatch(2, "GUILD_CREATE", json!({"id": "G", "threads": [{"id": "T1"}]})), TOKEN, 0.0);
        let moves = gateway.on_frame(dispatch(3, "THREAD_CREATE", json!({"id": "T2"})), TOKEN, 0.0);
        assert!(!moves.iter().any(|next| matches!(next, Move::Deliver { .. })), "not a message to deliver");
        assert_eq!(gateway.session.threads, ["T1", "T2"]);
    }
}
