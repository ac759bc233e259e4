//! GatewayObject: one Durable Object per bot that holds Discord's Gateway
//! WebSocket open and hands every message it hears to the conversation's
//! channel object, exactly as a webhook would.
//!
//! The session's rules live in the pure [`Gateway`] state machine; this object
//! carries its moves out: a socket, a heartbeat timer, reconnects with backoff,
//! the session in storage (so a restarted object RESUMEs), and an alarm that
//! reconnects when the socket is gone.
//!
//! Each object is one shard `[i, K]` (named by `shards::object_name`); the
//! same class under `shards::GATE_NAME` is the gate that plans the shards and
//! grants their IDENTIFYs (see `gateway_gate`).

use std::cell::RefCell;
use std::rc::Rc;

use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::{json, Value};
use worker::{
    durable_object, DurableObject, Env, Request, Response, Result, State, Storage, WebSocket, WebsocketEvent,
};

use crate::config::Config;
use crate::inbound::{HeardEvent, InboundEvent};
use crate::log_line::LogLine;
use crate::platforms::discord::gateway::{parse_frame, Frame, Gateway, Move, Session};
use crate::platforms::discord::gateway_route::{GatewayRoute, ObjectRoute};
use crate::platforms::discord::gateway_stub::object;
use crate::platforms::discord::message::{parse_heard, parse_message_create, HEARD_EVENTS};
use crate::platforms::discord::messenger::bot_get;
use crate::platforms::discord::shards::GATE_NAME;
use crate::platforms::webhooks::{deliver, deliver_heard};
use crate::runtime::config;
use crate::runtime::durable::{self, MeteredStorage, Sql};
use crate::runtime::http::{method, now_ms, sleep_ms};
use crate::runtime::log::Emit;

/// The watchdog alarm's period while the Gateway is meant to run.
const WATCHDOG_MS: u64 = 30_000;
/// Attempts at handing one message to its channel object.
const DELIVERY_ATTEMPTS: u32 = 3;
/// A close code that keeps the session resumable (1000 and 1001 end it).
const RESUMABLE_CLOSE: u16 = 4000;
/// The wait before asking an unreachable gate again for an IDENTIFY.
const IDENTIFY_RETRY_MS: u64 = 1_000;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS gateway (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    enabled INTEGER,
    session TEXT NOT NULL
);
";

#[durable_object]
pub struct GatewayObject {
    shared: Rc<Shared>,
}

struct Shared {
    env: Env,
    storage: Storage,
    config: Rc<Config>,
    live: RefCell<Live>,
}

#[derive(Default)]
struct Live {
    gateway: Gateway,
    /// None: follow DISCORD_GATEWAY; Some: the admin started or stopped it.
    enabled: Option<bool>,
    socket: Option<WebSocket>,
    /// Bumped by every new connection: readers and timers of an older one stop.
    generation: u64,
    connecting: bool,
    last_event_ms: Option<i64>,
}

impl DurableObject for GatewayObject {
    fn new(state: State, env: Env) -> Self {
        let storage = state.storage();
        let sql = storage.counted_sql();
        if let Err(error) = sql.exec(SCHEMA, None) {
            LogLine::error("gateway_schema_failed").reason(&error).emit();
        }
        let (enabled, session) = load(&sql).unwrap_or_default();
        let live = Live { gateway: Gateway::new(session), enabled, ..Live::default() };
        let shared = Shared { config: config::load(&env), env, storage, live: RefCell::new(live) };
        GatewayObject { shared: Rc::new(shared) }
    }

    async fn fetch(&self, request: Request) -> Result<Response> {
        durable::served(self.serve(request)).await
    }

    async fn alarm(&self) -> Result<Response> {
        durable::served(async {
            self.shared.ensure_running().await?;
            Response::ok("")
        })
        .await
    }
}

impl GatewayObject {
    /// Start, keep running, stop, or report the session.
    async fn serve(&self, request: Request) -> Result<Response> {
        let shared = &self.shared;
        let route = GatewayRoute::at(&request.path()).filter(|route| request.method() == method(route.verb()));
        if let Some(route) = route {
            if let Some(answer) =
                super::gateway_gate::serve(&shared.env, &shared.storage, &shared.config, route, &request).await?
            {
                return Ok(answer);
            }
        }
        if matches!(route, Some(GatewayRoute::Start | GatewayRoute::Ensure)) {
            shared.assign_shard(&request)?;
        }
        match route {
            Some(GatewayRoute::Start) => {
                {
                    let mut live = shared.live.borrow_mut();
                    live.enabled = Some(true);
                    live.gateway.restart();
                }
                shared.save()?;
                shared.ensure_running().await?;
            }
            Some(GatewayRoute::Ensure) => shared.ensure_running().await?,
            Some(GatewayRoute::Stop) => shared.stop()?,
            Some(GatewayRoute::Status) => {}
            _ => return Response::error("not found", 404),
        }
        Response::from_json(&shared.status())
    }
}

