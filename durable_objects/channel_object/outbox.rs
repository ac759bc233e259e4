//! The outbox: every piece of text the channel means to send, written before
//! it is sent. Its states and the moves between them are
//! [`OutboxStatus`]'s (docs/delivery.md): every write of a state here names
//! the state it moves to, and one the rules do not allow from where the piece
//! stands is refused as an error, leaving the row as it was.

use crate::channel::schema::Column;
use crate::inbound::ReplyAddress;
use crate::reply::outbox::{IllegalTransition, OutboxStatus};
use crate::runtime::durable::Sql;
use serde::{Deserialize, Serialize};
use worker::{Result, SqlStorageValue};

pub const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS outbox (
    id TEXT PRIMARY KEY,
    turn INTEGER NOT NULL,
    piece INTEGER NOT NULL,
    text TEXT NOT NULL,
    reply_to TEXT,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    platform_message_id TEXT,
    last_error TEXT,
    created_at INTEGER NOT NULL,
    file_id TEXT,
    approval_id TEXT
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS outbox_by_turn ON outbox (turn, piece);
";

/// Columns added since the table was first made (schema.rs adds each one a
/// table lacks).
pub const UPGRADES: [Column; 2] = [
    // A piece that is a file: its id among the conversation's files (`text` is its caption).
    Column { table: "outbox", name: "file_id", add: "ALTER TABLE outbox ADD COLUMN file_id TEXT" },
    // A piece that asks for an approval (with buttons) while it waits.
    Column { table: "outbox", name: "approval_id", add: "ALTER TABLE outbox ADD COLUMN approval_id TEXT" },
];
/// One piece to send (or already sent) for a turn.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    pub id: String,
    pub turn: i64,
    pub piece: i64,
    pub text: String,
    pub reply_to: Option<String>,
    pub status: OutboxStatus,
    pub attempts: i64,
    pub platform_message_id: Option<String>,
    pub last_error: Option<String>,
    pub created_at: i64,
    #[serde(default)]
    pub file_id: Option<String>,
    /// The approval this piece asks for, while it waits (its buttons show).
    #[serde(default)]
    pub approval_id: Option<String>,
}

/// Records the turn's pieces (idempotently: a piece already sent stays as it
/// is, but a draft, or a piece whose draft was refused, takes the piece's
/// final text), and marks the drafts beyond the last piece to be withdrawn.
pub fn enqueue(sql: &Sql, turn: i64, pieces: &[String], reply_to: Option<&str>, now_ms: i64) -> Result<()> {
    for (index, text) in pieces.iter().enumerate() {
        // Only the first piece quotes the message it answers.
        let quote = if index == 0 { reply_to } else { None };
        insert(sql, turn, index as i64, text, quote, OutboxStatus::Pending, now_ms)?;
    }
    let withdraw = OutboxStatus::Withdraw;
    sql.exec(
        &format!(
            "UPDATE outbox SET status = '{withdraw}' WHERE turn = ? AND piece >= ? AND status IN ({})",
            OutboxStatus::sql_list(&withdraw.sources())
        ),
        vec![SqlStorageValue::from(turn), SqlStorageValue::from(pieces.len() as i64)],
    )?;
    Ok(())
}

/// The columns of an [`Entry`], for each query that reads entries.
const SELECT_ENTRIES: &str = "SELECT id, turn, piece, text, reply_to, status, attempts, platform_message_id, \
                              last_error, created_at, file_id, approval_id FROM outbox";

/// File pieces are numbered from here, after any text piece or draft.
const FIRST_FILE_PIECE: i64 = 1_000;

/// Records files a process sent, as pieces after the turn's text: each a file
/// of the conversation (by id) with its caption.
pub fn enqueue_files(sql: &Sql, turn: i64, files: &[(String, String)], now_ms: i64) -> Result<()> {
    for (offset, (file_id, caption)) in files.iter().enumerate() {
        let piece = FIRST_FILE_PIECE + offset as i64;
        insert(sql, turn, piece, caption, None, OutboxStatus::Pending, now_ms)?;
        sql.exec(
            &format!("UPDATE outbox SET file_id = ? WHERE id = ? AND status = '{}'", OutboxStatus::Pending),
            vec![file_id.as_str().into(), format!("{turn}:{piece}").into()],
        )?;
    }
    Ok(())
}

