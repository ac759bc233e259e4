//! ChannelObject: one Durable Object per conversation, the conversation's channel.
//!
//! A webhook's inbound is decided on and stored here before the Worker
//! acknowledges it; the turn that answers runs later, from the object's alarm,
//! so no webhook ever waits for a model. The channel's state lives in memory as
//! versioned slots and is checkpointed to the object's SQLite after every step.

mod agent_data;
mod approvals;
mod commit;
mod delegation;
mod delivery;
mod drafts;
mod envelopes;
mod external_post;
mod heard;
mod held;
mod history;
mod history_upkeep;
mod inbox;
mod member_count;
mod notices;
mod outbox;
mod outlet;
mod pending;
mod reply;
mod routes;
mod scheduled_runs;
mod schema;
mod slots;
mod stats;
mod thinking;
mod turn_runner;

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use worker::{
    durable_object, DurableObject, Env, Request, Response, Result, State, WebSocket, WebSocketIncomingMessage,
};

use crate::channel::checkpoint::Checkpoint;
use crate::channel::deliveries::Deliveries;
use crate::channel::engagement::Decision;
use crate::channel::state::ChannelState;
use crate::config::Config;
use crate::inbound::{Author, InboundEvent, ReplyAddress};
use crate::log_line::LogLine;
use crate::platforms::web_chat::messenger::{self as web_chat, CHAT};
use crate::process::envelope::{Envelope, MessageType};
use crate::reply::outbox::OutboxStatus;
use crate::runtime::config;
use crate::runtime::durable::{self, MeteredStorage};
use crate::runtime::http::{now_ms, sleep_ms};
use crate::runtime::log::Emit;
use reply::Reply;

/// How long the alarm waits for the member count before deciding the held
/// messages without it (no webhook ever waits for it).
const MEMBER_COUNT_TIMEOUT_MS: u64 = 1_500;
/// How a held inbound shows in the decision log until the alarm decides it.
const HELD_DECISION: &str = "held";
const HELD_REASON: &str = "awaiting the member count";
/// The dashboard's conversation index is written at most this often per conversation.
const INDEX_FLUSH_DELAY_MS: u64 = 5_000;
/// How many lines of a web chat a page gets when it (re)connects.
const CHAT_HISTORY_LINES: usize = 200;

/// The Durable Object the runtime makes: its channel, shared, so a call
/// that waits can hold it past the call that began it
/// ([`ChannelObject::post`] answers at once when nothing waits).
#[durable_object]
pub struct ChannelObject {
    channel: Rc<Channel>,
}

/// One conversation's channel: what the object keeps while it lives.
pub struct Channel {
    state: State,
    env: Env,
    /// Vars do not change while the object lives.
    config: Rc<Config>,
    /// The channel's state machine, as the last checkpoint left it plus what moved since.
    machine: RefCell<ChannelState>,
    /// What storage holds of the state, so a checkpoint is written only when a slot moved.
    saved: RefCell<Checkpoint>,
    /// The inbox's delivery ids, the webhook dedupe ([`Self::deliveries`]).
    deliveries: Rc<RefCell<Option<Deliveries>>>,
    /// Whether an approval's message waits for its decision (an inbound may
    /// be its typed answer), once read; approvals.rs forgets it when it asks
    /// or settles one.
    approval_waiting: Cell<Option<bool>>,
    /// A write of the conversation index is already on its way.
    index_flush_pending: Rc<Cell<bool>>,
    /// The index row as this object last wrote it to D1 (an unchanged row is not written again).
    index_written: Rc<RefCell<Option<crate::conversations::store::Conversation>>>,
    /// What the turns read in the shared database, reused while fresh (agent_data.rs).
    shared_reads: RefCell<Option<agent_data::Kept>>,
    /// The unsent-piece count last written to D1 (None: not yet by this object).
    reported_unsent: Cell<Option<i64>>,
    /// When the chat may next be called (a platform's rate limit, the edit
    /// pace): drafts and delivery both keep it. A rate limit longer than a
    /// moment also sets the alarm, so the wait survives the object.
    pace: Cell<crate::reply::pace::Pace>,
    /// The held row, `history_meta` and the people's sightings, once read
    /// (channel::memo: the object is their only writer).
    held: held::Kept,
    history_meta: history::MetaKept,
    seen: commit::Seen,
    /// Alarm runs in a row that failed (a turn still unrun after
    /// [`crate::channel::turn::APOLOGISE_AFTER_FAILURES`] ends in the apology).
    alarm_failures: Cell<u32>,
}

