//! The inbox: every inbound the channel received, with its engagement decision
//! and where it stands, kept seven days. Its delivery ids, held in memory
//! ([`Deliveries`]), are the webhook dedupe, and it is what the admin API shows.

use std::cell::Cell;

use serde::{Deserialize, Serialize};
use worker::{Result, SqlStorageValue};

use super::stats::Counts;
use crate::channel::deliveries::Deliveries;
use crate::channel::engagement::Decision;
use crate::channel::schema::Column;
use crate::inbound::InboundEvent;
use crate::runtime::durable::Sql;

/// `seq` is the rowid (arrival order) without AUTOINCREMENT, whose
/// `sqlite_sequence` update was a row written per inbound (old tables are
/// copied once: schema.rs): retention always keeps the newest row, so a
/// number is never handed out twice. The delivery id has no index (each
/// inbound wrote a row in it): the object's memory answers for it
/// ([`Deliveries`], read by [`deliveries`]). The count columns are the
/// conversation's counts after that inbound (stats.rs; NULL on rows that
/// count nothing: held until decided, heard, answers).
pub const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS inbox (
    seq INTEGER PRIMARY KEY,
    delivery_id TEXT NOT NULL,
    event TEXT NOT NULL,
    decision TEXT NOT NULL,
    reason TEXT NOT NULL,
    received_at INTEGER NOT NULL,
    status TEXT NOT NULL,
    membership TEXT,
    conversation_key TEXT,
    title TEXT,
    messages INTEGER,
    engaged INTEGER,
    observed INTEGER,
    last_activity INTEGER,
    checkpoint TEXT
);
CREATE INDEX IF NOT EXISTS inbox_open ON inbox (received_at) WHERE status IN ('queued', 'held');
";

/// Objects created before a column existed get it (schema.rs adds each
/// column a table lacks): the membership note, and the checkpoint an inbound
/// files with its row (slots.rs).
pub const UPGRADES: [Column; 2] = [
    Column { table: "inbox", name: "membership", add: "ALTER TABLE inbox ADD COLUMN membership TEXT" },
    Column { table: "inbox", name: "checkpoint", add: "ALTER TABLE inbox ADD COLUMN checkpoint TEXT" },
];
/// Objects created before the retention sweep went by `seq` have an index on
/// `received_at`: every inbound wrote an entry in it (a row written), and
/// nothing reads it now, so schema.rs drops it.
pub const OLD_INDEX: &str = "inbox_by_received";

/// Settled rows are kept this long (well past the 24 h delivery dedupe window).
const RETENTION_MS: i64 = 7 * 24 * 60 * 60 * 1000;

/// The inbox's delivery ids and row numbers, read once after a start (the
/// object keeps them in step with every row it files and deletes here).
pub fn deliveries(sql: &Sql) -> Result<Deliveries> {
    #[derive(Deserialize)]
    struct Row {
        delivery_id: String,
        seq: i64,
    }
    let rows: Vec<Row> = sql.exec("SELECT delivery_id, seq FROM inbox", None)?.to_array()?;
    Ok(Deliveries::from_rows(rows.into_iter().map(|row| (row.delivery_id, row.seq))))
}

/// What every inbound asks first, in one statement.
pub struct Arrival {
    /// Its delivery id was taken before.
    pub seen: bool,
    /// An approval waits for a typed answer (an outbox row of the approvals'
    /// turn with an approval id).
    pub approval_waiting: bool,
    /// The conversation's counts before it (stats.rs; None before its first).
    pub latest: Option<Counts>,
}

