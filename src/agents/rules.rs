//! Agent ids and the agent of a conversation, pure.
//!
//! A conversation key names its agent: the default agent's keys are exactly
//! today's (`telegram:42`), another agent's carry a prefix
//! (`agent:{id}:telegram:42`), and a link conversation `link:{self}:{peer}`
//! belongs to `self`. Everything keyed by conversation (history, files,
//! schedules, tasks, conversation-scoped memories, spend per conversation) is
//! therefore an agent's own with no column of its own.

use serde::{Deserialize, Serialize};

/// Today's edgebot: the agent every key without a prefix belongs to.
pub const DEFAULT: &str = "default";
/// What starts a non-default agent's conversation key.
pub const KEY_PREFIX: &str = "agent:";
/// What starts a link conversation between two agents (`link:{self}:{peer}`).
pub const LINK_PREFIX: &str = "link:";
/// The longest agent id.
pub const MAX_ID_CHARS: usize = 32;

/// A valid agent id: `[a-z][a-z0-9-]{0,31}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct AgentId(String);

/// Why a text is no agent id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("an agent id is a lowercase letter, then up to 31 lowercase letters, digits or hyphens")]
pub struct BadAgentId;

impl AgentId {
    pub fn parse(text: &str) -> Result<AgentId, BadAgentId> {
        is_agent_id(text).then(|| AgentId(text.to_string())).ok_or(BadAgentId)
    }

    pub fn default_agent() -> AgentId {
        AgentId(DEFAULT.to_string())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn is_default(&self) -> bool {
        self.0 == DEFAULT
    }
}

impl TryFrom<String> for AgentId {
    type Error = BadAgentId;
    fn try_from(text: String) -> Result<Self, Self::Error> {
        AgentId::parse(&text)
    }
}

impl From<AgentId> for String {
    fn from(id: AgentId) -> String {
        id.0
    }
}

impl std::fmt::Display for AgentId {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.0)
    }
}

/// Whether `text` is an agent id. Hand-rolled: a regex crate for one
/// character class would cost more wasm than these four lines.
pub fn is_agent_id(text: &str) -> bool {
    let mut bytes = text.bytes();
    bytes.next().is_some_and(|first| first.is_ascii_lowercase())
        && text.len() <= MAX_ID_CHARS
        && bytes.all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-')
}

/// The agent a conversation (or person, or memory scope) key belongs to:
/// `agent:{id}:…` → `id`, `link:{self}:{peer}` → `self`, anything else →
/// [`DEFAULT`].
pub fn agent_of(key: &str) -> &str {
    if let Some(rest) = key.strip_prefix(LINK_PREFIX) {
        if let Some((agent, peer)) = rest.split_once(':') {
            if is_agent_id(agent) && !peer.is_empty() {
                return agent;
            }
        }
    }
    match split(key) {
        Some((agent, _)) => agent,
        None => DEFAULT,
    }
}

/// `agent:{id}:{rest}` split into the id and the rest (None without a valid prefix).
fn split(key: &str) -> Option<(&str, &str)> {
    let (agent, rest) = key.strip_prefix(KEY_PREFIX)?.split_once(':')?;
    (is_agent_id(agent) && !rest.is_empty()).then_some((agent, rest))
}

/// The key without its agent prefix: what names the platform and the place
/// (`agent:b:telegram:42` → `telegram:42`; an unprefixed key unchanged).
pub fn platform_part(key: &str) -> &str {
    split(key).map_or(key, |(_, rest)| rest)
}

/// `key` as `agent`'s: unchanged for the default agent (its keys are
/// today's), `agent:{id}:{key}` for another. A key already prefixed is
/// re-prefixed from its platform part.
pub fn within(agent: &str, key: &str) -> String {
    let bare = platform_part(key);
    if agent == DEFAULT {
        bare.to_string()
    } else {
        format!("{KEY_PREFIX}{agent}:{bare}")
    }
}

/// The memory scope an operator shares an agent's memory in: `shared` for
/// the default agent (today's scope), `agent:{id}:shared` for another, so a
/// shared memory reaches only its own agent's conversations.
pub fn shared_scope(agent: &str) -> String {
    within(agent, "shared")
}

