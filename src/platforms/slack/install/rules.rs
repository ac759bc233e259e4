//! "Add to Slack", pure: the authorize link, the callback's query, the
//! `oauth.v2.access` answer, who may install, the sealing of bot tokens at
//! rest (AES-256-GCM), the lifecycle events that end an install, and whether
//! an event from a workspace is heard.

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine;
use serde_json::Value;
use thiserror::Error;

use crate::security::constant_time_eq;

/// Where Slack sends a person to approve the install.
pub const AUTHORIZE_URL: &str = "https://slack.com/oauth/v2/authorize";
/// This Worker's install link and OAuth callback (the app's redirect URL).
pub const INSTALL_PATH: &str = "/slack/install";
pub const CALLBACK_PATH: &str = "/slack/oauth/callback";
/// The bot scopes asked for (the same as scripts/slack-manifest.yaml).
pub const BOT_SCOPES: &[&str] = &[
    "app_mentions:read",
    "channels:history",
    "groups:history",
    "im:history",
    "mpim:history",
    "chat:write",
    "reactions:write",
    "reactions:read",
    "channels:read",
    "groups:read",
    "mpim:read",
    "commands",
    "files:read",
    "files:write",
];
/// How long an install link's `state` stays good.
pub const STATE_TTL_SECS: i64 = 10 * 60;
/// Install links pending at once; past this, `/slack/install` answers 429
/// (each link is a D1 row until it is used or expires).
pub const MAX_PENDING_STATES: i64 = 1_000;
/// The cookie that ties a callback to the browser that asked for the link.
pub const STATE_COOKIE: &str = "edgebot_slack_install";
/// Bytes of randomness in a state (hex-encoded: twice as many characters).
pub const STATE_BYTES: usize = 32;
/// AES-GCM's nonce length.
pub const NONCE_BYTES: usize = 12;

/// Why an install did not happen (each answered with a 4xx).
#[derive(Debug, Error, PartialEq, Eq)]
pub enum InstallError {
    #[error("the install was cancelled in Slack ({0})")]
    Cancelled(String),
    #[error("the callback has no code or no state")]
    Incomplete,
    #[error("the install link is unknown, used or expired")]
    BadState,
    #[error("Slack refused the code ({0})")]
    Refused(String),
    #[error("an org-wide (Enterprise Grid) install is not supported; install into one workspace")]
    OrgWide,
    #[error("this workspace may not install the bot")]
    NotAllowed,
}

/// The link that sends a person to Slack to approve the install.
pub fn authorize_url(client_id: &str, redirect_uri: &str, state: &str) -> String {
    let query = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("client_id", client_id)
        .append_pair("scope", &BOT_SCOPES.join(","))
        .append_pair("redirect_uri", redirect_uri)
        .append_pair("state", state)
        .finish();
    format!("{AUTHORIZE_URL}?{query}")
}

/// The callback URL on this Worker's origin (`https://host`).
pub fn redirect_uri(origin: &str) -> String {
    format!("{}{CALLBACK_PATH}", origin.trim_end_matches('/'))
}

/// The state cookie: HttpOnly and Secure, only under `/slack/`, and
/// SameSite=Lax: the callback is a top-level navigation back from slack.com,
/// which a Strict cookie would not survive.
pub fn state_cookie(state: &str, max_age_secs: i64) -> String {
    format!("{STATE_COOKIE}={state}; Path=/slack/; Max-Age={max_age_secs}; HttpOnly; Secure; SameSite=Lax")
}

/// What Slack's redirect back carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Callback {
    pub code: String,
    pub state: String,
}