impl DurableObject for ChannelObject {
    fn new(state: State, env: Env) -> Self {
        ChannelObject { channel: Rc::new(Channel::new(state, env)) }
    }

    async fn fetch(&self, request: Request) -> Result<Response> {
        self.channel.fetch(request).await
    }

    async fn alarm(&self) -> Result<Response> {
        self.channel.alarm().await
    }

    async fn websocket_message(&self, socket: WebSocket, message: WebSocketIncomingMessage) -> Result<()> {
        self.channel.websocket_message(socket, message).await
    }

    async fn websocket_close(&self, socket: WebSocket, _code: usize, _reason: String, _clean: bool) -> Result<()> {
        let _ = socket.close(Some(1000), Some("bye"));
        Ok(())
    }

    async fn websocket_error(&self, _socket: WebSocket, _error: worker::Error) -> Result<()> {
        Ok(())
    }
}

impl Channel {
    fn new(state: State, env: Env) -> Self {
        let sql = state.storage().counted_sql();
        schema::prepare(&sql);
        let (machine, saved) = slots::load(&sql).unwrap_or_else(|error| {
            LogLine::error("channel_state_unreadable").field("recovery", "starting empty").reason(&error).emit();
            Default::default()
        });
        Channel {
            config: config::load(&env),
            state,
            env,
            machine: RefCell::new(machine),
            saved: RefCell::new(saved),
            deliveries: Rc::default(),
            approval_waiting: Cell::new(None),
            index_flush_pending: Rc::default(),
            index_written: Rc::default(),
            shared_reads: RefCell::default(),
            reported_unsent: Cell::new(None),
            pace: Cell::default(),
            held: Default::default(),
            history_meta: Default::default(),
            seen: Default::default(),
            alarm_failures: Cell::new(0),
        }
    }

    async fn fetch(&self, request: Request) -> Result<Response> {
        durable::served(self.serve(request)).await
    }

    /// Runs what is due. A run that fails is rescheduled here, with a
    /// backoff, before the platform's few retries of a failing alarm could
    /// give up on it; a turn whose runs keep failing ends in the apology
    /// (`turn_runner`), and the cron's sweeper wakes whatever still waits.
    async fn alarm(&self) -> Result<Response> {
        durable::served(async {
            match turn_runner::run(self).await {
                Ok(()) => self.alarm_failures.set(0),
                Err(error) => {
                    let failures = self.alarm_failures.get() + 1;
                    self.alarm_failures.set(failures);
                    let retry_in = crate::channel::turn::alarm_retry_ms(failures);
                    LogLine::error("alarm_failed")
                        .field("failures", failures)
                        .field("retry_in_ms", retry_in)
                        .reason(&error)
                        .emit();
                    self.state.storage().set_alarm_counted(retry_in as i64).await?;
                }
            }
            Response::ok("")
        })
        .await
    }

