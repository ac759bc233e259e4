//! The conversation's history as its turns read it, in the object's SQLite:
//! the newest rows and the compaction summaries, and the memory bulletin for a
//! while. New rows land here first and go to D1 with the alarm's one commit
//! after its turns (commit.rs; [`mirror`] alone before a compaction and for
//! the admin API). Every write D1 must see (an insert, a flag, an edit)
//! stamps the row with a change number above every other; a row is in D1
//! once its stamp is at or under the held row's mark (held.rs), moved only
//! once D1 took it, so a failed mirror is sent again later and nothing is
//! lost. A turn never waits on D1 for its history; the rules are in
//! `crate::channel::history_mirror`.
//!
//! The table holds about `kept_rows` rows and has no index at all (`id` is
//! checked by a scan): its reads scan a few hundred rows, while each index
//! would add a row written per row stored, billed a thousand times a row read.

use serde::Deserialize;
use worker::{D1Database, Result, SqlStorageValue};

use super::held::{self, mirrored_through};
use crate::channel::history_mirror::{
    bulletin_is_fresh, chunk_rows, earlier, MIRROR_BYTES_PER_STATEMENT, MIRROR_ROWS_PER_FLUSH,
};
use crate::channel::memo::Memo;
use crate::channel::schema::Column;
use crate::conversations::archive::{self as history, StoredMessage, Summary};
use crate::log_line::LogLine;
use crate::runtime::durable::Sql;
use crate::runtime::log::Emit;