/// Reads the callback's query: a code and a state, or Slack's `error`.
pub fn parse_callback(query: &str) -> Result<Callback, InstallError> {
    let mut code = None;
    let mut state = None;
    for (name, value) in url::form_urlencoded::parse(query.as_bytes()) {
        match name.as_ref() {
            "code" => code = Some(value.into_owned()),
            "state" => state = Some(value.into_owned()),
            "error" => return Err(InstallError::Cancelled(value.chars().take(60).collect())),
            _ => {}
        }
    }
    match (code, state) {
        (Some(code), Some(state)) if !code.is_empty() && !state.is_empty() => Ok(Callback { code, state }),
        _ => Err(InstallError::Incomplete),
    }
}

/// Whether the callback comes back to the browser the link was given to
/// (its cookie holds the same state), compared in constant time. A state
/// that is not ours in shape is refused before any lookup.
pub fn state_matches(cookie: Option<&str>, state: &str) -> bool {
    let well_formed = state.len() == STATE_BYTES * 2 && state.bytes().all(|byte| byte.is_ascii_hexdigit());
    well_formed && cookie.is_some_and(|cookie| constant_time_eq(cookie.as_bytes(), state.as_bytes()))
}

/// One workspace's install, as `oauth.v2.access` answers it.
#[derive(Clone, PartialEq, Eq)]
pub struct Installed {
    pub team_id: String,
    pub team_name: String,
    pub bot_user_id: String,
    pub access_token: String,
}

/// Never prints the token.
impl std::fmt::Debug for Installed {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Installed")
            .field("team_id", &self.team_id)
            .field("team_name", &self.team_name)
            .field("bot_user_id", &self.bot_user_id)
            .finish_non_exhaustive()
    }
}

/// Reads `oauth.v2.access`'s answer: a bot token for one workspace.
pub fn parse_access(answer: &Value) -> Result<Installed, InstallError> {
    if answer["ok"] != true {
        let error = answer["error"].as_str().unwrap_or("no error code");
        return Err(InstallError::Refused(error.chars().take(60).collect()));
    }
    if answer["is_enterprise_install"] == true {
        return Err(InstallError::OrgWide);
    }
    let text = |pointer: &str| answer.pointer(pointer).and_then(Value::as_str).unwrap_or_default().to_string();
    let installed = Installed {
        team_id: text("/team/id"),
        team_name: text("/team/name"),
        bot_user_id: text("/bot_user_id"),
        access_token: text("/access_token"),
    };
    if installed.team_id.is_empty() || installed.access_token.is_empty() || answer["token_type"] != "bot" {
        return Err(InstallError::Refused("no bot token for a workspace".into()));
    }
    Ok(installed)
}

/// Whether `team` may install: any workspace when the allow-list is empty.
pub fn may_install(allowed_teams: &[String], team: &str) -> bool {
    allowed_teams.is_empty() || allowed_teams.iter().any(|allowed| allowed == team)
}

/// The key bot tokens are sealed with (`SLACK_TOKEN_KEY`: 32 bytes, base64).
#[derive(Clone)]
pub struct TokenKey(Aes256Gcm);

impl TokenKey {
    /// None unless the text is base64 of exactly 32 bytes.
    pub fn parse(text: &str) -> Option<TokenKey> {
        let bytes = base64::engine::general_purpose::STANDARD.decode(text.trim()).ok()?;
        Aes256Gcm::new_from_slice(&bytes).ok().map(TokenKey)
    }

    /// `base64(nonce ‖ ciphertext ‖ tag)`. The team id is the associated
    /// data: a sealed token moved to another workspace's row does not open.
    /// The caller draws a fresh random nonce for every write.
    pub fn seal(&self, nonce: &[u8; NONCE_BYTES], team: &str, token: &str) -> Option<String> {
        let payload = Payload { msg: token.as_bytes(), aad: team.as_bytes() };
        let sealed = self.0.encrypt(Nonce::from_slice(nonce), payload).ok()?;
        let mut whole = nonce.to_vec();
        whole.extend_from_slice(&sealed);
        Some(base64::engine::general_purpose::STANDARD.encode(whole))
    }

