//! edgebot as a remote MCP server, the protocol's pure core: the JSON-RPC
//! messages a client posts over the streamable HTTP transport (revision
//! 2025-11-25, older ones negotiated), what each is answered, the tools a
//! client is offered (its scope), the Origin rule against DNS rebinding, the
//! client tokens' shape and a client's settings. The edge (`endpoint`, `tools`,
//! `store`) reads and writes D1 and runs the tools.

use serde::Deserialize;
use serde_json::{json, Value};

/// The revisions this server speaks, newest first; an `initialize` asking for
/// another is answered with the first.
pub const PROTOCOL_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26"];
/// The header that names the negotiated revision on requests after `initialize`.
pub const VERSION_HEADER: &str = "mcp-protocol-version";
/// A token starts with this, then the client's id, `_`, and the secret (hex).
pub const TOKEN_PREFIX: &str = "ebm_";
/// Conversations one client may be scoped to.
pub const MAX_CONVERSATIONS: usize = 20;
/// The longest text `post` sends and question `ask` takes.
pub const MAX_TEXT_CHARS: usize = 4_000;
/// The longest idempotency key `post` takes.
pub const MAX_IDEMPOTENCY_KEY: usize = 100;

crate::named! {
    /// A tool this server offers.
    pub enum ServerTool {
        Ask = "ask",
        Post = "post",
        SearchMemories = "search_memories",
        ListTasks = "list_tasks",
    }
}

pub const ALL_TOOLS: [ServerTool; 4] =
    [ServerTool::Ask, ServerTool::Post, ServerTool::SearchMemories, ServerTool::ListTasks];

impl ServerTool {
    /// The tool as `tools/list` shows it.
    pub fn listing(self) -> Value {
        let (description, schema) = match self {
            ServerTool::Ask => (
                "Ask the agent a question. It answers from what it remembers (the memories this client may \
                 read) and returns the answer with its sources. Nothing is posted anywhere.",
                json!({ "type": "object", "properties": {
                    "question": { "type": "string", "description": "The question." } },
                    "required": ["question"], "additionalProperties": false }),
            ),
            ServerTool::Post => (
                "Post a message, as the agent, to one of the conversations this client may post to. \
                 The same idempotency_key posts once, however often the call is repeated.",
                json!({ "type": "object", "properties": {
                    "conversation": { "type": "string", "description": "The conversation's key." },
                    "text": { "type": "string", "description": "What to post (markdown)." },
                    "idempotency_key": { "type": "string", "description": "Unique per message; a repeat is not posted again." } },
                    "required": ["conversation", "text", "idempotency_key"], "additionalProperties": false }),
            ),
            ServerTool::SearchMemories => (
                "Search the memories the agent may share with this client (shared ones and those of the \
                 conversations in its scope).",
                json!({ "type": "object", "properties": {
                    "query": { "type": "string", "description": "What to look for; empty lists the newest." },
                    "limit": { "type": "integer", "minimum": 1, "maximum": 20 } },
                    "additionalProperties": false }),
            ),
            ServerTool::ListTasks => (
                "List the agent's task board (the tasks of the conversations in this client's scope).",
                json!({ "type": "object", "properties": {
                    "status": { "type": "string", "description": "Only tasks in this status." } },
                    "additionalProperties": false }),
            ),
        };
        json!({ "name": self.as_str(), "description": description, "inputSchema": schema })
    }
}

/// What a client may do: its tools and the conversations it may reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    pub tools: Vec<ServerTool>,
    pub conversations: Vec<String>,
}

impl Scope {
    pub fn allows(&self, tool: ServerTool) -> bool {
        self.tools.contains(&tool)
    }

