//! Runs the channel's turns from the alarm. Each turn is a sequence of
//! checkpointed steps: begin (fix the input), think (the model's answer goes
//! to the outbox), send (each outbox piece at most once), finish. A crash at
//! any point resumes at the step it reached.

use std::future::Future;
use std::pin::pin;

use futures_util::future::{select, Either};
use worker::{D1Database, Result};

use super::{envelopes, history as history_store, inbox, outbox, pending, ChannelObject};
use crate::budget::{Scope, Spend};
use crate::channel::history_mirror::kept_rows;
use crate::channel::processes::{ProcessKind, ProcessStatus};
use crate::channel::state::ScheduleDue;
use crate::channel::state::{TurnResult, TurnSnapshot};
use crate::channel::turn::{compose_messages, run_turn, Action, TurnContext};
use crate::config::Config;
use crate::edge::config::{redactor, DATABASE_BINDING};
use crate::edge::durable::{MeteredStorage, Sql};
use crate::edge::history::StoredMessage;
use crate::edge::http::{now_ms, sleep_ms};
use crate::edge::log::Emit;
use crate::edge::messenger::{Interrupted, Messenger, Piece};
use crate::edge::model::HttpModel;
use crate::edge::outbound::{self, Platform};
use crate::edge::schedule_tool::ChannelTools;
use crate::edge::schedules;
use crate::edge::spend;
use crate::edge::usage::{self, Spender};
use crate::inbound::InboundEvent;
use crate::llm::{HistoryEntry, HistoryRole};
use crate::log_line::LogLine;
use crate::process::branch::BranchJob;
use crate::process::compaction::{estimate_tokens, plan, CompactionJob, CompactionPlan};
use crate::process::envelope::{Envelope, MessageType};
use crate::process::worker_run::{WorkerInput, WorkerJob};
use crate::process::Job;
use crate::prompt;
use crate::reply::markup::{escape, shown};
use crate::reply::pieces::prepare;
use crate::time::format_utc;

/// Turns one alarm runs before it hands over to a fresh alarm.
const MAX_TURNS_PER_ALARM: usize = 8;
/// How often a typing indicator is renewed while the model works (Telegram
/// shows one for about 5 s, Discord for about 10 s).
const WORKING_RENEW_MS: u64 = 4_500;
/// Wait between attempts at one platform send.
const SEND_BACKOFF_MS: u64 = 500;
/// An alarm this early (or less) is close enough to run.
const WAKE_TOLERANCE_MS: i64 = 25;
/// When history rows could not be mirrored to D1 (or more wait), the object
/// comes back for them this much later if nothing else wakes it sooner.
const MIRROR_RETRY_MS: i64 = 30_000;

/// Runs the due turns, then mirrors their history rows to D1 in one batch:
/// one D1 write per alarm, after the replies went out.
pub async fn run(object: &ChannelObject) -> Result<()> {
    let ran = run_turns(object).await;
    mirror_history(object).await?;
    ran
}

/// Mirrors the history rows D1 lacks. A failure keeps them for later (the
/// alarm comes back for them); replies never wait on it.
pub(super) async fn mirror_history(object: &ChannelObject) -> Result<()> {
    let sql = object.state.storage().counted_sql();
    let database = object.env.d1(DATABASE_BINDING)?;
    if let Err(error) = history_store::mirror(&sql, &database, kept_rows(object.config.history_limit)).await {
        LogLine::warn("history_not_mirrored").field("recovery", "kept for the next alarm").reason(&error).emit();
    }
    let storage = object.state.storage();
    if history_store::has_pending(&sql)? && storage.get_alarm().await?.is_none() {
        storage.set_alarm_counted(MIRROR_RETRY_MS).await?;
    }
    Ok(())
}

