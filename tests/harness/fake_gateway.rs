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
}

struct Log {
    received: Vec<(usize, Value)>,
    identifies: Vec<Value>,
    resumes: Vec<Value>,
    heartbeats: Vec<(Instant, usize, Value)>,
    connections: usize,
    open: Option<Open>,
    /// The current session's id, if an IDENTIFY started one.
    session: Option<String>,
    sessions: usize,
    /// The current session's last seq.
    seq: u64,
    ack_heartbeats: bool,
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
                resumes: Vec::new(),
                heartbeats: Vec::new(),
                connections: 0,
                open: None,
                session: None,
                sessions: 0,
                seq: 0,
                ack_heartbeats: true,
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
        self.shared.log().open.is_some()
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
                    log.open.as_ref().map(|open| open.number),
                    log.received
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Sends a dispatch (op 0) on the open connection with the session's
    /// next seq; returns that seq.
    pub fn dispatch(&self, event_type: &str, data: Value) -> u64 {
        let mut log = self.shared.log();
        let outbox = open_outbox(&log, "dispatch");
        log.seq += 1;
        let seq = log.seq;
        let _ = outbox.send(Command::Send(dispatch_payload(seq, event_type, data)));
        seq
    }

    /// Sends a dispatch with an explicit seq (a replay after RESUME) without
    /// moving the counter.
    pub fn dispatch_with_seq(&self, seq: u64, event_type: &str, data: Value) {
        let log = self.shared.log();
        let _ = open_outbox(&log, "dispatch_with_seq").send(Command::Send(dispatch_payload(seq, event_type, data)));
    }

    /// Sends any payload as it is.
    pub fn send_raw(&self, payload: Value) {
        let log = self.shared.log();
        let _ = open_outbox(&log, "send_raw").send(Command::Send(payload));
    }

    /// Drops the open connection without a close frame (a network failure).
    pub fn drop_connection(&self) {
        let mut log = self.shared.log();
        let outbox = open_outbox(&log, "drop_connection");
        log.open = None;
        let _ = outbox.send(Command::Drop);
    }

    /// Closes the open connection with this close code and reason.
    pub fn close(&self, code: u16, reason: &str) {
        let mut log = self.shared.log();
        let outbox = open_outbox(&log, "close");
        log.open = None;
        let _ = outbox.send(Command::Close(code, reason.to_string()));
    }

    /// Whether heartbeats are ACKed (op 11); off simulates a zombie connection.
    pub fn set_ack_heartbeats(&self, ack: bool) {
        self.shared.log().ack_heartbeats = ack;
    }
}

/// The open connection's outbox; panics (a test bug) when none is open.
fn open_outbox(log: &Log, action: &str) -> mpsc::UnboundedSender<Command> {
    match &log.open {
        Some(open) => open.outbox.clone(),
        None => panic!(
            "FakeGateway::{action}: no gateway connection is open ({} accepted so far); wait until is_connected() first",
            log.connections
        ),
    }
}

fn dispatch_payload(seq: u64, event_type: &str, data: Value) -> Value {
    json!({"op": 0, "t": event_type, "s": seq, "d": data})
}

async fn upgrade(State(state): State<Arc<OnceLock<Arc<Shared>>>>, ws: WebSocketUpgrade) -> Response {
    let shared = state.get().expect("the gateway state is set before any connection").clone();
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
        if let Some(old) = log.open.replace(Open { number, outbox: outbox.clone() }) {
            let _ = old.outbox.send(Command::Drop);
        }
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
    if log.open.as_ref().is_some_and(|open| open.number == number) {
        log.open = None;
    }
    // Dropping the socket here ends the TCP connection (without a close
    // frame unless one was sent above).
}

/// Records one payload from connection `number` and queues the answer.
fn receive(shared: &Shared, number: usize, outbox: &mpsc::UnboundedSender<Command>, text: &str) {
    let payload: Value = serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()));
    let data = payload.get("d").cloned().unwrap_or(Value::Null);
    let mut log = shared.log();
    log.received.push((number, payload.clone()));
    let reply = match payload.get("op").and_then(Value::as_u64) {
        Some(1) => {
            log.heartbeats.push((Instant::now(), number, data));
            log.ack_heartbeats.then(|| json!({"op": 11}))
        }
        Some(2) => {
            log.identifies.push(data);
            log.sessions += 1;
            let session_id = format!("session-{}", log.sessions);
            log.session = Some(session_id.clone());
            log.seq = 1;
            let ready = json!({
                "v": 10,
                "user": {"id": BOT_USER_ID, "username": "edgebot", "bot": true},
                "session_id": session_id,
                "resume_gateway_url": shared.url,
                "guilds": [],
            });
            Some(dispatch_payload(1, "READY", ready))
        }
        Some(6) => {
            let resumable =
                log.session.is_some() && data.get("session_id").and_then(Value::as_str) == log.session.as_deref();
            log.resumes.push(data);
            if resumable {
                log.seq += 1;
                Some(dispatch_payload(log.seq, "RESUMED", json!({})))
            } else {
                Some(json!({"op": 9, "d": false}))
            }
        }
        _ => None,
    };
    if let Some(reply) = reply {
        let _ = outbox.send(Command::Send(reply));
    }
}