    /// The tools' names, as stored and shown.
    pub fn tool_names(&self) -> Vec<&'static str> {
        self.tools.iter().map(|tool| tool.as_str()).collect()
    }

    /// A scope as stored (two JSON lists); a name no longer known is left out.
    pub fn from_stored(tools: &str, conversations: &str) -> Scope {
        let names: Vec<String> = serde_json::from_str(tools).unwrap_or_default();
        Scope {
            tools: names.iter().filter_map(|name| ServerTool::parse(name)).collect(),
            conversations: serde_json::from_str(conversations).unwrap_or_default(),
        }
    }

    /// Whether `conversation` is one of the client's (exactly: a thread of a
    /// channel in scope is not in scope unless named).
    pub fn has_conversation(&self, conversation: &str) -> bool {
        self.conversations.iter().any(|known| known == conversation)
    }
}

/// What the operator asks for when creating a client.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewClient {
    pub name: String,
    /// The agent the client reaches (its token opens `/mcp` as that agent).
    #[serde(default = "default_agent")]
    pub agent: String,
    /// Omitted: every tool.
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    #[serde(default)]
    pub conversations: Vec<String>,
    #[serde(default = "default_rate")]
    pub rate_per_minute: u32,
    #[serde(default = "default_budget")]
    pub daily_budget_usd: f64,
}

fn default_agent() -> String {
    crate::agents::DEFAULT.to_string()
}

fn default_rate() -> u32 {
    60
}

fn default_budget() -> f64 {
    1.0
}

impl NewClient {
    /// The checked settings: the scope, or why they are refused.
    pub fn check(&self) -> Result<Scope, String> {
        let name = self.name.trim();
        if name.is_empty() || name.chars().count() > 80 || name.chars().any(char::is_control) {
            return Err("name: 1 to 80 characters, no control characters".into());
        }
        let tools = match &self.tools {
            None => ALL_TOOLS.to_vec(),
            Some(names) => {
                let mut tools = Vec::new();
                for name in names {
                    let tool = ServerTool::parse(name).ok_or_else(|| format!("unknown tool `{name}`"))?;
                    if !tools.contains(&tool) {
                        tools.push(tool);
                    }
                }
                tools
            }
        };
        if !crate::agents::rules::is_agent_id(&self.agent) {
            return Err(format!("`{}` is not an agent id", self.agent));
        }
        if self.conversations.len() > MAX_CONVERSATIONS {
            return Err(format!("at most {MAX_CONVERSATIONS} conversations"));
        }
        for key in &self.conversations {
            if !crate::memory::scope::is_conversation_key(key) {
                return Err(format!("`{key}` is not a conversation key"));
            }
            if crate::agents::agent_of(key) != self.agent {
                return Err(format!("`{key}` is not a conversation of the agent `{}`", self.agent));
            }
        }
        if !(1..=10_000).contains(&self.rate_per_minute) {
            return Err("rate_per_minute: 1 to 10000".into());
        }
        if !(self.daily_budget_usd.is_finite() && (0.0..=1_000.0).contains(&self.daily_budget_usd)) {
            return Err("daily_budget_usd: 0 to 1000".into());
        }
        Ok(Scope { tools, conversations: self.conversations.clone() })
    }
}

/// A presented token split into the client's id and the secret; None for
/// anything not shaped like one.
pub fn parse_token(token: &str) -> Option<(&str, &str)> {
    let (id, secret) = token.strip_prefix(TOKEN_PREFIX)?.split_once('_')?;
    let hex = |text: &str, len: usize| text.len() == len && text.bytes().all(|b| b.is_ascii_hexdigit());
    (hex(id, 16) && hex(secret, 64)).then_some((id, secret))
}

/// The bearer token of an `Authorization` header.
pub fn bearer(header: Option<&str>) -> Option<&str> {
    let (scheme, token) = header?.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// The DNS-rebinding rule (transport spec, "Security Warning"): a request
/// whose `Origin` is present must come from this server's own origin or a
/// loopback one; non-browser clients send none.
pub fn origin_allowed(origin: Option<&str>, own_host: &str) -> bool {
    let Some(origin) = origin else { return true };
    let Ok(url) = url::Url::parse(origin) else { return false };
    let Some(host) = url.host_str() else { return false };
    let with_port = match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_string(),
    };
    let loopback = matches!(host, "localhost" | "127.0.0.1" | "[::1]" | "::1");
    loopback || with_port.eq_ignore_ascii_case(own_host) || host.eq_ignore_ascii_case(own_host)
}

