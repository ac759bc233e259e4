//! The channel's whole state as versioned slots, and the steps that change it:
//! receiving an inbound, starting a turn, finishing one. Pure: the Durable
//! Object checkpoints the slots this returns as changed.

use serde::{Deserialize, Serialize};

use super::engagement::{decide, Decision, EngagementInput, Triggers};
use super::loop_guard::LoopGuard;
use super::participants::{MembershipCount, Participants};
use super::processes::{ProcessReport, Processes, Timeouts};
use super::sticky::StickyLedger;
use super::versioned::{BinaryOperatorAggregate, Custom, Keyed, LastValue, RingBuffer, Topic, Versioned, VersionsSeen};
use crate::inbound::InboundEvent;
use crate::llm::Usage;

/// Messages the context buffer keeps while the bot watches silently.
pub const CONTEXT_BUFFER_SIZE: usize = 20;
/// Each watched message is cut to this many characters.
pub const CONTEXT_MESSAGE_CHARS: usize = 800;
/// Text bytes the prompt queue holds before later messages are cut to
/// [`OVER_BUDGET_MESSAGE_CHARS`]: the queue is checkpointed as one row, which
/// must stay well inside the storage's 2 MB row limit (the inbox keeps every
/// message whole, up to the platform's own limit).
pub const PROMPT_QUEUE_TEXT_BUDGET: usize = 256 * 1024;
pub const OVER_BUDGET_MESSAGE_CHARS: usize = 500;
/// The actor that runs channel turns.
pub const TURN_ACTOR: &str = "turn";
/// Finished work retriggers the channel after this pause (so bursts coalesce)...
pub const RETRIGGER_DEBOUNCE_MS: i64 = 500;
/// ...at most this many times per user message.
pub const MAX_RETRIGGERS_PER_MESSAGE: u32 = 3;

impl Keyed for ProcessReport {
    fn key(&self) -> &str {
        &self.envelope.id
    }
}

/// Tunables of the channel (from config).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelSettings {
    pub triggers: Triggers,
    pub stickiness: bool,
    pub sticky_window_ms: i64,
    pub aliases: Vec<String>,
    pub debounce_ms: i64,
    pub max_wait_ms: i64,
    pub timeouts: Timeouts,
}

/// An engaged message waiting for (or in) a turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueuedMessage {
    pub event: InboundEvent,
    pub received_at_ms: i64,
}

impl Keyed for QueuedMessage {
    fn key(&self) -> &str {
        &self.event.delivery_id
    }
}

/// A message the bot watched without being addressed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObservedMessage {
    pub delivery_id: String,
    /// The platform's id of the message (to find it when it is edited or deleted).
    #[serde(default)]
    pub message_id: String,
    pub author_name: String,
    pub author_is_bot: bool,
    pub text: String,
    pub received_at_ms: i64,
}

/// A runtime notice appended to a turn's prompt (at most one per turn).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Notice {
    None,
    LoopGuard,
    GroupNudge,
}

/// What a turn works on, fixed when it starts and kept until it finishes, so a
/// crashed turn resumes with exactly the same input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnSnapshot {
    pub id: u64,
    pub queue_version: u64,
    pub messages: Vec<QueuedMessage>,
    pub context: Vec<ObservedMessage>,
    pub notice: Notice,
    /// Work that finished (or asks for input) since the last turn.
    #[serde(default)]
    pub process_events: Vec<ProcessReport>,
    /// Branches and workers still running when the turn began.
    #[serde(default)]
    pub processes: Processes,
    #[serde(default)]
    pub process_version: u64,
    /// Set once the model has answered, so a resumed turn does not lose it.
    #[serde(default)]
    pub result: Option<TurnResult>,
    /// A rate-limited send: the turn resumes no earlier than this.
    #[serde(default)]
    pub not_before_ms: i64,
}

/// When this conversation's next scheduled run is due (the object learns its
/// own conversation key from it: an alarm carries no request).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduleDue {
    pub at_ms: i64,
    pub conversation_key: String,
}