fn insert(
    sql: &Sql,
    turn: i64,
    piece: i64,
    text: &str,
    reply_to: Option<&str>,
    status: OutboxStatus,
    now_ms: i64,
) -> Result<()> {
    // A piece written again keeps its state; only one not yet sent takes the new text.
    let rewritable = [OutboxStatus::Draft, OutboxStatus::Drafting, OutboxStatus::Pending];
    sql.exec(
        &format!(
            "INSERT INTO outbox (id, turn, piece, text, reply_to, status, created_at) VALUES (?, ?, ?, ?, ?, ?, ?) \
             ON CONFLICT (id) DO UPDATE SET text = excluded.text WHERE outbox.status IN ({})",
            OutboxStatus::sql_list(&rewritable)
        ),
        vec![
            format!("{turn}:{piece}").into(),
            SqlStorageValue::from(turn),
            SqlStorageValue::from(piece),
            text.into(),
            reply_to.map(str::to_string).into(),
            status.as_str().into(),
            SqlStorageValue::from(now_ms),
        ],
    )?;
    Ok(())
}

/// Approval messages are kept under this turn number, apart from every turn's replies.
pub const APPROVALS_TURN: i64 = -1;

/// The outbox id of an approval's message.
pub fn approval_entry_id(approval_id: &str) -> String {
    format!("approval:{approval_id}")
}

/// Records an approval's message (once per approval) and where it goes;
/// returns its entry. An approval's message quotes nothing, so its
/// `reply_to` keeps the address (JSON), for the edit once it is decided.
pub fn enqueue_approval(
    sql: &Sql,
    approval_id: &str,
    text: &str,
    address: &ReplyAddress,
    now_ms: i64,
) -> Result<Entry> {
    let id = approval_entry_id(approval_id);
    sql.exec(
        &format!(
            "INSERT INTO outbox (id, turn, piece, text, reply_to, status, created_at, approval_id) \
             VALUES (?, ?, 0, ?, ?, '{}', ?, ?) ON CONFLICT (id) DO NOTHING",
            OutboxStatus::Pending
        ),
        vec![
            id.as_str().into(),
            SqlStorageValue::from(APPROVALS_TURN),
            text.into(),
            serde_json::to_string(address)?.into(),
            SqlStorageValue::from(now_ms),
            approval_id.into(),
        ],
    )?;
    let entries: Vec<Entry> = sql.exec(&format!("{SELECT_ENTRIES} WHERE id = ?"), vec![id.into()])?.to_array()?;
    entries.into_iter().next().ok_or_else(|| worker::Error::RustError("the approval entry is missing".into()))
}

/// Where an approval's message went (None: it was never asked here).
pub fn approval_address(sql: &Sql, approval_id: &str) -> Result<Option<ReplyAddress>> {
    let id = approval_entry_id(approval_id);
    let entries: Vec<Entry> = sql.exec(&format!("{SELECT_ENTRIES} WHERE id = ?"), vec![id.into()])?.to_array()?;
    Ok(entries.into_iter().next().and_then(|entry| serde_json::from_str(entry.reply_to.as_deref()?).ok()))
}

/// The approval was decided: its message shows the decision, without buttons.
pub fn settle_approval(sql: &Sql, approval_id: &str, text: &str) -> Result<Option<Entry>> {
    let id = approval_entry_id(approval_id);
    sql.exec("UPDATE outbox SET text = ?, approval_id = NULL WHERE id = ?", vec![text.into(), id.as_str().into()])?;
    let entries: Vec<Entry> = sql.exec(&format!("{SELECT_ENTRIES} WHERE id = ?"), vec![id.into()])?.to_array()?;
    Ok(entries.into_iter().next())
}

