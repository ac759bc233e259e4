//! Agents and their Telegram bots in D1. A bot's token and webhook secret
//! are written only sealed (AES-256-GCM under `SLACK_TOKEN_KEY`, a fresh
//! random nonce per write, the agent id as associated data, so a sealed token
//! copied to another agent's row does not open) and opened only to check a
//! webhook or to call Telegram; the operator's list never selects them.

use serde::{Deserialize, Serialize};
use worker::{D1Database, D1PreparedStatement, D1Result, Env, Result};

use crate::agents::rules::{AgentSettings, DEFAULT};
use crate::config::Config;
use crate::platforms::slack::install::rules::{TokenKey, NONCE_BYTES};
use crate::runtime::config::DATABASE_BINDING;
use crate::runtime::d1::{changes, number, Metered};

/// An agent as the admin API shows it (never a token).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Agent {
    pub id: String,
    pub name: String,
    pub settings: AgentSettings,
    /// Its Telegram bot's username, when it has a bot of its own.
    pub telegram_bot: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

#[derive(Deserialize)]
struct Row {
    id: String,
    name: String,
    settings: String,
    telegram_bot: Option<String>,
    created_at: i64,
    updated_at: i64,
}

impl Row {
    fn agent(self) -> Agent {
        Agent {
            id: self.id,
            name: self.name,
            settings: serde_json::from_str(&self.settings).unwrap_or_default(),
            telegram_bot: self.telegram_bot,
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }
}

const SELECT: &str = "SELECT a.id, a.name, a.settings, b.username AS telegram_bot, a.created_at, a.updated_at \
     FROM agents a LEFT JOIN agent_telegram_bots b ON b.agent = a.id";

/// Every agent, the default first.
pub async fn list(db: &D1Database) -> Result<Vec<Agent>> {
    let query = format!("{SELECT} ORDER BY a.id != ?1, a.id");
    let rows: Vec<Row> = db.prepare(query).bind(&[DEFAULT.into()])?.all_counted().await?.results()?;
    Ok(rows.into_iter().map(Row::agent).collect())
}

/// One agent.
pub async fn get(db: &D1Database, id: &str) -> Result<Option<Agent>> {
    let row: Option<Row> = db.prepare(format!("{SELECT} WHERE a.id = ?1")).bind(&[id.into()])?.first_counted().await?;
    Ok(row.map(Row::agent))
}

/// The settings of the agent a conversation belongs to (the defaults when
/// its row is gone: a deleted agent's leftovers run as plainly as possible).
pub async fn settings_of(db: &D1Database, conversation_key: &str) -> Result<AgentSettings> {
    settings_in(&settings_statement(db, conversation_key)?.all_counted().await?)
}

/// [`settings_of`]'s query, for a caller that batches it with others (a channel turn).
pub fn settings_statement(db: &D1Database, conversation_key: &str) -> Result<D1PreparedStatement> {
    db.prepare(format!("{SELECT} WHERE a.id = ?1")).bind(&[crate::agents::agent_of(conversation_key).into()])
}

/// The settings [`settings_statement`]'s row holds (the defaults when none).
pub fn settings_in(result: &D1Result) -> Result<AgentSettings> {
    let row: Option<Row> = result.results::<Row>()?.into_iter().next();
    Ok(row.map(|row| row.agent().settings).unwrap_or_default())
}

/// Creates an agent; false when the id is taken.
pub async fn create(db: &D1Database, id: &str, name: &str, settings: &AgentSettings, now_ms: i64) -> Result<bool> {
    let settings = serde_json::to_string(settings)?;
    let result = db
        .prepare(
            "INSERT INTO agents (id, name, settings, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?4) \
             ON CONFLICT (id) DO NOTHING",
        )
        .bind(&[id.into(), name.into(), settings.into(), number(now_ms)])?
        .run_counted()
        .await?;
    Ok(changes(&result) == 1)
}

/// Changes an agent's name and settings; false when there is no such agent.
pub async fn update(db: &D1Database, id: &str, name: &str, settings: &AgentSettings, now_ms: i64) -> Result<bool> {
    let settings = serde_json::to_string(settings)?;
    let result = db
        .prepare("UPDATE agents SET name = ?2, settings = ?3, updated_at = ?4 WHERE id = ?1")
        .bind(&[id.into(), name.into(), settings.into(), number(now_ms)])?
        .run_counted()
        .await?;
    Ok(changes(&result) == 1)
}

/// Deletes an agent and its bot (never the default: the caller refuses it).
/// Its conversations, memories and files stay, unreachable by any other agent.
pub async fn delete(db: &D1Database, id: &str) -> Result<bool> {
    let results = crate::runtime::d1::batch(
        db,
        vec![
            db.prepare("DELETE FROM agent_telegram_bots WHERE agent = ?1").bind(&[id.into()])?,
            db.prepare("DELETE FROM agents WHERE id = ?1 AND id != ?2").bind(&[id.into(), DEFAULT.into()])?,
        ],
    )
    .await?;
    Ok(results.get(1).is_some_and(|result| changes(result) == 1))
}

/// Random bytes from the runtime's `crypto.getRandomValues`.
fn nonce() -> Result<[u8; NONCE_BYTES]> {
    let mut bytes = [0u8; NONCE_BYTES];
    getrandom::fill(&mut bytes).map_err(|error| worker::Error::RustError(format!("no randomness: {error}")))?;
    Ok(bytes)
}

/// The sealing key, or an error naming the setting.
pub fn token_key(config: &Config) -> Result<TokenKey> {
    TokenKey::parse(config.slack_token_key.expose())
        .ok_or_else(|| worker::Error::RustError("SLACK_TOKEN_KEY is not 32 bytes of base64".into()))
}

/// Saves an agent's Telegram bot, token and secret sealed.
pub async fn save_bot(db: &D1Database, key: &TokenKey, bot: &Bot, now_ms: i64) -> Result<()> {
    let seal = |what: &str, text: &str| -> Result<String> {
        key.seal(&nonce()?, &format!("{}:{what}", bot.agent), text)
            .ok_or_else(|| worker::Error::RustError("the token could not be sealed".into()))
    };
    let (token, secret) = (seal("token", &bot.token)?, seal("secret", &bot.secret)?);
    db.prepare(
        "INSERT INTO agent_telegram_bots (agent, username, sealed_token, sealed_secret, updated_at) \
         VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (agent) DO UPDATE SET username = excluded.username, \
         sealed_token = excluded.sealed_token, sealed_secret = excluded.sealed_secret, updated_at = excluded.updated_at",
    )
    .bind(&[bot.agent.as_str().into(), bot.username.as_str().into(), token.into(), secret.into(), number(now_ms)])?
    .run_counted()
    .await?;
    Ok(())
}

/// An agent's own Telegram bot, opened.
pub struct Bot {
    pub agent: String,
    pub username: String,
    pub token: String,
    pub secret: String,
}

/// The agent's bot, opened; None when it has none (or it was sealed with another key).
pub async fn bot(env: &Env, config: &Config, agent: &str) -> Result<Option<Bot>> {
    #[derive(Deserialize)]
    struct Sealed {
        username: String,
        sealed_token: String,
        sealed_secret: String,
    }
    let db = env.d1(DATABASE_BINDING)?;
    let row: Option<Sealed> = db
        .prepare("SELECT username, sealed_token, sealed_secret FROM agent_telegram_bots WHERE agent = ?1")
        .bind(&[agent.into()])?
        .first_counted()
        .await?;
    let Some(row) = row else { return Ok(None) };
    let key = token_key(config)?;
    let open = |what: &str, sealed: &str| key.open(&format!("{agent}:{what}"), sealed);
    Ok(match (open("token", &row.sealed_token), open("secret", &row.sealed_secret)) {
        (Some(token), Some(secret)) => Some(Bot { agent: agent.to_string(), username: row.username, token, secret }),
        _ => None,
    })
}