pub const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS history (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL,
    conversation_key TEXT NOT NULL,
    role TEXT NOT NULL,
    author_id TEXT NOT NULL,
    author_name TEXT NOT NULL,
    content TEXT NOT NULL,
    platform_message_id TEXT,
    created_at INTEGER NOT NULL,
    compacted INTEGER NOT NULL DEFAULT 0,
    changed INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS history_summaries (
    id TEXT PRIMARY KEY,
    content TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS history_meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    at INTEGER NOT NULL
);
";

/// An object made before the change stamps marked each row `mirrored`: its
/// rows D1 lacked take their `seq` as stamp (the mark starts at 0), and
/// schema.rs then copies the table into its current shape.
pub const UPGRADE: Column = Column {
    table: "history",
    name: "changed",
    add: "ALTER TABLE history ADD COLUMN changed INTEGER NOT NULL DEFAULT 0; \
          UPDATE history SET changed = seq WHERE mirrored = 0",
};

/// Above every stamp a row holds and the mark: `+ 1` stamps a new row, `+ seq`
/// each row an update changes (distinct, so a flush cut by its limit never
/// leaves half of one stamp behind).
macro_rules! stamp_base {
    () => {
        concat!("(SELECT max(coalesce(max(changed), 0), ", mirrored_through!(), ") FROM history)")
    };
}

/// Stores a JSON array of rows (`?1`, in [`StoredMessage::mirror_row`]'s
/// order), each unless its id is there; stamped 0 when `?2` is 1 (in D1 already).
const INSERT: &str = concat!(
    "INSERT INTO history (id, conversation_key, role, author_id, author_name, content, \
     platform_message_id, created_at, compacted, changed) \
     SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'), \
     json_extract(value, '$[3]'), json_extract(value, '$[4]'), json_extract(value, '$[5]'), \
     json_extract(value, '$[6]'), json_extract(value, '$[7]'), json_extract(value, '$[8]'), \
     CASE ?2 WHEN 1 THEN 0 ELSE ",
    stamp_base!(),
    " + 1 + key END FROM json_each(?1) \
     WHERE NOT EXISTS (SELECT 1 FROM history WHERE id = json_extract(value, '$[0]')) ORDER BY key"
);

/// The prompt's history: summaries (oldest first) and the live rows before the turn's own.
pub struct Loaded {
    pub summaries: Vec<String>,
    pub earlier: Vec<StoredMessage>,
}

#[derive(Clone, Deserialize)]
pub struct MetaRow {
    value: String,
    at: i64,
}

/// `history_meta`'s rows as the object last read or wrote them.
pub type MetaKept = Memo<Option<MetaRow>>;

fn meta(sql: &Sql, kept: &MetaKept, key: &str) -> Result<Option<MetaRow>> {
    kept.get(key, || {
        let rows: Vec<MetaRow> =
            sql.exec("SELECT value, at FROM history_meta WHERE key = ?", vec![key.into()])?.to_array()?;
        Ok::<_, worker::Error>(rows.into_iter().next())
    })
}

fn set_meta(sql: &Sql, kept: &MetaKept, key: &str, value: &str, at: i64) -> Result<()> {
    sql.exec(
        "INSERT INTO history_meta (key, value, at) VALUES (?, ?, ?) \
         ON CONFLICT (key) DO UPDATE SET value = excluded.value, at = excluded.at",
        vec![key.into(), value.into(), SqlStorageValue::from(at)],
    )?;
    kept.put(key, Some(MetaRow { value: value.to_string(), at }));
    Ok(())
}

/// Once per conversation, takes over the history D1 holds (conversations that
/// began before the object kept it; for a new one, an empty read). Until that
/// read succeeds, no turn runs on a partial history: the error retries the alarm.
pub async fn take_over(
    sql: &Sql,
    kept: &MetaKept,
    db: &D1Database,
    conversation_key: &str,
    keep: usize,
    now: i64,
) -> Result<()> {
    if meta(sql, kept, "taken_over")?.is_some() {
        return Ok(());
    }
    let (summaries, rows) = history::load_for_takeover(db, conversation_key, keep).await?;
    store_summaries(sql, &summaries)?;
    let oldest_first: Vec<StoredMessage> = rows.into_iter().rev().collect();
    insert(sql, &oldest_first, true)?;
    set_meta(sql, kept, "taken_over", "1", now)
}

/// Stores `messages` in their order (one statement per chunk of
/// [`MIRROR_BYTES_PER_STATEMENT`]), each unless a row with its id is there
/// or came earlier in `messages`. A row D1 gave (the takeover, `mirrored`)
/// is stamped 0: in D1 already; the others take distinct stamps above every
/// other, rising in their order.
fn insert(sql: &Sql, messages: &[StoredMessage], mirrored: bool) -> Result<()> {
    let mut seen = std::collections::HashSet::with_capacity(messages.len());
    let mut rows = Vec::with_capacity(messages.len());
    for message in messages.iter().filter(|message| seen.insert(message.id.as_str())) {
        rows.push(message.mirror_row()?);
    }
    for chunk in chunk_rows(&rows, MIRROR_BYTES_PER_STATEMENT) {
        sql.exec(INSERT, vec![chunk.into(), SqlStorageValue::from(i64::from(mirrored))])?;
    }
    Ok(())
}

fn store_summaries(sql: &Sql, summaries: &[Summary]) -> Result<()> {
    for summary in summaries {
        sql.exec(
            "INSERT INTO history_summaries (id, content, created_at) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING",
            vec![
                summary.id.as_str().into(),
                summary.content.as_str().into(),
                SqlStorageValue::from(summary.created_at),
            ],
        )?;
    }
    Ok(())
}

/// Stores new messages (idempotently, by id), to be mirrored.
pub fn record(sql: &Sql, messages: &[StoredMessage]) -> Result<()> {
    insert(sql, messages, false)
}

#[derive(Deserialize)]
struct SummaryText {
    content: String,
}

/// The summaries and the last `limit` live messages before `current` (the turn's own ids).
pub fn load(sql: &Sql, current: &[&str], limit: usize) -> Result<Loaded> {
    let summaries: Vec<SummaryText> =
        sql.exec("SELECT content FROM history_summaries ORDER BY created_at, rowid", None)?.to_array()?;
    let newest_first: Vec<StoredMessage> = sql
        .exec(
            "SELECT * FROM history WHERE compacted = 0 ORDER BY created_at DESC, seq DESC LIMIT ?",
            vec![SqlStorageValue::from((limit + current.len()) as i64)],
        )?
        .to_array()?;
    Ok(Loaded {
        summaries: summaries.into_iter().map(|row| row.content).collect(),
        earlier: earlier(newest_first, |row| row.id.as_str(), current, limit),
    })
}

/// The memory bulletin, read from D1 when the cached copy is stale. A failed
/// read serves the stale copy (a bulletin a little old beats no reply).
pub async fn bulletin(sql: &Sql, kept: &MetaKept, db: &D1Database, now: i64, cache_ms: i64) -> Result<String> {
    let cached = meta(sql, kept, "bulletin")?;
    if let Some(cached) = cached.as_ref().filter(|cached| bulletin_is_fresh(cached.at, now, cache_ms)) {
        return Ok(cached.value.clone());
    }
    match history::bulletin(db).await {
        Ok(bulletin) => {
            set_meta(sql, kept, "bulletin", &bulletin, now)?;
            Ok(bulletin)
        }
        Err(error) => {
            LogLine::warn("bulletin_unreadable").field("recovery", "the cached one serves").reason(&error).emit();
            Ok(cached.map(|cached| cached.value).unwrap_or_default())
        }
    }
}

/// Drops messages from the live history at once (the emergency cut); the
/// flag reaches D1 with the next mirror.
pub fn drop_oldest(sql: &Sql, ids: &[String]) -> Result<()> {
    for id in ids {
        sql.exec(
            concat!(
                "UPDATE history SET compacted = 2, changed = ",
                stamp_base!(),
                " + seq WHERE id = ? AND compacted = 0"
            ),
            vec![id.as_str().into()],
        )?;
    }
    Ok(())
}

/// An edit heard: a person's message takes its new text (only its author's
/// edit counts, when the platform says who edited). Returns the rows changed.
pub fn edit(sql: &Sql, message_id: &str, author_id: Option<&str>, text: &str) -> Result<usize> {
    if message_id.is_empty() {
        return Ok(0);
    }
    let changed = sql.exec(
        concat!(
            "UPDATE history SET content = ?, changed = ",
            stamp_base!(),
            " + seq WHERE platform_message_id = ? AND role = 'user' \
             AND (? IS NULL OR author_id = ?) AND content != ? RETURNING id"
        ),
        vec![
            text.into(),
            message_id.into(),
            author_id.map(str::to_string).into(),
            author_id.map(str::to_string).into(),
            text.into(),
        ],
    )?;
    Ok(changed.to_array::<serde_json::Value>()?.len())
}

/// A deletion heard: the message leaves the prompt and its text is
/// forgotten (flag 3, mirrored to D1 as such). Returns the rows changed.
pub fn delete(sql: &Sql, message_id: &str) -> Result<usize> {
    if message_id.is_empty() {
        return Ok(0);
    }
    let changed = sql.exec(
        concat!(
            "UPDATE history SET content = '', compacted = 3, changed = ",
            stamp_base!(),
            " + seq WHERE platform_message_id = ? AND compacted != 3 RETURNING id"
        ),
        vec![message_id.into()],
    )?;
    Ok(changed.to_array::<serde_json::Value>()?.len())
}

#[derive(Deserialize)]
struct Said {
    content: String,
}

/// What the bot said in its message `message_id`, if the history holds it.
pub fn bot_message(sql: &Sql, message_id: &str) -> Result<Option<String>> {
    let rows: Vec<Said> = sql
        .exec(
            "SELECT content FROM history WHERE platform_message_id = ? AND role = 'assistant' AND compacted = 0 LIMIT 1",
            vec![message_id.into()],
        )?
        .to_array()?;
    Ok(rows.into_iter().next().map(|row| row.content))
}

/// A line of the history the next turn reads (a reaction to the bot's message).
pub fn note(
    sql: &Sql,
    event: &crate::inbound::HeardEvent,
    author: &crate::inbound::Author,
    line: &str,
    now: i64,
) -> Result<()> {
    let message = StoredMessage {
        id: format!("{}:heard:{}", event.conversation_key, event.delivery_id),
        conversation_key: event.conversation_key.clone(),
        role: crate::llm::HistoryRole::User,
        author_id: author.id.clone(),
        author_name: author.name.clone(),
        content: line.to_string(),
        platform_message_id: None,
        created_at: now,
        compacted: 0,
    };
    insert(sql, std::slice::from_ref(&message), false)
}

/// A compaction finished in D1: takes its summaries (read from D1 once) and
/// flags the messages it covered, which leave the prompt.
pub async fn compacted(sql: &Sql, db: &D1Database, conversation_key: &str, covered: &[String]) -> Result<()> {
    let summaries = history::load_summaries(db, conversation_key).await?;
    store_summaries(sql, &summaries)?;
    for id in covered {
        sql.exec("UPDATE history SET compacted = 1 WHERE id = ? AND compacted = 0", vec![id.as_str().into()])?;
    }
    Ok(())
}

/// Whether rows wait to be mirrored, as an SQL condition: a macro, so that
/// a statement around it is a constant too.
macro_rules! pending_condition {
    () => {
        concat!("EXISTS (SELECT 1 FROM history WHERE changed > ", super::held::mirrored_through!(), ")")
    };
}
pub(super) use pending_condition;

/// Rows D1 does not have yet, and the highest stamp among them.
pub struct Unmirrored {
    pub rows: Vec<StoredMessage>,
    /// What the mark moves to once D1 took `rows`.
    pub through: Option<i64>,
}

#[derive(Deserialize)]
struct Stamped {
    #[serde(flatten)]
    message: StoredMessage,
    changed: i64,
}

/// The rows D1 does not have yet (at most a flush's worth), lowest stamp first.
pub fn unmirrored(sql: &Sql) -> Result<Unmirrored> {
    let rows: Vec<Stamped> = sql
        .exec(
            concat!("SELECT * FROM history WHERE changed > ", mirrored_through!(), " ORDER BY changed LIMIT ?"),
            vec![SqlStorageValue::from(MIRROR_ROWS_PER_FLUSH as i64)],
        )?
        .to_array()?;
    let through = rows.iter().map(|row| row.changed).max();
    Ok(Unmirrored { rows: rows.into_iter().map(|row| row.message).collect(), through })
}

/// The statements that send `pending` rows to D1 (for one batch).
pub fn mirror_statements(db: &D1Database, pending: &[StoredMessage]) -> Result<Vec<worker::D1PreparedStatement>> {
    let rows = pending.iter().map(StoredMessage::mirror_row).collect::<serde_json::Result<Vec<_>>>()?;
    history::mirror_statements(db, chunk_rows(&rows, MIRROR_BYTES_PER_STATEMENT))
}

/// Once D1 took rows and the mark moved, forgets what the prompt no longer
/// needs (beyond `keep` rows, or compacted) and D1 has.
pub fn forget_mirrored(sql: &Sql, keep: usize) -> Result<()> {
    sql.exec(
        concat!(
            "DELETE FROM history WHERE changed <= ",
            mirrored_through!(),
            " AND (compacted != 0 OR seq <= (SELECT seq FROM history ORDER BY seq DESC LIMIT 1 OFFSET ?))"
        ),
        vec![SqlStorageValue::from(keep as i64)],
    )?;
    Ok(())
}

/// Sends the rows D1 does not have yet in one batch of their own (before a
/// compaction, for the admin API's listing) and, once D1 took them, moves the
/// mark. The alarm's turns send them with the rest of their commit
/// (commit.rs). Returns how many rows went.
pub async fn mirror(sql: &Sql, kept: &held::Kept, env: &worker::Env, keep: usize) -> Result<usize> {
    let pending = unmirrored(sql)?;
    let Some(first) = pending.rows.first() else { return Ok(0) };
    let db = crate::runtime::d1::shard_of(env, &first.conversation_key)?;
    crate::runtime::d1::batch(&db, mirror_statements(&db, &pending.rows)?).await?;
    // Read again: a step may have held spend meanwhile.
    held::update(sql, kept, |held| held.sent(None, pending.through))?;
    forget_mirrored(sql, keep)?;
    Ok(pending.rows.len())
}