/// Records a draft's first post as under way (`drafting`), before the call:
/// found so after a crash, the platform is asked whether it landed.
pub fn start_draft(sql: &Sql, turn: i64, piece: i64, text: &str, reply_to: Option<&str>, now_ms: i64) -> Result<()> {
    insert(sql, turn, piece, text, reply_to, OutboxStatus::Drafting, now_ms)
}

/// The draft's message is posted: from now on it is edited.
pub fn mark_drafted(sql: &Sql, id: &str, platform_message_id: &str) -> Result<()> {
    transition(sql, id, OutboxStatus::Draft, ", platform_message_id = ?", vec![platform_message_id.into()])?;
    Ok(())
}

/// A draft's post was refused: there is no draft, and the piece is sent
/// whole by delivery, with this call counted among its attempts. (A piece no
/// longer `drafting`, whose draft was refused before, is left as it is.)
pub fn draft_refused(sql: &Sql, id: &str, error: &str) -> Result<()> {
    let (from, to) = (OutboxStatus::Drafting, OutboxStatus::Pending);
    sql.exec(
        &format!(
            "UPDATE outbox SET status = '{to}', attempts = attempts + 1, last_error = ? WHERE id = ? AND status = '{from}'"
        ),
        vec![error.into(), id.into()],
    )?;
    Ok(())
}

/// The turn's drafts (posted, or with a post under way), in order.
pub fn drafts(sql: &Sql, turn: i64) -> Result<Vec<Entry>> {
    sql.exec(
        &format!(
            "{SELECT_ENTRIES} WHERE turn = ? AND status IN ({}) ORDER BY piece",
            OutboxStatus::sql_list(&OutboxStatus::DRAFTS)
        ),
        vec![SqlStorageValue::from(turn)],
    )?
    .to_array()
}

/// A draft the reply did not need is gone (or was never found).
pub fn mark_withdrawn(sql: &Sql, id: &str) -> Result<()> {
    transition(sql, id, OutboxStatus::Withdrawn, "", Vec::new())?;
    Ok(())
}

/// A call for a piece failed (a draft's post or edit, or the final edit):
/// counted, and the error kept. Returns the attempts so far.
pub fn mark_call_failed(sql: &Sql, id: &str, error: &str) -> Result<i64> {
    counting_attempt(
        sql,
        "UPDATE outbox SET attempts = attempts + 1, last_error = ? WHERE id = ? RETURNING attempts",
        vec![error.into(), id.into()],
    )
}

/// A draft that cannot be finished by an edit (its message is gone, or never
/// posted) is sent as a new message instead; the calls its draft made still
/// count (`SEND_MAX_ATTEMPTS` bounds every call a piece makes).
pub fn mark_pending(sql: &Sql, id: &str) -> Result<()> {
    transition(sql, id, OutboxStatus::Pending, "", Vec::new())?;
    Ok(())
}

/// The turn's pieces in order.
pub fn entries(sql: &Sql, turn: i64) -> Result<Vec<Entry>> {
    sql.exec(&format!("{SELECT_ENTRIES} WHERE turn = ? ORDER BY piece"), vec![SqlStorageValue::from(turn)])?.to_array()
}

pub fn mark_sent(sql: &Sql, id: &str, platform_message_id: &str) -> Result<()> {
    let sets = ", attempts = attempts + 1, platform_message_id = ?";
    transition(sql, id, OutboxStatus::Sent, sets, vec![platform_message_id.into()])?;
    Ok(())
}

/// Recorded before each platform call: found again after a crash, it means
/// the call's outcome is unknown.
pub fn mark_sending(sql: &Sql, id: &str) -> Result<()> {
    transition(sql, id, OutboxStatus::Sending, "", Vec::new())?;
    Ok(())
}

/// A send found interrupted counts as an attempt (so a piece that keeps
/// crashing its sender is given up on); `text` is what to send now (marked
/// when it may be a repeat). Returns the attempts so far.
pub fn mark_interrupted(sql: &Sql, id: &str, text: &str) -> Result<i64> {
    let sets = ", attempts = attempts + 1, text = ?, last_error = 'interrupted mid-send'";
    Ok(transition(sql, id, OutboxStatus::Pending, sets, vec![text.into()])?.unwrap_or(0))
}

