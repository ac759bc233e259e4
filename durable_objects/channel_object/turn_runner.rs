//! Runs the channel's turns from the alarm. Each turn is a sequence of
//! checkpointed steps: begin (fix the input), think (the model's answer goes
//! to the outbox), send (each outbox piece at most once), finish. A crash at
//! any point resumes at the step it reached.
//!
//! This file is the order of the steps; each step's work lives beside it:
//! `thinking.rs` (asking the model), `delegation.rs` (handing work to
//! processes), `delivery.rs` (sending the outbox), `scheduled_runs.rs` and
//! `history_upkeep.rs` (what runs around the turns).

use worker::{D1Database, Result};

use super::agent_data::{read, TurnReads};
use super::delegation::{delegate, give_up_on_silent_processes};
use super::delivery::{deliver, Delivery};
use super::drafts::quoted;
use super::history_upkeep::compact;
use super::outlet::Outlet;
use super::scheduled_runs::{scheduled_runs, take_scheduled_runs};
use super::thinking::{over_budget_thought, think, while_working, Draft, Thought};
use super::{commit, history as history_store, inbox, outbox, Channel};
use crate::budget::usage::Spender;
use crate::channel::state::{QueuedMessage, TurnResult, TurnSnapshot};
use crate::channel::turn::APOLOGISE_AFTER_FAILURES;
use crate::inbound::InboundEvent;
use crate::log_line::LogLine;
use crate::platforms::messenger::{Messenger, Streaming};
use crate::platforms::outbound::{self, Outbound};
use crate::prompt;
use crate::reply::pieces::prepare;
use crate::runtime::config::{redactor, DATABASE_BINDING};
use crate::runtime::durable::{MeteredStorage, Sql};
use crate::runtime::http::now_ms;
use crate::runtime::log::Emit;
use crate::schedules::store as schedules;

/// Turns one alarm runs before it hands over to a fresh alarm.
const MAX_TURNS_PER_ALARM: usize = 8;
/// How many times a turn thinks again for edits heard while it thought.
const MAX_RETHINKS: usize = 2;
/// An alarm this early (or less) is close enough to run.
const WAKE_TOLERANCE_MS: i64 = 25;

/// Runs the due turns, then commits what they wrote for D1 (history rows,
/// spend, sightings, the index row) in one batch: one D1 write per alarm,
/// after the replies went out (commit.rs).
pub async fn run(object: &Channel) -> Result<()> {
    let ran = run_turns(object).await;
    super::commit::commit(object).await?;
    ran
}

async fn run_turns(object: &Channel) -> Result<()> {
    // Inbounds held for the member count are decided first, before any turn
    // begins or any model is called (see Channel::confirm_held).
    object.confirm_held().await?;
    let config = &object.config;
    let now = now_ms();
    // A burst that is still arriving pushed the wake time; sleep until it settles.
    let wake_at = object.machine.borrow().wake_at(&config.channel, now);
    if let Some(wake_at) = wake_at.filter(|&at| at > now + WAKE_TOLERANCE_MS) {
        return object.state.storage().set_alarm_counted(wake_at - now).await;
    }
    let sql = object.state.storage().counted_sql();
    let database = object.env.d1(DATABASE_BINDING)?;
    super::approvals::time_out_due(object, now).await?;
    give_up_on_silent_processes(object, &database, now).await?;
    let due = object.machine.borrow().schedule_due.get().cloned();
    if let Some(due) = due.filter(|due| due.at_ms <= now + WAKE_TOLERANCE_MS) {
        take_scheduled_runs(object, &database, &due.conversation_key, now).await?;
    }
    if object.machine.borrow().current_turn.get().is_some_and(|turn| turn.result.is_none()) {
        // A turn that broke off before its answer (the Worker stopped): the
        // sweeper learns it waits before this run, too, can break off.
        object.flush_index_now().await;
    }
    for _ in 0..MAX_TURNS_PER_ALARM {
        let Some(turn) = object.step(|machine| machine.begin_turn())? else {
            // Nothing to run now; wake for what comes next (a process's deadline).
            let now = now_ms();
            let next = object.machine.borrow().wake_at(&config.channel, now);
            return match next.filter(|&at| at > now) {
                Some(at) => object.state.storage().set_alarm_counted(at - now).await,
                None => Ok(()),
            };
        };
        if let Some(resume_at) = run_one(object, &sql, &database, &turn).await? {
            // Rate limited: the same turn resumes then; later turns wait behind it.
            object.step(|machine| machine.defer_turn(resume_at))?;
            return object.state.storage().set_alarm_counted((resume_at - now_ms()).max(0)).await;
        }
    }
    // More turns are waiting: continue in a new alarm rather than run long.
    object.state.storage().set_alarm_counted(0).await
}