/// Asks it: the delivery id and, once known, the rest of the object's
/// memory (the counts in `deliveries`, whether an approval waits in
/// `approval_waiting`); what is not known yet in one statement, whose counts
/// the inbound's row then carries (stats.rs).
pub fn arrival(
    sql: &Sql,
    deliveries: &mut Deliveries,
    approval_waiting: &Cell<Option<bool>>,
    delivery_id: &str,
) -> Result<Arrival> {
    if deliveries.contains(delivery_id) {
        return Ok(Arrival { seen: true, approval_waiting: false, latest: None });
    }
    if let (Some(latest), Some(waiting)) = (deliveries.latest(), approval_waiting.get()) {
        return Ok(Arrival { seen: false, approval_waiting: waiting, latest: latest.clone() });
    }
    #[derive(Deserialize)]
    struct Found {
        waiting: i64,
        conversation_key: Option<String>,
        title: Option<String>,
        messages: Option<i64>,
        engaged: Option<i64>,
        observed: Option<i64>,
        last_activity: Option<i64>,
    }
    let found: Vec<Found> = sql
        .exec(
            concat!(
                "SELECT EXISTS (SELECT 1 FROM outbox WHERE turn = ? AND approval_id IS NOT NULL) AS waiting, latest.* \
                 FROM (SELECT 1) LEFT JOIN (",
                super::stats::latest_counts!(),
                ") latest"
            ),
            vec![SqlStorageValue::from(super::outbox::APPROVALS_TURN)],
        )?
        .to_array()?;
    let Some(found) = found.into_iter().next() else {
        return Ok(Arrival { seen: false, approval_waiting: false, latest: None });
    };
    let latest = found.conversation_key.map(|conversation_key| Counts {
        conversation_key,
        title: found.title,
        messages: found.messages.unwrap_or_default(),
        engaged: found.engaged.unwrap_or_default(),
        observed: found.observed.unwrap_or_default(),
        last_activity: found.last_activity.unwrap_or_default(),
    });
    deliveries.read_latest(latest.clone());
    approval_waiting.set(Some(found.waiting != 0));
    Ok(Arrival { seen: false, approval_waiting: found.waiting != 0, latest })
}

/// Whether an inbound waits for (or is in) a turn.
pub fn has_queued(sql: &Sql) -> Result<bool> {
    let rows: Vec<serde_json::Value> =
        sql.exec("SELECT 1 AS found FROM inbox WHERE status = 'queued' LIMIT 1", None)?.to_array()?;
    Ok(!rows.is_empty())
}

/// Whether an acknowledged inbound still waits for its outcome (queued for,
/// or in, a turn, or held for the member count).
pub fn has_open(sql: &Sql) -> Result<bool> {
    let rows: Vec<serde_json::Value> =
        sql.exec("SELECT 1 AS found FROM inbox WHERE status IN ('queued', 'held') LIMIT 1", None)?.to_array()?;
    Ok(!rows.is_empty())
}

/// The count columns' bindings (in the order `conversation_key, title,
/// messages, engaged, observed, last_activity`).
fn count_bindings(counts: &Counts) -> [SqlStorageValue; 6] {
    [
        counts.conversation_key.as_str().into(),
        counts.title.clone().into(),
        SqlStorageValue::from(counts.messages),
        SqlStorageValue::from(counts.engaged),
        SqlStorageValue::from(counts.observed),
        SqlStorageValue::from(counts.last_activity),
    ]
}

/// Files an inbound with its decision, the conversation's counts after it
/// (`stats::next`) and the channel's `checkpoint` when a slot moved (slots.rs).
/// `text`: the event as JSON when the caller has it already (as it came to
/// the object), so it is not encoded again. Whether the row was written (a
/// delivery id filed before keeps its row).
#[allow(clippy::too_many_arguments)]
pub fn store(
    sql: &Sql,
    deliveries: &mut Deliveries,
    event: &InboundEvent,
    text: Option<&str>,
    decision: &Decision,
    counts: &Counts,
    checkpoint: Option<&str>,
    now_ms: i64,
) -> Result<bool> {
    let status = if decision.engages { "queued" } else { "observed" };
    let mut bindings: Vec<SqlStorageValue> = vec![
        match text {
            Some(text) => text.into(),
            None => serde_json::to_string(event)?.into(),
        },
        decision.label().into(),
        decision.reason.as_str().into(),
        SqlStorageValue::from(now_ms),
        status.into(),
    ];
    bindings.extend(count_bindings(counts));
    bindings.push(checkpoint.map(str::to_string).into());
    let filed = file(
        sql,
        deliveries,
        &event.delivery_id,
        "INSERT INTO inbox (seq, delivery_id, event, decision, reason, received_at, status, conversation_key, \
         title, messages, engaged, observed, last_activity, checkpoint) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        bindings,
    )?;
    if filed {
        deliveries.counted(counts.clone());
    }
    Ok(filed)
}

