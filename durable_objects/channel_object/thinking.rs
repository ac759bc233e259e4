//! Asks the model for a turn's answer (or, over a budget, the notice instead),
//! keeping the platform's working signal alive while it thinks.

use std::cell::{Cell, RefCell};
use std::future::{poll_fn, Future};
use std::pin::pin;
use std::task::{Poll, Waker};

use futures_util::future::{join3, select};
use worker::{D1Database, Result};

use super::drafts::MessageDrafts;
use super::outlet::Outlet;
use super::scheduled_runs::scheduled_runs;
use super::{history as history_store, notices, Channel};
use crate::budget::rules::{Scope, Spend};
use crate::budget::store as spend;
use crate::budget::usage::Spender;
use crate::channel::actions;
use crate::channel::actions::Action;
use crate::channel::history_mirror::kept_rows;
use crate::channel::state::{TurnResult, TurnSnapshot};
use crate::channel::turn::{compose_messages, run_turn, Ending, TurnContext, TurnOutcome};
use crate::conversations::archive::StoredMessage;
use crate::files::store as files;
use crate::inbound::InboundEvent;
use crate::llm::client::HttpModel;
use crate::llm::{HistoryEntry, HistoryRole, LlmError};
use crate::log_line::LogLine;
use crate::memory::embedder::AI_BINDING;
use crate::people::rules::{self as people, Profile};
use crate::platforms::messenger::{Messenger, Streaming};
use crate::platforms::outbound::Outbound;
use crate::process::compaction::estimate_tokens;
use crate::prompt;
use crate::reply::live;
use crate::runtime::config::redactor;
use crate::runtime::durable::{MeteredStorage, Sql};
use crate::runtime::http::{now_ms, sleep_ms};
use crate::runtime::log::Emit;
use crate::schedules::store as schedules;
use crate::schedules::tools::ChannelTools;
use crate::time::format_utc;

/// How often a typing indicator is renewed while the model works (Telegram
/// shows one for about 5 s, Discord for about 10 s).
const WORKING_RENEW_MS: u64 = 4_500;
/// How often the web chat's draft is brought up to date.
const SOCKET_DRAFT_EVERY_MS: u64 = 100;

/// What the model made of a turn.
#[derive(Default)]
pub(super) struct Thought {
    /// The model failed (the person gets the failure message).
    pub(super) model_failed: bool,
    /// The schedule tool created or cancelled a job.
    pub(super) schedules_changed: bool,
    /// The texts to send.
    pub(super) texts: Vec<String>,
    pub(super) result: TurnResult,
    /// Branches and workers to start, follow-ups to route, processes to cancel.
    pub(super) delegations: Vec<Action>,
    /// Emoji to react with on the message answered.
    pub(super) reactions: Vec<String>,
    /// Files processes sent the person: (file id, caption), sent after the replies.
    pub(super) files: Vec<(String, String)>,
    /// The conversation as the model saw it, for branches to fork.
    pub(super) fork: Vec<HistoryEntry>,
    /// The ids of the live history messages in the prompt, oldest first.
    pub(super) history_ids: Vec<String>,
    /// The prompt's estimated size.
    pub(super) estimated_tokens: u64,
    /// What the model calls cost.
    pub(super) spend: Spend,
    /// The people writing in the turn, with their profiles (branches may
    /// keep these, and only these, up to date).
    pub(super) people: Vec<Profile>,
}

impl Thought {
    /// The turn ends in the apology ([`Ending::Apology`]): the model's words,
    /// if any, are dropped, so the person reads one message, never a half answer.
    pub(super) fn apologise(&mut self) {
        self.model_failed = true;
        self.texts = vec![prompt::text("model_failure")];
        self.reactions.clear();
    }
}