    /// Dashboards only listen; a web chat says hello (and gets the
    /// conversation so far) or sends a message.
    async fn websocket_message(&self, socket: WebSocket, message: WebSocketIncomingMessage) -> Result<()> {
        crate::ops::count(crate::ops::Op::DoWebSocketMessage);
        let tags = self.state.get_tags(&socket);
        let WebSocketIncomingMessage::String(text) = message else {
            return Ok(());
        };
        if !tags.iter().any(|tag| tag == CHAT) {
            return Ok(());
        }
        let tag = |prefix: &str| tags.iter().find_map(|tag| tag.strip_prefix(prefix)).unwrap_or_default().to_string();
        match serde_json::from_str::<ChatIn>(&text) {
            Ok(ChatIn::Hello) => web_chat::send_to(&socket, &self.chat_history()?),
            Ok(ChatIn::Send { id, text, files }) => {
                // A message refused is said to the page that sent it, not dropped in silence.
                if let Err(why) = self.receive_chat(&tag("key:"), &tag("role:"), &id, &text, &files).await? {
                    web_chat::send_to(&socket, &serde_json::json!({ "type": "error", "id": id, "message": why }));
                }
            }
            Err(_) => web_chat::send_to(&socket, &serde_json::json!({ "type": "error", "message": "unreadable" })),
        }
        Ok(())
    }
}

/// What a web-chat page sends.
#[derive(serde::Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ChatIn {
    Hello,
    /// `id` is the page's own id for the message: a resend after a
    /// reconnect carries the same one and is taken once.
    /// `files` are upload tokens (`POST /api/chat/files`), at most
    /// [`crate::files::rules::FILES_PER_MESSAGE`]; a message may be files alone.
    Send {
        id: String,
        #[serde(default)]
        text: String,
        #[serde(default)]
        files: Vec<String>,
    },
}

impl Channel {
    /// Takes in a report from a branch; a new one retriggers the channel.
    async fn receive_process_event(&self, body: &str) -> Result<Reply> {
        let Ok(envelope) = json_body::<Envelope>(body) else {
            return Ok(Reply::error("malformed envelope", 400));
        };
        // Heartbeats (empty progress) only keep a worker alive; they are not logged.
        let is_heartbeat = envelope.kind == MessageType::Status && envelope.body.is_empty();
        if !is_heartbeat {
            envelopes::log(&self.state.storage().counted_sql(), &envelope)?;
        }
        let accepted = self.step(|machine| machine.receive_process_event(envelope))?;
        web_chat::changed(&self.state, "processes");
        let now = now_ms();
        let wake_at = self.machine.borrow().wake_at(&self.config.channel, now);
        if let Some(wake_at) = wake_at.filter(|_| accepted) {
            self.state.storage().set_alarm_counted((wake_at - now).max(0)).await?;
        }
        Reply::json(&serde_json::json!({ "ok": true, "accepted": accepted }))
    }

    /// Decides on one inbound and stores it, once per delivery id; wakes the
    /// channel when a turn is due.
    async fn receive(&self, text: &str) -> Result<Reply> {
        let Ok(event) = json_body::<InboundEvent>(text) else {
            return Ok(Reply::error("malformed inbound event", 400));
        };
        let sql = self.state.storage().counted_sql();
        // One statement for what every inbound asks first.
        let arrival = inbox::arrival(&sql, &mut *self.deliveries()?, &self.approval_waiting, &event.delivery_id)?;
        let admission = if arrival.seen {
            None
        } else if arrival.approval_waiting {
            if approvals::typed_answer(self, &event).await? {
                inbox::store_answer(&sql, &mut *self.deliveries()?, &event, now_ms())?;
                return Reply::json(&serde_json::json!({ "ok": true, "decision": "answer" }));
            }
            // The wait let other requests in: `admit` checks the delivery id again.
            self.admit(&event).await?
        } else {
            // Nothing awaited since the check: the event is new, its counts
            // are the latest, and it is stored as it came.
            self.admit_new(&event, Some(text), arrival.latest).await?
        };
        let (decision, reason) = match admission {
            None => {
                let duplicate = Acknowledged { decision: None, duplicate: Some(true), ok: true, reason: None };
                return Reply::json(&duplicate);
            }
            Some(Admission::Decided(decision)) => (decision.label(), decision.reason.as_str()),
            Some(Admission::Held) => (HELD_DECISION, HELD_REASON),
        };
        Reply::json(&Acknowledged { decision: Some(decision), duplicate: None, ok: true, reason: Some(reason) })
    }