impl Shared {
    /// Takes the shard `[i, K]` (and max_concurrency) the gate's call names;
    /// saved when it changed.
    fn assign_shard(&self, request: &Request) -> Result<()> {
        let Ok((shard, count)) = super::gateway_gate::shard_query(request) else {
            return Ok(()); // an unsharded call: keep what is held
        };
        let url = request.url()?;
        let max_concurrency = url.query_pairs().find(|(key, _)| key == "mc").and_then(|(_, value)| value.parse().ok());
        let changed = {
            let mut live = self.live.borrow_mut();
            let session = &mut live.gateway.session;
            let changed = session.shard != Some([shard, count]) || session.max_concurrency != max_concurrency;
            session.shard = Some([shard, count]);
            session.max_concurrency = max_concurrency;
            changed
        };
        if changed {
            self.save()?;
        }
        Ok(())
    }

    fn is_enabled(&self) -> bool {
        let live = self.live.borrow();
        live.enabled.unwrap_or(self.config.discord_gateway) && !live.gateway.is_stopped()
    }

    /// Connects unless a socket is open or opening; keeps the watchdog armed.
    async fn ensure_running(self: &Rc<Self>) -> Result<()> {
        if !self.is_enabled() {
            return Ok(());
        }
        self.storage.set_alarm_counted(WATCHDOG_MS as i64).await?;
        let idle = {
            let live = self.live.borrow();
            live.socket.is_none() && !live.connecting
        };
        if idle {
            self.clone().connect().await;
        }
        Ok(())
    }

    fn stop(&self) -> Result<()> {
        let mut live = self.live.borrow_mut();
        live.enabled = Some(false);
        live.generation += 1;
        if let Some(socket) = live.socket.take() {
            let _ = socket.close(Some(1000), Some("stopped by the admin"));
        }
        drop(live);
        self.save()
    }

    fn status(&self) -> Value {
        let live = self.live.borrow();
        let session = &live.gateway.session;
        json!({
            "enabled": live.enabled.unwrap_or(self.config.discord_gateway),
            "connected": live.socket.is_some(),
            "session_id": session.session_id,
            "seq": session.seq,
            "last_event_at": live.last_event_ms,
            "reconnects": session.reconnects,
            "failure": session.failure,
            "shard": session.shard,
        })
    }

    fn save(&self) -> Result<()> {
        let mut live = self.live.borrow_mut();
        live.gateway.saved(now_ms());
        let session = serde_json::to_string(&live.gateway.session)?;
        let enabled = live.enabled.map(i64::from);
        self.storage.counted_sql().exec(
            "INSERT INTO gateway (id, enabled, session) VALUES (1, ?, ?) \
             ON CONFLICT (id) DO UPDATE SET enabled = excluded.enabled, session = excluded.session",
            vec![enabled.into(), session.into()],
        )?;
        Ok(())
    }

    /// Opens a socket (RESUMEing a held session) and starts reading it. A
    /// failure to connect counts as an abnormal close (backoff, then again).
    async fn connect(self: Rc<Self>) {
        let generation = {
            let mut live = self.live.borrow_mut();
            live.connecting = true;
            live.generation += 1;
            live.generation
        };
        let opened = match self.gateway_url().await {
            Some(default_url) => {
                let url = self.live.borrow_mut().gateway.connect_url(&default_url);
                match url.parse() {
                    Ok(url) => WebSocket::connect(url).await.and_then(|socket| socket.accept().map(|()| socket)),
                    Err(error) => Err(worker::Error::RustError(format!("gateway URL: {error}"))),
                }
            }
            None => Err("no Gateway URL".into()),
        };
        self.live.borrow_mut().connecting = false;
        match opened {
            Ok(socket) => {
                self.live.borrow_mut().socket = Some(socket.clone());
                wasm_bindgen_futures::spawn_local(self.clone().read(socket, generation));
            }
            Err(error) => {
                LogLine::warn("gateway_connect_failed").platform("Discord").reason(&error).emit();
                self.closed(1006, generation);
            }
        }
    }

    /// DISCORD_GATEWAY_URL, else what Discord says (`GET /gateway/bot`).
    async fn gateway_url(&self) -> Option<String> {
        if !self.config.discord_gateway_url.is_empty() {
            return Some(self.config.discord_gateway_url.clone());
        }
        let answer = bot_get(&self.config, "/gateway/bot", 100_000).await?;
        answer["url"].as_str().map(str::to_string)
    }