/// Asks the model. A model that keeps failing yields the friendly failure
/// message, never silence ([`Ending`]).
pub(super) async fn think(
    object: &Channel,
    database: &D1Database,
    turn: &TurnSnapshot,
    platform: &Outbound<'_>,
    reads: super::agent_data::TurnReads,
    live: Option<&dyn Fn(&str)>,
) -> Result<Thought> {
    let config = &object.config;
    let Some(answering) = turn.answering() else {
        return Ok(Thought::default());
    };
    let conversation_key = &answering.conversation_key;
    // Files first: a voice note's transcript is its message's text, in the
    // prompt and in the history alike.
    let mut current: Vec<InboundEvent> = turn.messages.iter().map(|message| message.event.clone()).collect();
    let files = files::receive(config, &object.env, database, platform, &mut current, now_ms()).await;
    let stored = stored_messages(turn, &current, conversation_key);
    let sql = object.state.storage().counted_sql();
    // The agent's identity, skills, links and settings, and the people: read with the budget (agent_data.rs).
    let super::agent_data::TurnReads { agent, people, .. } = reads;
    let Remembered { loaded, bulletin } = remember(object, database, &sql, conversation_key, &stored).await?;
    let (identity, skills, settings) = (agent.identity, agent.skills, agent.settings);
    let history_ids: Vec<String> = loaded.earlier.iter().map(|row| row.id.clone()).collect();
    let earlier: Vec<HistoryEntry> = loaded.earlier.iter().map(history_entry).collect();
    let context = TurnContext {
        bot_name: &config.bot_name,
        platform: platform.name(),
        now_utc: format_utc(now_ms()),
        identity: &identity,
        bulletin: &bulletin,
        skills: &skills,
        summaries: &loaded.summaries,
        history: &earlier,
        context: &turn.context,
        current: &current,
        attachments: &files.notes,
        people: &people,
        notice: turn.notice,
        process_events: &turn.process_events,
        processes: &turn.processes,
    };
    let schedules_changed = std::cell::Cell::new(false);
    let model_chain = settings.model.clone().unwrap_or_else(|| config.channel_model.clone());
    let model = HttpModel::new(config, &object.env, &model_chain);
    // A model that cannot be called (no key, no binding) is known before any call: none is made.
    let not_set_up = crate::status::setup::model_problem(config, object.env.ai(AI_BINDING).is_ok());
    let host = channel_tools(object, database, turn, answering, &people, &schedules_changed, agent.links);
    let tools = crate::channel::turn::Permitted { host, permits: |name: &str| settings.permits_tool(name) };
    let (outcome, estimated_tokens) = match &not_set_up {
        Some(problem) => (Err(LlmError::Config(problem.explain())), 0),
        None => ask(&model, &context, files.images.clone(), turn, &tools, live).await,
    };
    let mut fork = earlier.clone();
    fork.extend(stored.iter().map(history_entry));
    let mut thought = Thought {
        files: files_sent(turn),
        fork,
        history_ids,
        estimated_tokens,
        schedules_changed: schedules_changed.get(),
        spend: model.as_ref().map(HttpModel::spent).unwrap_or_default(),
        people,
        ..Thought::default()
    };
    let ending = match not_set_up {
        Some(problem) => Ending::NotSetUp(problem),
        None => Ending::of(outcome, &model_chain),
    };
    carry_out(object, &sql, turn, conversation_key, ending, &mut thought).await?;
    // A file that was not kept is said plainly, after the reply, whatever the model makes of it.
    if !files.refused.is_empty() {
        let notice = prompt::render("file_refused", serde_json::json!({ "files": files.refused }));
        thought.texts.push(notice.map_err(|error| worker::Error::RustError(error.to_string()))?);
    }
    Ok(thought)
}

/// A stored message as the prompt's history shows it.
fn history_entry(row: &StoredMessage) -> HistoryEntry {
    HistoryEntry { role: row.role, author_name: row.author_name.clone(), content: row.content.clone() }
}

/// The turn's messages as the history keeps them (`current`: the messages with
/// their files read). Finished work enters the history too, so later turns
/// remember it.
fn stored_messages(turn: &TurnSnapshot, current: &[InboundEvent], conversation_key: &str) -> Vec<StoredMessage> {
    let mut stored: Vec<StoredMessage> = turn
        .messages
        .iter()
        .zip(current)
        .map(|(message, event)| StoredMessage::inbound(event, message.received_at_ms))
        .collect();
    stored.extend(turn.process_events.iter().map(|event| StoredMessage {
        id: format!("{conversation_key}:process:{}", event.envelope.id),
        conversation_key: conversation_key.to_string(),
        role: HistoryRole::User,
        author_id: event.envelope.from.clone(),
        author_name: event.kind.label().to_lowercase(),
        content: format!("[{} on \"{}\"] {}", event.kind.label().to_lowercase(), event.task, event.envelope.body),
        platform_message_id: None,
        created_at: event.envelope.ts,
        compacted: 0,
    }));
    stored
}

/// What the prompt recalls besides the turn itself.
struct Remembered {
    loaded: history_store::Loaded,
    bulletin: String,
}

