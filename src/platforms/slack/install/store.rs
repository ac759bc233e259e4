//! Installed workspaces and pending install links in D1. A bot token is
//! written only sealed (a fresh random nonce per write) and read only to be
//! opened for a call to Slack; the operator's list never selects it.

use serde::{Deserialize, Serialize};
use worker::{D1Database, Env, Result};

use crate::config::Config;
use crate::platforms::slack::install::rules::{Installed, Standing, TokenKey, NONCE_BYTES, STATE_BYTES};
use crate::runtime::config::DATABASE_BINDING;
use crate::runtime::d1::{changes, number, Metered};
use crate::security::encode_hex;

/// Random bytes from the runtime's `crypto.getRandomValues`.
fn random<const N: usize>() -> Result<[u8; N]> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).map_err(|error| worker::Error::RustError(format!("no randomness: {error}")))?;
    Ok(bytes)
}

/// A new install link's state, stored until `expires_at_ms`. None when too
/// many links are pending (expired ones are pruned first).
pub async fn issue_state(db: &D1Database, now_ms: i64, expires_at_ms: i64, max_pending: i64) -> Result<Option<String>> {
    db.prepare("DELETE FROM slack_install_states WHERE expires_at <= ?1")
        .bind(&[number(now_ms)])?
        .run_counted()
        .await?;
    #[derive(Deserialize)]
    struct Count {
        pending: i64,
    }
    let pending = db.prepare("SELECT COUNT(*) AS pending FROM slack_install_states").first_counted::<Count>().await?;
    if pending.map_or(0, |count| count.pending) >= max_pending {
        return Ok(None);
    }
    let state = encode_hex(random::<STATE_BYTES>()?);
    db.prepare("INSERT INTO slack_install_states (state, expires_at) VALUES (?1, ?2)")
        .bind(&[state.as_str().into(), number(expires_at_ms)])?
        .run_counted()
        .await?;
    Ok(Some(state))
}

/// Uses up a state: true for exactly one caller, and only before it expires.
pub async fn consume_state(db: &D1Database, state: &str, now_ms: i64) -> Result<bool> {
    let result = db
        .prepare("DELETE FROM slack_install_states WHERE state = ?1 AND expires_at > ?2")
        .bind(&[state.into(), number(now_ms)])?
        .run_counted()
        .await?;
    Ok(changes(&result) == 1)
}

/// Saves (or renews) a workspace's install with its token sealed.
pub async fn save_install(db: &D1Database, key: &TokenKey, installed: &Installed, now_ms: i64) -> Result<()> {
    let sealed = key
        .seal(&random::<NONCE_BYTES>()?, &installed.team_id, &installed.access_token)
        .ok_or_else(|| worker::Error::RustError("the token could not be sealed".into()))?;
    db.prepare(
        "INSERT INTO slack_workspaces (team_id, team_name, bot_user_id, sealed_token, installed_at) \
         VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (team_id) DO UPDATE SET team_name = excluded.team_name, \
         bot_user_id = excluded.bot_user_id, sealed_token = excluded.sealed_token, \
         installed_at = excluded.installed_at, uninstalled_at = NULL",
    )
    .bind(&[
        installed.team_id.as_str().into(),
        installed.team_name.as_str().into(),
        installed.bot_user_id.as_str().into(),
        sealed.into(),
        number(now_ms),
    ])?
    .run_counted()
    .await?;
    Ok(())
}

/// Ends a workspace's install: its token deleted, the workspace remembered
/// as ended (so its later events are ignored, even if it was never installed
/// here but answered through the single token).
pub async fn end_install(db: &D1Database, team: &str, now_ms: i64) -> Result<()> {
    db.prepare(
        "INSERT INTO slack_workspaces (team_id, sealed_token, installed_at, uninstalled_at) VALUES (?1, NULL, ?2, ?2) \
         ON CONFLICT (team_id) DO UPDATE SET sealed_token = NULL, uninstalled_at = excluded.uninstalled_at",
    )
    .bind(&[team.into(), number(now_ms)])?
    .run_counted()
    .await?;
    Ok(())
}

#[derive(Deserialize)]
struct TokenRow {
    sealed_token: Option<String>,
}

/// What this deployment knows of `team`, and its sealed token if installed.
pub async fn standing(db: &D1Database, team: &str) -> Result<(Standing, Option<String>)> {
    let row = db
        .prepare("SELECT sealed_token FROM slack_workspaces WHERE team_id = ?1")
        .bind(&[team.into()])?
        .first_counted::<TokenRow>()
        .await?;
    Ok(match row {
        None => (Standing::Unknown, None),
        Some(TokenRow { sealed_token: Some(sealed) }) => (Standing::Installed, Some(sealed)),
        Some(TokenRow { sealed_token: None }) => (Standing::Ended, None),
    })
}

/// One workspace as the operator sees it: never its token.
#[derive(Debug, Serialize, Deserialize)]
pub struct Workspace {
    pub team_id: String,
    pub team_name: String,
    pub bot_user_id: String,
    pub installed: bool,
    pub installed_at: i64,
    pub uninstalled_at: Option<i64>,
}

/// Every workspace known here, newest install first.
pub async fn workspaces(db: &D1Database) -> Result<Vec<Workspace>> {
    db.prepare(
        "SELECT team_id, team_name, bot_user_id, sealed_token IS NOT NULL AS installed, installed_at, uninstalled_at \
         FROM slack_workspaces ORDER BY installed_at DESC LIMIT 1000",
    )
    .all_counted()
    .await?
    .results::<WorkspaceRow>()
    .map(|rows| rows.into_iter().map(Workspace::from).collect())
}

/// D1 gives booleans as 0/1.
#[derive(Deserialize)]
struct WorkspaceRow {
    team_id: String,
    team_name: String,
    bot_user_id: String,
    installed: i64,
    installed_at: i64,
    uninstalled_at: Option<i64>,
}

impl From<WorkspaceRow> for Workspace {
    fn from(row: WorkspaceRow) -> Self {
        Workspace {
            team_id: row.team_id,
            team_name: row.team_name,
            bot_user_id: row.bot_user_id,
            installed: row.installed != 0,
            installed_at: row.installed_at,
            uninstalled_at: row.uninstalled_at,
        }
    }
}

/// Which bot token answers in `team`: its own when installed; the single
/// `SLACK_BOT_TOKEN` when installs are off, or for a workspace never installed
/// here; none for an ended install (nothing is sent there again).
pub enum TokenFor {
    Token(String),
    Ended,
    None,
}

/// Looks up the token for `team` (installs on: one D1 read).
pub async fn token_for(env: &Env, config: &Config, team: Option<&str>) -> Result<TokenFor> {
    let single = || match config.slack_bot_token.is_set() {
        true => TokenFor::Token(config.slack_bot_token.expose().to_string()),
        false => TokenFor::None,
    };
    let (true, Some(team)) = (config.slack_installs(), team.filter(|team| !team.is_empty())) else {
        return Ok(single());
    };
    let key = TokenKey::parse(config.slack_token_key.expose());
    let key = key.ok_or_else(|| worker::Error::RustError("SLACK_TOKEN_KEY is not 32 bytes of base64".into()))?;
    Ok(match standing(&env.d1(DATABASE_BINDING)?, team).await? {
        (Standing::Installed, Some(sealed)) => match key.open(team, &sealed) {
            Some(token) => TokenFor::Token(token),
            // Sealed with another key (SLACK_TOKEN_KEY changed): reinstall.
            None => TokenFor::None,
        },
        (Standing::Ended, _) => TokenFor::Ended,
        _ => single(),
    })
}