async fn run_turns(object: &ChannelObject) -> Result<()> {
    // Inbounds held for the member count are decided first, before any turn
    // begins or any model is called (see ChannelObject::confirm_held).
    object.confirm_held().await?;
    let config = &object.config;
    let now = now_ms();
    // A burst that is still arriving pushed the wake time; sleep until it settles.
    let wake_at = object.channel.borrow().wake_at(&config.channel, now);
    if let Some(wake_at) = wake_at.filter(|&at| at > now + WAKE_TOLERANCE_MS) {
        return object.state.storage().set_alarm_counted(wake_at - now).await;
    }
    let sql = object.state.storage().counted_sql();
    let database = object.env.d1(DATABASE_BINDING)?;
    give_up_on_silent_processes(object, &database, now).await?;
    let due = object.channel.borrow().schedule_due.get().cloned();
    if let Some(due) = due.filter(|due| due.at_ms <= now + WAKE_TOLERANCE_MS) {
        take_scheduled_runs(object, &database, &due.conversation_key, now).await?;
    }
    for _ in 0..MAX_TURNS_PER_ALARM {
        let Some(turn) = object.step(|channel| channel.begin_turn())? else {
            // Nothing to run now; wake for what comes next (a process's deadline).
            let now = now_ms();
            let next = object.channel.borrow().wake_at(&config.channel, now);
            return match next.filter(|&at| at > now) {
                Some(at) => object.state.storage().set_alarm_counted(at - now).await,
                None => Ok(()),
            };
        };
        if let Some(resume_at) = run_one(object, &sql, &database, &turn).await? {
            // Rate limited: the same turn resumes then; later turns wait behind it.
            object.step(|channel| channel.defer_turn(resume_at))?;
            return object.state.storage().set_alarm_counted((resume_at - now_ms()).max(0)).await;
        }
    }
    // More turns are waiting: continue in a new alarm rather than run long.
    object.state.storage().set_alarm_counted(0).await
}

/// Claims the conversation's due runs and queues each as a message to the
/// bot; then re-arms for the next due run.
async fn take_scheduled_runs(
    object: &ChannelObject,
    database: &D1Database,
    conversation_key: &str,
    now: i64,
) -> Result<()> {
    for run in schedules::claim_due(database, conversation_key, now).await? {
        object.step(|channel| channel.enqueue_scheduled(run, now))?;
    }
    refresh_schedule_due(object, database, conversation_key).await
}

/// Reads the conversation's nearest due run from D1 into the channel state.
pub async fn refresh_schedule_due(object: &ChannelObject, database: &D1Database, conversation_key: &str) -> Result<()> {
    let next = schedules::next_due(database, conversation_key).await?;
    let due = next.map(|at_ms| ScheduleDue { at_ms, conversation_key: conversation_key.to_string() });
    object.step(|channel| channel.set_schedule_due(due))
}

/// Processes silent past their timeout come back as failures (the person
/// hears it in the next turn); a worker given up on is also stopped, in case
/// it still runs.
async fn give_up_on_silent_processes(object: &ChannelObject, database: &D1Database, now: i64) -> Result<()> {
    let expired = object.step(|channel| channel.expire_processes(now, &object.config.channel))?;
    for (id, report) in expired {
        LogLine::warn("process_silent")
            .conversation(&report.origin.conversation_key)
            .id(&id)
            .field("kind", report.kind.label())
            .emit();
        if report.kind == ProcessKind::Worker {
            crate::edge::jobs::cancel_worker(database, &id, &report.origin.conversation_key).await?;
        }
    }
    Ok(())
}

