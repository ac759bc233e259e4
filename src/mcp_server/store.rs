//! The MCP server's clients in D1 (migrations/0029_mcp_server.sql): created
//! with a token shown once (only its sha256 is kept), listed with their
//! counts, revoked; a presented token checked in constant time; the rate
//! counted per client per minute and the spend per client per UTC day, each
//! in one atomic upsert; every call logged.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use worker::{D1Database, Result};

use crate::budget::rules::day_of;
use crate::mcp_server::rules::{minute_of, Scope, TOKEN_PREFIX};
use crate::runtime::d1::{changes, number, Metered};
use crate::security::{constant_time_eq, encode_hex};

/// A client as D1 holds it.
#[derive(Debug, Clone, Deserialize)]
struct Row {
    id: String,
    name: String,
    agent: String,
    token_hash: String,
    tools: String,
    conversations: String,
    rate_per_minute: i64,
    daily_budget_micro_usd: i64,
    created_at: i64,
    revoked_at: Option<i64>,
    calls: i64,
    last_call_at: Option<i64>,
}

/// A client whose token was accepted.
#[derive(Debug, Clone)]
pub struct Client {
    pub id: String,
    pub name: String,
    pub agent: String,
    pub scope: Scope,
    pub rate_per_minute: i64,
    pub daily_budget_micro_usd: i64,
}

/// A client as the list shows it (never its token or hash).
#[derive(Debug, Serialize)]
pub struct View {
    pub id: String,
    pub name: String,
    pub agent: String,
    pub tools: Vec<&'static str>,
    pub conversations: Vec<String>,
    pub rate_per_minute: i64,
    pub daily_budget_usd: f64,
    pub created_at: i64,
    pub revoked_at: Option<i64>,
    pub calls: i64,
    pub last_call_at: Option<i64>,
    pub spent_today_usd: f64,
}

const COLUMNS: &str = "id, name, agent, token_hash, tools, conversations, rate_per_minute, daily_budget_micro_usd, \
                       created_at, revoked_at, calls, last_call_at";

fn hash(secret: &str) -> String {
    encode_hex(Sha256::digest(secret.as_bytes()))
}

fn random_hex(bytes: usize) -> Result<String> {
    let mut buffer = vec![0u8; bytes];
    getrandom::fill(&mut buffer).map_err(|error| worker::Error::RustError(format!("no randomness: {error}")))?;
    Ok(encode_hex(buffer))
}

