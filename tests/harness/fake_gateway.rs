//! A fake Discord Gateway (v10, JSON encoding): a real WebSocket server on
//! loopback that the Worker's Durable Object connects to. It greets every
//! connection with HELLO, answers IDENTIFY with READY, RESUME with RESUMED
//! (or Invalid Session) and heartbeats with ACKs, records every payload, and
//! lets a test dispatch events, send raw payloads, close or drop the
//! connection. The server and every connection stop when it is dropped.

// Nothing uses every helper in every binary that includes the harness.
#![allow(dead_code)]

use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::State;
use axum::response::Response;
use axum::Router;
use serde_json::{json, Value};
use tokio::sync::{mpsc, watch};

use super::server::ServerHandle;

/// The bot's user id the fake reports in READY.
pub const BOT_USER_ID: &str = "900000000000000001";

/// How long a close waits for the client's closing handshake before dropping.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// What a test asks a connection's task to do.
enum Command {
    Send(Value),
    Close(u16, String),
    Drop,
}

struct Open {
    number: usize,
    outbox: mpsc::UnboundedSender<Command>,
    /// The session this connection IDENTIFYed or RESUMEd.
    session: Option<String>,
}

/// A session: its shard, last seq, and every dispatch sent on it (replayed
/// after a RESUME from the seq the client names, as Discord does).
struct SessionLog {
    shard: [u64; 2],
    seq: u64,
    sent: Vec<Value>,
}

struct Log {
    received: Vec<(usize, Value)>,
    identifies: Vec<Value>,
    /// When each IDENTIFY came, with its shard.
    identify_times: Vec<(Instant, [u64; 2])>,
    resumes: Vec<Value>,
    heartbeats: Vec<(Instant, usize, Value)>,
    connections: usize,
    /// Open connections, oldest first.
    open: Vec<Open>,
    sessions: std::collections::HashMap<String, SessionLog>,
    session_count: usize,
    ack_heartbeats: bool,
    /// New connections are refused (Discord unreachable for a while).
    refuse: bool,
}

impl Log {
    /// The newest open connection (the unsharded tests' one connection).
    fn latest(&self, action: &str) -> &Open {
        match self.open.last() {
            Some(open) => open,
            None => panic!(
                "FakeGateway::{action}: no gateway connection is open ({} accepted so far); wait until is_connected() first",
                self.connections
            ),
        }
    }

    /// Sends a dispatch on `open`'s session with its next seq (or `seq`).
    fn send_on(&mut self, number: usize, seq: Option<u64>, event_type: &str, data: Value) -> u64 {
        let Some(open) = self.open.iter().find(|open| open.number == number) else { return 0 };
        let outbox = open.outbox.clone();
        let session = open.session.clone().and_then(|id| self.sessions.get_mut(&id));
        let seq = match (session, seq) {
            (Some(session), None) => {
                session.seq += 1;
                let payload = dispatch_payload(session.seq, event_type, data);
                session.sent.push(payload.clone());
                let _ = outbox.send(Command::Send(payload));
                return session.seq;
            }
            (_, Some(seq)) => seq,
            (None, None) => 0,
        };
        let _ = outbox.send(Command::Send(dispatch_payload(seq, event_type, data)));
        seq
    }

    /// The open connection whose session is shard `shard`.
    fn of_shard(&self, shard: [u64; 2]) -> Option<&Open> {
        self.open.iter().find(|open| {
            open.session.as_ref().and_then(|id| self.sessions.get(id)).is_some_and(|session| session.shard == shard)
        })
    }
}

struct Shared {
    heartbeat_interval_ms: u64,
    url: String,
    log: Mutex<Log>,
    /// Resolves (with an error) once the FakeGateway is dropped.
    shutdown: watch::Receiver<()>,
}