/// Runs an update that counts an attempt (`... RETURNING attempts`); returns the attempts so far.
fn counting_attempt(sql: &Sql, query: &str, bindings: Vec<SqlStorageValue>) -> Result<i64> {
    #[derive(Deserialize)]
    struct Attempts {
        attempts: i64,
    }
    let rows: Vec<Attempts> = sql.exec(query, bindings)?.to_array()?;
    Ok(rows.first().map_or(0, |row| row.attempts))
}

/// What a piece sends from now on (a copy that may be a repeat says so).
pub fn mark_text(sql: &Sql, id: &str, text: &str) -> Result<()> {
    sql.exec("UPDATE outbox SET text = ? WHERE id = ?", vec![text.into(), id.into()])?;
    Ok(())
}

pub fn mark_attempt_failed(sql: &Sql, id: &str, error: &str, give_up: bool) -> Result<()> {
    let status = if give_up { OutboxStatus::Failed } else { OutboxStatus::Pending };
    transition(sql, id, status, ", attempts = attempts + 1, last_error = ?", vec![error.into()])?;
    Ok(())
}

/// Moves a piece to `next`, with more assignments (`sets`: `, column = ?…`,
/// their values in `bindings`); returns its attempts so far (None: no such
/// piece, nothing written). A piece in a state that may not become `next`
/// is left as it is, and the move is an error.
fn transition(
    sql: &Sql,
    id: &str,
    next: OutboxStatus,
    sets: &str,
    mut bindings: Vec<SqlStorageValue>,
) -> Result<Option<i64>> {
    #[derive(Deserialize)]
    struct Moved {
        attempts: i64,
    }
    #[derive(Deserialize)]
    struct Found {
        status: OutboxStatus,
    }
    bindings.push(id.into());
    let query = format!(
        "UPDATE outbox SET status = '{next}'{sets} WHERE id = ? AND status IN ({}) RETURNING attempts",
        OutboxStatus::sql_list(&next.sources())
    );
    let moved: Vec<Moved> = sql.exec(&query, bindings)?.to_array()?;
    if let Some(row) = moved.first() {
        return Ok(Some(row.attempts));
    }
    let found: Vec<Found> = sql.exec("SELECT status FROM outbox WHERE id = ?", vec![id.into()])?.to_array()?;
    match found.first() {
        Some(row) => Err(worker::Error::RustError(IllegalTransition { from: row.status, to: next }.to_string())),
        None => Ok(None),
    }
}

/// The most recent pieces, newest first (admin API): failed sends show here.
pub fn recent(sql: &Sql, limit: i64) -> Result<Vec<Entry>> {
    sql.exec(&format!("{SELECT_ENTRIES} ORDER BY turn DESC, piece DESC LIMIT ?"), vec![SqlStorageValue::from(limit)])?
        .to_array()
}

/// Posts from outside (the MCP server's `post` tool) are kept under this turn.
pub const EXTERNAL_TURN: i64 = -2;

/// Records a post from outside under its own id (once: a repeat finds the
/// first, whatever its state); returns its entry.
pub fn enqueue_external(sql: &Sql, id: &str, text: &str, now_ms: i64) -> Result<Entry> {
    sql.exec(
        &format!(
            "INSERT INTO outbox (id, turn, piece, text, status, created_at) VALUES (?, ?, 0, ?, '{}', ?) \
             ON CONFLICT (id) DO NOTHING",
            OutboxStatus::Pending
        ),
        vec![id.into(), SqlStorageValue::from(EXTERNAL_TURN), text.into(), SqlStorageValue::from(now_ms)],
    )?;
    let entries: Vec<Entry> = sql.exec(&format!("{SELECT_ENTRIES} WHERE id = ?"), vec![id.into()])?.to_array()?;
    entries.into_iter().next().ok_or_else(|| worker::Error::RustError("the posted entry is missing".into()))
}
