//! The channel's whole state as versioned slots, and the steps that change it:
//! receiving an inbound, starting a turn, finishing one. Pure: the Durable
//! Object checkpoints the slots this returns as changed.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::engagement::{decide, Decision, EngagementInput, Triggers};
use super::loop_guard::LoopGuard;
use super::participants::{MembershipCount, Participants};
use super::processes::{ProcessReport, ProcessStatus, Processes, Received, Refusal, Timeouts};
use super::sticky::StickyLedger;
use super::versioned::{BinaryOperatorAggregate, Custom, Keyed, LastValue, RingBuffer, Topic, Versioned, VersionsSeen};
use crate::inbound::InboundEvent;
use crate::llm::Usage;
use crate::process::envelope::Envelope;

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

impl ChannelState {
    /// The slots whose version differs from `saved` (name → version already
    /// persisted), with their checkpoint form: only these need writing.
    pub fn changed_slots(
        &self,
        saved: &BTreeMap<String, u64>,
    ) -> Result<Vec<(&'static str, u64, String)>, serde_json::Error> {
        let mut changed = Vec::new();
        macro_rules! collect {
            ($($name:ident),*) => {$(
                let version = self.$name.version();
                if saved.get(stringify!($name)) != Some(&version) {
                    changed.push((stringify!($name), version, serde_json::to_string(&self.$name)?));
                }
            )*};
        }
        with_slots!(collect);
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

    /// Records a process the turn started; false when its kind is at its limit.
    pub fn start_process(&mut self, id: &str, status: ProcessStatus) -> bool {
        let mut started = false;
        self.processes.update(|processes| {
            started = processes.start(id, status);
            started
        });
        started
    }

    /// Takes in a process's envelope; returns whether the channel should wake
    /// for it (a result or a question, not progress). Repeats are dropped.
    pub fn receive_process_event(&mut self, envelope: Envelope) -> bool {
        let mut received = Received::Ignored;
        self.processes.update(|processes| {
            received = processes.receive(envelope);
            received != Received::Ignored
        });
        match received {
            Received::Report(report) => self.process_events.update([*report]),
            Received::Progress | Received::Ignored => false,
        }
    }

    /// Marks an interactive worker as working on a follow-up.
    pub fn route_to_process(&mut self, id: &str, now_ms: i64) -> Result<(), Refusal> {
        let mut outcome = Ok(());
        self.processes.update(|processes| {
            outcome = processes.route(id);
            if outcome.is_ok() {
                processes.heard_from(id, now_ms);
            }
            outcome.is_ok()
        });
        outcome
    }

    /// Gives up on processes silent past their timeout: the person hears it in
    /// the next turn. Returns the failure reports, for the edge to stop what
    /// was given up.
    pub fn expire_processes(&mut self, now_ms: i64, settings: &ChannelSettings) -> Vec<(String, ProcessReport)> {
        let mut expired = Vec::new();
        self.processes.update(|processes| {
            expired = processes.expire(now_ms, settings.timeouts);
            !expired.is_empty()
        });
        self.process_events.update(expired.iter().map(|(_, report)| report.clone()));
        expired
    }

    /// Stops tracking a process; returns what it was.
    pub fn cancel_process(&mut self, id: &str) -> Result<ProcessStatus, Refusal> {
        let mut outcome = Err(Refusal::Unknown(id.to_string()));
        self.processes.update(|processes| {
            outcome = processes.cancel(id);
            outcome.is_ok()
        });
        outcome
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channel::engagement::Reason;
    use crate::channel::processes::{ProcessKind, MAX_CONCURRENT_BRANCHES};
    use crate::inbound::Author;
    use crate::process::envelope::MessageType;

    fn settings() -> ChannelSettings {
        ChannelSettings {
            triggers: Triggers::default(),
            stickiness: true,
            sticky_window_ms: 15 * 60 * 1000,
            aliases: vec!["edgebot".into()],
            debounce_ms: 1_500,
            max_wait_ms: 5_000,
            timeouts: Timeouts::default(),
        }
    }

    fn message(delivery: u32, author: &str, text: &str) -> InboundEvent {
        let author = Author { id: author.into(), name: author.into(), is_bot: author.ends_with("bot") };
        InboundEvent::plain_text(-5, &delivery.to_string(), author, text)
    }

    fn mention(delivery: u32, author: &str, text: &str) -> InboundEvent {
        InboundEvent { is_bot_mention: true, ..message(delivery, author, text) }
    }

    /// A group whose fresh member list shows three humans, so plain chatter observes.
    fn busy_state() -> ChannelState {
        let mut state = ChannelState::default();
        state.membership.update([MembershipCount { others: 3, truncated: false, fetched_at_ms: 0 }]);
        state
    }

    fn replied() -> TurnResult {
        TurnResult { sent_messages: 1, ..TurnResult::default() }
    }

    #[test]
    fn observed_messages_reach_the_next_turn_once() {
        let mut state = busy_state();
        let settings = settings();
        state.receive(&message(1, "ada", "lunch?"), &settings, 0);
        let receipt = state.receive(&message(2, "bo", "sure"), &settings, 10);
        assert!(!receipt.decision.engages);
        assert_eq!(receipt.wake_at_ms, None, "observing never wakes the channel");
        state.receive(&mention(3, "ada", "edgebot where?"), &settings, 20);

        let turn = state.begin_turn().expect("a turn");
        assert_eq!(
            turn.context.iter().map(|observed| observed.text.as_str()).collect::<Vec<_>>(),
            vec!["lunch?", "sure"]
        );
        assert_eq!(turn.messages.len(), 1);
        assert_eq!(turn.notice, Notice::GroupNudge, "two humans: the group nudge");
        state.finish_turn(&replied(), &settings, 30);
        assert!(state.context_buffer.is_empty());
        assert!(state.begin_turn().is_none(), "the turn's own writes do not retrigger it");
    }

    #[test]
    fn the_context_buffer_keeps_twenty_messages_cut_to_800_chars() {
        let mut state = busy_state();
        let settings = settings();
        state.receive(&message(100, "ada", "hi"), &settings, 0);
        state.receive(&message(101, "bo", "hi"), &settings, 0);
        for index in 0..25 {
            state.receive(&message(index, "bo", &"x".repeat(1_000)), &settings, 0);
        }
        assert_eq!(state.context_buffer.len(), CONTEXT_BUFFER_SIZE);
        assert!(state
            .context_buffer
            .items()
            .all(|observed| observed.text.chars().count() == CONTEXT_MESSAGE_CHARS + 1));
    }

    #[test]
    fn messages_arriving_during_a_turn_get_the_next_turn_and_are_never_lost_or_doubled() {
        let mut state = busy_state();
        let settings = settings();
        state.receive(&mention(1, "ada", "first"), &settings, 0);
        let first = state.begin_turn().unwrap();
        assert!(state.receive(&mention(2, "ada", "second"), &settings, 5).decision.engages);
        assert_eq!(state.begin_turn().unwrap(), first, "while a turn runs, it is the turn");
        state.finish_turn(&replied(), &settings, 10);

        let second = state.begin_turn().expect("the late message gets its own turn");
        assert_eq!(second.messages.iter().map(|m| m.event.text.as_str()).collect::<Vec<_>>(), vec!["second"]);
        assert!(second.id > first.id);
        state.finish_turn(&replied(), &settings, 20);
        assert!(state.begin_turn().is_none());
        state.receive(&mention(2, "ada", "second"), &settings, 30);
        assert!(state.prompt_queue.items().is_empty(), "a redelivered message is not queued again");
    }

    #[test]
    fn a_reply_grants_sticky_credit_and_disengage_in_the_same_turn_does_not() {
        let settings = settings();
        let mut state = busy_state();
        state.receive(&message(1, "bo", "hey all"), &settings, 0);
        state.receive(&mention(2, "ada", "edgebot help"), &settings, 0);
        state.begin_turn().unwrap();
        state.finish_turn(&replied(), &settings, 10);
        let follow_up = state.receive(&message(3, "ada", "and then?"), &settings, 20);
        assert_eq!(follow_up.decision.reason, Reason::Sticky);
        state.begin_turn().unwrap();
        state.finish_turn(&TurnResult { sent_messages: 1, disengaged: true, usage: Usage::default() }, &settings, 30);
        let after = state.receive(&message(4, "ada", "more?"), &settings, 40);
        assert!(!after.decision.engages, "disengage keeps the credit cleared despite the same-turn reply");
    }

    #[test]
    fn a_flood_of_long_messages_during_a_turn_keeps_the_queue_inside_its_budget() {
        let settings = settings();
        let mut state = busy_state();
        state.receive(&mention(0, "ada", "edgebot, start"), &settings, 0);
        state.begin_turn().unwrap();
        for delivery in 1..=200 {
            state.receive(&mention(delivery, "ada", &"x".repeat(40_000)), &settings, delivery as i64);
        }
        assert_eq!(state.prompt_queue.items().len(), 201, "every message is queued");
        let whole = state.prompt_queue.items().iter().filter(|queued| queued.event.text.len() == 40_000).count();
        assert_eq!(whole, PROMPT_QUEUE_TEXT_BUDGET / 40_000 + 1, "whole until the budget is passed");
        let body = serde_json::to_string(state.prompt_queue.items()).unwrap();
        assert!(body.len() < 1_000_000, "the checkpoint row stays far from the 2 MB limit: {}", body.len());
        assert!(state.prompt_queue.items().last().unwrap().event.text.ends_with("more characters]"));
    }

    fn count(others: usize, fetched_at_ms: i64) -> MembershipCount {
        MembershipCount { others, truncated: false, fetched_at_ms }
    }

    fn settings_without_stickiness() -> ChannelSettings {
        ChannelSettings { stickiness: false, ..settings() }
    }

    #[test]
    fn only_a_decision_that_depends_on_the_member_count_is_held_for_it() {
        let settings = settings();
        let mut state = ChannelState::default();
        let first = message(1, "ada", "hello?");
        assert!(state.must_hold(&first, &settings, 0), "a new group: one human or several decide differently");
        assert!(!state.must_hold(&mention(1, "ada", "edgebot?"), &settings, 0), "a mention engages anyway");
        assert!(!state.must_hold(&InboundEvent { is_dm: true, ..first.clone() }, &settings, 0), "a DM has no room");
        assert!(!state.must_hold(&message(1, "helperbot", "hi"), &settings, 0), "a peer bot never gets the solo rung");
        let elsewhere = InboundEvent { reply_to_other_message_id: Some("7".into()), ..first.clone() };
        assert!(!state.must_hold(&elsewhere, &settings, 0), "a reply to someone else is observed either way");
        let thread = InboundEvent { thread: Some("t1".into()), ..first.clone() };
        assert!(state.must_hold(&thread, &settings, 0), "a new thread: a fresh count of one opens it");
        state.membership.update([count(1, 100)]);
        assert!(!state.must_hold(&first, &settings, 200), "a count is held: decided at once");
    }

    #[test]
    fn held_messages_are_decided_in_order_with_the_count_read_in_the_alarm() {
        let settings = settings();
        for (others, expected) in [
            (1, vec![(true, Reason::SoloHuman), (true, Reason::Mention)]),
            (4, vec![(false, Reason::NotAddressed), (true, Reason::Mention)]),
        ] {
            let mut state = ChannelState::default();
            let first = message(1, "ada", "is the build broken?");
            assert!(state.must_hold(&first, &settings, 1_000));
            assert!(state.hold(&first, 1_000));
            assert!(!state.hold(&first, 1_000), "a repeat is held once");
            let second = mention(2, "ada", "edgebot?");
            assert!(state.must_hold(&second, &settings, 1_200), "behind a held message, even a mention waits");
            state.hold(&second, 1_200);
            assert_eq!(state.wake_at(&settings, 1_300), Some(1_300), "the alarm comes at once to decide them");
            assert!(state.begin_turn().is_none(), "nothing is queued before they are decided");
            assert!(state.held_awaiting_count());

            let decided = state.confirm_held(Some(count(others, 1_500)), &settings);
            let got: Vec<_> =
                decided.iter().map(|(_, receipt)| (receipt.decision.engages, receipt.decision.reason)).collect();
            assert_eq!(got, expected, "{others} other member(s)");
            assert!(state.held.items().is_empty() && !state.held_awaiting_count());
            assert!(
                state.confirm_held(Some(count(others, 1_600)), &settings).is_empty(),
                "a second confirmation decides nothing"
            );
            let queued: Vec<&str> =
                state.prompt_queue.items().iter().map(|queued| queued.event.delivery_id.as_str()).collect();
            let watched: Vec<&str> =
                state.context_buffer.items().map(|observed| observed.delivery_id.as_str()).collect();
            match others {
                1 => assert_eq!((queued, watched), (vec!["1", "2"], vec![]), "both engage, in the order they came"),
                _ => assert_eq!((queued, watched), (vec!["2"], vec!["1"]), "the first is watched, the mention engages"),
            }
            assert_eq!(state.prompt_queue.items()[0].received_at_ms, if others == 1 { 1_000 } else { 1_200 });
            assert_eq!(state.wake_at(&settings, 1_600), Some(1_200 + settings.debounce_ms), "debounced from arrival");
        }
    }

    #[test]
    fn a_count_that_does_not_come_leaves_the_speakers_to_decide_and_a_crash_loses_nothing() {
        let settings = settings();
        let mut state = ChannelState::default();
        state.hold(&message(1, "ada", "anyone?"), 0);
        // A crash after the hold: the checkpoint still holds the message.
        let checkpoint = state.changed_slots(&BTreeMap::new()).unwrap();
        let mut restored = ChannelState::restore(checkpoint.iter().map(|(name, _, body)| (*name, body.as_str())));
        assert_eq!(restored, state);
        let decided = restored.confirm_held(None, &settings);
        assert_eq!(decided.len(), 1);
        assert_eq!(decided[0].1.decision.reason, Reason::SoloHuman, "one speaker seen, no count");
        assert!(restored.membership.get().is_none(), "the next message that depends on it waits for it again");
        assert_eq!(restored.prompt_queue.items().len(), 1);
    }

    #[test]
    fn a_peer_bot_that_speaks_neither_makes_the_count_a_hint_nor_counts_as_a_human() {
        let settings = settings_without_stickiness();
        let mut state = ChannelState::default();
        // Telegram counts Ada, HelperBot and this bot; read before HelperBot spoke.
        state.membership.update([count(2, 0)]);
        let ada = state.receive(&mention(1, "ada", "edgebot, hi"), &settings, 100);
        assert!(ada.decision.multi_human_group, "a bot that never spoke cannot be told from a person");
        let bot = message(2, "helperbot", "hello everyone");
        state.update_membership(None, &bot);
        assert!(state.membership.get().unwrap().is_fresh_and_complete(200), "a bot's first words make no hint");
        assert_eq!(state.receive(&bot, &settings, 200).decision.reason, Reason::NotAddressed);
        let plain = message(3, "ada", "what's the weather?");
        state.update_membership(None, &plain);
        assert_eq!(state.receive(&plain, &settings, 300).decision.reason, Reason::SoloHuman, "still the lone human");
        // Stale (a minute on), the count is a hint: still no second human.
        let later = message(4, "ada", "and tomorrow?");
        state.update_membership(None, &later);
        assert_eq!(state.receive(&later, &settings, 120_000).decision.reason, Reason::SoloHuman);
    }

    #[test]
    fn a_lone_human_is_answered_until_a_second_human_joins_and_speaks() {
        let settings = settings_without_stickiness();
        let mut state = ChannelState::default();
        let first = message(1, "ada", "hello?");
        state.hold(&first, 0);
        let decided = state.confirm_held(Some(count(1, 100)), &settings);
        assert_eq!(decided[0].1.decision.reason, Reason::SoloHuman, "the bot and one human: her first line engages");
        // Bo joins and speaks: the count of one predates him; it is only a hint now.
        let bo = message(2, "bo", "hi all");
        assert!(!state.must_hold(&bo, &settings, 200), "a count is held");
        state.update_membership(None, &bo);
        assert_eq!(state.receive(&bo, &settings, 200).decision.reason, Reason::NotAddressed, "two people are here now");
        assert!(!state.membership.get().unwrap().is_fresh_and_complete(300), "the turn reads it again");
        let again = message(3, "ada", "so, lunch?");
        state.update_membership(None, &again);
        let receipt = state.receive(&again, &settings, 300);
        assert_eq!(receipt.decision.reason, Reason::NotAddressed, "strict now");
        assert!(receipt.decision.multi_human_group);
    }

    #[test]
    fn a_quick_second_follow_up_in_a_busy_group_engages_too() {
        let settings = settings();
        let mut state = busy_state();
        state.receive(&mention(1, "ada", "edgebot, the deploy failed"), &settings, 0);
        state.begin_turn().unwrap();
        state.finish_turn(&replied(), &settings, 10);
        // Two lines before the bot answered the first: both are hers to it.
        let first = state.receive(&message(2, "ada", "it says permission denied"), &settings, 1_000);
        let second = state.receive(&message(3, "ada", "on the prod box"), &settings, 2_000);
        assert_eq!((first.decision.reason, second.decision.reason), (Reason::Sticky, Reason::Sticky));
        // A full quiet window after her last line ends the credit.
        let window = settings.sticky_window_ms;
        let late = state.receive(&message(4, "ada", "anyone?"), &settings, 2_000 + window);
        assert!(!late.decision.engages, "the credit expired after a quiet window");
    }

    #[test]
    fn the_loop_guard_notice_replaces_the_nudge_after_five_peer_bot_turns() {
        let settings = settings();
        let mut state = busy_state();
        state.receive(&message(1, "ada", "hi"), &settings, 0);
        state.receive(&message(2, "bo", "hi"), &settings, 0);
        let mut notices = Vec::new();
        for turn in 0..5u32 {
            state.receive(&mention(10 + turn, "peerbot", "ping"), &settings, i64::from(turn) * 100);
            notices.push(state.begin_turn().unwrap().notice);
            state.finish_turn(&replied(), &settings, i64::from(turn) * 100 + 50);
        }
        assert_eq!(notices[..4], [Notice::GroupNudge; 4]);
        assert_eq!(notices[4], Notice::LoopGuard);
        state.receive(&mention(20, "ada", "stop it"), &settings, 1_000);
        assert_eq!(state.begin_turn().unwrap().notice, Notice::GroupNudge, "a human resets the guard");
    }

    fn branch(question: &str, origin: &InboundEvent) -> ProcessStatus {
        ProcessStatus {
            kind: ProcessKind::Branch,
            task: question.into(),
            started_at_ms: 0,
            origin: origin.clone(),
            status: None,
            interactive: false,
            waiting: false,
            last_heard_ms: 0,
        }
    }

    /// A channel that answered Ada's message (delivery 1) and left branch `b1` thinking.
    fn thinking_on_branch_b1(settings: &ChannelSettings) -> ChannelState {
        let mut state = busy_state();
        let origin = mention(1, "ada", "edgebot, think hard");
        state.receive(&origin, settings, 0);
        state.begin_turn().unwrap();
        assert!(state.start_process("b1", branch("what is the answer?", &origin)));
        state.finish_turn(&replied(), settings, 20);
        state
    }

    fn conclusion(id: &str, branch: &str, ts: i64) -> Envelope {
        Envelope::new(id, ts, format!("branch:{branch}"), "channel", MessageType::Done, Some(branch.into()), "42")
    }

    #[test]
    fn a_branch_conclusion_retriggers_the_channel_once_and_is_shown_to_it() {
        let settings = settings();
        let mut state = thinking_on_branch_b1(&settings);
        assert!(state.begin_turn().is_none());
        assert_eq!(
            state.wake_at(&settings, 30),
            Some(settings.timeouts.branch_ms),
            "nothing to do while the branch thinks, but to give up on it if it stays silent"
        );

        assert!(state.receive_process_event(conclusion("e1", "b1", 1_000)));
        assert!(!state.receive_process_event(conclusion("e1", "b1", 1_000)), "a redelivered report is dropped");
        assert_eq!(state.wake_at(&settings, 1_000), Some(1_000 + RETRIGGER_DEBOUNCE_MS));
        let turn = state.begin_turn().expect("a retrigger turn");
        assert!(turn.messages.is_empty());
        assert_eq!(turn.process_events[0].task, "what is the answer?");
        assert_eq!(turn.answering().map(|event| event.delivery_id.as_str()), Some("1"));
        state.finish_turn(&replied(), &settings, 1_100);
        assert!(state.begin_turn().is_none());
        assert!(state.process_events.items().is_empty());
    }

    #[test]
    fn branches_are_capped_and_retriggers_bounded_per_user_message() {
        let settings = settings();
        let mut state = busy_state();
        let origin = mention(1, "ada", "edgebot");
        state.receive(&origin, &settings, 0);
        for index in 0..MAX_CONCURRENT_BRANCHES {
            assert!(state.start_process(&format!("b{index}"), branch("q", &origin)));
        }
        assert!(!state.start_process("extra", branch("q", &origin)));
        assert_eq!(state.processes.get().capacity(ProcessKind::Branch), 0);
        state.begin_turn().unwrap();
        state.finish_turn(&replied(), &settings, 1);

        for index in 0..MAX_CONCURRENT_BRANCHES {
            state.receive_process_event(conclusion(&format!("e{index}"), &format!("b{index}"), 100));
        }
        let mut retrigger_turns = 0;
        for round in 0..5 {
            if round > 0 {
                // Each retrigger turn starts another branch that reports back.
                let id = format!("next{round}");
                assert!(state.start_process(&id, branch("q", &origin)));
                state.receive_process_event(conclusion(&format!("n{round}"), &id, 200 + round));
            }
            if state.begin_turn().is_some() {
                retrigger_turns += 1;
                state.finish_turn(&replied(), &settings, 300);
            }
        }
        assert_eq!(retrigger_turns, MAX_RETRIGGERS_PER_MESSAGE as usize);
        assert!(!state.process_events.items().is_empty(), "later results wait for the next user message");
        state.receive(&mention(9, "ada", "edgebot, and?"), &settings, 300);
        let turn = state.begin_turn().unwrap();
        assert!(!turn.process_events.is_empty(), "and are shown with it");
    }

    #[test]
    fn wake_times_debounce_groups_and_not_dms() {
        let settings = settings();
        let mut state = busy_state();
        state.receive(&message(1, "bo", "x"), &settings, 0);
        state.receive(&message(2, "cy", "x"), &settings, 0);
        assert_eq!(state.receive(&mention(3, "bo", "a"), &settings, 1_000).wake_at_ms, Some(2_500));
        assert_eq!(state.receive(&mention(4, "bo", "b"), &settings, 2_000).wake_at_ms, Some(3_500));
        assert_eq!(
            state.receive(&mention(5, "bo", "c"), &settings, 5_500).wake_at_ms,
            Some(6_000),
            "at most 5 s after the first"
        );

        let mut direct = ChannelState::default();
        let dm = InboundEvent { is_dm: true, ..message(9, "ada", "hi") };
        assert_eq!(direct.receive(&dm, &settings, 700).wake_at_ms, Some(700));
    }

    #[test]
    fn state_survives_a_checkpoint_round_trip_mid_turn() {
        let settings = settings();
        let mut state = busy_state();
        state.receive(&message(1, "bo", "watching"), &settings, 0);
        state.receive(&mention(2, "ada", "edgebot?"), &settings, 0);
        let turn = state.begin_turn().unwrap();
        let checkpoint = state.changed_slots(&BTreeMap::new()).unwrap();
        let restored = ChannelState::restore(checkpoint.iter().map(|(name, _, body)| (*name, body.as_str())));
        let saved: BTreeMap<String, u64> =
            checkpoint.iter().map(|(name, version, _)| (name.to_string(), *version)).collect();
        assert!(state.changed_slots(&saved).unwrap().is_empty(), "nothing changed since the checkpoint");
        assert_eq!(restored, state);
        let mut restored = restored;
        assert_eq!(restored.begin_turn(), Some(turn), "a crashed turn resumes with the same input");
        assert_eq!(ChannelState::restore([("prompt_queue", "garbage"), ("unknown", "{}")]), ChannelState::default());
    }

    #[test]
    fn a_silent_branch_is_given_up_and_the_person_is_told_once() {
        let settings = settings();
        let mut state = thinking_on_branch_b1(&settings);
        let deadline = settings.timeouts.branch_ms;
        assert!(state.expire_processes(deadline - 1, &settings).is_empty());
        let expired = state.expire_processes(deadline, &settings);
        assert_eq!(expired.len(), 1);
        assert_eq!((expired[0].0.as_str(), expired[0].1.kind), ("b1", ProcessKind::Branch));
        let turn = state.begin_turn().expect("a turn to tell the person");
        assert_eq!(turn.process_events[0].envelope.kind, MessageType::Error);
        assert_eq!(turn.answering().map(|event| event.delivery_id.as_str()), Some("1"));
        state.finish_turn(&replied(), &settings, deadline + 10);
        assert!(!state.receive_process_event(conclusion("late", "b1", deadline + 20)), "a late conclusion is dropped");
        assert_eq!(state.wake_at(&settings, deadline + 30), None);
    }
}