impl Shared {
    fn log(&self) -> MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

pub struct FakeGateway {
    /// `ws://127.0.0.1:PORT`.
    pub url: String,
    shared: Arc<Shared>,
    _shutdown: watch::Sender<()>,
    _server: ServerHandle,
}

impl FakeGateway {
    /// Starts the server; HELLO carries this heartbeat interval.
    pub async fn start(heartbeat_interval_ms: u64) -> Self {
        let (shutdown_sender, shutdown) = watch::channel(());
        // The state needs the address READY reports as the resume URL, which
        // is known only once the server is bound, so the router gets it late.
        let state_cell: Arc<OnceLock<Arc<Shared>>> = Arc::new(OnceLock::new());
        let router = Router::new().fallback(upgrade).with_state(state_cell.clone());
        let server = ServerHandle::serve(router).await;
        let url = server.base_url.replacen("http://", "ws://", 1);
        let shared = Arc::new(Shared {
            heartbeat_interval_ms,
            url: url.clone(),
            log: Mutex::new(Log {
                received: Vec::new(),
                identifies: Vec::new(),
                identify_times: Vec::new(),
                resumes: Vec::new(),
                heartbeats: Vec::new(),
                connections: 0,
                open: Vec::new(),
                sessions: std::collections::HashMap::new(),
                session_count: 0,
                ack_heartbeats: true,
                refuse: false,
            }),
            shutdown,
        });
        state_cell.set(shared.clone()).unwrap_or_else(|_| unreachable!("the state is set once"));
        FakeGateway { url, shared, _shutdown: shutdown_sender, _server: server }
    }

    /// Every payload clients sent (parsed JSON; text that is not JSON as a
    /// string), in order, with the 1-based number of its connection.
    pub fn received(&self) -> Vec<(usize, Value)> {
        self.shared.log().received.clone()
    }

    /// The `d` of each IDENTIFY (op 2) received, in order.
    pub fn identifies(&self) -> Vec<Value> {
        self.shared.log().identifies.clone()
    }

    /// When each IDENTIFY came, and its shard, in order.
    pub fn identify_times(&self) -> Vec<(Instant, [u64; 2])> {
        self.shared.log().identify_times.clone()
    }

    /// The `d` of each RESUME (op 6) received, in order.
    pub fn resumes(&self) -> Vec<Value> {
        self.shared.log().resumes.clone()
    }

    /// Heartbeats (op 1) received: when, on which connection, and their `d`.
    pub fn heartbeats(&self) -> Vec<(Instant, usize, Value)> {
        self.shared.log().heartbeats.clone()
    }

    /// Connections accepted so far, open or closed.
    pub fn connections(&self) -> usize {
        self.shared.log().connections
    }

    /// Whether a connection is open now.
    pub fn is_connected(&self) -> bool {
        !self.shared.log().open.is_empty()
    }

    /// Whether shard `[i, K]` has an open, identified (or resumed) connection.
    pub fn shard_connected(&self, shard: [u64; 2]) -> bool {
        self.shared.log().of_shard(shard).is_some()
    }

    /// The shards with an open, identified connection, sorted.
    pub fn connected_shards(&self) -> Vec<[u64; 2]> {
        let log = self.shared.log();
        let mut shards: Vec<[u64; 2]> = log
            .open
            .iter()
            .filter_map(|open| log.sessions.get(open.session.as_ref()?).map(|session| session.shard))
            .collect();
        shards.sort();
        shards
    }