/// Records the turn's messages in the history and reads what the prompt
/// recalls. The history comes from the object's own copy; D1 is read once per
/// conversation (to take over what it held before) and for a stale bulletin.
async fn remember(
    object: &Channel,
    database: &D1Database,
    sql: &Sql,
    conversation_key: &str,
    stored: &[StoredMessage],
) -> Result<Remembered> {
    let config = &object.config;
    let keep = kept_rows(config.history_limit);
    let shard = crate::runtime::d1::shard_of(&object.env, conversation_key)?;
    history_store::take_over(sql, &object.history_meta, &shard, conversation_key, keep, now_ms()).await?;
    history_store::record(sql, stored)?;
    let current_ids: Vec<&str> = stored.iter().map(|message| message.id.as_str()).collect();
    let loaded = history_store::load(sql, &current_ids, config.history_limit as usize)?;
    // The bulletin is the default agent's (its shared memories): another agent's prompt goes without.
    let bulletin = match crate::agents::agent_of(conversation_key) == crate::agents::DEFAULT {
        true => {
            history_store::bulletin(sql, &object.history_meta, database, now_ms(), config.bulletin_cache_ms).await?
        }
        false => String::new(),
    };
    // A non-default agent's secrets (its bot's token, its invitation) are
    // taught to this isolate's redactor before its turn can echo one (the
    // directory: at most one D1 batch per isolate per 30 s).
    if crate::agents::agent_of(conversation_key) != crate::agents::DEFAULT {
        crate::agents::directory::get(&object.env).await?;
    }
    Ok(Remembered { loaded, bulletin })
}

/// The tools the channel's edge answers in this turn: the schedule tool, and
/// the link tools over `links` (read with the turn's agent data).
fn channel_tools<'a>(
    object: &'a Channel,
    database: &'a D1Database,
    turn: &'a TurnSnapshot,
    answering: &'a InboundEvent,
    people: &[Profile],
    schedules_changed: &'a std::cell::Cell<bool>,
    links: Vec<crate::links::rules::Link>,
) -> (ChannelTools<'a>, crate::links::tools::LinkTools<'a>) {
    let conversation_key = &answering.conversation_key;
    let channel = ChannelTools {
        config: &object.config,
        db: database,
        conversation_key,
        reply_address: &answering.reply_address,
        now_ms: now_ms(),
        author: &answering.author,
        is_dm: answering.is_dm,
        // A run's message, or work a run started, is never a person asking.
        is_scheduled_run: scheduled_runs(turn).next().is_some()
            || schedules::parse_run_delivery_id(&answering.delivery_id).is_some(),
        created: std::cell::Cell::new(0),
        changed: schedules_changed,
        default_zone: crate::people::rules::default_zone(
            people,
            crate::budget::rules::person_key(conversation_key, &answering.author.id).as_deref(),
        ),
    };
    let links = crate::links::tools::LinkTools {
        env: &object.env,
        db: database,
        conversation_key: &answering.conversation_key,
        reply_address: &answering.reply_address,
        links,
        now_ms: now_ms(),
    };
    (channel, links)
}

/// The model's turn: the prompt composed and run with the tools; its outcome
/// and the prompt's estimated size.
async fn ask(
    model: &std::result::Result<HttpModel<'_>, LlmError>,
    context: &TurnContext<'_>,
    images: Vec<crate::llm::Image>,
    turn: &TurnSnapshot,
    tools: &impl crate::channel::turn::ToolHost,
    live: Option<&dyn Fn(&str)>,
) -> (std::result::Result<TurnOutcome, LlmError>, u64) {
    let mut estimated_tokens = 0;
    let outcome = async {
        // A template that does not render is a fault like a garbled answer: the apology.
        let mut messages =
            compose_messages(context).map_err(|error| LlmError::Malformed(format!("the prompt: {error}")))?;
        if let Some(turn_message) = messages.last_mut() {
            turn_message.images = images;
        }
        estimated_tokens = estimate_tokens(messages.iter().map(|message| message.content.len()).sum());
        let model = model.as_ref().map_err(Clone::clone)?;
        run_turn(model, model.model_name(), messages, &turn.processes, tools, live).await
    }
    .await;
    (outcome, estimated_tokens)
}

/// Files processes sent the person: (file id, caption).
fn files_sent(turn: &TurnSnapshot) -> Vec<(String, String)> {
    turn.process_events
        .iter()
        .filter_map(|event| {
            let id = event.envelope.sent_file()?;
            Some((id.to_string(), event.envelope.body[id.len()..].trim().to_string()))
        })
        .collect()
}