/// An agent's settings (the `settings` JSON of its row). Unknown fields are
/// refused, so a misspelt setting is an error rather than silently ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSettings {
    /// The model its turns use (empty: the deployment's `MODEL`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The tools it may call (None: every tool the deployment offers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// The MCP servers it may use, by name (None: every configured one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_servers: Option<Vec<String>>,
    /// Its spend per UTC day, in millionths of a dollar (None: no limit of its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daily_micro_usd: Option<u64>,
}

impl AgentSettings {
    /// Whether a tool (beyond the channel's own: reply, react, branch, …) is
    /// the agent's to call.
    pub fn permits_tool(&self, name: &str) -> bool {
        self.tools.as_ref().is_none_or(|tools| tools.iter().any(|tool| tool == name))
    }

    /// Whether an MCP server (by name) is the agent's to use.
    pub fn permits_server(&self, name: &str) -> bool {
        self.mcp_servers.as_ref().is_none_or(|servers| servers.iter().any(|server| server == name))
    }
}

/// Tools (a channel turn's host, a worker's world) narrowed to those an
/// agent may call (`permits`, e.g. [`AgentSettings::permits_tool`]): the
/// others are neither offered nor run, and a call to one is answered with a
/// refusal. The one permit type: the channel (`ToolHost`) and workers
/// (`WorkerTools`) each implement their trait for it.
pub struct Permitted<H, P: Fn(&str) -> bool> {
    pub host: H,
    pub permits: P,
}

/// The longest agent name.
pub const MAX_NAME_CHARS: usize = 80;
/// The most names in a tools or MCP servers list.
pub const MAX_LIST: usize = 200;

/// Why an agent's definition was refused (a 400 with this text).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentError {
    #[error("{0}")]
    Id(#[from] BadAgentId),
    #[error("`name` must be 1 to {MAX_NAME_CHARS} printable characters")]
    Name,
    #[error("`settings` is not valid: {0}")]
    Settings(String),
    #[error("the default agent cannot be deleted")]
    DeleteDefault,
    #[error("a Telegram bot needs `token` (id:secret), `secret` (1-256 of A-Z a-z 0-9 _ -) and `username`")]
    Bot,
}

/// A checked name: trimmed, 1 to [`MAX_NAME_CHARS`] characters, no control characters.
pub fn check_name(name: &str) -> Result<String, AgentError> {
    let name = name.trim();
    let fine = !name.is_empty() && name.chars().count() <= MAX_NAME_CHARS && !name.chars().any(char::is_control);
    fine.then(|| name.to_string()).ok_or(AgentError::Name)
}

/// Checked settings from a JSON value (absent: the defaults).
pub fn check_settings(value: Option<&serde_json::Value>) -> Result<AgentSettings, AgentError> {
    let Some(value) = value else { return Ok(AgentSettings::default()) };
    let settings: AgentSettings =
        serde_json::from_value(value.clone()).map_err(|error| AgentError::Settings(error.to_string()))?;
    let lists = [&settings.tools, &settings.mcp_servers];
    if lists.iter().any(|list| list.as_ref().is_some_and(|names| names.len() > MAX_LIST)) {
        return Err(AgentError::Settings(format!("at most {MAX_LIST} names per list")));
    }
    Ok(settings)
}