/// Whether a request's `MCP-Protocol-Version` header (absent: the server
/// assumes 2025-03-26, as the spec says) names a revision spoken here.
pub fn version_header_ok(header: Option<&str>) -> bool {
    header.is_none_or(|version| PROTOCOL_VERSIONS.contains(&version.trim()))
}

/// The revision `initialize` settles on.
pub fn negotiate(asked: Option<&str>) -> &'static str {
    PROTOCOL_VERSIONS.iter().find(|known| Some(**known) == asked).copied().unwrap_or(PROTOCOL_VERSIONS[0])
}

/// JSON-RPC error codes.
pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
/// The client is over its rate or budget (a server error, in the range the spec leaves to servers).
pub const OVER_LIMIT: i64 = -32000;

/// One posted message, classified.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A request: answered with a result or an error.
    Request { id: Value, method: String, params: Value },
    /// A notification or a response from the client: accepted, not answered (202).
    NoAnswer,
}

/// Reads a posted body: one JSON-RPC message (batches were dropped in
/// 2025-06-18). Err is the error object to answer with (id null).
pub fn read_message(body: &[u8]) -> Result<Message, Value> {
    let value: Value = serde_json::from_slice(body).map_err(|_| error(&Value::Null, PARSE_ERROR, "parse error"))?;
    let Some(object) = value.as_object() else {
        return Err(error(&Value::Null, INVALID_REQUEST, "one JSON-RPC message per request (no batches)"));
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(error(&Value::Null, INVALID_REQUEST, "not JSON-RPC 2.0"));
    }
    let id = object.get("id").cloned();
    match (object.get("method").and_then(Value::as_str), id) {
        (Some(method), Some(id)) if id.is_string() || id.is_i64() || id.is_u64() => Ok(Message::Request {
            id,
            method: method.to_string(),
            params: object.get("params").cloned().unwrap_or_else(|| json!({})),
        }),
        (Some(_), Some(_)) => Err(error(&Value::Null, INVALID_REQUEST, "the id must be a string or an integer")),
        (Some(_), None) => Ok(Message::NoAnswer),
        (None, Some(_)) if object.contains_key("result") || object.contains_key("error") => Ok(Message::NoAnswer),
        (None, _) => Err(error(&Value::Null, INVALID_REQUEST, "no method")),
    }
}

pub fn result(id: &Value, result: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "result": result })
}

pub fn error(id: &Value, code: i64, message: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })
}

/// The answer to `initialize`.
pub fn initialize_result(params: &Value, agent: &str, version: &str) -> Value {
    let negotiated = negotiate(params.get("protocolVersion").and_then(Value::as_str));
    json!({
        "protocolVersion": negotiated,
        "capabilities": { "tools": { "listChanged": false } },
        "serverInfo": { "name": "edgebot", "title": format!("edgebot agent `{agent}`"), "version": version },
        "instructions": "Tools to ask this agent, post as it, search the memories it shares and read its task board.",
    })
}

/// The answer to `tools/list`: the client's tools only.
pub fn tools_list(scope: &Scope) -> Value {
    let tools: Vec<Value> = ALL_TOOLS.iter().filter(|tool| scope.allows(**tool)).map(|tool| tool.listing()).collect();
    json!({ "tools": tools })
}

/// A `tools/call`'s name and arguments, if the client may call it.
pub fn tool_call(params: &Value, scope: &Scope) -> Result<(ServerTool, Value), String> {
    let name = params.get("name").and_then(Value::as_str).ok_or("tools/call needs a tool name")?;
    let tool = ServerTool::parse(name).filter(|tool| scope.allows(*tool)).ok_or(format!("unknown tool: {name}"))?;
    let arguments = params.get("arguments").cloned().unwrap_or_else(|| json!({}));
    if !arguments.is_object() {
        return Err("arguments must be an object".into());
    }
    Ok((tool, arguments))
}