/// What the turn's ending makes of the thought: the model's actions
/// ([`actions::fold`]), the apology, or the notice that the model is not set up.
async fn carry_out(
    object: &Channel,
    sql: &Sql,
    turn: &TurnSnapshot,
    conversation_key: &str,
    ending: Ending,
    thought: &mut Thought,
) -> Result<()> {
    match ending {
        Ending::Answered(outcome) => {
            crate::status::api::note_model_problem(&object.env, None).await;
            thought.result.usage = outcome.usage;
            let acts = actions::fold(outcome.actions);
            thought.texts.extend(acts.texts);
            thought.reactions.extend(acts.reactions);
            thought.result.disengaged |= acts.disengaged;
            thought.delegations.extend(acts.delegations);
        }
        Ending::Apology { reason, usage } => {
            LogLine::error("turn_failed").conversation(conversation_key).id(&turn.id).reason(&reason).emit();
            thought.result.usage = usage;
            thought.apologise();
        }
        Ending::NotSetUp(problem) => {
            // Said once an hour per conversation: a person writing again
            // meanwhile is not told the same thing each time.
            let tell = notices::due(sql, notices::NOT_SET_UP, now_ms(), notices::NOT_SET_UP_EVERY_MS)?;
            LogLine::warn("model_not_set_up")
                .conversation(conversation_key)
                .id(&turn.id)
                .field("setting", problem.setting())
                .field("told", tell)
                .reason(&problem.explain())
                .emit();
            crate::status::api::note_model_problem(&object.env, Some(&problem)).await;
            thought.model_failed = true;
            if tell {
                let notice = prompt::render(
                    "not_set_up",
                    serde_json::json!({ "what": problem.for_people(), "setting": problem.setting() }),
                );
                thought.texts.push(notice.map_err(|error| worker::Error::RustError(error.to_string()))?);
            }
        }
    }
    Ok(())
}

/// The people writing in the turn (the authors of its messages; for a turn
/// run for finished work, of the messages that work was started for), as the
/// messages say. The turn reads their profiles, and nobody else's, with its
/// other reads (agent_data.rs): a person's notes reach only the
/// conversations they write in. Their sightings wait for the alarm's commit
/// (commit.rs).
pub(super) fn speakers_of(turn: &TurnSnapshot) -> Vec<Profile> {
    match turn.messages.is_empty() {
        false => people::speakers(turn.messages.iter().map(|message| &message.event)),
        true => people::speakers(turn.process_events.iter().map(|event| &event.origin)),
    }
}

/// A turn not run for its budget: the notice the first time today, then silence.
pub(super) async fn over_budget_thought(database: &D1Database, scope: Scope, spender: &Spender) -> Thought {
    let recipient = spend::recipient(scope, spender);
    let first = spend::tell_once(database, scope, &recipient, now_ms()).await.unwrap_or_else(|error| {
        LogLine::warn("budget_notice_unrecorded").reason(&error).emit();
        false
    });
    LogLine::warn("over_budget")
        .conversation(&spender.conversation_key)
        .field("scope", scope.name())
        .field("told", first)
        .emit();
    let mut thought = Thought::default();
    if first {
        let notice = prompt::render("budget_exhausted", serde_json::json!({ "scope": scope.name() }));
        thought.texts.push(notice.unwrap_or_default());
    }
    thought
}

/// The reply text the model has written so far in a turn (the `live`
/// callback of [`think`] writes it; [`while_working`] shows it).
#[derive(Default)]
pub(super) struct Draft {
    text: RefCell<String>,
    fresh: Cell<bool>,
    finished: Cell<bool>,
    /// Who waits for news (the drafting loop, the working signal's renewal).
    waiting: RefCell<Vec<Waker>>,
}

impl Draft {
    pub(super) fn write(&self, text: &str) {
        *self.text.borrow_mut() = text.to_string();
        self.fresh.set(true);
        self.wake();
    }

    /// The model is done: drafting stops (after the call it may be making).
    fn finish(&self) {
        self.finished.set(true);
        self.wake();
    }

    fn wake(&self) {
        for waker in self.waiting.take() {
            waker.wake();
        }
    }

    /// Waits until `ready` holds, woken by a write or the finish.
    async fn until(&self, ready: impl Fn(&Self) -> bool) {
        poll_fn(|context| match ready(self) {
            true => Poll::Ready(()),
            false => {
                let mut waiting = self.waiting.borrow_mut();
                if !waiting.iter().any(|waker| waker.will_wake(context.waker())) {
                    waiting.push(context.waker().clone());
                }
                Poll::Pending
            }
        })
        .await
    }