/// Whether a Telegram bot's token, webhook secret and username look right:
/// the token `{bot id}:{secret}`, the secret as Telegram allows it
/// (`secret_token`: 1-256 of `A-Z a-z 0-9 _ -`), a username of word characters.
pub fn check_bot(token: &str, secret: &str, username: &str) -> Result<(), AgentError> {
    let token_ok = token.split_once(':').is_some_and(|(id, rest)| {
        !id.is_empty() && id.bytes().all(|byte| byte.is_ascii_digit()) && !rest.is_empty() && !rest.contains('/')
    });
    let secret_ok = (1..=256).contains(&secret.len())
        && secret.bytes().all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-');
    let name_ok =
        (1..=64).contains(&username.len()) && username.bytes().all(|byte| byte.is_ascii_alphanumeric() || byte == b'_');
    (token_ok && secret_ok && name_ok).then_some(()).ok_or(AgentError::Bot)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_narrow_tools_and_servers_only_when_they_name_some() {
        let open = AgentSettings::default();
        assert!(open.permits_tool("run_code") && open.permits_server("github"));
        let narrow = AgentSettings {
            tools: Some(vec!["schedule".into()]),
            mcp_servers: Some(vec![]),
            ..AgentSettings::default()
        };
        assert!(narrow.permits_tool("schedule") && !narrow.permits_tool("open_skill"));
        assert!(!narrow.permits_server("github"));
    }

    #[test]
    fn agent_ids_are_checked() {
        for good in ["default", "a", "support-bot", "b2", &"x".repeat(32)] {
            assert!(AgentId::parse(good).is_ok(), "{good}");
        }
        for bad in ["", "A", "1abc", "-a", "a_b", "a b", "ä", &"x".repeat(33), "a:b"] {
            assert_eq!(AgentId::parse(bad), Err(BadAgentId), "{bad}");
        }
        assert!(serde_json::from_str::<AgentId>("\"Bad\"").is_err());
        assert_eq!(serde_json::from_str::<AgentId>("\"ok\"").unwrap().as_str(), "ok");
    }

    #[test]
    fn a_keys_agent_is_its_prefix_its_link_owner_or_default() {
        let cases = [
            ("telegram:42", "default"),
            ("slack:T1:C1:1.2", "default"),
            ("agent:support:telegram:42", "support"),
            ("agent:support:slack:T1:C1", "support"),
            ("link:support:sales", "support"),
            ("link:default:sales", "default"),
            // Not a valid prefix: the key is the default agent's.
            ("agent:Bad:telegram:42", "default"),
            ("agent:support", "default"),
            ("agent:support:", "default"),
            ("link:support:", "default"),
            ("web:agent:x", "default"),
            ("", "default"),
        ];
        for (key, agent) in cases {
            assert_eq!(agent_of(key), agent, "{key}");
        }
    }

    #[test]
    fn settings_names_and_bots_are_checked() {
        assert_eq!(check_settings(None), Ok(AgentSettings::default()));
        let json = serde_json::json!({ "model": "m", "tools": ["file_read"], "daily_micro_usd": 5 });
        let settings = check_settings(Some(&json)).unwrap();
        assert_eq!(settings.tools.as_deref(), Some(&["file_read".to_string()][..]));
        assert!(matches!(check_settings(Some(&serde_json::json!({ "modle": "m" }))), Err(AgentError::Settings(_))));
        let many: Vec<String> = (0..=MAX_LIST).map(|n| n.to_string()).collect();
        assert!(check_settings(Some(&serde_json::json!({ "tools": many }))).is_err());
        assert_eq!(check_name("  Support  "), Ok("Support".to_string()));
        for bad in ["", "   ", "a\nb", &"x".repeat(81)] {
            assert_eq!(check_name(bad), Err(AgentError::Name), "{bad:?}");
        }
        assert_eq!(check_bot("123:abc", "s3cret_-", "support_bot"), Ok(()));
        for (token, secret, name) in [
            ("abc:def", "s", "b"),
            ("123:", "s", "b"),
            ("123:a/b", "s", "b"),
            ("123:abc", "", "b"),
            ("123:abc", "bad secret", "b"),
            ("123:abc", "s", ""),
            ("123:abc", "s", "a-b"),
        ] {
            assert_eq!(check_bot(token, secret, name), Err(AgentError::Bot), "{token} {secret} {name}");
        }
    }

    #[test]
    fn prefixes_come_and_go_and_the_default_keys_stay_as_today() {
        assert_eq!(within(DEFAULT, "telegram:42"), "telegram:42");
        assert_eq!(within("b", "telegram:42"), "agent:b:telegram:42");
        assert_eq!(within("c", "agent:b:telegram:42"), "agent:c:telegram:42");
        assert_eq!(within(DEFAULT, "agent:b:telegram:42"), "telegram:42");
        assert_eq!(platform_part("agent:b:telegram:-100:7"), "telegram:-100:7");
        assert_eq!(platform_part("telegram:42"), "telegram:42");
        assert_eq!(platform_part("agent:B:telegram:42"), "agent:B:telegram:42");
        assert_eq!(shared_scope(DEFAULT), "shared");
        assert_eq!(shared_scope("b"), "agent:b:shared");
        assert_eq!(agent_of(&shared_scope("b")), "b");
    }
}
