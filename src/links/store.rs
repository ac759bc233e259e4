//! Links and link exchanges in D1 (`links`, `link_exchanges`, `link_sends`,
//! migration 0027): the operator's links, and per exchange between two
//! agents who opened it, from where, how many messages went over it, and
//! whether it is closed.

use serde::Deserialize;
use worker::{D1Database, D1PreparedStatement, D1Result, Result};

use crate::inbound::ReplyAddress;
use crate::links::rules::{self, Link, TURN_CAP};
use crate::runtime::d1::{changes, number, text_or_null, Metered};

#[derive(Deserialize)]
struct LinkRow {
    from_agent: String,
    to_agent: String,
    kind: String,
    direction: String,
}

/// Every link, oldest first (at most [`rules::MAX_LINKS`]).
pub async fn list(db: &D1Database) -> Result<Vec<Link>> {
    links_in(&list_statement(db).all_counted().await?)
}

/// [`list`]'s query, for a caller that batches it with others (a channel turn).
pub fn list_statement(db: &D1Database) -> D1PreparedStatement {
    db.prepare("SELECT from_agent, to_agent, kind, direction FROM links ORDER BY created_at, from_agent, to_agent")
}

/// The links [`list_statement`]'s rows hold.
pub fn links_in(result: &D1Result) -> Result<Vec<Link>> {
    let rows: Vec<LinkRow> = result.results()?;
    // A row the rules no longer read is left out rather than failing every turn.
    Ok(rows
        .into_iter()
        .filter_map(|row| Link::new(&row.from_agent, &row.to_agent, &row.kind, &row.direction).ok())
        .collect())
}

/// Adds a link or changes its kind and direction.
pub async fn save(db: &D1Database, link: &Link, now_ms: i64) -> Result<()> {
    db.prepare(
        "INSERT INTO links (from_agent, to_agent, kind, direction, created_at) VALUES (?1, ?2, ?3, ?4, ?5) \
         ON CONFLICT (from_agent, to_agent) DO UPDATE SET kind = excluded.kind, direction = excluded.direction",
    )
    .bind(&[
        link.from.as_str().into(),
        link.to.as_str().into(),
        link.kind.as_str().into(),
        link.direction.as_str().into(),
        number(now_ms),
    ])?
    .run_counted()
    .await?;
    Ok(())
}

/// Removes a link; false when there was none.
pub async fn remove(db: &D1Database, from: &str, to: &str) -> Result<bool> {
    let result = db
        .prepare("DELETE FROM links WHERE from_agent = ?1 AND to_agent = ?2")
        .bind(&[from.into(), to.into()])?
        .run_counted()
        .await?;
    Ok(changes(&result) > 0)
}

/// One exchange between two agents.
#[derive(Debug, Clone, Deserialize)]
pub struct Exchange {
    pub pair: String,
    pub opened_by: String,
    /// The conversation the opener was in: an outcome goes back there.
    pub origin_key: String,
    origin_address: String,
    pub turns: i64,
    pub closed_at: Option<i64>,
}

impl Exchange {
    /// Where the opener's conversation is answered.
    pub fn origin_address(&self) -> Option<ReplyAddress> {
        serde_json::from_str(&self.origin_address).ok()
    }
}

/// The exchange of `pair`, open or closed.
pub async fn exchange(db: &D1Database, pair: &str) -> Result<Option<Exchange>> {
    db.prepare(
        "SELECT pair, opened_by, origin_key, origin_address, turns, closed_at FROM link_exchanges WHERE pair = ?1",
    )
    .bind(&[pair.into()])?
    .first_counted()
    .await
}

/// Opens the exchange of `pair` from `origin_key` unless it is open already
/// (then it goes on: who opened it and from where stay as they were). A
/// closed one opens afresh, its count back at zero.
pub async fn open(
    db: &D1Database,
    pair: &str,
    opened_by: &str,
    origin_key: &str,
    origin_address: &ReplyAddress,
    now_ms: i64,
) -> Result<()> {
    let address = serde_json::to_string(origin_address).map_err(|error| worker::Error::RustError(error.to_string()))?;
    db.prepare(
        "INSERT INTO link_exchanges (pair, agent, opened_by, origin_key, origin_address, turns, opened_at) \
         VALUES (?1, ?2, ?2, ?3, ?4, 0, ?5) \
         ON CONFLICT (pair) DO UPDATE SET agent = excluded.agent, opened_by = excluded.opened_by, \
         origin_key = excluded.origin_key, origin_address = excluded.origin_address, turns = 0, \
         opened_at = excluded.opened_at, closed_at = NULL, outcome = NULL \
         WHERE link_exchanges.closed_at IS NOT NULL",
    )
    .bind(&[pair.into(), opened_by.into(), origin_key.into(), address.into(), number(now_ms)])?
    .run_counted()
    .await?;
    Ok(())
}

/// What counting one message over an exchange found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counted {
    /// The message is this turn of the exchange.
    Turn(i64),
    /// The same message was counted before (a retried send): send it again, uncounted.
    Repeat,
    /// This message found the cap: the exchange closed now (both sides are told once).
    CapReached,
    /// The exchange was closed already (or never opened).
    Closed,
}

/// Counts the message `send_id` over the exchange of `pair`, checked
/// against the cap before it is sent.
pub async fn count(db: &D1Database, pair: &str, send_id: &str, now_ms: i64) -> Result<Counted> {
    let seen = db
        .prepare("INSERT OR IGNORE INTO link_sends (id, pair, sent_at) VALUES (?1, ?2, ?3)")
        .bind(&[send_id.into(), pair.into(), number(now_ms)])?
        .run_counted()
        .await?;
    if changes(&seen) == 0 {
        return Ok(Counted::Repeat);
    }
    #[derive(Deserialize)]
    struct Turns {
        turns: i64,
    }
    let counted: Option<Turns> = db
        .prepare(
            "UPDATE link_exchanges SET turns = turns + 1 \
             WHERE pair = ?1 AND closed_at IS NULL AND turns < ?2 RETURNING turns",
        )
        .bind(&[pair.into(), number(i64::from(TURN_CAP))])?
        .first_counted()
        .await?;
    if let Some(counted) = counted {
        return Ok(Counted::Turn(counted.turns));
    }
    match close(db, pair, None, now_ms).await? {
        true => Ok(Counted::CapReached),
        false => Ok(Counted::Closed),
    }
}

/// Closes the exchange of `pair` (with its outcome, if one was given); false
/// when it was not open.
pub async fn close(db: &D1Database, pair: &str, outcome: Option<&str>, now_ms: i64) -> Result<bool> {
    let result = db
        .prepare("UPDATE link_exchanges SET closed_at = ?2, outcome = ?3 WHERE pair = ?1 AND closed_at IS NULL")
        .bind(&[pair.into(), number(now_ms), text_or_null(outcome)])?
        .run_counted()
        .await?;
    Ok(changes(&result) > 0)
}

/// The pair of `a` and `b`, as the exchanges are keyed.
pub fn pair(a: &str, b: &str) -> String {
    rules::pair(a, b)
}
