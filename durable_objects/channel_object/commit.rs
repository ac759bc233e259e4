//! The alarm's one D1 commit: after its turns' replies went out, everything
//! the turns wrote for D1 goes in one batch (one round trip, one
//! transaction): the history rows, the spend the turns held, the sightings of
//! their people (only when new, renamed or an hour old), the outbox's unsent
//! count when it moved (pending.rs) and the conversation index row. Until the
//! batch lands, all of it waits in the object's SQLite (history rows stamped
//! above the held row's mark, the held row's spend, `sightings` with
//! `pending = 1`); a failed commit is sent again by the next alarm (30 s out
//! if none is set). The rules are `crate::channel::history_mirror::plan_commit`.
//!
//! Spend counts once: each held step has a sequence number (the held row's,
//! never reused), the spend statement adds only rows above the index row's
//! `flush_seq`, and the index row's statement, last in the batch, raises
//! `flush_seq` to the highest number sent. A crash after D1 committed and
//! before the object forgot the rows sends them again, and D1 skips them.

use serde::Deserialize;
use worker::{D1Database, Result, SqlStorageValue};

use super::{held, history as history_store, stats, Channel};
use crate::budget::rules::{day_of, unsent_rows, Spend, Unsent};
use crate::budget::usage::Spender;
use crate::channel::history_mirror::{kept_rows, plan_commit};
use crate::channel::memo::Memo;
use crate::conversations::store::{self as index, Conversation};
use crate::inbound::ConversationKey;
use crate::log_line::LogLine;
use crate::people::rules::{needs_sighting, Profile, Sighted};
use crate::runtime::config::DATABASE_BINDING;
use crate::runtime::durable::{MeteredStorage, Sql};
use crate::runtime::http::now_ms;
use crate::runtime::log::Emit;

pub const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS sightings (
    platform_key TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    is_bot INTEGER NOT NULL,
    seen_at INTEGER NOT NULL,
    pending INTEGER NOT NULL
) WITHOUT ROWID;
";

/// When a commit failed (or more waits), the object comes back for it this
/// much later if nothing else wakes it sooner.
const COMMIT_RETRY_MS: i64 = 30_000;
/// Held spend steps one commit sends at most (a longer backlog goes over several).
const SPEND_ROWS_PER_COMMIT: usize = 100;

/// A sighting to send.
#[derive(Deserialize)]
struct Sighting {
    platform_key: String,
    name: String,
    is_bot: i64,
    seen_at: i64,
}

/// Each person's sighting as the object last read or wrote it.
pub(super) type Seen = Memo<Option<Sighted>>;

/// Holds a channel step's spend for the commit (nothing for a step that spent nothing).
pub(super) fn hold_spend(sql: &Sql, kept: &held::Kept, spender: &Spender, spend: Spend, now: i64) -> Result<()> {
    let person = spender.person.as_ref();
    held::update(sql, kept, |held| held.hold(&spender.conversation_key, &day_of(now), person, spend))
}

/// Today's spend the object holds unsent, and what of it `spender`'s person spent.
pub(super) fn unsent(sql: &Sql, kept: &held::Kept, spender: &Spender, now: i64) -> Result<Unsent> {
    let person = spender.person.as_ref().map(|person| person.key.as_str());
    Ok(held::load(sql, kept)?.unsent(&day_of(now), person))
}

/// Notes the turn's people for the commit: a sighting waits for those the
/// object never sent, or sent under another name, or over an hour ago.
pub(super) fn note_sightings(sql: &Sql, seen: &Seen, speakers: &[Profile], now: i64) -> Result<()> {
    for person in speakers {
        let name = crate::people::store::seen_name(person);
        let last = seen.get(&person.key, || {
            let rows: Vec<Sighted> = sql
                .exec("SELECT name, seen_at FROM sightings WHERE platform_key = ?", vec![person.key.as_str().into()])?
                .to_array()?;
            Ok::<_, worker::Error>(rows.into_iter().next())
        })?;
        if !needs_sighting(last.as_ref(), name, now) {
            continue;
        }
        sql.exec(
            "INSERT INTO sightings (platform_key, name, is_bot, seen_at, pending) VALUES (?, ?, ?, ?, 1) \
             ON CONFLICT (platform_key) DO UPDATE SET name = excluded.name, is_bot = excluded.is_bot, \
             seen_at = excluded.seen_at, pending = 1",
            vec![
                person.key.as_str().into(),
                name.into(),
                SqlStorageValue::from(i64::from(person.is_bot)),
                SqlStorageValue::from(now),
            ],
        )?;
        seen.put(&person.key, Some(Sighted { name: name.to_string(), seen_at: now }));
    }
    Ok(())
}

/// Sends what the alarm's turns left for D1. A failure keeps it all for
/// later (the alarm comes back for it); replies never wait on it.
pub(super) async fn commit(object: &Channel) -> Result<()> {
    let sql = object.state.storage().counted_sql();
    if let Err(error) = send(object, &sql).await {
        LogLine::warn("commit_not_sent").field("recovery", "kept for the next alarm").reason(&error).emit();
    }
    let storage = object.state.storage();
    if has_unsent(&sql, &object.held)? && storage.get_alarm().await?.is_none() {
        storage.set_alarm_counted(COMMIT_RETRY_MS).await?;
    }
    Ok(())
}