/// A tool's result: its text, and the same as structured content.
pub fn tool_result(structured: Value) -> Value {
    let text = serde_json::to_string_pretty(&structured).unwrap_or_default();
    json!({ "content": [{ "type": "text", "text": text }], "structuredContent": structured, "isError": false })
}

/// A tool that ran and failed (the spec's tool execution error: the model reads why).
pub fn tool_error(message: &str) -> Value {
    json!({ "content": [{ "type": "text", "text": message }], "isError": true })
}

/// A required text argument, trimmed, at most `max` characters.
pub fn text_argument<'a>(arguments: &'a Value, name: &str, max: usize) -> Result<&'a str, String> {
    let text = arguments.get(name).and_then(Value::as_str).map(str::trim).unwrap_or_default();
    if text.is_empty() {
        return Err(format!("`{name}` is required"));
    }
    if text.chars().count() > max {
        return Err(format!("`{name}` is over {max} characters"));
    }
    Ok(text)
}

/// The outbox entry of a `post`: one per client and idempotency key.
pub fn post_entry_id(client_id: &str, idempotency_key: &str) -> String {
    format!("mcp:{client_id}:{idempotency_key}")
}

/// The minute a call counts in (for the per-minute rate).
pub fn minute_of(now_ms: i64) -> i64 {
    now_ms.div_euclid(60_000)
}