    /// Waits `milliseconds`, or less if the model finishes first.
    async fn pause(&self, milliseconds: u64) {
        let finished = self.until(|draft| draft.finished.get());
        select(pin!(sleep_ms(milliseconds)), pin!(finished)).await;
    }

    /// Waits `milliseconds`, or less if the model writes more or finishes;
    /// then the text as it is now is looked at again.
    async fn wait_for_more(&self, milliseconds: u64) {
        let news = self.until(|draft| draft.fresh.get() || draft.finished.get());
        select(pin!(sleep_ms(milliseconds)), pin!(news)).await;
        self.fresh.set(true);
    }

    /// The next text to show, once it changed; None when the model is done.
    async fn next(&self) -> Option<String> {
        self.until(|draft| draft.fresh.get() || draft.finished.get()).await;
        match self.finished.get() {
            true => None,
            false => self.fresh.replace(false).then(|| self.text.borrow().clone()),
        }
    }
}

/// Runs `work` (the model's part of a turn), renewing the platform's fading
/// working signal every [`WORKING_RENEW_MS`] until it is done, and, where the
/// platform streams, showing the `draft` as it grows: only what
/// [`live::shown`] lets through (whole words, rendered, split and redacted as
/// the final reply), only when that changed, and no faster than the platform
/// takes it. A draft call under way when the model finishes is finished, not
/// abandoned, so its outcome is recorded.
pub(super) async fn while_working<T>(
    outlet: &Outlet<'_>,
    event: &InboundEvent,
    turn: i64,
    draft: &Draft,
    work: impl Future<Output = T>,
) -> T {
    let platform = outlet.platform;
    let renew = async {
        loop {
            draft.pause(WORKING_RENEW_MS).await;
            if draft.finished.get() {
                break;
            }
            // A chat held by a rate limit gets no typing action either.
            if outlet.pace.get().wait_ms(now_ms()) == 0 {
                platform.renew_working(event).await;
            }
        }
    };
    let work = async {
        let value = work.await;
        draft.finish();
        value
    };
    let drafting = async {
        let drafted: Result<()> = show_draft(outlet, event, turn, draft).await;
        if let Err(error) = drafted {
            LogLine::error("drafting_failed").conversation(&event.conversation_key).reason(&error).emit();
        }
    };
    let (value, (), ()) = join3(work, drafting, renew).await;
    value
}

/// Shows the `draft` as it grows, where the platform streams (see
/// [`while_working`]); returns when the model is done.
async fn show_draft(outlet: &Outlet<'_>, event: &InboundEvent, turn: i64, draft: &Draft) -> Result<()> {
    let Outlet { platform, .. } = *outlet;
    let mut messages = match platform.streaming() {
        Streaming::Off => return Ok(()),
        Streaming::Socket => None,
        Streaming::Messages { edit_every_ms } => Some(MessageDrafts::resume(outlet, event, turn, edit_every_ms)?),
    };
    let mut shown = Vec::new();
    let (mut first_words_at, mut worth_it_at) = (None, None);
    while let Some(text) = draft.next().await {
        let ready = live::shown(&text, false, platform.flavor(), platform.message_limit(), &redactor()).pieces;
        if ready.concat().is_empty() || ready == shown {
            continue;
        }
        // A reply's first post waits for something worth a notification;
        // an answer complete by then goes out whole, with no edit.
        if messages.as_ref().is_some_and(|messages| !messages.has_opened()) {
            let waited = (now_ms() - *first_words_at.get_or_insert_with(now_ms)).max(0) as u64;
            if !live::worth_opening(&ready[0], waited) {
                draft.wait_for_more(live::OPENING_WAIT_MS.saturating_sub(waited)).await;
                continue;
            }
            let held = (now_ms() - *worth_it_at.get_or_insert_with(now_ms)).max(0) as u64;
            if held < live::OPENING_GRACE_MS {
                draft.wait_for_more(live::OPENING_GRACE_MS - held).await;
                continue;
            }
        }
        let wait = match messages.as_mut() {
            Some(messages) => messages.update(&ready).await?,
            None => {
                platform.show_draft(event, &ready.concat()).await;
                SOCKET_DRAFT_EVERY_MS
            }
        };
        // A post or edit that failed shows again on the next round.
        shown = ready;
        draft.pause(wait).await;
    }
    Ok(())
}