/// Creates a client; returns its id and its token (the only time it is seen).
pub async fn create(
    db: &D1Database,
    name: &str,
    agent: &str,
    scope: &Scope,
    rate_per_minute: u32,
    daily_budget_micro_usd: u64,
    now_ms: i64,
) -> Result<(String, String)> {
    let id = random_hex(8)?;
    let secret = random_hex(32)?;
    db.prepare(
        "INSERT INTO mcp_clients (id, name, agent, token_hash, tools, conversations, rate_per_minute, \
         daily_budget_micro_usd, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )
    .bind(&[
        id.as_str().into(),
        name.trim().into(),
        agent.into(),
        hash(&secret).into(),
        serde_json::to_string(&scope.tool_names())?.into(),
        serde_json::to_string(&scope.conversations)?.into(),
        number(i64::from(rate_per_minute)),
        number(daily_budget_micro_usd as i64),
        number(now_ms),
    ])?
    .run_counted()
    .await?;
    let token = format!("{TOKEN_PREFIX}{id}_{secret}");
    Ok((id, token))
}

/// The client a token belongs to, if it is one and not revoked. The client is
/// found by its id; the secret's hash is then compared in constant time.
pub async fn authenticate(db: &D1Database, client_id: &str, secret: &str) -> Result<Option<Client>> {
    let row: Option<Row> = db
        .prepare(format!("SELECT {COLUMNS} FROM mcp_clients WHERE id = ?1"))
        .bind(&[client_id.into()])?
        .first_counted()
        .await?;
    let Some(row) = row else { return Ok(None) };
    if !constant_time_eq(hash(secret).as_bytes(), row.token_hash.as_bytes()) || row.revoked_at.is_some() {
        return Ok(None);
    }
    Ok(Some(Client {
        scope: Scope::from_stored(&row.tools, &row.conversations),
        id: row.id,
        name: row.name,
        agent: row.agent,
        rate_per_minute: row.rate_per_minute,
        daily_budget_micro_usd: row.daily_budget_micro_usd,
    }))
}

#[derive(Deserialize)]
struct Count {
    requests: i64,
}

/// Counts one request in the client's current minute; returns the count
/// including it (one upsert: concurrent requests each see their own count).
pub async fn count_request(db: &D1Database, client_id: &str, now_ms: i64) -> Result<i64> {
    let count: Option<Count> = db
        .prepare(
            "INSERT INTO mcp_client_minutes (client_id, minute, requests) VALUES (?1, ?2, 1) \
             ON CONFLICT (client_id, minute) DO UPDATE SET requests = requests + 1 RETURNING requests",
        )
        .bind(&[client_id.into(), number(minute_of(now_ms))])?
        .first_counted()
        .await?;
    Ok(count.map_or(i64::MAX, |count| count.requests))
}

#[derive(Deserialize)]
struct Spent {
    micro_usd: i64,
}

/// What the client spent in the UTC day of `now_ms`, in millionths of a dollar.
pub async fn spent_today(db: &D1Database, client_id: &str, now_ms: i64) -> Result<i64> {
    let spent: Option<Spent> = db
        .prepare("SELECT micro_usd FROM mcp_client_days WHERE client_id = ?1 AND day = ?2")
        .bind(&[client_id.into(), day_of(now_ms).into()])?
        .first_counted()
        .await?;
    Ok(spent.map_or(0, |spent| spent.micro_usd))
}

/// Logs one call and counts it (and its spend) on the client.
pub async fn log_call(
    db: &D1Database,
    client: &Client,
    tool: &str,
    outcome: &str,
    micro_usd: u64,
    now_ms: i64,
) -> Result<()> {
    let cost = number(micro_usd as i64);
    let statements = vec![
        db.prepare(
            "INSERT INTO mcp_calls (client_id, agent, tool, outcome, micro_usd, at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )
        .bind(&[
            client.id.as_str().into(),
            client.agent.as_str().into(),
            tool.into(),
            outcome.into(),
            cost.clone(),
            number(now_ms),
        ])?,
        db.prepare("UPDATE mcp_clients SET calls = calls + 1, last_call_at = ?2 WHERE id = ?1")
            .bind(&[client.id.as_str().into(), number(now_ms)])?,
        db.prepare(
            "INSERT INTO mcp_client_days (client_id, day, micro_usd) VALUES (?1, ?2, ?3) \
             ON CONFLICT (client_id, day) DO UPDATE SET micro_usd = micro_usd + excluded.micro_usd",
        )
        .bind(&[client.id.as_str().into(), day_of(now_ms).into(), cost])?,
    ];
    crate::runtime::d1::batch(db, statements).await?;
    Ok(())
}

#[derive(Deserialize)]
struct ListedRow {
    #[serde(flatten)]
    row: Row,
    spent_today: Option<i64>,
}

/// Every client, newest first, with its counts.
pub async fn list(db: &D1Database, now_ms: i64) -> Result<Vec<View>> {
    let rows: Vec<ListedRow> = db
        .prepare(format!(
            "SELECT {COLUMNS}, (SELECT micro_usd FROM mcp_client_days d WHERE d.client_id = c.id AND d.day = ?1) \
             AS spent_today FROM mcp_clients c ORDER BY created_at DESC, id LIMIT 500"
        ))
        .bind(&[day_of(now_ms).into()])?
        .all_counted()
        .await?
        .results()?;
    Ok(rows
        .into_iter()
        .map(|ListedRow { row, spent_today }| {
            let scope = Scope::from_stored(&row.tools, &row.conversations);
            View {
                tools: scope.tool_names(),
                conversations: scope.conversations,
                id: row.id,
                name: row.name,
                agent: row.agent,
                rate_per_minute: row.rate_per_minute,
                daily_budget_usd: row.daily_budget_micro_usd as f64 / 1e6,
                created_at: row.created_at,
                revoked_at: row.revoked_at,
                calls: row.calls,
                last_call_at: row.last_call_at,
                spent_today_usd: spent_today.unwrap_or(0) as f64 / 1e6,
            }
        })
        .collect())
}

/// Revokes a client's token (once; a revoked one stays revoked). False: no such client.
pub async fn revoke(db: &D1Database, client_id: &str, now_ms: i64) -> Result<bool> {
    let result = db
        .prepare("UPDATE mcp_clients SET revoked_at = COALESCE(revoked_at, ?2) WHERE id = ?1")
        .bind(&[client_id.into(), number(now_ms)])?
        .run_counted()
        .await?;
    Ok(changes(&result) > 0)
}