/// Seconds until the next minute starts (Retry-After of a rate refusal).
pub fn seconds_to_next_minute(now_ms: i64) -> u64 {
    (60 - now_ms.rem_euclid(60_000) / 1_000).max(1) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(tools: &[ServerTool]) -> Scope {
        Scope { tools: tools.to_vec(), conversations: vec!["telegram:1".into()] }
    }

    #[test]
    fn a_request_a_notification_and_a_response_are_told_apart_and_bad_bodies_are_errors() {
        let request = read_message(br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#).unwrap();
        assert_eq!(request, Message::Request { id: json!(7), method: "ping".into(), params: json!({}) });
        assert_eq!(read_message(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#), Ok(Message::NoAnswer));
        assert_eq!(read_message(br#"{"jsonrpc":"2.0","id":"a","result":{}}"#), Ok(Message::NoAnswer));
        let code = |body: &[u8]| read_message(body).unwrap_err()["error"]["code"].as_i64().unwrap();
        assert_eq!(code(b"{not json"), PARSE_ERROR);
        assert_eq!(code(br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#), INVALID_REQUEST);
        assert_eq!(code(br#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#), INVALID_REQUEST);
        assert_eq!(code(br#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#), INVALID_REQUEST);
        assert_eq!(code(br#"{"jsonrpc":"2.0","id":1}"#), INVALID_REQUEST);
    }

    #[test]
    fn initialize_settles_on_the_asked_revision_when_spoken_else_the_newest() {
        for (asked, settled) in [
            ("2025-06-18", "2025-06-18"),
            ("2025-11-25", "2025-11-25"),
            ("2024-11-05", "2025-11-25"),
            ("", "2025-11-25"),
        ] {
            let answer = initialize_result(&json!({ "protocolVersion": asked }), "default", "1");
            assert_eq!(answer["protocolVersion"], settled, "{asked}");
            assert!(answer["capabilities"]["tools"].is_object());
            assert!(answer["capabilities"].get("resources").is_none());
        }
        assert!(version_header_ok(None));
        assert!(version_header_ok(Some("2025-06-18")));
        assert!(!version_header_ok(Some("1999-01-01")));
    }

    #[test]
    fn a_client_sees_and_calls_only_its_own_tools() {
        let only_search = scope(&[ServerTool::SearchMemories]);
        let listed = tools_list(&only_search);
        let names: Vec<&str> =
            listed["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["search_memories"]);
        assert!(tool_call(&json!({ "name": "search_memories" }), &only_search).is_ok());
        assert_eq!(
            tool_call(&json!({ "name": "post", "arguments": {} }), &only_search).unwrap_err(),
            "unknown tool: post"
        );
        assert!(tool_call(&json!({ "name": "nothing" }), &scope(&ALL_TOOLS)).is_err());
        assert!(tool_call(&json!({ "name": "ask", "arguments": [1] }), &scope(&ALL_TOOLS)).is_err());
        let all = tools_list(&scope(&ALL_TOOLS));
        for tool in all["tools"].as_array().unwrap() {
            assert!(tool["description"].as_str().is_some_and(|d| !d.is_empty()));
            assert_eq!(tool["inputSchema"]["type"], "object");
        }
    }

    #[test]
    fn only_well_shaped_tokens_are_read_and_only_bearer_ones() {
        let id = "0123456789abcdef";
        let secret = "a".repeat(64);
        let token = format!("ebm_{id}_{secret}");
        assert_eq!(parse_token(&token), Some((id, secret.as_str())));
        for bad in [
            format!("ebm_{id}"),
            format!("ebm_{id}_{}", &secret[1..]),
            format!("xx_{id}_{secret}"),
            format!("ebm_{id}_{}g", &secret[1..]),
        ] {
            assert_eq!(parse_token(&bad), None, "{bad}");
        }
        assert_eq!(bearer(Some("Bearer abc")), Some("abc"));
        assert_eq!(bearer(Some("bearer  abc ")), Some("abc"));
        assert_eq!(bearer(Some("Basic abc")), None);
        assert_eq!(bearer(None), None);
    }

    #[test]
    fn an_origin_is_allowed_when_absent_loopback_or_the_servers_own() {
        assert!(origin_allowed(None, "bot.example.com"));
        assert!(origin_allowed(Some("https://bot.example.com"), "bot.example.com"));
        assert!(origin_allowed(Some("http://localhost:8787"), "127.0.0.1:8787"));
        assert!(origin_allowed(Some("http://127.0.0.1:9"), "bot.example.com"));
        assert!(!origin_allowed(Some("http://evil.example.com"), "127.0.0.1:8787"));
        assert!(!origin_allowed(Some("https://bot.example.com.evil.net"), "bot.example.com"));
        assert!(!origin_allowed(Some("null"), "bot.example.com"));
    }

    #[test]
    fn new_clients_are_checked() {
        let new = |body: Value| serde_json::from_value::<NewClient>(body).unwrap().check();
        let all = new(json!({ "name": "ci" })).unwrap();
        assert_eq!(all.tools, ALL_TOOLS.to_vec());
        let some = new(json!({ "name": "ci", "tools": ["ask", "ask"], "conversations": ["telegram:42"] })).unwrap();
        assert_eq!(some.tools, vec![ServerTool::Ask]);
        assert!(new(json!({ "name": "" })).is_err());
        assert!(new(json!({ "name": "ci", "tools": ["rm"] })).is_err());
        assert!(new(json!({ "name": "ci", "conversations": ["nope"] })).is_err());
        assert!(new(json!({ "name": "ci", "rate_per_minute": 0 })).is_err());
        assert!(new(json!({ "name": "ci", "daily_budget_usd": -1.0 })).is_err());
        assert!(serde_json::from_value::<NewClient>(json!({ "name": "ci", "admin": true })).is_err());
    }

    #[test]
    fn text_arguments_are_required_and_bounded_and_minutes_roll() {
        assert_eq!(text_argument(&json!({ "q": " hi " }), "q", 5), Ok("hi"));
        assert!(text_argument(&json!({ "q": "   " }), "q", 5).is_err());
        assert!(text_argument(&json!({ "q": "toolong" }), "q", 5).is_err());
        assert!(text_argument(&json!({}), "q", 5).is_err());
        assert_eq!(minute_of(59_999), 0);
        assert_eq!(minute_of(60_000), 1);
        assert_eq!(seconds_to_next_minute(60_000), 60);
        assert_eq!(seconds_to_next_minute(119_500), 1);
    }
}