/// Runs one turn to its end, or until a rate limit says to come back later
/// (then returns when).
async fn run_one(object: &Channel, sql: &Sql, database: &D1Database, turn: &TurnSnapshot) -> Result<Option<i64>> {
    let config = &object.config;
    let started = now_ms();
    let Some(last) = turn.answering() else {
        object.step(|machine| machine.finish_turn(&TurnResult::default(), &config.channel, now_ms()))?;
        return Ok(None);
    };
    let platform = outbound::for_address(config, &object.state, &last.reply_address);
    // A turn with no new message answers only what work finished (its inbound was answered before).
    let follow_up = turn.messages.is_empty();
    let outlet = Outlet { config, env: &object.env, platform: &platform, sql, pace: &object.pace, follow_up };
    let log = |line: LogLine| line.conversation(&last.conversation_key).id(&turn.id).platform(platform.name());
    // Reactions the model chose; a turn resumed after a crash has lost them (a
    // small loss). The turn created or cancelled jobs: the channel's due time moves.
    let (reactions, schedules_changed) = match turn.result {
        None => answer(object, database, turn, last, &outlet).await?,
        Some(_) => (Vec::new(), false),
    };
    let delivery = deliver(&outlet, last, turn.id as i64).await?;
    let sent = match delivery {
        Delivery::Done(sent) => sent,
        // The turn is not over: the working signal stays until it is.
        Delivery::RateLimited { resume_at } => return Ok(Some(resume_at)),
    };
    platform.clear_working(last).await;
    crate::platforms::web_chat::messenger::changed(&object.state, "outbox");
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
    // The turn's messages as they are now: one deleted while it thought stays settled `deleted`.
    let current = object.machine.borrow().current_turn.get().map(|now| now.messages.clone());
    let handled: Vec<String> = current
        .unwrap_or_else(|| turn.messages.clone())
        .iter()
        .map(|message| message.event.delivery_id.clone())
        .collect();
    let status = if sent.is_empty() { "skipped" } else { "answered" };
    inbox::settle(sql, &mut *object.deliveries()?, &handled, status, now_ms())?;
    let result = TurnResult { sent_messages: sent.len() as u64, ..object.machine.borrow().current_result() };
    object.step(|machine| machine.finish_turn(&result, &config.channel, now_ms()))?;
    // The index learns the inbounds have their outcome (the sweeper reads it).
    object.flush_index_soon();
    let line = log(LogLine::info("turn_finished")).duration_ms(now_ms() - started).tokens(result.usage);
    line.field("messages", turn.messages.len()).field("sent", sent.len()).emit();
    Ok(None)
}

/// Answers a turn not answered yet: asks the model (or not, over a budget or
/// after failing runs), hands on its work and queues its replies. Returns the
/// reactions the model chose and whether it created or cancelled jobs.
async fn answer(
    object: &Channel,
    database: &D1Database,
    turn: &TurnSnapshot,
    last: &InboundEvent,
    outlet: &Outlet<'_>,
) -> Result<(Vec<String>, bool)> {
    let Outlet { platform, sql, .. } = *outlet;
    let log = |line: LogLine| line.conversation(&last.conversation_key).id(&turn.id).platform(platform.name());
    let mut thought = thought_for(object, database, turn, last, outlet).await?;
    // An edit or a deletion of the turn's messages heard while the model
    // thought: no answer went out yet, so it thinks again on what they say
    // now (a few times at most; each call is paid), or, all of them deleted,
    // answers nothing.
    let mut thought_over = turn.messages.clone();
    for _ in 0..MAX_RETHINKS {
        let changed = object.machine.borrow().current_turn.get().cloned();
        let Some(changed) = changed.filter(|now| now.result.is_none() && now.messages != thought_over) else {
            break;
        };
        // The first thought may have recorded them before the edit came.
        rewrite_history(sql, &thought_over, &changed.messages)?;
        if changed.messages.is_empty() && !follow_up_only(turn) {
            log(LogLine::info("turn_withdrawn")).emit();
            thought.texts.clear();
            thought.reactions.clear();
            break;
        }
        log(LogLine::info("turn_rethought")).field("reason", "a message of the turn was edited").emit();
        thought_over = changed.messages.clone();
        let answering = changed.answering().cloned().unwrap_or_else(|| last.clone());
        thought = thought_for(object, database, &changed, &answering, outlet).await?;
    }
    if thought.model_failed {
        failed_runs(database, turn, &mut thought).await?;
    }
    delegate(object, database, turn, last, &thought).await?;
    compact(object, &last.conversation_key, turn.id, &thought).await?;
    let result = thought.result;
    // The replies, rendered for the platform and split to fit; a secret
    // is cut from what a reader sees of the whole turn (even split across
    // replies) before anything is stored or sent.
    let prepared = prepare(&thought.texts, platform.flavor(), platform.message_limit(), &redactor());
    if !prepared.found.is_empty() {
        log(LogLine::warn("reply_redacted")).field("found", prepared.found.join(", ")).emit();
    }
    let pieces = prepared.pieces;
    outbox::enqueue(sql, turn.id as i64, &pieces, quoted(last), now_ms())?;
    outbox::enqueue_files(sql, turn.id as i64, &thought.files, now_ms())?;
    object.step(|machine| machine.record_turn_result(result))?;
    Ok((thought.reactions, thought.schedules_changed))
}