/// Files a row for a delivery id not taken before, under the next number:
/// `insert` binds `seq` and `delivery_id` first, then `values`. Whether it
/// was filed (a delivery id filed before keeps its row).
fn file(
    sql: &Sql,
    deliveries: &mut Deliveries,
    delivery_id: &str,
    insert: &str,
    values: Vec<SqlStorageValue>,
) -> Result<bool> {
    if deliveries.contains(delivery_id) {
        return Ok(false);
    }
    let seq = deliveries.next_seq();
    let mut bindings = Vec::with_capacity(values.len() + 2);
    bindings.extend([SqlStorageValue::from(seq), delivery_id.into()]);
    bindings.extend(values);
    sql.exec(insert, bindings)?;
    deliveries.filed(delivery_id.to_string(), seq);
    Ok(true)
}

/// Files an edit, deletion or reaction heard (status `heard`, never queued:
/// it starts no turn), with what it reached as its reason (`edit: applied`).
pub fn store_heard(
    sql: &Sql,
    deliveries: &mut Deliveries,
    event: &crate::inbound::HeardEvent,
    reason: &str,
    now_ms: i64,
) -> Result<()> {
    let reason = format!("{}: {reason}", event.heard.label());
    let text = serde_json::to_string(event)?;
    file_uncounted(sql, deliveries, &event.delivery_id, text, ["heard", &reason, "heard"], now_ms)
}

/// Files an inbound taken as the answer to an MCP question (status
/// `answered`, never queued: it starts no turn).
pub fn store_answer(sql: &Sql, deliveries: &mut Deliveries, event: &InboundEvent, now_ms: i64) -> Result<()> {
    let text = serde_json::to_string(event)?;
    file_uncounted(sql, deliveries, &event.delivery_id, text, ["answer", "an MCP question", "answered"], now_ms)
}

/// Files an inbound held for the member count (status `held`): the alarm
/// decides it ([`decide_held`]).
pub fn store_held(
    sql: &Sql,
    deliveries: &mut Deliveries,
    event: &InboundEvent,
    decision: &str,
    reason: &str,
    now_ms: i64,
) -> Result<()> {
    let text = serde_json::to_string(event)?;
    file_uncounted(sql, deliveries, &event.delivery_id, text, [decision, reason, "held"], now_ms)
}

/// [`file`]s a row that counts nothing (yet) and carries no checkpoint, with
/// its `[decision, reason, status]`.
fn file_uncounted(
    sql: &Sql,
    deliveries: &mut Deliveries,
    delivery_id: &str,
    event: String,
    [decision, reason, status]: [&str; 3],
    now_ms: i64,
) -> Result<()> {
    let values = vec![event.into(), decision.into(), reason.into(), SqlStorageValue::from(now_ms), status.into()];
    file(
        sql,
        deliveries,
        delivery_id,
        "INSERT INTO inbox (seq, delivery_id, event, decision, reason, received_at, status) \
         VALUES (?, ?, ?, ?, ?, ?, ?)",
        values,
    )?;
    Ok(())
}

/// Records the alarm's decision on a held inbound, what the member-count
/// read found and the conversation's counts after it. A repeat (the alarm ran
/// again before its checkpoint) rewrites the decision but keeps the counts
/// the row already has (it is counted once); a row a turn has settled is
/// left alone.
pub fn decide_held(
    sql: &Sql,
    deliveries: &mut Deliveries,
    delivery_id: &str,
    decision: &Decision,
    membership: Option<&str>,
    counts: &Counts,
) -> Result<()> {
    let Some(seq) = deliveries.seq(delivery_id) else { return Ok(()) };
    let status = if decision.engages { "queued" } else { "observed" };
    let mut bindings: Vec<SqlStorageValue> = vec![
        decision.label().into(),
        decision.reason.as_str().into(),
        status.into(),
        membership.map(str::to_string).into(),
    ];
    bindings.extend(count_bindings(counts));
    bindings.push(SqlStorageValue::from(seq));
    sql.exec(
        "UPDATE inbox SET decision = ?, reason = ?, status = ?, membership = ?, \
         conversation_key = CASE WHEN messages IS NULL THEN ? ELSE conversation_key END, \
         title = CASE WHEN messages IS NULL THEN ? ELSE title END, \
         messages = CASE WHEN messages IS NULL THEN ? ELSE messages END, \
         engaged = CASE WHEN messages IS NULL THEN ? ELSE engaged END, \
         observed = CASE WHEN messages IS NULL THEN ? ELSE observed END, \
         last_activity = CASE WHEN messages IS NULL THEN ? ELSE last_activity END \
         WHERE seq = ? AND status IN ('held', 'queued', 'observed')",
        bindings,
    )?;
    deliveries.forget_latest();
    Ok(())
}