    /// The one way an inbound comes in, from any platform: decided on (or
    /// held for the alarm to decide), stored and counted once per delivery id
    /// (None for a repeat). Nothing here waits on a platform.
    async fn admit(&self, event: &InboundEvent) -> Result<Option<Admission>> {
        let sql = self.state.storage().counted_sql();
        let arrival = inbox::arrival(&sql, &mut *self.deliveries()?, &self.approval_waiting, &event.delivery_id)?;
        if arrival.seen {
            return Ok(None);
        }
        self.admit_new(event, None, arrival.latest).await
    }

    /// [`Self::admit`] for an inbound whose delivery id was just found new,
    /// with the conversation's `latest` counts read then (no await since);
    /// `text`: the event as JSON when the caller has it, so the inbox stores
    /// it without encoding it again.
    async fn admit_new(
        &self,
        event: &InboundEvent,
        text: Option<&str>,
        latest: Option<stats::Counts>,
    ) -> Result<Option<Admission>> {
        let sql = self.state.storage().counted_sql();
        let now = now_ms();
        if self.machine.borrow().must_hold(event, &self.config.channel, now) {
            // Stored and acknowledged now; the alarm reads the member count
            // and decides (confirm_held). The checkpoint keeps it across a crash.
            self.step(|machine| machine.hold(event, now))?;
            inbox::store_held(&sql, &mut *self.deliveries()?, event, HELD_DECISION, HELD_REASON, now)?;
            self.state.storage().set_alarm_counted(0).await?;
            web_chat::changed(&self.state, "events");
            return Ok(Some(Admission::Held));
        }
        let receipt = self.step_filed(
            |machine| {
                machine.update_membership(None, event);
                machine.receive(event, &self.config.channel, now)
            },
            |receipt, checkpoint| {
                let counts = stats::next(latest, event, receipt.decision.engages, now);
                inbox::store(&sql, &mut *self.deliveries()?, event, text, &receipt.decision, &counts, checkpoint, now)
            },
        )?;
        if let Some(wake_at) = receipt.wake_at_ms {
            self.state.storage().set_alarm_counted((wake_at - now).max(0)).await?;
        }
        web_chat::changed(&self.state, "events");
        self.flush_index_soon();
        Ok(Some(Admission::Decided(receipt.decision)))
    }

    /// Decides the inbounds held for the member count, from the alarm and
    /// before any turn begins: reads the count (when none is held), then
    /// decides them in the order they came with the same ladder as
    /// [`Self::admit`], and records in the inbox what was read and when.
    /// The decision and the checkpoint that moves the messages out of `held`
    /// are one step with their inbox rows (no await between), so a crash
    /// before it leaves them held for the next alarm to decide, and one after
    /// leaves nothing held: each is decided once.
    pub(super) async fn confirm_held(&self) -> Result<()> {
        let (first, needs_count) = {
            let machine = self.machine.borrow();
            (machine.held.items().first().cloned(), machine.held_awaiting_count())
        };
        let Some(first) = first else {
            return Ok(());
        };
        let (read, note) = match needs_count {
            true => self.read_member_count(&first.event).await,
            false => (None, None),
        };
        let sql = self.state.storage().counted_sql();
        let decided = self.step(|machine| machine.confirm_held(read, &self.config.channel))?;
        let humans = read.map(|read| read.humans(self.machine.borrow().participants.get()));
        for (message, receipt) in &decided {
            let note = note.as_ref().map(|note| note.describe(message.received_at_ms, humans));
            let latest = stats::latest(&sql)?;
            let counts = stats::next(latest, &message.event, receipt.decision.engages, message.received_at_ms);
            let mut deliveries = self.deliveries()?;
            inbox::decide_held(
                &sql,
                &mut deliveries,
                &message.event.delivery_id,
                &receipt.decision,
                note.as_deref(),
                &counts,
            )?;
        }
        web_chat::changed(&self.state, "events");
        self.flush_index_soon();
        Ok(())
    }

