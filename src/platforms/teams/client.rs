//! What the bot needs from Microsoft's identity services, each cached in the
//! isolate (Workers run one request at a time per isolate, so a
//! `thread_local` needs no lock): the Bot Framework's signing keys (the
//! OpenID metadata, then its JWKS), kept a day and fetched again early when
//! a token names a key they lack; and the bot's own access token
//! (client credentials), kept until shortly before it expires. A new isolate
//! starts empty and fetches both again: nothing is stored.

use std::cell::RefCell;

use serde::Deserialize;

use crate::api_error::ApiError;
use crate::config::Config;
use crate::ops::Op;
use crate::platforms::messenger::{SendFailure, API_TIMEOUT_MS};
use crate::platforms::teams::rules::{KeySet, OpenIdMetadata};
use crate::runtime::http::{get_manual, now_ms, post_urlencoded};

/// The scope of a token for the Bot Framework connector.
pub const BOT_SCOPE: &str = "https://api.botframework.com/.default";
/// How long fetched signing keys are trusted before they are fetched again.
const KEYS_TTL_MS: i64 = 24 * 60 * 60 * 1000;
/// A token naming an unknown key fetches the keys again at most this often,
/// so forged tokens cannot make every request a fetch.
const REFRESH_EVERY_MS: i64 = 10_000;
/// A token is renewed this long before it expires.
const TOKEN_MARGIN_MS: i64 = 5 * 60 * 1000;
/// The largest metadata or key document read.
const DOCUMENT_LIMIT: usize = 256 * 1024;

struct CachedKeys {
    source: String,
    keys: KeySet,
    fetched_at_ms: i64,
}

struct CachedToken {
    /// The app and endpoint it was issued for (settings may change between requests).
    issued_for: String,
    token: String,
    expires_at_ms: i64,
}

thread_local! {
    static KEYS: RefCell<Option<CachedKeys>> = const { RefCell::new(None) };
    static TOKEN: RefCell<Option<CachedToken>> = const { RefCell::new(None) };
}

/// The signing keys: the cached ones while fresh, else fetched. With
/// `refresh`, fetched again (a token named a key they lack) unless they were
/// fetched within [`REFRESH_EVERY_MS`].
pub async fn signing_keys(config: &Config, refresh: bool) -> Result<KeySet, ApiError> {
    let now = now_ms();
    let source = config.teams_openid_url.clone();
    let cached = KEYS.with_borrow(|cached| {
        let cached = cached.as_ref().filter(|cached| cached.source == source)?;
        let age = now - cached.fetched_at_ms;
        let fresh = if refresh { age < REFRESH_EVERY_MS } else { age < KEYS_TTL_MS };
        fresh.then(|| cached.keys.clone())
    });
    if let Some(keys) = cached {
        return Ok(keys);
    }
    let keys = fetch_keys(&source).await.ok_or(ApiError::Unavailable("Bot Framework signing keys unavailable"))?;
    KEYS.with_borrow_mut(|cached| {
        *cached = Some(CachedKeys { source, keys: keys.clone(), fetched_at_ms: now });
    });
    Ok(keys)
}

async fn fetch_keys(metadata_url: &str) -> Option<KeySet> {
    let metadata: OpenIdMetadata = read_document(metadata_url).await?;
    read_document(&metadata.jwks_uri).await
}

async fn read_document<T: for<'de> Deserialize<'de>>(url: &str) -> Option<T> {
    let answer = get_manual(Op::PlatformCall, url, &[], API_TIMEOUT_MS, DOCUMENT_LIMIT).await.ok()?;
    (answer.status == 200).then(|| serde_json::from_slice(&answer.body).ok()).flatten()
}

#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    #[serde(default)]
    expires_in: Option<i64>,
}

/// The bot's access token for the connector: the cached one until
/// [`TOKEN_MARGIN_MS`] before it expires, else a new one (client credentials).
pub async fn bot_token(config: &Config) -> Result<String, SendFailure> {
    let now = now_ms();
    let issued_for = format!("{}\n{}", config.teams_app_id, config.teams_token_url);
    let cached = TOKEN.with_borrow(|cached| {
        let cached = cached.as_ref().filter(|cached| cached.issued_for == issued_for)?;
        (now < cached.expires_at_ms - TOKEN_MARGIN_MS).then(|| cached.token.clone())
    });
    if let Some(token) = cached {
        return Ok(token);
    }
    if config.teams_app_id.is_empty() || !config.teams_app_password.is_set() {
        return Err(SendFailure::permanent("Teams is not set up (TEAMS_APP_ID, TEAMS_APP_PASSWORD)".into()));
    }
    let fields = [
        ("grant_type", "client_credentials"),
        ("client_id", config.teams_app_id.as_str()),
        ("client_secret", config.teams_app_password.expose()),
        ("scope", BOT_SCOPE),
    ];
    let answer = post_urlencoded(Op::PlatformCall, &config.teams_token_url, &fields, API_TIMEOUT_MS)
        .await
        .map_err(|failure| SendFailure::network("Teams sign-in", failure))?;
    if answer.status != 200 {
        return Err(SendFailure::from_status("Teams sign-in", answer.status, "no token", None));
    }
    let token: TokenAnswer = serde_json::from_slice(&answer.body)
        .map_err(|_| SendFailure::permanent("Teams sign-in answered without a token".into()))?;
    let expires_at_ms = now + token.expires_in.unwrap_or(3600) * 1000;
    TOKEN.with_borrow_mut(|cached| {
        *cached = Some(CachedToken { issued_for, token: token.access_token.clone(), expires_at_ms });
    });
    Ok(token.access_token)
}

/// Forgets the token (the connector refused it: it may have been revoked).
pub fn forget_token() {
    TOKEN.with_borrow_mut(|cached| *cached = None);
}