    /// Polls until `check(self)` holds; panics with `what` after `timeout`.
    pub async fn wait_until(&self, what: &str, timeout: Duration, check: impl Fn(&FakeGateway) -> bool) {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if check(self) {
                return;
            }
            if tokio::time::Instant::now() > deadline {
                let log = self.shared.log();
                panic!(
                    "timed out after {timeout:?} waiting for {what} (gateway: {} connection(s), open: {:?}, received: {:?})",
                    log.connections,
                    log.open.iter().map(|open| open.number).collect::<Vec<_>>(),
                    log.received
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Sends a dispatch (op 0) on the newest connection with its session's
    /// next seq; returns that seq.
    pub fn dispatch(&self, event_type: &str, data: Value) -> u64 {
        let mut log = self.shared.log();
        let number = log.latest("dispatch").number;
        log.send_on(number, None, event_type, data)
    }

    /// Sends a dispatch as Discord routes it: to every open shard whose
    /// `(guild_id >> 22) % K` is its index (DMs: shard 0), each with its
    /// session's next seq. Returns the shards it went to (two while a
    /// resharding overlaps).
    pub fn dispatch_to_guild(&self, guild: Option<&str>, event_type: &str, data: Value) -> Vec<[u64; 2]> {
        let mut log = self.shared.log();
        let targets: Vec<(usize, [u64; 2])> = log
            .open
            .iter()
            .filter_map(|open| {
                let shard = log.sessions.get(open.session.as_ref()?)?.shard;
                let index = guild.map_or(0, |id| (id.parse::<u64>().expect("a guild id") >> 22) % shard[1]);
                (index == shard[0]).then_some((open.number, shard))
            })
            .collect();
        for (number, _) in &targets {
            log.send_on(*number, None, event_type, data.clone());
        }
        targets.into_iter().map(|(_, shard)| shard).collect()
    }

    /// Sends a dispatch with an explicit seq (a replay after RESUME) without
    /// moving the counter.
    pub fn dispatch_with_seq(&self, seq: u64, event_type: &str, data: Value) {
        let mut log = self.shared.log();
        let number = log.latest("dispatch_with_seq").number;
        log.send_on(number, Some(seq), event_type, data);
    }

    /// Sends any payload as it is.
    pub fn send_raw(&self, payload: Value) {
        let log = self.shared.log();
        let _ = log.latest("send_raw").outbox.send(Command::Send(payload));
    }

    /// Drops the newest connection without a close frame (a network failure).
    pub fn drop_connection(&self) {
        let mut log = self.shared.log();
        let number = log.latest("drop_connection").number;
        end(&mut log, number, Command::Drop);
    }

    /// Closes the newest connection with this close code and reason.
    pub fn close(&self, code: u16, reason: &str) {
        let mut log = self.shared.log();
        let number = log.latest("close").number;
        end(&mut log, number, Command::Close(code, reason.to_string()));
    }

    /// Drops shard `[i, K]`'s connection without a close frame.
    pub fn drop_shard(&self, shard: [u64; 2]) {
        let mut log = self.shared.log();
        let number = log.of_shard(shard).expect("the shard is connected").number;
        end(&mut log, number, Command::Drop);
    }

    /// Closes shard `[i, K]`'s connection with this close code.
    pub fn close_shard(&self, shard: [u64; 2], code: u16, reason: &str) {
        let mut log = self.shared.log();
        let number = log.of_shard(shard).expect("the shard is connected").number;
        end(&mut log, number, Command::Close(code, reason.to_string()));
    }

    /// Refuses new connections (503) while `refuse` holds: a shard that drops stays down.
    pub fn set_refuse_connections(&self, refuse: bool) {
        self.shared.log().refuse = refuse;
    }

    /// Sends a dispatch on shard `[i, K]`'s session with its next seq, as
    /// Discord does: at once when the shard is connected, else kept for the
    /// RESUME to replay. Returns the seq.
    pub fn dispatch_to_shard(&self, shard: [u64; 2], event_type: &str, data: Value) -> u64 {
        let mut log = self.shared.log();
        let id = log.sessions.iter().find(|(_, session)| session.shard == shard).map(|(id, _)| id.clone());
        let id = id.expect("the shard has a session");
        let number = log.open.iter().find(|open| open.session.as_deref() == Some(id.as_str())).map(|open| open.number);
        if let Some(number) = number {
            return log.send_on(number, None, event_type, data);
        }
        let session = log.sessions.get_mut(&id).expect("found above");
        session.seq += 1;
        session.sent.push(dispatch_payload(session.seq, event_type, data));
        session.seq
    }

    /// Whether heartbeats are ACKed (op 11); off simulates a zombie connection.
    pub fn set_ack_heartbeats(&self, ack: bool) {
        self.shared.log().ack_heartbeats = ack;
    }
}

/// Ends connection `number` (it is no longer open from now on).
fn end(log: &mut Log, number: usize, command: Command) {
    if let Some(at) = log.open.iter().position(|open| open.number == number) {
        let open = log.open.remove(at);
        let _ = open.outbox.send(command);
    }
}

fn dispatch_payload(seq: u64, event_type: &str, data: Value) -> Value {
    json!({"op": 0, "t": event_type, "s": seq, "d": data})
}

async fn upgrade(State(state): State<Arc<OnceLock<Arc<Shared>>>>, ws: WebSocketUpgrade) -> Response {
    let shared = state.get().expect("the gateway state is set before any connection").clone();
    if shared.log().refuse {
        return axum::response::IntoResponse::into_response(axum::http::StatusCode::SERVICE_UNAVAILABLE);
    }
    ws.on_upgrade(move |socket| connection(shared, socket))
}

/// One client connection: greets, answers and forwards the test's commands
/// until either side ends it or the FakeGateway is dropped.
async fn connection(shared: Arc<Shared>, mut socket: WebSocket) {
    let (outbox, mut commands) = mpsc::unbounded_channel();
    let number = {
        let mut log = shared.log();
        log.connections += 1;
        let number = log.connections;
        log.open.push(Open { number, outbox: outbox.clone(), session: None });
        let hello = json!({"op": 10, "d": {"heartbeat_interval": shared.heartbeat_interval_ms}, "s": null, "t": null});
        let _ = outbox.send(Command::Send(hello));
        number
    };
    let mut shutdown = shared.shutdown.clone();
    loop {
        tokio::select! {
            _ = shutdown.changed() => break,
            command = commands.recv() => match command {
                Some(Command::Send(payload)) => {
                    if socket.send(Message::Text(payload.to_string().into())).await.is_err() {
                        break;
                    }
                }
                Some(Command::Close(code, reason)) => {
                    let frame = CloseFrame { code, reason: reason.into() };
                    if socket.send(Message::Close(Some(frame))).await.is_ok() {
                        // Let the client finish the closing handshake.
                        let _ = tokio::time::timeout(CLOSE_GRACE, async {
                            while let Some(Ok(_)) = socket.recv().await {}
                        })
                        .await;
                    }
                    break;
                }
                Some(Command::Drop) | None => break,
            },
            incoming = socket.recv() => match incoming {
                Some(Ok(Message::Text(text))) => receive(&shared, number, &outbox, text.as_str()),
                Some(Ok(Message::Binary(bytes))) => receive(&shared, number, &outbox, &String::from_utf8_lossy(&bytes)),
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
                Some(Ok(Message::Close(_)) | Err(_)) | None => break,
            },
        }
    }
    let mut log = shared.log();
    log.open.retain(|open| open.number != number);
    // Dropping the socket here ends the TCP connection (without a close
    // frame unless one was sent above).
}

/// Records one payload from connection `number` and queues the answer.
fn receive(shared: &Shared, number: usize, outbox: &mpsc::UnboundedSender<Command>, text: &str) {
    let payload: Value = serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()));
    let data = payload.get("d").cloned().unwrap_or(Value::Null);
    let mut log = shared.log();
    log.received.push((number, payload.clone()));
    let replies = match payload.get("op").and_then(Value::as_u64) {
        Some(1) => {
            log.heartbeats.push((Instant::now(), number, data));
            if log.ack_heartbeats {
                vec![json!({"op": 11})]
            } else {
                Vec::new()
            }
        }
        Some(2) => vec![identify(shared, &mut log, number, data)],
        Some(6) => resume(&mut log, number, data),
        _ => Vec::new(),
    };
    for reply in replies {
        let _ = outbox.send(Command::Send(reply));
    }
}

/// A new session for the shard the IDENTIFY names (`[0, 1]` without one);
/// the shard's older sessions end (a shard holds one).
fn identify(shared: &Shared, log: &mut Log, number: usize, data: Value) -> Value {
    let shard = match data["shard"].as_array().map(|pair| pair.iter().filter_map(Value::as_u64).collect::<Vec<_>>()) {
        Some(pair) if pair.len() == 2 => [pair[0], pair[1]],
        _ => [0, 1],
    };
    log.identifies.push(data);
    log.identify_times.push((Instant::now(), shard));
    log.session_count += 1;
    let session_id = format!("session-{}", log.session_count);
    log.sessions.retain(|_, session| session.shard != shard);
    log.sessions.insert(session_id.clone(), SessionLog { shard, seq: 1, sent: Vec::new() });
    if let Some(open) = log.open.iter_mut().find(|open| open.number == number) {
        open.session = Some(session_id.clone());
    }
    let ready = json!({
        "v": 10,
        "user": {"id": BOT_USER_ID, "username": "edgebot", "bot": true},
        "session_id": session_id,
        "resume_gateway_url": shared.url,
        "guilds": [],
        "shard": shard,
    });
    dispatch_payload(1, "READY", ready)
}

/// RESUMEs a known session: replays what it sent after the client's seq,
/// then RESUMED; an unknown session gets op 9 (not resumable).
fn resume(log: &mut Log, number: usize, data: Value) -> Vec<Value> {
    let id = data.get("session_id").and_then(Value::as_str).unwrap_or_default().to_string();
    let from = data.get("seq").and_then(Value::as_u64).unwrap_or(0);
    log.resumes.push(data);
    let Some(session) = log.sessions.get_mut(&id) else {
        return vec![json!({"op": 9, "d": false})];
    };
    let mut replies: Vec<Value> =
        session.sent.iter().filter(|payload| payload["s"].as_u64().is_some_and(|seq| seq > from)).cloned().collect();
    session.seq += 1;
    replies.push(dispatch_payload(session.seq, "RESUMED", json!({})));
    if let Some(open) = log.open.iter_mut().find(|open| open.number == number) {
        open.session = Some(id);
    }
    replies
}