    /// A message typed in the web chat: shown to every page of the chat and
    /// taken in like any platform's (a web chat is a DM with the bot).
    async fn receive_chat(
        &self,
        conversation_key: &str,
        role: &str,
        id: &str,
        text: &str,
        files: &[String],
    ) -> Result<std::result::Result<(), &'static str>> {
        let Some(address) = ReplyAddress::for_conversation(conversation_key) else {
            return Ok(Err("this chat has no conversation"));
        };
        // The turn finds each upload by its token in this conversation (src/files/store.rs).
        let Some(attachments) = crate::files::rules::uploaded(files) else {
            return Ok(Err("a message names at most 4 uploads, each by the token its upload answered"));
        };
        if !crate::inbound::is_web_session(id) {
            return Ok(Err("a message's id is 8 to 64 letters, digits and dashes"));
        }
        if text.trim().is_empty() && attachments.is_empty() {
            return Ok(Err("the message is empty"));
        }
        let name = if role == "operator" { "Operator" } else { "Guest" };
        let author = Author { id: format!("{conversation_key}:{role}"), name: name.into(), is_bot: false };
        let mut event =
            InboundEvent::new(conversation_key.into(), format!("web:{id}"), id.into(), author, text.into(), address)
                .with_text_capped(web_chat::MESSAGE_LIMIT);
        event.is_dm = true;
        event.timestamp_ms = now_ms();
        event.conversation_title = Some(format!("Web chat ({})", role));
        event.attachments = attachments;
        if self.admit(&event).await?.is_some() {
            let text = crate::files::rules::chat_text(&event.text, event.attachments.len());
            let line = web_chat::chat_message(&format!("in:{}", event.delivery_id), "user", name, &text, now_ms());
            web_chat::push(&self.state, CHAT, &line);
        }
        Ok(Ok(()))
    }

    /// The web chat so far (its newest lines), and whether a turn is under way.
    fn chat_history(&self) -> Result<serde_json::Value> {
        let sql = self.state.storage().counted_sql();
        let mut lines: Vec<(i64, serde_json::Value)> = inbox::events(&sql)?
            .into_iter()
            .filter(|record| record.status != "heard")
            .map(|record| {
                let text = record.event["text"].as_str().unwrap_or_default();
                let files = record.event["attachments"].as_array().map_or(0, Vec::len);
                let author = record.event["author"]["name"].as_str().unwrap_or_default();
                let line = web_chat::chat_message(
                    &format!("in:{}", record.delivery_id),
                    "user",
                    author,
                    &crate::files::rules::chat_text(text, files),
                    record.received_at,
                );
                (record.received_at, line)
            })
            .collect();
        let working = inbox::has_queued(&sql)?;
        // `recent` is newest first; oldest first here, so the stable sort by
        // time below keeps a split reply's pieces (one `created_at`) in order.
        for entry in outbox::recent(&sql, CHAT_HISTORY_LINES as i64)?
            .into_iter()
            .rev()
            .filter(|entry| entry.status == OutboxStatus::Sent)
        {
            let mut line = web_chat::chat_message(
                &web_chat::reply_id(&entry.id),
                "assistant",
                &self.config.bot_name,
                &entry.text,
                entry.created_at,
            );
            // An approval still waiting shows its buttons again.
            if let Some(approval) = &entry.approval_id {
                web_chat::with_buttons(&mut line, approval);
            }
            lines.push((entry.created_at, line));
        }
        crate::sorting::sort_by(&mut lines, |a, b| a.0.cmp(&b.0));
        let skip = lines.len().saturating_sub(CHAT_HISTORY_LINES);
        let messages: Vec<serde_json::Value> = lines.into_iter().skip(skip).map(|(_, line)| line).collect();
        Ok(serde_json::json!({ "type": "history", "messages": messages, "working": working }))
    }

    /// The inbox's delivery ids, read from storage on the first use after a
    /// start (not in `new`: a start for a dashboard or an alarm without
    /// inbounds does not read them, and a failed read fails the request
    /// rather than taking every id for new). Never held across an await.
    fn deliveries(&self) -> Result<std::cell::RefMut<'_, Deliveries>> {
        if self.deliveries.borrow().is_none() {
            let read = inbox::deliveries(&self.state.storage().counted_sql())?;
            *self.deliveries.borrow_mut() = Some(read);
        }
        Ok(std::cell::RefMut::map(self.deliveries.borrow_mut(), |held| held.get_or_insert_with(Deliveries::default)))
    }

    /// Sends the conversation's counts to the dashboard's index a moment
    /// from now, once for however many inbounds arrive meanwhile; never on
    /// the webhook's path. The row goes to the index queue, whose consumer
    /// writes many conversations' rows in one D1 statement: no inbound makes
    /// a D1 statement of its own. Then the inbox forgets its rows past their
    /// retention ([`inbox::sweep`]).
    fn flush_index_soon(&self) {
        if self.index_flush_pending.replace(true) {
            return;
        }
        let (pending, sql, env) =
            (self.index_flush_pending.clone(), self.state.storage().counted_sql(), self.env.clone());
        let (written, deliveries) = (self.index_written.clone(), self.deliveries.clone());
        wasm_bindgen_futures::spawn_local(async move {
            sleep_ms(INDEX_FLUSH_DELAY_MS).await;
            pending.set(false);
            stats::write_index(&sql, &env, &written, stats::IndexWrite::Queued).await;
            // Read by the inbound that asked for this flush (none read: nothing filed).
            if let Some(deliveries) = deliveries.borrow_mut().as_mut() {
                if let Err(error) = inbox::sweep(&sql, deliveries, now_ms()) {
                    LogLine::error("inbox_sweep_failed").reason(&error).emit();
                }
            }
        });
    }

    /// Writes the conversation's index now: a turn resumed after its run
    /// broke off (the Worker stopped mid-turn) tells the sweeper it waits
    /// before anything else, since the write the inbound scheduled may have
    /// died with the run.
    async fn flush_index_now(&self) {
        let sql = self.state.storage().counted_sql();
        stats::write_index(&sql, &self.env, &self.index_written, stats::IndexWrite::Now).await;
    }
}