    /// The token, if `sealed` was sealed with this key for `team`.
    pub fn open(&self, team: &str, sealed: &str) -> Option<String> {
        let whole = base64::engine::general_purpose::STANDARD.decode(sealed).ok()?;
        if whole.len() <= NONCE_BYTES {
            return None;
        }
        let (nonce, sealed) = whole.split_at(NONCE_BYTES);
        let payload = Payload { msg: sealed, aad: team.as_bytes() };
        let token = self.0.decrypt(Nonce::from_slice(nonce), payload).ok()?;
        String::from_utf8(token).ok()
    }
}

/// The workspace whose install an Events API delivery ends: `app_uninstalled`,
/// or `tokens_revoked` naming bot tokens (the only kind held here).
pub fn ended_install(body: &[u8]) -> Option<String> {
    let envelope: Value = serde_json::from_slice(body).ok()?;
    if envelope["type"] != "event_callback" {
        return None;
    }
    let team = envelope["team_id"].as_str().filter(|team| !team.is_empty())?;
    let ends = match envelope.pointer("/event/type").and_then(Value::as_str)? {
        "app_uninstalled" => true,
        "tokens_revoked" => {
            envelope.pointer("/event/tokens/bot").and_then(Value::as_array).is_some_and(|bots| !bots.is_empty())
        }
        _ => false,
    };
    ends.then(|| team.to_string())
}

/// What this deployment knows of a workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// Installed: its own token answers there.
    Installed,
    /// Uninstalled, or its tokens revoked: nothing is heard from or sent there.
    Ended,
    /// Never installed here.
    Unknown,
}

