//! Agents and their Telegram bots in D1. A bot's token and webhook secret
//! are written only sealed (AES-256-GCM under `SLACK_TOKEN_KEY`, a fresh
//! random nonce per write, the agent id as associated data, so a sealed token
//! copied to another agent's row does not open) and opened only to check a
//! webhook or to call Telegram; the operator's list never selects them.

use serde::{Deserialize, Serialize};
use worker::{D1Database, D1PreparedStatement, D1Result, Result};

pub use crate::agents::rooms::Bot;
use crate::agents::rooms::{Claim, Directory, Rooms};
use crate::agents::rules::{AgentSettings, DEFAULT};
use crate::config::Config;
use crate::platforms::slack::install::rules::{TokenKey, NONCE_BYTES};
use crate::runtime::d1::{changes, number, Metered};

/// An agent as the admin API shows it (never a token).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Agent {
    pub id: String,
    pub name: String,
    pub settings: AgentSettings,
    /// Its Telegram bot's username, when it has a bot of its own.
    pub telegram_bot: Option<String>,
    /// The rooms it answers (filled by [`with_rooms`]).
    #[serde(default)]
    pub rooms: Rooms,
    /// Whether it has a web-chat invitation of its own (never the invitation).
    #[serde(default)]
    pub web_invitation: bool,
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
            rooms: Rooms::default(),
            web_invitation: false,
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
            db.prepare("DELETE FROM agent_rooms WHERE agent = ?1").bind(&[id.into()])?,
            db.prepare("DELETE FROM agent_invitations WHERE agent = ?1").bind(&[id.into()])?,
            db.prepare("DELETE FROM agents WHERE id = ?1 AND id != ?2").bind(&[id.into(), DEFAULT.into()])?,
        ],
    )
    .await?;
    Ok(results.last().is_some_and(|result| changes(result) == 1))
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

/// Every room claim (the admin API checks a new claim against them).
pub async fn claims(db: &D1Database) -> Result<Vec<Claim>> {
    db.prepare("SELECT platform, room, agent FROM agent_rooms").all_counted().await?.results()
}

/// `agents` with their rooms and whether each has an invitation (two statements in one batch).
pub async fn with_rooms(db: &D1Database, mut agents: Vec<Agent>) -> Result<Vec<Agent>> {
    #[derive(Deserialize)]
    struct Invited {
        agent: String,
    }
    let results = crate::runtime::d1::batch(
        db,
        vec![
            db.prepare("SELECT platform, room, agent FROM agent_rooms ORDER BY platform, room"),
            db.prepare("SELECT agent FROM agent_invitations"),
        ],
    )
    .await?;
    let claims: Vec<Claim> = results.first().map(|result| result.results()).transpose()?.unwrap_or_default();
    let invited: Vec<Invited> = results.get(1).map(|result| result.results()).transpose()?.unwrap_or_default();
    for agent in &mut agents {
        claims
            .iter()
            .filter(|claim| claim.agent == agent.id)
            .for_each(|claim| agent.rooms.add(&claim.platform, &claim.room));
        agent.web_invitation = invited.iter().any(|invited| invited.agent == agent.id);
    }
    Ok(agents)
}

/// Replaces an agent's rooms. A room another agent holds fails the batch
/// (the primary key) and changes nothing; the caller checks first, for a 409.
pub async fn save_rooms(db: &D1Database, agent: &str, rooms: &Rooms) -> Result<()> {
    let mut statements = vec![db.prepare("DELETE FROM agent_rooms WHERE agent = ?1").bind(&[agent.into()])?];
    for (platform, room) in rooms.claims() {
        statements.push(db.prepare("INSERT INTO agent_rooms (platform, room, agent) VALUES (?1, ?2, ?3)").bind(&[
            platform.into(),
            room.into(),
            agent.into(),
        ])?);
    }
    crate::runtime::d1::batch(db, statements).await?;
    Ok(())
}

/// Saves an agent's web invitation, sealed (replacing its old one).
pub async fn save_invitation(
    db: &D1Database,
    key: &TokenKey,
    agent: &str,
    invitation: &str,
    now_ms: i64,
) -> Result<()> {
    let sealed = key
        .seal(&nonce()?, &format!("{agent}:invitation"), invitation)
        .ok_or_else(|| worker::Error::RustError("the invitation could not be sealed".into()))?;
    db.prepare(
        "INSERT INTO agent_invitations (agent, sealed_invitation, updated_at) VALUES (?1, ?2, ?3) \
         ON CONFLICT (agent) DO UPDATE SET sealed_invitation = excluded.sealed_invitation, updated_at = excluded.updated_at",
    )
    .bind(&[agent.into(), sealed.into(), number(now_ms)])?
    .run_counted()
    .await?;
    Ok(())
}

/// Removes an agent's web invitation (its guests' sessions end with it); false when it had none.
pub async fn remove_invitation(db: &D1Database, agent: &str) -> Result<bool> {
    let result =
        db.prepare("DELETE FROM agent_invitations WHERE agent = ?1").bind(&[agent.into()])?.run_counted().await?;
    Ok(changes(&result) == 1)
}

/// The whole directory in one D1 batch: every agent's rooms, and its bot and
/// invitation opened with `key` (without a key, or sealed with another, none
/// of them: they cannot be used).
pub async fn directory(db: &D1Database, key: Option<&TokenKey>, now_ms: i64) -> Result<Directory> {
    #[derive(Deserialize)]
    struct SealedBot {
        agent: String,
        username: String,
        sealed_token: String,
        sealed_secret: String,
    }
    #[derive(Deserialize)]
    struct SealedInvitation {
        agent: String,
        sealed_invitation: String,
    }
    let results = crate::runtime::d1::batch(
        db,
        vec![
            db.prepare("SELECT platform, room, agent FROM agent_rooms"),
            db.prepare("SELECT agent, username, sealed_token, sealed_secret FROM agent_telegram_bots"),
            db.prepare("SELECT agent, sealed_invitation FROM agent_invitations"),
        ],
    )
    .await?;
    let claims: Vec<Claim> = results.first().map(|result| result.results()).transpose()?.unwrap_or_default();
    let bots: Vec<SealedBot> = results.get(1).map(|result| result.results()).transpose()?.unwrap_or_default();
    let invitations: Vec<SealedInvitation> =
        results.get(2).map(|result| result.results()).transpose()?.unwrap_or_default();
    let open = |agent: &str, what: &str, sealed: &str| key.and_then(|key| key.open(&format!("{agent}:{what}"), sealed));
    let bots = bots
        .into_iter()
        .filter_map(|row| {
            let token = open(&row.agent, "token", &row.sealed_token)?;
            let secret = open(&row.agent, "secret", &row.sealed_secret)?;
            Some(Bot { agent: row.agent, username: row.username, token, secret })
        })
        .collect();
    let invitations = invitations
        .into_iter()
        .filter_map(|row| Some((row.agent.clone(), open(&row.agent, "invitation", &row.sealed_invitation)?)))
        .collect();
    Ok(Directory::new(now_ms, claims, bots, invitations))
}