/// Runs one turn to its end, or until a rate limit says to come back later
/// (then returns when).
async fn run_one(object: &ChannelObject, sql: &Sql, database: &D1Database, turn: &TurnSnapshot) -> Result<Option<i64>> {
    let config = &object.config;
    let started = now_ms();
    let Some(last) = turn.answering() else {
        object.step(|channel| channel.finish_turn(&TurnResult::default(), &config.channel, now_ms()))?;
        return Ok(None);
    };
    let platform = outbound::for_address(config, &object.state, &last.reply_address);
    let log = |line: LogLine| line.conversation(&last.conversation_key).id(&turn.id).platform(platform.name());
    // Reactions the model chose; a turn resumed after a crash has lost them (a small loss).
    let mut reactions = Vec::new();
    // The turn created or cancelled jobs: the channel's due time moves.
    let mut schedules_changed = false;
    if turn.result.is_none() {
        // Over a budget: no model call; the person hears why once a day.
        let spender = Spender::of(last);
        let mut thought = match spend::over_budget(database, &config.budgets, &spender).await {
            Some(scope) => over_budget_thought(database, scope, &spender).await,
            None => {
                platform.show_working(last).await;
                refresh_membership(object, &platform, last).await?;
                let thought = while_working(&platform, last, think(object, database, turn, platform.name())).await?;
                if let Err(error) = usage::record(database, &spender, usage::CHANNEL, thought.spend, now_ms()).await {
                    log(LogLine::warn("usage_not_recorded")).field("process", "channel").reason(&error).emit();
                }
                thought
            }
        };
        if thought.model_failed {
            // A scheduled run the model failed counts against its job; the
            // third failure in a row disables it, and the person hears so here
            // (once: a failed run alone is not worth an apology each time).
            if turn
                .messages
                .iter()
                .all(|message| schedules::parse_run_delivery_id(&message.event.delivery_id).is_some())
            {
                thought.texts.clear();
            }
            for run in scheduled_runs(turn) {
                if schedules::finish_run(database, run, "failed", Some("the model failed"), now_ms()).await? {
                    let (job, _) = schedules::parse_run_delivery_id(run).unwrap_or_default();
                    let notice = prompt::render("schedule_disabled", serde_json::json!({ "id": job }));
                    thought.texts.push(notice.unwrap_or_default());
                }
            }
        }
        delegate(object, database, turn, last, &thought).await?;
        compact(object, database, turn, last, &thought).await?;
        let result = thought.result;
        schedules_changed = thought.schedules_changed;
        reactions = thought.reactions.clone();
        // The replies, rendered for the platform and split to fit; a secret
        // is cut from what a reader sees of the whole turn (even split across
        // replies) before anything is stored or sent.
        let prepared = prepare(&thought.texts, platform.flavor(), platform.message_limit(), &redactor());
        if !prepared.found.is_empty() {
            log(LogLine::warn("reply_redacted")).field("found", prepared.found.join(", ")).emit();
        }
        let pieces = prepared.pieces;
        // In a group, quote the message being answered; a DM needs no quote.
        let reply_to = (!last.is_dm && !last.is_command).then_some(last.message_id.as_str());
        outbox::enqueue(sql, turn.id as i64, &pieces, reply_to, now_ms())?;
        object.step(|channel| channel.record_turn_result(result))?;
    }
    let delivery = deliver(config, &platform, sql, last, turn.id as i64).await?;
    pending::report(object, sql, database, &last.conversation_key).await;
    let sent = match delivery {
        Delivery::Done(sent) => sent,
        // The turn is not over: the working signal stays until it is.
        Delivery::RateLimited { resume_at } => return Ok(Some(resume_at)),
    };
    platform.clear_working(last).await;
    crate::edge::web_chat::changed(&object.state, "outbox");
    for emoji in &reactions {
        platform.react_with(last, emoji).await;
    }
    history_store::record(sql, &sent)?;
    for run in scheduled_runs(turn) {
        let status = if sent.is_empty() { "nothing" } else { "delivered" };
        schedules::finish_run(database, run, status, None, now_ms()).await?;
    }
    // A resolved run frees its job: claim what fell due while it ran.
    if schedules_changed || scheduled_runs(turn).next().is_some() {
        take_scheduled_runs(object, database, &last.conversation_key, now_ms()).await?;
    }
    let handled: Vec<String> = turn.messages.iter().map(|message| message.event.delivery_id.clone()).collect();
    inbox::settle(sql, &handled, if sent.is_empty() { "skipped" } else { "answered" }, now_ms())?;
    let result = TurnResult { sent_messages: sent.len() as u64, ..object.channel.borrow().current_result() };
    object.step(|channel| channel.finish_turn(&result, &config.channel, now_ms()))?;
    let line = log(LogLine::info("turn_finished")).duration_ms(now_ms() - started).tokens(result.usage);
    line.field("messages", turn.messages.len()).field("sent", sent.len()).emit();
    Ok(None)
}