    async fn read(self: Rc<Self>, socket: WebSocket, generation: u64) {
        let Ok(mut events) = socket.events() else {
            return self.closed(1006, generation);
        };
        while let Some(event) = events.next().await {
            if self.live.borrow().generation != generation {
                return; // replaced or stopped: this socket's story is over
            }
            match event {
                Ok(WebsocketEvent::Message(message)) => {
                    if let Some(text) = message.text() {
                        self.take_frame(&text, generation);
                    }
                }
                Ok(WebsocketEvent::Close(close)) => return self.closed(close.code(), generation),
                Err(_) => return self.closed(1006, generation),
            }
        }
        self.closed(1006, generation);
    }

    fn take_frame(self: &Rc<Self>, text: &str, generation: u64) {
        let frame = match parse_frame(text) {
            Ok(frame) => frame,
            Err(error) => return LogLine::warn("gateway_frame_unreadable").platform("Discord").reason(&error).emit(),
        };
        if let Frame::Dispatch { kind, .. } = &frame {
            if kind == "READY" || kind == "RESUMED" {
                self.tell_gate_ready();
            }
        }
        let token = self.config.discord_bot_token.expose().to_string();
        let moves = self.live.borrow_mut().gateway.on_frame(frame, &token, js_sys::Math::random());
        for next in moves {
            self.carry_out(next, generation);
        }
        self.save_seq_if_due();
    }

    /// Saves the session when its `seq` moved and the last save is a few
    /// seconds old (not every frame: a replay after a restart is deduped by the inbox).
    fn save_seq_if_due(&self) {
        if self.live.borrow().gateway.seq_save_due(now_ms()) {
            if let Err(error) = self.save() {
                LogLine::error("gateway_session_not_saved").platform("Discord").reason(&error).emit();
            }
        }
    }

    /// `?shard=i&of=K`, for the gate (None: unsharded).
    fn shard_query(&self) -> Option<String> {
        let shard = self.live.borrow().gateway.session.shard?;
        Some(format!("?shard={}&of={}", shard[0], shard[1]))
    }

    /// Tells the gate this shard is READY or RESUMED (it hands a resharding over).
    fn tell_gate_ready(self: &Rc<Self>) {
        let Some(query) = self.shard_query() else { return };
        let env = self.env.clone();
        wasm_bindgen_futures::spawn_local(async move {
            if let Err(error) = object(&env, GATE_NAME, GatewayRoute::Ready, &query).await {
                LogLine::warn("gateway_gate_unreachable").platform("Discord").reason(&error).emit();
            }
        });
    }

    /// Asks the gate for an IDENTIFY until it grants one, then sends it (on
    /// this connection only). An unsharded session identifies at once.
    async fn identify_when_granted(self: Rc<Self>, generation: u64) {
        if let Some(query) = self.shard_query() {
            loop {
                if self.live.borrow().generation != generation {
                    return;
                }
                let wait_ms = match object(&self.env, GATE_NAME, GatewayRoute::Grant, &query).await {
                    Ok(mut answer) => answer.json::<Value>().await.ok().and_then(|answer| answer["wait_ms"].as_u64()),
                    Err(_) => None,
                };
                match wait_ms {
                    Some(0) => break,
                    Some(wait_ms) => sleep_ms(wait_ms).await,
                    None => sleep_ms(IDENTIFY_RETRY_MS).await,
                }
            }
        }
        let token = self.config.discord_bot_token.expose().to_string();
        let payload = self.live.borrow().gateway.identify(&token);
        if self.live.borrow().generation == generation {
            self.carry_out(Move::Send(payload), generation);
        }
    }

    fn carry_out(self: &Rc<Self>, next: Move, generation: u64) {
        match next {
            Move::Send(payload) => {
                if let Some(socket) = &self.live.borrow().socket {
                    if let Err(error) = socket.send_with_str(payload.to_string()) {
                        LogLine::warn("gateway_send_failed").platform("Discord").reason(&error).emit();
                    }
                }
            }
            Move::Identify => {
                wasm_bindgen_futures::spawn_local(self.clone().identify_when_granted(generation));
            }
            Move::StartHeartbeats { interval_ms, first_after_ms } => {
                wasm_bindgen_futures::spawn_local(self.clone().heartbeat(generation, interval_ms, first_after_ms));
            }
            Move::Deliver { kind, data } => {
                self.live.borrow_mut().last_event_ms = Some(now_ms());
                if kind == "MESSAGE_CREATE" {
                    self.hand_over(&data);
                } else if HEARD_EVENTS.contains(&kind.as_str()) {
                    self.hand_over_heard(&kind, &data);
                }
            }
            Move::Persist => {
                if let Err(error) = self.save() {
                    LogLine::error("gateway_session_not_saved").platform("Discord").reason(&error).emit();
                }
            }
            Move::Reconnect { after_ms, .. } => {
                // RESUME or not was settled in the session; the new socket follows it.
                self.drop_socket(RESUMABLE_CLOSE);
                let shared = self.clone();
                wasm_bindgen_futures::spawn_local(async move {
                    sleep_ms(after_ms).await;
                    if shared.is_enabled() && shared.live.borrow().socket.is_none() {
                        shared.connect().await;
                    }
                });
            }
            Move::Stop => {
                self.drop_socket(1000);
                let failure = self.live.borrow().gateway.session.failure.clone().unwrap_or_default();
                LogLine::error("gateway_stopped").platform("Discord").reason(&failure).emit();
                let _ = self.save();
            }
        }
    }