/// The history takes the turn's messages as they are `now` (edited, or
/// deleted if gone since `before`).
fn rewrite_history(sql: &Sql, before: &[QueuedMessage], now: &[QueuedMessage]) -> Result<()> {
    for message in before {
        let event = &message.event;
        match now.iter().find(|kept| kept.event.delivery_id == event.delivery_id) {
            Some(kept) => history_store::edit(sql, &event.message_id, Some(&event.author.id), &kept.event.text)?,
            None => history_store::delete(sql, &event.message_id)?,
        };
    }
    Ok(())
}

/// Whether the turn was run only for finished work (it had no message to lose).
fn follow_up_only(turn: &TurnSnapshot) -> bool {
    turn.messages.is_empty()
}

/// What the model makes of the turn; over a budget, the notice instead; after
/// runs that kept failing, the apology.
async fn thought_for(
    object: &Channel,
    database: &D1Database,
    turn: &TurnSnapshot,
    last: &InboundEvent,
    outlet: &Outlet<'_>,
) -> Result<Thought> {
    let platform = outlet.platform;
    let log = |line: LogLine| line.conversation(&last.conversation_key).id(&turn.id).platform(platform.name());
    // Over a budget: no model call; the person hears why once a day.
    let spender = Spender::of(last);
    let failures = object.alarm_failures.get();
    let reads = match failures >= APOLOGISE_AFTER_FAILURES {
        true => None,
        false => Some(read_turn(object, database, turn, &spender, outlet.sql).await?),
    };
    Ok(match reads {
        // The turn's runs kept failing before it could answer: it ends
        // now, in the apology, rather than wait on what keeps failing.
        None => {
            log(LogLine::error("turn_failed")).field("alarm_failures", failures).emit();
            let mut thought = Thought::default();
            thought.apologise();
            thought
        }
        Some(TurnReads { over_budget: Some(scope), .. }) => over_budget_thought(database, scope, &spender).await,
        Some(reads) => {
            platform.show_working(last).await;
            refresh_membership(object, platform, last).await?;
            let draft = Draft::default();
            let write = |text: &str| draft.write(text);
            let streams = platform.streaming() != Streaming::Off;
            let live = streams.then_some(&write as &dyn Fn(&str));
            let thinking = think(object, database, turn, platform, reads, live);
            let thought = while_working(outlet, last, turn.id as i64, &draft, thinking).await?;
            // Held for the alarm's commit, which adds it to the day's rollups once.
            if let Err(error) = commit::hold_spend(outlet.sql, &object.held, &spender, thought.spend, now_ms()) {
                log(LogLine::warn("usage_not_recorded")).field("process", "channel").reason(&error).emit();
            }
            thought
        }
    })
}

/// The turn's reads in D1, in one round trip (agent_data.rs): its budget's
/// standing, counting what this object holds for its commit (an earlier turn
/// of this alarm), its agent and its people, whose sightings are noted for
/// the commit.
async fn read_turn(
    object: &Channel,
    database: &D1Database,
    turn: &TurnSnapshot,
    spender: &Spender,
    sql: &Sql,
) -> Result<TurnReads> {
    let speakers = super::thinking::speakers_of(turn);
    if let Err(error) = commit::note_sightings(sql, &object.seen, &speakers, now_ms()) {
        LogLine::warn("people_not_noted").conversation(&spender.conversation_key).reason(&error).emit();
    }
    let unsent = commit::unsent(sql, &object.held, spender, now_ms())?;
    read(&object.env, database, &object.shared_reads, &object.config.budgets, spender, unsent, speakers).await
}

/// A scheduled run the model failed counts against its job; the third failure
/// in a row disables it, and the person hears so here (once: a failed run
/// alone is not worth an apology each time).
async fn failed_runs(database: &D1Database, turn: &TurnSnapshot, thought: &mut Thought) -> Result<()> {
    if turn.messages.iter().all(|message| schedules::parse_run_delivery_id(&message.event.delivery_id).is_some()) {
        thought.texts.clear();
    }
    for run in scheduled_runs(turn) {
        if schedules::finish_run(database, run, "failed", Some("the model failed"), now_ms()).await? {
            let (job, _) = schedules::parse_run_delivery_id(run).unwrap_or_default();
            let notice = prompt::render("schedule_disabled", serde_json::json!({ "id": job }));
            thought.texts.push(notice.unwrap_or_default());
        }
    }
    Ok(())
}

/// Re-reads the group's member count when the cached one is not fresh.
async fn refresh_membership(object: &Channel, platform: &Outbound<'_>, event: &InboundEvent) -> Result<()> {
    let now = now_ms();
    let fresh = object.machine.borrow().membership.get().is_some_and(|read| read.is_fresh_and_complete(now));
    if event.is_dm || fresh {
        return Ok(());
    }
    match platform.member_count(event, now).await {
        Some(read) => object.step(|machine| {
            machine.membership.update([read]);
        }),
        None => Ok(()),
    }
}