/// A turn not run for its budget: the notice the first time today, then silence.
async fn over_budget_thought(database: &D1Database, scope: Scope, spender: &Spender) -> Thought {
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

/// The delivery ids of the scheduled runs a turn answers.
fn scheduled_runs(turn: &TurnSnapshot) -> impl Iterator<Item = &str> {
    turn.messages
        .iter()
        .map(|message| message.event.delivery_id.as_str())
        .filter(|id| schedules::parse_run_delivery_id(id).is_some())
}

/// What the model made of a turn.
#[derive(Default)]
struct Thought {
    /// The model failed (the person gets the failure message).
    model_failed: bool,
    /// The schedule tool created or cancelled a job.
    schedules_changed: bool,
    /// The texts to send.
    texts: Vec<String>,
    result: TurnResult,
    /// Branches and workers to start, follow-ups to route, processes to cancel.
    delegations: Vec<Action>,
    /// Emoji to react with on the message answered.
    reactions: Vec<String>,
    /// The conversation as the model saw it, for branches to fork.
    fork: Vec<HistoryEntry>,
    /// The ids of the live history messages in the prompt, oldest first.
    history_ids: Vec<String>,
    /// The prompt's estimated size.
    estimated_tokens: u64,
    /// What the model calls cost.
    spend: Spend,
}

/// Asks the model. A model that keeps failing yields the friendly failure
/// message, never silence.
async fn think(object: &ChannelObject, database: &D1Database, turn: &TurnSnapshot, platform: &str) -> Result<Thought> {
    let config = &object.config;
    let Some(answering) = turn.answering() else {
        return Ok(Thought::default());
    };
    let conversation_key = &answering.conversation_key;
    let mut stored: Vec<StoredMessage> =
        turn.messages.iter().map(|message| StoredMessage::inbound(&message.event, message.received_at_ms)).collect();
    // Finished work enters the history too, so later turns remember it.
    stored.extend(turn.process_events.iter().map(|event| StoredMessage {
        id: format!("{conversation_key}:process:{}", event.envelope.id),
        conversation_key: conversation_key.clone(),
        role: HistoryRole::User,
        author_id: event.envelope.from.clone(),
        author_name: event.kind.label().to_lowercase(),
        content: format!("[{} on \"{}\"] {}", event.kind.label().to_lowercase(), event.task, event.envelope.body),
        platform_message_id: None,
        created_at: event.envelope.ts,
        compacted: 0,
    }));
    // The history comes from the object's own copy; D1 is read once per
    // conversation (to take over what it held before) and for a stale bulletin.
    let sql = object.state.storage().counted_sql();
    let keep = kept_rows(config.history_limit);
    history_store::take_over(&sql, database, conversation_key, keep, now_ms()).await?;
    history_store::record(&sql, &stored)?;
    let current_ids: Vec<&str> = stored.iter().map(|message| message.id.as_str()).collect();
    let loaded = history_store::load(&sql, &current_ids, config.history_limit as usize)?;
    let bulletin = history_store::bulletin(&sql, database, now_ms(), config.bulletin_cache_ms).await?;
    let history_ids: Vec<String> = loaded.earlier.iter().map(|row| row.id.clone()).collect();
    let entry = |row: &StoredMessage| HistoryEntry {
        role: row.role,
        author_name: row.author_name.clone(),
        content: row.content.clone(),
    };
    let earlier: Vec<HistoryEntry> = loaded.earlier.iter().map(entry).collect();
    let current: Vec<InboundEvent> = turn.messages.iter().map(|message| message.event.clone()).collect();
    let context = TurnContext {
        bot_name: &config.bot_name,
        platform,
        now_utc: format_utc(now_ms()),
        bulletin: &bulletin,
        summaries: &loaded.summaries,
        history: &earlier,
        context: &turn.context,
        current: &current,
        notice: turn.notice,
        process_events: &turn.process_events,
        processes: &turn.processes,
    };
    let mut estimated_tokens = 0;
    let schedules_changed = std::cell::Cell::new(false);
    let model = HttpModel::new(config, &object.env, &config.channel_model);
    let outcome = async {
        let messages = compose_messages(&context).map_err(|error| error.to_string())?;
        estimated_tokens = estimate_tokens(messages.iter().map(|message| message.content.len()).sum());
        let model = model.as_ref().map_err(|error| error.to_string())?;
        let tools = ChannelTools {
            config,
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
            changed: &schedules_changed,
        };
        run_turn(model, model.model_name(), messages, &turn.processes, &tools).await.map_err(|error| error.to_string())
    }
    .await;
    let mut fork = earlier.clone();
    fork.extend(stored.iter().map(entry));
    let mut thought = Thought {
        fork,
        history_ids,
        estimated_tokens,
        schedules_changed: schedules_changed.get(),
        spend: model.as_ref().map(HttpModel::spent).unwrap_or_default(),
        ..Thought::default()
    };
    match outcome {
        Ok(outcome) => {
            thought.result.usage = outcome.usage;
            for action in outcome.actions {
                match action {
                    Action::Reply { text } => thought.texts.push(text),
                    Action::Disengage => thought.result.disengaged = true,
                    Action::React { emoji } => thought.reactions.push(emoji),
                    Action::Skip { .. } => {}
                    delegation => thought.delegations.push(delegation),
                }
            }
        }
        Err(error) => {
            LogLine::error("turn_failed").conversation(conversation_key).id(&turn.id).reason(&error).emit();
            thought.model_failed = true;
            thought.texts.push(prompt::text("model_failure"));
        }
    }
    Ok(thought)
}

/// Runs `work` (the model's part of a turn), renewing the platform's fading
/// working signal every [`WORKING_RENEW_MS`] until it is done.
async fn while_working<T>(platform: &Platform<'_>, event: &InboundEvent, work: impl Future<Output = T>) -> T {
    let renew = async {
        loop {
            sleep_ms(WORKING_RENEW_MS).await;
            platform.renew_working(event).await;
        }
    };
    match select(pin!(work), pin!(renew)).await {
        Either::Left((value, _)) => value,
        Either::Right(((), work)) => work.await,
    }
}

/// Carries out the turn's delegations: queues a job for each branch and worker
/// started and each follow-up routed, and stops cancelled processes. Ids are
/// stable per turn, so a resumed turn's repeat is recognised and skipped.
async fn delegate(
    object: &ChannelObject,
    database: &D1Database,
    turn: &TurnSnapshot,
    origin: &InboundEvent,
    thought: &Thought,
) -> Result<()> {
    let sql = object.state.storage().counted_sql();
    let conversation_key = &origin.conversation_key;
    for (index, action) in thought.delegations.iter().enumerate() {
        let id = format!("{conversation_key}:{}:{index}", turn.id);
        let status = |kind, task: &str, interactive| ProcessStatus {
            kind,
            task: task.to_string(),
            started_at_ms: now_ms(),
            origin: origin.clone(),
            status: None,
            interactive,
            waiting: false,
            last_heard_ms: now_ms(),
        };
        let (envelope, job) = match action {
            Action::Branch { question } => {
                if !object.step(|channel| channel.start_process(&id, status(ProcessKind::Branch, question, false)))? {
                    continue;
                }
                let job = Job::Branch(Box::new(BranchJob {
                    id: id.clone(),
                    conversation_key: conversation_key.clone(),
                    question: question.clone(),
                    history: thought.fork.clone(),
                    origin: origin.clone(),
                }));
                (task_envelope(&id, "branch", &id, question), Some(job))
            }
            Action::SpawnWorker { task, interactive } => {
                start_worker(object, &id, task, *interactive, origin.clone()).await?;
                continue;
            }
            Action::Route { id: worker, message } => {
                if object.step(|channel| channel.route_to_process(worker, now_ms()))?.is_err() {
                    continue;
                }
                let input = WorkerInput::FollowUp { message: message.clone() };
                let job = WorkerJob {
                    id: worker.clone(),
                    conversation_key: conversation_key.clone(),
                    step: id.clone(),
                    input,
                    person: crate::budget::Person::of(conversation_key, &origin.author),
                };
                (task_envelope(&id, "worker", worker, message), Some(Job::Worker(job)))
            }
            Action::Cancel { id: process } => {
                let Ok(stopped) = object.step(|channel| channel.cancel_process(process))? else {
                    continue;
                };
                if stopped.kind == ProcessKind::Worker {
                    crate::edge::jobs::cancel_worker(database, process, conversation_key).await?;
                }
                let to = format!("{}:{process}", stopped.kind.label().to_lowercase());
                let envelope = Envelope::new(
                    format!("{id}:cancel"),
                    now_ms(),
                    "channel",
                    to,
                    MessageType::Cancel,
                    Some(process.clone()),
                    "",
                );
                (envelope, None)
            }
            Action::Reply { .. } | Action::Skip { .. } | Action::Disengage | Action::React { .. } => continue,
        };
        envelopes::log(&sql, &envelope)?;
        if let Some(job) = job {
            crate::edge::jobs::enqueue(&object.env, &job).await?;
        }
    }
    Ok(())
}

/// Starts a worker in this conversation: records it in the channel state,
/// logs its task envelope and queues its first step. False when there is no
/// room for another worker (or one with this id is already recorded).
pub(super) async fn start_worker(
    object: &ChannelObject,
    id: &str,
    task: &str,
    interactive: bool,
    origin: InboundEvent,
) -> Result<bool> {
    let now = now_ms();
    let conversation_key = origin.conversation_key.clone();
    let status_author = origin.author.clone();
    let status = ProcessStatus {
        kind: ProcessKind::Worker,
        task: task.to_string(),
        started_at_ms: now,
        origin,
        status: None,
        interactive,
        waiting: false,
        last_heard_ms: now,
    };
    if !object.step(|channel| channel.start_process(id, status))? {
        return Ok(false);
    }
    envelopes::log(&object.state.storage().counted_sql(), &task_envelope(id, "worker", id, task))?;
    let input = WorkerInput::Start { task: task.to_string(), interactive };
    let person = crate::budget::Person::of(&conversation_key, &status_author);
    let job = WorkerJob { id: id.to_string(), conversation_key, step: "s1".into(), input, person };
    crate::edge::jobs::enqueue(&object.env, &Job::Worker(job)).await?;
    crate::edge::web_chat::changed(&object.state, "processes");
    Ok(true)
}

/// The `task` envelope that hands work to a process.
fn task_envelope(id: &str, kind: &str, process: &str, body: &str) -> Envelope {
    Envelope::new(
        format!("{id}:task"),
        now_ms(),
        "channel",
        format!("{kind}:{process}"),
        MessageType::Task,
        Some(process.to_string()),
        body.to_string(),
    )
}

/// Keeps the context inside the window: summarising is queued (the channel
/// never waits for it); only an emergency cut happens here, without an LLM.
async fn compact(
    object: &ChannelObject,
    database: &D1Database,
    turn: &TurnSnapshot,
    origin: &InboundEvent,
    thought: &Thought,
) -> Result<()> {
    let ids = &thought.history_ids;
    match plan(thought.estimated_tokens, object.config.context_window_tokens, ids.len()) {
        CompactionPlan::Nothing => Ok(()),
        CompactionPlan::Truncate { oldest } => {
            history_store::drop_oldest(&object.state.storage().counted_sql(), &ids[..oldest])
        }
        CompactionPlan::Summarise { oldest } => {
            // The compactor reads the messages from D1: they must be there.
            let keep = kept_rows(object.config.history_limit);
            if let Err(error) = history_store::mirror(&object.state.storage().counted_sql(), database, keep).await {
                LogLine::warn("compaction_waits_for_mirror").reason(&error).emit();
                return Ok(());
            }
            let job = Job::Compaction(CompactionJob {
                id: format!("{}:{}:compaction", origin.conversation_key, turn.id),
                conversation_key: origin.conversation_key.clone(),
                message_ids: ids[..oldest].to_vec(),
            });
            crate::edge::jobs::enqueue(&object.env, &job).await
        }
    }
}

/// Re-reads the group's member count when the cached one is not fresh.
async fn refresh_membership(object: &ChannelObject, platform: &Platform<'_>, event: &InboundEvent) -> Result<()> {
    let now = now_ms();
    let fresh = object.channel.borrow().membership.get().is_some_and(|read| read.is_fresh_and_complete(now));
    if event.is_dm || fresh {
        return Ok(());
    }
    match platform.member_count(event, now).await {
        Some(read) => object.step(|channel| {
            channel.membership.update([read]);
        }),
        None => Ok(()),
    }
}

/// How a turn's delivery ended.
enum Delivery {
    /// Every piece was sent or has failed for good: these were sent.
    Done(Vec<StoredMessage>),
    /// The platform asked to wait: resume the turn at this time.
    RateLimited { resume_at: i64 },
}

/// Sends the turn's unsent pieces in order; returns every piece sent so far, as history.
async fn deliver(
    config: &Config,
    platform: &Platform<'_>,
    sql: &Sql,
    event: &InboundEvent,
    turn: i64,
) -> Result<Delivery> {
    let mut sent = Vec::new();
    // The note is plain text, escaped for the platform like any text.
    let resend_note = format!("{}\n\n", escape(platform.flavor(), prompt::text("resend_note").trim_end(), false));
    for entry in outbox::entries(sql, turn)? {
        let piece_id = format!("{}/{}", event.conversation_key, entry.id);
        let piece = Piece {
            id: &piece_id,
            index: entry.piece.max(0) as usize,
            text: &entry.text,
            reply_to: entry.reply_to.as_deref(),
        };
        // Found mid-send: the Worker stopped during the call. Ask the platform.
        let interrupted = match entry.status.as_str() {
            "sending" => Some(platform.interrupted(&event.reply_address, &piece, entry.created_at).await),
            _ => None,
        };
        let mut attempts = entry.attempts.max(0) as u32;
        let mut text = entry.text.clone();
        if let Some(unsettled @ (Interrupted::Resend | Interrupted::Unsure)) = &interrupted {
            // A copy that may be a repeat says so, in the outbox too, so a
            // later retry (after a rate limit) still carries the note.
            let unsure = *unsettled == Interrupted::Unsure;
            if unsure && !text.starts_with(&resend_note) {
                text = format!("{resend_note}{text}");
            }
            // The interrupted call counts as an attempt: a piece that keeps
            // taking its sender down is given up on, like a failing one.
            attempts = outbox::mark_interrupted(sql, &entry.id, &text)?.max(0) as u32;
            let line = LogLine::warn("send_interrupted").conversation(&event.conversation_key).id(&entry.id);
            line.field("resent", true).field("marked_as_possible_repeat", unsure).emit();
        }
        let platform_message_id = match (entry.status.as_str(), interrupted) {
            ("sent", _) => entry.platform_message_id.clone(),
            (_, Some(Interrupted::Landed(id))) => {
                outbox::mark_sent(sql, &entry.id, &id)?;
                Some(id)
            }
            ("pending", _) | (_, Some(Interrupted::Resend | Interrupted::Unsure)) => {
                let piece = Piece { text: &text, ..piece };
                let unsent = Unsent { id: &entry.id, created_at: entry.created_at, attempts, note: &resend_note };
                match send_with_retries(config, platform, sql, event, unsent, &piece).await? {
                    Sending::Sent(id) => Some(id),
                    Sending::Failed => None,
                    Sending::RetryAt(resume_at) => return Ok(Delivery::RateLimited { resume_at }),
                }
            }
            _ => None,
        };
        if let Some(platform_message_id) = platform_message_id {
            sent.push(StoredMessage {
                id: format!("{}:out:{}", event.conversation_key, entry.id),
                conversation_key: event.conversation_key.clone(),
                role: HistoryRole::Assistant,
                author_id: "bot".into(),
                author_name: config.bot_name.clone(),
                // The model remembers what the reader saw, not the resend's note
                // nor the platform's escapes.
                content: shown(platform.flavor(), entry.text.strip_prefix(&resend_note).unwrap_or(&entry.text)),
                platform_message_id: Some(platform_message_id),
                // When the reply was written, before its send began: a message
                // that arrives while the send is in flight comes after it.
                created_at: entry.created_at,
                compacted: 0,
            });
        }
    }
    Ok(Delivery::Done(sent))
}

enum Sending {
    Sent(String),
    /// Given up after bounded attempts; recorded in the outbox for the admin API.
    Failed,
    /// Rate limited: try again at this time (from the alarm, not by waiting here).
    RetryAt(i64),
}

/// A piece about to be sent: its outbox row, the attempts it has had, and the
/// note a copy that may be a repeat carries.
struct Unsent<'a> {
    id: &'a str,
    created_at: i64,
    attempts: u32,
    note: &'a str,
}