impl Channel {
    /// Starts a worker for a task the ready-task loop claimed: it runs and
    /// reports like any worker of this conversation, so its outcome reaches
    /// the person. A repeated start of the same worker starts nothing new;
    /// 409 when the conversation has no room for another worker.
    async fn start_task_worker(&self, body: &str) -> Result<Reply> {
        #[derive(serde::Deserialize)]
        struct Start {
            id: String,
            task: String,
            conversation_key: String,
        }
        let Ok(start) = json_body::<Start>(body) else {
            return Ok(Reply::error("malformed task start", 400));
        };
        if self.machine.borrow().processes.get().get(&start.id).is_some() {
            return Ok(Reply::done());
        }
        let Some(address) = ReplyAddress::for_conversation(&start.conversation_key) else {
            return Ok(Reply::error("not a conversation key", 400));
        };
        let author = Author { id: "cortex".into(), name: "Task board".into(), is_bot: false };
        let origin = InboundEvent::new(
            start.conversation_key,
            start.id.clone(),
            String::new(),
            author,
            start.task.clone(),
            address,
        );
        Ok(match delegation::start_worker(self, &start.id, &start.task, false, origin).await? {
            true => Reply::done(),
            false => Reply::error("no room for another worker", 409),
        })
    }
}

/// The object's answer to an inbound, encoded without building a JSON value
/// first (fields in the order `json!` gave them: the same bytes).
#[derive(serde::Serialize)]
struct Acknowledged<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    decision: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    duplicate: Option<bool>,
    ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
}

/// How an inbound was taken in.
enum Admission {
    Decided(Decision),
    /// Stored and acknowledged; the alarm decides it once the member count is read.
    Held,
}

/// Parses a `POST` route's JSON body (by RPC or `fetch`, routes.rs) with
/// serde_json: these types are read from storage the same way, so the bundle
/// carries one deserializer for each.
fn json_body<T: serde::de::DeserializeOwned>(body: &str) -> Result<T> {
    Ok(serde_json::from_str(body)?)
}