    /// Closes the current socket (if any) and makes its reader and timers stale.
    fn drop_socket(&self, code: u16) {
        let mut live = self.live.borrow_mut();
        live.generation += 1;
        if let Some(socket) = live.socket.take() {
            let _ = socket.close(Some(code), Some("edgebot reconnects"));
        }
    }

    /// The socket of `generation` closed with `code`.
    fn closed(self: &Rc<Self>, code: u16, generation: u64) {
        let next = {
            let mut live = self.live.borrow_mut();
            if live.generation != generation {
                return;
            }
            live.socket = None;
            live.gateway.on_close(code)
        };
        LogLine::warn("gateway_closed").platform("Discord").field("code", code).emit();
        let _ = self.save();
        self.carry_out(next, generation);
    }

    async fn heartbeat(self: Rc<Self>, generation: u64, interval_ms: u64, first_after_ms: u64) {
        sleep_ms(first_after_ms).await;
        loop {
            if self.live.borrow().generation != generation {
                return;
            }
            let next = self.live.borrow_mut().gateway.on_heartbeat_due();
            self.carry_out(next, generation);
            self.save_seq_if_due();
            sleep_ms(interval_ms).await;
        }
    }

    /// Hands a message to its channel object without waiting for it here: a
    /// slow channel never holds up heartbeats or other conversations. The
    /// channel object dedupes by message id, so a replayed event is answered once.
    fn hand_over(&self, data: &Value) {
        let (bot_user_id, threads) = {
            let session = &self.live.borrow().gateway.session;
            (session.bot_user_id.clone().unwrap_or_default(), session.threads.clone())
        };
        let event = match parse_message_create(data, &bot_user_id, &threads) {
            Ok(Some(event)) => event,
            Ok(None) => return,
            Err(error) => return LogLine::warn("gateway_message_unreadable").platform("Discord").reason(&error).emit(),
        };
        spawn_delivery(self.env.clone(), Handover::Message(Box::new(event)));
    }
}

impl Shared {
    /// An edit, deletion or reaction heard: to its channel object, like a message.
    fn hand_over_heard(&self, kind: &str, data: &Value) {
        let bot_user_id = self.live.borrow().gateway.session.bot_user_id.clone().unwrap_or_default();
        let event = match parse_heard(kind, data, &bot_user_id) {
            Ok(Some(event)) => event,
            Ok(None) => return,
            Err(error) => return LogLine::warn("gateway_heard_unreadable").platform("Discord").reason(&error).emit(),
        };
        spawn_delivery(self.env.clone(), Handover::Heard(event));
    }
}

/// What the Gateway hands to a channel object.
enum Handover {
    Message(Box<InboundEvent>),
    Heard(HeardEvent),
}

/// Delivers a handover without waiting for it here, trying
/// `DELIVERY_ATTEMPTS` times a little apart; the last failure is logged.
fn spawn_delivery(env: Env, handover: Handover) {
    wasm_bindgen_futures::spawn_local(async move {
        let (key, id) = match &handover {
            Handover::Message(event) => (event.conversation_key.clone(), event.delivery_id.clone()),
            Handover::Heard(event) => (event.conversation_key.clone(), event.delivery_id.clone()),
        };
        for attempt in 1..=DELIVERY_ATTEMPTS {
            let delivered = match &handover {
                Handover::Message(event) => deliver(&env, event).await,
                Handover::Heard(event) => deliver_heard(&env, event).await,
            };
            match delivered {
                Ok(_) => return,
                Err(_) if attempt < DELIVERY_ATTEMPTS => sleep_ms(500 * u64::from(attempt)).await,
                Err(error) => {
                    let line = LogLine::error("gateway_delivery_failed").conversation(&key);
                    line.id(&id).platform("Discord").reason(&error).emit();
                }
            }
        }
    });
}

#[derive(Deserialize)]
struct Row {
    enabled: Option<i64>,
    session: String,
}

fn load(sql: &Sql) -> Result<(Option<bool>, Session)> {
    let rows: Vec<Row> = sql.exec("SELECT enabled, session FROM gateway WHERE id = 1", None)?.to_array()?;
    Ok(match rows.into_iter().next() {
        Some(row) => (row.enabled.map(|enabled| enabled != 0), serde_json::from_str(&row.session).unwrap_or_default()),
        None => (None, Session::default()),
    })
}