/// Whether an event from a workspace is heard: an installed one is; an
/// ended one never is; an unknown one only when the single bot token
/// (`SLACK_BOT_TOKEN`) can answer it.
pub fn is_live(standing: Standing, has_single_token: bool) -> bool {
    match standing {
        Standing::Installed => true,
        Standing::Ended => false,
        Standing::Unknown => has_single_token,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const KEY: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="; // 32 bytes

    #[test]
    fn the_authorize_link_names_the_app_its_scopes_the_callback_and_the_state() {
        let link = authorize_url("123.456", &redirect_uri("https://bot.example.com/"), "ab12");
        let parsed = url::Url::parse(&link).unwrap();
        assert_eq!(parsed.host_str(), Some("slack.com"));
        assert_eq!(parsed.path(), "/oauth/v2/authorize");
        let pairs: std::collections::HashMap<_, _> = parsed.query_pairs().into_owned().collect();
        assert_eq!(pairs["client_id"], "123.456");
        assert_eq!(pairs["redirect_uri"], "https://bot.example.com/slack/oauth/callback");
        assert_eq!(pairs["state"], "ab12");
        assert!(pairs["scope"].split(',').any(|scope| scope == "chat:write"));
    }

    #[test]
    fn the_callback_needs_a_code_and_a_state_and_reports_a_cancel() {
        assert_eq!(parse_callback("code=c1&state=s1"), Ok(Callback { code: "c1".into(), state: "s1".into() }));
        assert_eq!(parse_callback("code=c1"), Err(InstallError::Incomplete));
        assert_eq!(parse_callback("code=&state=s1"), Err(InstallError::Incomplete));
        assert_eq!(
            parse_callback("error=access_denied&state=s1"),
            Err(InstallError::Cancelled("access_denied".into()))
        );
    }

    #[test]
    fn a_state_must_be_ours_in_shape_and_match_the_browsers_cookie() {
        let state = "a".repeat(STATE_BYTES * 2);
        assert!(state_matches(Some(&state), &state));
        assert!(!state_matches(None, &state), "another browser");
        assert!(!state_matches(Some(&"b".repeat(STATE_BYTES * 2)), &state));
        assert!(!state_matches(Some("short"), "short"), "not a state this Worker issues");
        let odd = "z".repeat(STATE_BYTES * 2);
        assert!(!state_matches(Some(&odd), &odd));
    }

    #[test]
    fn an_access_answer_gives_one_workspaces_bot_token_or_a_refusal() {
        let answer = json!({"ok": true, "access_token": "xoxb-1", "token_type": "bot", "bot_user_id": "UB",
                            "team": {"id": "T9", "name": "Nine"}, "is_enterprise_install": false});
        let installed = parse_access(&answer).unwrap();
        assert_eq!((installed.team_id.as_str(), installed.bot_user_id.as_str()), ("T9", "UB"));
        assert_eq!(installed.access_token, "xoxb-1");
        assert!(!format!("{installed:?}").contains("xoxb-1"), "Debug never prints the token");
        assert_eq!(
            parse_access(&json!({"ok": false, "error": "invalid_code"})),
            Err(InstallError::Refused("invalid_code".into()))
        );
        let mut org = answer.clone();
        org["is_enterprise_install"] = json!(true);
        assert_eq!(parse_access(&org), Err(InstallError::OrgWide));
        let mut user = answer;
        user["token_type"] = json!("user");
        assert!(matches!(parse_access(&user), Err(InstallError::Refused(_))));
    }

    #[test]
    fn an_allow_list_limits_who_installs_and_an_empty_one_does_not() {
        assert!(may_install(&[], "T1"));
        let allowed = vec!["T1".to_string()];
        assert!(may_install(&allowed, "T1"));
        assert!(!may_install(&allowed, "T2"));
    }

    #[test]
    fn a_sealed_token_opens_only_with_its_key_and_its_team_and_each_seal_differs() {
        let key = TokenKey::parse(KEY).unwrap();
        let first = key.seal(&[1; NONCE_BYTES], "T1", "xoxb-secret").unwrap();
        let second = key.seal(&[2; NONCE_BYTES], "T1", "xoxb-secret").unwrap();
        assert_ne!(first, second, "a fresh nonce, a fresh ciphertext");
        assert!(!first.contains("xoxb"));
        assert_eq!(key.open("T1", &first).as_deref(), Some("xoxb-secret"));
        assert_eq!(key.open("T2", &first), None, "bound to its workspace");
        let other = TokenKey::parse(&base64::engine::general_purpose::STANDARD.encode([7u8; 32])).unwrap();
        assert_eq!(other.open("T1", &first), None, "another key");
        let mut tampered = base64::engine::general_purpose::STANDARD.decode(&first).unwrap();
        *tampered.last_mut().unwrap() ^= 1;
        assert_eq!(key.open("T1", &base64::engine::general_purpose::STANDARD.encode(tampered)), None);
        assert_eq!(key.open("T1", "not base64!"), None);
        assert!(TokenKey::parse("c2hvcnQ=").is_none(), "a key of the wrong length");
    }

    #[test]
    fn uninstalls_and_revoked_bot_tokens_end_an_install_and_nothing_else_does() {
        let callback = |event: Value| json!({"type": "event_callback", "team_id": "T5", "event": event}).to_string();
        let ended = |event: Value| ended_install(callback(event).as_bytes());
        assert_eq!(ended(json!({"type": "app_uninstalled"})).as_deref(), Some("T5"));
        assert_eq!(ended(json!({"type": "tokens_revoked", "tokens": {"bot": ["UB"]}})).as_deref(), Some("T5"));
        assert_eq!(ended(json!({"type": "tokens_revoked", "tokens": {"oauth": ["U1"], "bot": []}})), None);
        assert_eq!(ended(json!({"type": "message", "text": "app_uninstalled"})), None);
        assert_eq!(ended_install(b"{nope"), None);
    }

    #[test]
    fn an_ended_workspace_is_never_heard_and_an_unknown_one_only_with_the_single_token() {
        for has_single_token in [false, true] {
            assert!(is_live(Standing::Installed, has_single_token));
            assert!(!is_live(Standing::Ended, has_single_token));
            assert_eq!(is_live(Standing::Unknown, has_single_token), has_single_token);
        }
    }
}
