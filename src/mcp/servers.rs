//! Remote MCP servers' settings and what was learned of them, kept in D1
//! (`mcp_servers`): the tools last listed, when, whether the server is down
//! and why, its calls, and an OAuth access token.

use serde::Deserialize;
use serde_json::{json, Value};
use worker::D1Database;

use crate::mcp::rules::{self as mcp, OfferedTool, RemoteTool, ServerSettings};
use crate::runtime::d1::{number, Metered};
use crate::runtime::http::now_ms;

/// A cached tool list is used this long before it is listed again.
pub const TOOLS_FRESH_MS: i64 = 10 * 60_000;
/// A server that could not be reached is not tried again for this long.
pub const DOWN_FOR_MS: i64 = 60_000;

/// A server as D1 keeps it.
#[derive(Debug, Deserialize)]
struct Row {
    name: String,
    settings: String,
    tools: Option<String>,
    tools_at: Option<i64>,
    stale: i64,
    down_until: Option<i64>,
    last_error: Option<String>,
    calls: i64,
    access_token: Option<String>,
    token_expires_at: Option<i64>,
}

const COLUMNS: &str =
    "name, settings, tools, tools_at, stale, down_until, last_error, calls, access_token, token_expires_at";

/// A configured server and what edgebot knows of it.
#[derive(Debug, Clone)]
pub struct Server {
    pub name: String,
    pub settings: ServerSettings,
    pub tools: Vec<RemoteTool>,
    pub(super) tools_at: Option<i64>,
    pub(super) stale: bool,
    down_until: Option<i64>,
    pub(super) last_error: Option<String>,
    calls: i64,
    pub(super) access_token: Option<String>,
    pub(super) token_expires_at: Option<i64>,
}

impl Server {
    fn from_row(row: Row) -> Option<Server> {
        Some(Server {
            settings: serde_json::from_str(&row.settings).ok()?,
            tools: row.tools.as_deref().and_then(|tools| serde_json::from_str(tools).ok()).unwrap_or_default(),
            name: row.name,
            tools_at: row.tools_at,
            stale: row.stale != 0,
            down_until: row.down_until,
            last_error: row.last_error,
            calls: row.calls,
            access_token: row.access_token,
            token_expires_at: row.token_expires_at,
        })
    }

    /// The tools the operator offers, by the names the model calls.
    pub fn offered(&self) -> Vec<OfferedTool> {
        mcp::offered(&self.name, &self.settings, &self.tools)
    }

    pub(super) fn is_down(&self, now: i64) -> bool {
        self.down_until.is_some_and(|until| until > now)
    }

    /// What the admin API and the dashboard show: secrets by name only, never
    /// a value or the access token.
    pub fn view(&self) -> Value {
        let offered = self.offered();
        let tools: Vec<Value> = self
            .tools
            .iter()
            .map(|tool| {
                let offer = offered.iter().find(|offer| offer.name == tool.name);
                json!({
                    "name": tool.name,
                    "exposed_name": mcp::exposed_name(&self.name, &tool.name),
                    "description": tool.description,
                    "read_only": tool.read_only,
                    "exposed": offer.is_some(),
                    "needs_approval": mcp::needs_approval(tool, self.settings.approval.get(&tool.name).copied()),
                })
            })
            .collect();
        json!({
            "name": self.name,
            "url": self.settings.url,
            "auth": self.settings.auth,
            "expose": self.settings.expose,
            "approval": self.settings.approval,
            "branches": self.settings.branches,
            "tools": tools,
            "tools_at": self.tools_at,
            "down_until": self.down_until,
            "last_error": self.last_error,
            "calls": self.calls,
        })
    }
}

/// Every configured server, by name.
/// Whether any server is configured, for a caller that batches it with
/// others (an agent's snapshot: a step with none reads no list).
pub fn any_statement(db: &D1Database) -> worker::D1PreparedStatement {
    db.prepare("SELECT EXISTS (SELECT 1 FROM mcp_servers) AS any_server")
}

/// [`any_statement`]'s answer.
pub fn any_in(result: &worker::D1Result) -> worker::Result<bool> {
    #[derive(serde::Deserialize)]
    struct Any {
        any_server: i64,
    }
    Ok(result.results::<Any>()?.first().is_some_and(|row| row.any_server != 0))
}

pub async fn servers(db: &D1Database) -> worker::Result<Vec<Server>> {
    let rows: Vec<Row> =
        db.prepare(format!("SELECT {COLUMNS} FROM mcp_servers ORDER BY name")).all_counted().await?.results()?;
    Ok(rows.into_iter().filter_map(Server::from_row).collect())
}

pub async fn server(db: &D1Database, name: &str) -> worker::Result<Option<Server>> {
    let row: Option<Row> = db
        .prepare(format!("SELECT {COLUMNS} FROM mcp_servers WHERE name = ?1"))
        .bind(&[name.into()])?
        .first_counted()
        .await?;
    Ok(row.and_then(Server::from_row))
}

/// Adds or changes a server (its learned state is kept unless the URL or
/// the credentials changed: then it is listed afresh).
pub async fn save_settings(db: &D1Database, name: &str, settings: &ServerSettings) -> worker::Result<()> {
    let text = serde_json::to_string(settings)?;
    db.prepare(
        "INSERT INTO mcp_servers (name, settings, updated_at) VALUES (?1, ?2, ?3) \
         ON CONFLICT (name) DO UPDATE SET settings = excluded.settings, updated_at = excluded.updated_at, \
         stale = CASE WHEN json_extract(mcp_servers.settings, '$.url') IS json_extract(excluded.settings, '$.url') \
                      AND json_extract(mcp_servers.settings, '$.auth') IS json_extract(excluded.settings, '$.auth') \
                 THEN stale ELSE 1 END, \
         access_token = NULL, token_expires_at = NULL, down_until = NULL",
    )
    .bind(&[name.into(), text.into(), number(now_ms())])?
    .run_counted()
    .await?;
    Ok(())
}

pub async fn remove(db: &D1Database, name: &str) -> worker::Result<bool> {
    let result = db.prepare("DELETE FROM mcp_servers WHERE name = ?1").bind(&[name.into()])?.run_counted().await?;
    Ok(crate::runtime::d1::changes(&result) > 0)
}

pub(super) async fn record_tools(db: &D1Database, name: &str, tools: &[RemoteTool]) -> worker::Result<()> {
    db.prepare(
        "UPDATE mcp_servers SET tools = ?1, tools_at = ?2, stale = 0, down_until = NULL, last_error = NULL \
         WHERE name = ?3",
    )
    .bind(&[serde_json::to_string(tools)?.into(), number(now_ms()), name.into()])?
    .run_counted()
    .await?;
    Ok(())
}

pub(super) async fn record_down(db: &D1Database, name: &str, error: &str) -> worker::Result<()> {
    db.prepare("UPDATE mcp_servers SET down_until = ?1, last_error = ?2 WHERE name = ?3")
        .bind(&[number(now_ms() + DOWN_FOR_MS), error.into(), name.into()])?
        .run_counted()
        .await?;
    Ok(())
}

/// The admin API's list: every server as [`Server::view`] shows it.
pub async fn views(db: &D1Database) -> worker::Result<Vec<Value>> {
    Ok(servers(db).await?.iter().map(Server::view).collect())
}