/// The channel's slots.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChannelState {
    pub participants: Custom<Participants>,
    pub sticky: Custom<StickyLedger>,
    pub membership: LastValue<MembershipCount>,
    pub context_buffer: RingBuffer<ObservedMessage>,
    pub prompt_queue: Topic<QueuedMessage>,
    /// Inbounds stored and acknowledged but not yet decided: the first waits
    /// for the member count (read in the alarm, never on the webhook), the
    /// rest arrived behind it and keep their place.
    pub held: Topic<QueuedMessage>,
    pub loop_guard: Custom<LoopGuard>,
    pub multi_human_group: LastValue<bool>,
    pub bot_sends: BinaryOperatorAggregate<u64>,
    pub turns_started: BinaryOperatorAggregate<u64>,
    pub current_turn: LastValue<TurnSnapshot>,
    pub token_usage: BinaryOperatorAggregate<Usage>,
    pub processes: Custom<Processes>,
    pub process_events: Topic<ProcessReport>,
    /// Turns run for finished work since the last user message.
    pub retriggers: Custom<u32>,
    pub versions_seen: Custom<VersionsSeen>,
    /// The nearest due time of this conversation's scheduled jobs (D1 holds
    /// the jobs; the channel's one alarm serves this time too).
    pub schedule_due: LastValue<ScheduleDue>,
}

impl Default for ChannelState {
    fn default() -> Self {
        ChannelState {
            participants: Custom::default(),
            sticky: Custom::default(),
            membership: LastValue::default(),
            context_buffer: RingBuffer::new(CONTEXT_BUFFER_SIZE),
            prompt_queue: Topic::default(),
            held: Topic::default(),
            loop_guard: Custom::default(),
            multi_human_group: LastValue::default(),
            bot_sends: BinaryOperatorAggregate::default(),
            turns_started: BinaryOperatorAggregate::default(),
            current_turn: LastValue::default(),
            token_usage: BinaryOperatorAggregate::default(),
            processes: Custom::default(),
            process_events: Topic::default(),
            retriggers: Custom::default(),
            versions_seen: Custom::default(),
            schedule_due: LastValue::default(),
        }
    }
}

/// What receiving one inbound decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Receipt {
    pub decision: Decision,
    /// When the channel should wake to run a turn, if it should.
    pub wake_at_ms: Option<i64>,
}

fn cut(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}

/// Calls `$callback!` with the name of every slot: the one list that
/// checkpointing and restoring share.
macro_rules! with_slots {
    ($callback:ident) => {
        $callback!(
            participants,
            sticky,
            membership,
            context_buffer,
            prompt_queue,
            held,
            loop_guard,
            multi_human_group,
            bot_sends,
            turns_started,
            current_turn,
            token_usage,
            processes,
            process_events,
            retriggers,
            versions_seen,
            schedule_due
        )
    };
}

macro_rules! slot_names {
    ($($name:ident),*) => { [$(stringify!($name)),*] };
}

/// Every slot's name; a slot's index is its place here.
pub const SLOTS: &[&str] = &with_slots!(slot_names);

impl ChannelState {
    /// The slots whose version differs from `saved` (a slot's index → the
    /// version already persisted), with their index, version and checkpoint
    /// form, in index order: only these need writing.
    pub fn changed_slots(
        &self,
        saved: impl Fn(usize) -> Option<u64>,
    ) -> Result<Vec<(usize, u64, String)>, serde_json::Error> {
        let mut changed = Vec::new();
        let mut index = 0;
        macro_rules! collect {
            ($($name:ident),*) => {$(
                let version = self.$name.version();
                if saved(index) != Some(version) {
                    changed.push((index, version, serde_json::to_string(&self.$name)?));
                }
                index += 1;
            )*};
        }
        with_slots!(collect);
        debug_assert_eq!(index, SLOTS.len());
        Ok(changed)
    }