/// Whether anything waits for a commit (one statement: the held row is in memory).
fn has_unsent(sql: &Sql, kept: &held::Kept) -> Result<bool> {
    if held::load(sql, kept)?.has_spend() {
        return Ok(true);
    }
    #[derive(Deserialize)]
    struct Found {
        found: i64,
    }
    const QUERY: &str = concat!(
        "SELECT EXISTS (SELECT 1 FROM sightings WHERE pending = 1) OR ",
        history_store::pending_condition!(),
        " AS found"
    );
    let rows: Vec<Found> = sql.exec(QUERY, None)?.to_array()?;
    Ok(rows.first().is_some_and(|row| row.found != 0))
}

async fn send(object: &Channel, sql: &Sql) -> Result<()> {
    let history = history_store::unmirrored(sql)?;
    let kept = held::load(sql, &object.held)?;
    let spend = kept.to_send(SPEND_ROWS_PER_COMMIT);
    let sightings: Vec<Sighting> = sql.exec("SELECT * FROM sightings WHERE pending = 1", None)?.to_array()?;
    let row = stats::read(sql)?;
    let moved = row.is_some() && *object.index_written.borrow() != row;
    let key = row.as_ref().map(|row| row.conversation_key.clone());
    let key = key.or_else(|| spend.first().map(|held| held.conversation_key.clone()));
    let key = key.or_else(|| history.rows.first().map(|message| message.conversation_key.clone()));
    // The outbox's count needs the conversation's key (none before its first inbound or spend).
    let outbox = match &key {
        Some(_) => super::pending::moved(sql, object.reported_unsent.get())?,
        None => None,
    };
    let Some(plan) = plan_commit(history.rows.len(), spend.len(), sightings.len(), outbox.is_some(), moved) else {
        return Ok(());
    };
    let now = now_ms();
    // The conversation's rows go to its shard, people's sightings to the
    // shards of their platform ids: one batch when they are one database,
    // else the sightings first (sent again, harmlessly, if the shard's batch fails).
    let Some(key) = &key else { return Ok(()) };
    let shared = object.env.d1(DATABASE_BINDING)?;
    let database = crate::runtime::d1::shard_of(&object.env, key)?;
    let mut statements = Vec::new();
    match crate::runtime::d1::unsharded(&object.env) {
        true => statements = people_statements(&shared, &sightings)?,
        false if !sightings.is_empty() => {
            let seen: Vec<(&str, &str, bool, i64)> = sightings
                .iter()
                .map(|seen| (seen.platform_key.as_str(), seen.name.as_str(), seen.is_bot != 0, seen.seen_at))
                .collect();
            crate::people::store::sightings_on_shards(&object.env, &seen).await?;
        }
        false => {}
    }
    statements.extend(history_store::mirror_statements(&database, &history.rows)?);
    let flush_seq = spend.last().map(|held| held.seq);
    if let Some(first) = spend.first() {
        let rows: Vec<serde_json::Value> = spend
            .iter()
            .flat_map(|held| unsent_rows(held.seq, &held.day, &held.conversation_key, held.person.as_ref(), held.spend))
            .collect();
        let rows = serde_json::to_string(&rows)?;
        statements.push(crate::budget::usage::unsent_statement(&database, &first.conversation_key, &rows)?);
    }
    let index_row = match plan.index {
        true => row.clone().or_else(|| spend.first().map(|held| bare_row(&held.conversation_key, now))),
        false => None,
    };
    if let Some(unsent) = outbox {
        statements.push(crate::status::api::pending_statement(&database, key, unsent)?);
    }
    if let Some(index_row) = &index_row {
        statements.push(index::upsert_statement(&database, index_row, now, flush_seq)?);
    }
    crate::runtime::d1::batch(&database, statements).await?;
    // D1 has it all: the object forgets what it held, in one row written
    // (read again: a step may have held spend meanwhile).
    held::update(sql, &object.held, |held| held.sent(flush_seq, history.through))?;
    history_store::forget_mirrored(sql, kept_rows(object.config.history_limit))?;
    for sighting in &sightings {
        sql.exec(
            "UPDATE sightings SET pending = 0 WHERE platform_key = ? AND seen_at = ? AND name = ?",
            vec![
                sighting.platform_key.as_str().into(),
                SqlStorageValue::from(sighting.seen_at),
                sighting.name.as_str().into(),
            ],
        )?;
    }
    if outbox.is_some() {
        object.reported_unsent.set(outbox);
    }
    if plan.index && row.is_some() {
        *object.index_written.borrow_mut() = row;
    }
    Ok(())
}

/// The sightings' statements, for the one database there is (no shards).
fn people_statements(database: &D1Database, sightings: &[Sighting]) -> Result<Vec<worker::D1PreparedStatement>> {
    let mut statements = Vec::new();
    for sighting in sightings {
        let is_bot = sighting.is_bot != 0;
        statements.extend(crate::people::store::sighting(
            database,
            &sighting.platform_key,
            &sighting.name,
            is_bot,
            sighting.seen_at,
        )?);
    }
    Ok(statements)
}

/// The index row of a conversation that spent before any inbound counted in
/// it (a scheduled run's first turn): its key, no counts.
fn bare_row(conversation_key: &str, now: i64) -> Conversation {
    let platform = ConversationKey::parse(conversation_key).map(|key| key.platform()).unwrap_or_default();
    Conversation {
        conversation_key: conversation_key.to_string(),
        platform: platform.into(),
        title: None,
        last_activity_at: now,
        message_count: 0,
        engaged_count: 0,
        observed_count: 0,
        awaiting_since: None,
    }
}