async fn send_with_retries(
    config: &Config,
    platform: &Platform<'_>,
    sql: &Sql,
    event: &InboundEvent,
    unsent: Unsent<'_>,
    piece: &Piece<'_>,
) -> Result<Sending> {
    let Unsent { id, mut attempts, .. } = unsent;
    if attempts >= config.send_max_attempts {
        outbox::mark_attempt_failed(sql, id, "interrupted mid-send too often", true)?;
        return Ok(Sending::Failed);
    }
    let mut text = piece.text.to_string();
    loop {
        let piece = Piece { text: &text, ..*piece };
        outbox::mark_sending(sql, id)?;
        let failure = match platform.send(&event.reply_address, &piece).await {
            Ok(message_id) => {
                outbox::mark_sent(sql, id, &message_id)?;
                return Ok(Sending::Sent(message_id));
            }
            Err(failure) => failure,
        };
        attempts += 1;
        let give_up = !failure.retryable || attempts >= config.send_max_attempts;
        LogLine::warn("send_failed")
            .conversation(&event.conversation_key)
            .id(&id)
            .field("attempt", attempts)
            .field("gave_up", give_up)
            .reason(&failure.message)
            .emit();
        outbox::mark_attempt_failed(sql, id, &failure.message, give_up)?;
        if give_up {
            return Ok(Sending::Failed);
        }
        if let Some(wait) = failure.retry_after_ms {
            return Ok(Sending::RetryAt(now_ms() + wait as i64));
        }
        sleep_ms(SEND_BACKOFF_MS).await;
        // No answer is not a no: the platform may have the message. Settle
        // it as an interrupted send before trying again.
        if failure.ambiguous {
            match platform.interrupted(&event.reply_address, &piece, unsent.created_at).await {
                Interrupted::Landed(message_id) => {
                    outbox::mark_sent(sql, id, &message_id)?;
                    return Ok(Sending::Sent(message_id));
                }
                Interrupted::Resend => {}
                Interrupted::Unsure if piece.text.starts_with(unsent.note) => {}
                Interrupted::Unsure => {
                    text = format!("{}{text}", unsent.note);
                    outbox::mark_text(sql, id, &text)?;
                }
            }
        }
    }
}