/// Marks the turn's messages answered (or skipped) and forgets old settled
/// rows ([`sweep`]).
pub fn settle(
    sql: &Sql,
    deliveries: &mut Deliveries,
    delivery_ids: &[String],
    status: &str,
    now_ms: i64,
) -> Result<()> {
    let seqs: Vec<i64> = delivery_ids.iter().filter_map(|delivery_id| deliveries.seq(delivery_id)).collect();
    if !seqs.is_empty() {
        sql.exec(
            "UPDATE inbox SET status = ? WHERE seq IN (SELECT value FROM json_each(?))",
            vec![status.into(), serde_json::to_string(&seqs)?.into()],
        )?;
    }
    sweep(sql, deliveries, now_ms)
}

/// Forgets the settled rows older than the retention window, after a turn
/// and after the conversation index's flush (so a group the bot only
/// observes keeps seven days too, in its table and in `deliveries`).
/// Rows are filed in arrival order (`seq`, the rowid), so the old ones are a
/// prefix of the table: the DELETE takes the `seq` range before the first row
/// inside the retention window, reading about what it deletes (plus the few
/// rows still open), with no index on `received_at` for every inbound to
/// write. Rows still `queued` or `held` are kept whatever their age, and so
/// are the newest row (so `seq`, the rowid, is never handed out again), the
/// newest counted one (it holds the conversation's counts: stats.rs) and the
/// newest with a checkpoint (it may be the channel's newest: slots.rs).
/// The ids deleted are forgotten by `deliveries` too. At most once an hour
/// ([`Deliveries::sweep_due`]): a row outlives its seven days by an hour at most.
pub fn sweep(sql: &Sql, deliveries: &mut Deliveries, now_ms: i64) -> Result<()> {
    if !deliveries.sweep_due(now_ms) {
        return Ok(());
    }
    #[derive(Deserialize)]
    struct Deleted {
        delivery_id: String,
    }
    let deleted: Vec<Deleted> = sql
        .exec(
            "DELETE FROM inbox WHERE status NOT IN ('queued', 'held') AND seq < coalesce(\
             (SELECT seq FROM inbox WHERE received_at >= ? ORDER BY seq LIMIT 1), \
             (SELECT max(seq) FROM inbox)) \
             AND seq IS NOT (SELECT seq FROM inbox WHERE messages IS NOT NULL ORDER BY seq DESC LIMIT 1) \
             AND seq IS NOT (SELECT seq FROM inbox WHERE checkpoint IS NOT NULL ORDER BY seq DESC LIMIT 1) \
             RETURNING delivery_id",
            vec![SqlStorageValue::from(now_ms - RETENTION_MS)],
        )?
        .to_array()?;
    deliveries.forget(deleted.iter().map(|row| row.delivery_id.as_str()));
    Ok(())
}

/// One inbound as the admin API shows it.
#[derive(Serialize, Deserialize)]
pub struct EventRecord {
    pub seq: i64,
    pub delivery_id: String,
    pub decision: String,
    pub reason: String,
    pub status: String,
    pub received_at: i64,
    /// What a member-count read before the decision found, when one was made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub membership: Option<String>,
    pub event: serde_json::Value,
}

#[derive(Deserialize)]
struct EventRow {
    seq: i64,
    delivery_id: String,
    decision: String,
    reason: String,
    status: String,
    received_at: i64,
    membership: Option<String>,
    event: String,
}

pub fn events(sql: &Sql) -> Result<Vec<EventRecord>> {
    let rows: Vec<EventRow> = sql
        .exec(
            "SELECT seq, delivery_id, decision, reason, status, received_at, membership, event FROM inbox ORDER BY seq",
            None,
        )?
        .to_array()?;
    Ok(rows
        .into_iter()
        .map(|row| EventRecord {
            seq: row.seq,
            delivery_id: row.delivery_id,
            decision: row.decision,
            reason: row.reason,
            status: row.status,
            received_at: row.received_at,
            membership: row.membership,
            event: serde_json::from_str(&row.event).unwrap_or_default(),
        })
        .collect())
}