    /// Rebuilds the state from checkpointed slots; unknown or unreadable slots
    /// start empty (a newer or older layout never bricks a conversation).
    pub fn restore<'a>(slots: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut state = ChannelState::default();
        for (name, body) in slots {
            macro_rules! restore {
                ($($slot:ident),*) => {
                    match name {
                        $(stringify!($slot) => {
                            if let Ok(value) = serde_json::from_str(body) {
                                state.$slot = value;
                            }
                        })*
                        _ => {}
                    }
                };
            }
            with_slots!(restore);
        }
        state
    }

    /// Whether `event` must be held (stored and acknowledged, decided later in
    /// the alarm) rather than decided now: when its decision depends on a
    /// member count the channel does not hold yet (a group without a count,
    /// where one human or several would decide differently: deciding on the
    /// speakers seen so far would answer a new group's first line as if its
    /// one speaker were alone), or when an earlier message is held (messages
    /// are decided in the order they came).
    pub fn must_hold(&self, event: &InboundEvent, settings: &ChannelSettings, now_ms: i64) -> bool {
        if !self.held.items().is_empty() {
            return true;
        }
        if event.is_dm || self.membership.get().is_some() {
            return false;
        }
        let mut participants = self.participants.get().clone();
        participants.record(&event.author.id, &event.author.name, event.author.is_bot, now_ms);
        // A fresh count is ground truth, and the ladder only asks "one human or more?".
        let decide_with_humans = |humans: usize| {
            let others = humans + participants.peer_bot_count();
            let read = MembershipCount { others, truncated: false, fetched_at_ms: now_ms };
            self.decide(event, &participants, Some(&read), settings, now_ms)
        };
        let (alone, among_others) = (decide_with_humans(1), decide_with_humans(2));
        (alone.engages, alone.reason) != (among_others.engages, among_others.reason)
    }

    /// Holds an inbound for the alarm to decide (see [`Self::must_hold`]);
    /// false for one already held or taken.
    pub fn hold(&mut self, event: &InboundEvent, now_ms: i64) -> bool {
        self.held.update([QueuedMessage { event: event.clone(), received_at_ms: now_ms }])
    }

    /// Whether the alarm must read the member count before deciding the held
    /// messages (none is held yet: a turn may have read one meanwhile).
    pub fn held_awaiting_count(&self) -> bool {
        !self.held.items().is_empty() && self.membership.get().is_none()
    }

    /// Decides the held messages in the order they came, each as
    /// [`Self::receive`] would have on arrival, with `read` (the member count
    /// the alarm read, if it came) as ground truth: it was read after they
    /// all arrived, so it already counts their authors. Returns each with its
    /// receipt; holds nothing afterwards, so a second call decides nothing.
    pub fn confirm_held(
        &mut self,
        read: Option<MembershipCount>,
        settings: &ChannelSettings,
    ) -> Vec<(QueuedMessage, Receipt)> {
        if let Some(read) = read {
            self.membership.update([read]);
        }
        let held = self.held.items().to_vec();
        let mut decided = Vec::with_capacity(held.len());
        for message in held {
            if read.is_none() {
                self.update_membership(None, &message.event);
            }
            let receipt = self.receive(&message.event, settings, message.received_at_ms);
            decided.push((message, receipt));
        }
        let keys: Vec<String> = decided.iter().map(|(message, _)| message.event.delivery_id.clone()).collect();
        self.held.remove(&keys);
        decided
    }

    /// Files what is known of the room before deciding on `event`: a count
    /// read for it is complete; without one, a new human voice makes a held
    /// count incomplete (it was read before they spoke), a hint that can only
    /// raise the speakers' count until the next turn reads it again. A peer
    /// bot's first words change nothing: bots never count as humans, and one
    /// the count included is taken off it once known.
    pub fn update_membership(&mut self, read_for_event: Option<MembershipCount>, event: &InboundEvent) {
        if let Some(read) = read_for_event {
            self.membership.update([read]);
            return;
        }
        let new_human = !event.author.is_bot && !self.participants.get().is_known(&event.author.id);
        if let Some(read) = self.membership.get().filter(|read| new_human && !read.truncated) {
            let incomplete = MembershipCount { truncated: true, ..*read };
            self.membership.update([incomplete]);
        }
    }

    /// Takes one inbound: records the speaker, decides, and files the message
    /// into the prompt queue (engage) or the context buffer (observe).
    pub fn receive(&mut self, event: &InboundEvent, settings: &ChannelSettings, now_ms: i64) -> Receipt {
        self.participants.update(|participants| {
            participants.record(&event.author.id, &event.author.name, event.author.is_bot, now_ms)
        });
        let decision = self.decide(event, self.participants.get(), self.membership.get(), settings, now_ms);
        self.multi_human_group.update([decision.multi_human_group]);
        if decision.spends_credit {
            self.sticky.update(|ledger| ledger.spend(&event.author.id, now_ms, settings.sticky_window_ms));
        }
        if !event.author.is_bot {
            self.loop_guard.update(LoopGuard::on_human);
        } else if decision.engages {
            self.loop_guard.update(|guard| {
                guard.on_engaged_peer_bot(now_ms);
                true
            });
        }
        if decision.engages {
            self.retriggers.update(|count| std::mem::replace(count, 0) != 0);
            let queued_bytes: usize = self.prompt_queue.items().iter().map(|queued| queued.event.text.len()).sum();
            let event = match queued_bytes > PROMPT_QUEUE_TEXT_BUDGET {
                true => event.clone().with_text_capped(OVER_BUDGET_MESSAGE_CHARS),
                false => event.clone(),
            };
            self.prompt_queue.update([QueuedMessage { event, received_at_ms: now_ms }]);
        } else {
            self.context_buffer.update([ObservedMessage {
                delivery_id: event.delivery_id.clone(),
                message_id: event.message_id.clone(),
                author_name: event.author.name.clone(),
                author_is_bot: event.author.is_bot,
                text: cut(&event.text, CONTEXT_MESSAGE_CHARS),
                received_at_ms: now_ms,
            }]);
        }
        Receipt { decision, wake_at_ms: self.wake_at(settings, now_ms) }
    }

    /// The ladder over this channel's state, with these participants and count.
    fn decide(
        &self,
        event: &InboundEvent,
        participants: &Participants,
        membership: Option<&MembershipCount>,
        settings: &ChannelSettings,
        now_ms: i64,
    ) -> Decision {
        decide(&EngagementInput {
            event,
            participants,
            membership,
            sticky: self.sticky.get(),
            stickiness: settings.stickiness,
            aliases: &settings.aliases,
            bot_in_thread: *self.bot_sends.get() > 0,
            triggers: settings.triggers,
            now_ms,
        })
    }

    /// When the next turn is due: at once for held messages (to decide them),
    /// for DMs and for a turn to resume;
    /// otherwise after the burst settles (debounce), but never later than the
    /// longest wait after its first message.
    pub fn wake_at(&self, settings: &ChannelSettings, now_ms: i64) -> Option<i64> {
        if !self.held.items().is_empty() {
            return Some(now_ms);
        }
        if let Some(turn) = self.current_turn.get() {
            return Some(turn.not_before_ms.max(now_ms));
        }
        let for_messages = self.queue_wake_at(settings, now_ms);
        // Finished work retriggers the channel, debounced and bounded per user message.
        let for_results = (*self.retriggers.get() < MAX_RETRIGGERS_PER_MESSAGE)
            .then(|| self.process_events.items().last())
            .flatten()
            .map(|event| event.envelope.ts + RETRIGGER_DEBOUNCE_MS);
        // A silent process is given up on at its deadline.
        let for_silence = self.processes.get().next_deadline(settings.timeouts);
        let for_schedules = self.schedule_due.get().map(|due| due.at_ms);
        [for_messages, for_results, for_silence, for_schedules].into_iter().flatten().min()
    }

    fn queue_wake_at(&self, settings: &ChannelSettings, now_ms: i64) -> Option<i64> {
        let queued = self.prompt_queue.items();
        let first = queued.first()?;
        // DMs and commands (a user waiting on a deferred response) skip the debounce.
        if queued.iter().any(|message| message.event.is_dm || message.event.is_command) {
            return Some(now_ms);
        }
        let last = queued.last().map_or(first.received_at_ms, |message| message.received_at_ms);
        Some((last + settings.debounce_ms).min(first.received_at_ms + settings.max_wait_ms))
    }

    /// Queues a scheduled job's run as a message addressed to the bot (no
    /// engagement decision: the job was asked for). Its delivery id names the
    /// run, so a run queued twice is taken once.
    pub fn enqueue_scheduled(&mut self, event: InboundEvent, now_ms: i64) {
        self.retriggers.update(|count| std::mem::replace(count, 0) != 0);
        self.prompt_queue.update([QueuedMessage { event, received_at_ms: now_ms }]);
    }

    /// Records this conversation's nearest schedule due time (None: no job).
    pub fn set_schedule_due(&mut self, due: Option<ScheduleDue>) {
        match due {
            Some(due) if self.schedule_due.get() != Some(&due) => {
                self.schedule_due.update([due]);
            }
            None if self.schedule_due.get().is_some() => {
                self.schedule_due.clear();
            }
            _ => {}
        }
    }

    /// The turn to run now: the one a crash interrupted, or a new one over the
    /// queued messages if the queue moved since the last turn took it.
    pub fn begin_turn(&mut self) -> Option<TurnSnapshot> {
        if let Some(snapshot) = self.current_turn.get() {
            return Some(snapshot.clone());
        }
        let queue_version = self.prompt_queue.version();
        let process_version = self.process_events.version();
        let reads = [("prompt_queue", queue_version), ("process_events", process_version)];
        let has_messages = !self.prompt_queue.items().is_empty();
        let has_results = !self.process_events.items().is_empty()
            && (has_messages || *self.retriggers.get() < MAX_RETRIGGERS_PER_MESSAGE);
        if !(has_messages || has_results) || !self.versions_seen.get().should_run(TURN_ACTOR, &reads) {
            return None;
        }
        if !has_messages {
            self.retriggers.update(|count| {
                *count += 1;
                true
            });
        }
        self.turns_started.update([1]);
        let notice = if self.loop_guard.get().active {
            Notice::LoopGuard
        } else if self.multi_human_group.get().copied().unwrap_or(false) {
            Notice::GroupNudge
        } else {
            Notice::None
        };
        let snapshot = TurnSnapshot {
            id: *self.turns_started.get(),
            queue_version,
            messages: self.prompt_queue.items().to_vec(),
            context: self.context_buffer.items().cloned().collect(),
            notice,
            process_events: self.process_events.items().to_vec(),
            processes: self.processes.get().clone(),
            process_version,
            result: None,
            not_before_ms: 0,
        };
        self.current_turn.update([snapshot.clone()]);
        Some(snapshot)
    }

    /// Records what the model decided (before anything is sent).
    pub fn record_turn_result(&mut self, result: TurnResult) {
        if let Some(snapshot) = self.current_turn.get() {
            let updated = TurnSnapshot { result: Some(result), ..snapshot.clone() };
            self.current_turn.update([updated]);
        }
    }

    /// Postpones the running turn (its sends were rate limited).
    pub fn defer_turn(&mut self, until_ms: i64) {
        if let Some(snapshot) = self.current_turn.get() {
            let updated = TurnSnapshot { not_before_ms: until_ms, ..snapshot.clone() };
            self.current_turn.update([updated]);
        }
    }

    /// What the running turn's model decided, if it has answered yet.
    pub fn current_result(&self) -> TurnResult {
        self.current_turn.get().and_then(|snapshot| snapshot.result).unwrap_or_default()
    }

    /// Closes a turn: its messages leave the queue, the context it showed leaves
    /// the buffer, and the authors it answered get sticky credit (unless the
    /// model disengaged in this same turn).
    pub fn finish_turn(&mut self, outcome: &TurnResult, settings: &ChannelSettings, now_ms: i64) {
        let Some(snapshot) = self.current_turn.get().cloned() else {
            return;
        };
        let handled: Vec<String> = snapshot.messages.iter().map(|message| message.event.delivery_id.clone()).collect();
        self.prompt_queue.remove(&handled);
        let reported: Vec<String> = snapshot.process_events.iter().map(|event| event.envelope.id.clone()).collect();
        self.process_events.remove(&reported);
        // Only the context the turn saw; messages observed meanwhile stay for the next one.
        let shown = self
            .context_buffer
            .items()
            .take_while(|observed| snapshot.context.iter().any(|seen| seen.delivery_id == observed.delivery_id))
            .count();
        self.context_buffer.drop_oldest(shown);
        if outcome.disengaged {
            self.sticky.update(StickyLedger::clear);
        } else if outcome.sent_messages > 0 && settings.stickiness {
            let targets: Vec<&str> = snapshot.messages.iter().map(|message| message.event.author.id.as_str()).collect();
            self.sticky.update(|ledger| ledger.grant(targets, now_ms, settings.sticky_window_ms));
        }
        self.bot_sends.update([outcome.sent_messages]);
        self.token_usage.update([outcome.usage]);
        // The turn saw the queue as it was when it started; anything that came
        // in since moved the version past that and gets the next turn.
        let seen = [("prompt_queue", snapshot.queue_version), ("process_events", snapshot.process_version)];
        self.versions_seen.update(|versions| {
            versions.mark(TURN_ACTOR, &seen);
            true
        });
        self.current_turn.clear();
    }
}

impl TurnSnapshot {
    /// The message the turn answers: the newest one, or for a turn run for
    /// finished work, the message that work was started for.
    pub fn answering(&self) -> Option<&InboundEvent> {
        self.messages
            .last()
            .map(|message| &message.event)
            .or_else(|| self.process_events.first().map(|event| &event.origin))
    }
}

/// What a finished turn did, as far as the channel state cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TurnResult {
    pub sent_messages: u64,
    pub disengaged: bool,
    pub usage: Usage,
}

mod heard_steps;
mod process_steps;

pub use heard_steps::HeardReach;

#[cfg(test)]
mod tests;
