//! Remote MCP servers (issue 26), the protocol's pure core: the JSON-RPC
//! messages a client sends over the streamable HTTP transport, reading the
//! answers (one JSON object, a batch, or the events of a stream scoped to the
//! request), version negotiation, the tools a server lists (paged), how a
//! tool is named beside edgebot's own, whether it needs a person's approval,
//! and a call's result as text a model reads. The HTTP exchange and the
//! approval flow live at the edge.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use url::Url;

/// The protocol revisions this client speaks, newest first; it asks for the first.
pub const PROTOCOL_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26"];
/// The header a server's session id travels in (both ways).
pub const SESSION_HEADER: &str = "mcp-session-id";
/// The header that names the negotiated revision on every request after `initialize`.
pub const VERSION_HEADER: &str = "mcp-protocol-version";
/// What every POST accepts: a JSON answer or an event stream.
pub const ACCEPT: &str = "application/json, text/event-stream";
/// The most text of one tool result a model reads.
pub const RESULT_LIMIT_CHARS: usize = 20_000;
/// Tool names the model providers take: `^[a-zA-Z0-9_-]{1,64}$`.
const TOOL_NAME_LIMIT: usize = 64;

/// A JSON-RPC request.
pub fn request(id: u64, method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

/// A JSON-RPC notification (no id, no answer).
pub fn notification(method: &str) -> Value {
    json!({ "jsonrpc": "2.0", "method": method })
}

/// `initialize`: the newest revision this client speaks; of the client
/// capabilities only elicitation in form mode (no sampling, no roots).
pub fn initialize(id: u64, client_version: &str) -> Value {
    request(
        id,
        "initialize",
        json!({
            "protocolVersion": PROTOCOL_VERSIONS[0],
            "capabilities": { "elicitation": crate::mcp::form::capability() },
            "clientInfo": { "name": "edgebot", "version": client_version },
        }),
    )
}

/// `tools/list`, from `cursor` (None: the first page).
pub fn list_tools(id: u64, cursor: Option<&str>) -> Value {
    let params = match cursor {
        Some(cursor) => json!({ "cursor": cursor }),
        None => json!({}),
    };
    request(id, "tools/list", params)
}

/// `tools/call` with the arguments the model wrote.
pub fn call_tool(id: u64, name: &str, arguments: &Value) -> Value {
    request(id, "tools/call", json!({ "name": name, "arguments": arguments }))
}

/// Why an answer cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    #[error("the server answered no message for request {0}")]
    NoAnswer(u64),
    #[error("the server's answer is not JSON-RPC: {0}")]
    Malformed(String),
    #[error("the server refused: {message} (code {code})")]
    Refused { code: i64, message: String },
    #[error("the server speaks protocol {0}, which edgebot does not")]
    UnsupportedVersion(String),
}

/// What one POST's answer carried: the result of request `id`, and whether
/// the server said its tool list changed meanwhile.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub result: Value,
    pub tools_changed: bool,
}

/// Reads the answer to request `id` from a JSON body (one message or a batch).
pub fn answer_from_json(body: &str, id: u64) -> Result<Answer, McpError> {
    let messages = match serde_json::from_str(body).map_err(|error| McpError::Malformed(error.to_string()))? {
        Value::Array(batch) => batch,
        one => vec![one],
    };
    find_answer(messages, id)
}

/// Reads the answer to request `id` from an event stream's events (each
/// event's data one message, as the edge's event reader hands them over;
/// notifications and other ids are passed by).
pub fn answer_from_events(events: &[String], id: u64) -> Result<Answer, McpError> {
    let messages = events
        .iter()
        .filter(|data| !data.trim().is_empty())
        .map(|data| serde_json::from_str(data).map_err(|error| McpError::Malformed(error.to_string())))
        .collect::<Result<Vec<Value>, _>>()?;
    find_answer(messages, id)
}

fn find_answer(messages: Vec<Value>, id: u64) -> Result<Answer, McpError> {
    let tools_changed = messages.iter().any(|message| message["method"] == "notifications/tools/list_changed");
    let answer = messages.into_iter().find(|message| message["id"] == id).ok_or(McpError::NoAnswer(id))?;
    if let Some(error) = answer.get("error") {
        let message = error["message"].as_str().unwrap_or("no message").to_string();
        return Err(McpError::Refused { code: error["code"].as_i64().unwrap_or(0), message });
    }
    let result = answer.get("result").cloned().ok_or_else(|| McpError::Malformed("neither result nor error".into()))?;
    Ok(Answer { result, tools_changed })
}

/// The revision the server chose in its `initialize` result, if this client speaks it.
pub fn negotiated_version(result: &Value) -> Result<String, McpError> {
    let version = result["protocolVersion"].as_str().unwrap_or_default();
    match PROTOCOL_VERSIONS.contains(&version) {
        true => Ok(version.to_string()),
        false => Err(McpError::UnsupportedVersion(version.to_string())),
    }
}

/// A tool a server lists.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RemoteTool {
    /// The server's name for it.
    pub name: String,
    pub description: String,
    /// Its arguments' JSON Schema.
    pub input_schema: Value,
    /// The server says it changes nothing (`annotations.readOnlyHint`).
    pub read_only: bool,
}

/// One page of `tools/list`: its tools and the cursor of the next page.
pub fn tools_page(result: &Value) -> (Vec<RemoteTool>, Option<String>) {
    let tools = result["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|tool| {
            Some(RemoteTool {
                name: tool["name"].as_str()?.to_string(),
                description: tool["description"].as_str().unwrap_or_default().to_string(),
                input_schema: tool.get("inputSchema").cloned().unwrap_or_else(|| json!({ "type": "object" })),
                read_only: tool.pointer("/annotations/readOnlyHint") == Some(&Value::Bool(true)),
            })
        })
        .collect();
    let next = result["nextCursor"].as_str().filter(|cursor| !cursor.is_empty()).map(str::to_string);
    (tools, next)
}

/// Whether a call of `tool` waits for a person's yes: what the operator set,
/// else yes unless the server marks the tool read-only.
pub fn needs_approval(tool: &RemoteTool, operator_setting: Option<bool>) -> bool {
    operator_setting.unwrap_or(!tool.read_only)
}

/// The name the model sees: `mcp_{server}_{tool}`, with anything the model
/// providers refuse made `_`, at most 64 characters. None if that is empty
/// or too long to tell tools apart.
pub fn exposed_name(server: &str, tool: &str) -> Option<String> {
    let clean = |text: &str| -> String {
        text.chars()
            .map(|character| if character.is_ascii_alphanumeric() || character == '-' { character } else { '_' })
            .collect()
    };
    let name = format!("mcp_{}_{}", clean(server), clean(tool));
    (!server.is_empty() && !tool.is_empty() && name.len() <= TOOL_NAME_LIMIT).then_some(name)
}

/// A `tools/call` result as the model reads it: its text blocks (other
/// blocks named, not inlined), cut at [`RESULT_LIMIT_CHARS`]; a result the
/// server marks as an error says so.
pub fn result_text(result: &Value) -> String {
    let blocks: Vec<String> = result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|block| match block["type"].as_str() {
            Some("text") => block["text"].as_str().unwrap_or_default().to_string(),
            Some("resource_link") => format!("[link: {}]", block["uri"].as_str().unwrap_or_default()),
            Some(other) => format!("[{other} content]"),
            None => String::new(),
        })
        .collect();
    let mut text = blocks.join("\n");
    if text.is_empty() {
        if let Some(structured) = result.get("structuredContent") {
            text = structured.to_string();
        }
    }
    if text.chars().count() > RESULT_LIMIT_CHARS {
        text = text.chars().take(RESULT_LIMIT_CHARS).collect();
        text.push_str("\n[cut: the result goes on]");
    }
    match result["isError"] == true {
        true => format!("error: {text}"),
        false => text,
    }
}

/// How edgebot proves itself to a server. Credentials are never stored with
/// the server: each names a Worker secret (`MCP_…`, set with `wrangler secret
/// put`), read when a call is made, so D1, the admin API and the dashboard
/// see only names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Auth {
    None,
    /// `Authorization: Bearer <the secret's value>`.
    Bearer {
        token_secret: String,
    },
    /// OAuth 2.0 client credentials: an access token from `token_url`, kept
    /// in D1 until it expires.
    Oauth {
        token_url: String,
        client_id: String,
        client_secret_secret: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        scope: Option<String>,
    },
}

/// What an operator sets for one server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerSettings {
    /// The streamable HTTP endpoint; every request goes to its origin only.
    pub url: String,
    #[serde(default = "no_auth")]
    pub auth: Auth,
    /// The tools offered (None: every tool the server lists).
    #[serde(default)]
    pub expose: Option<Vec<String>>,
    /// Per tool, whether a call waits for a person (absent: [`needs_approval`]'s default).
    #[serde(default)]
    pub approval: BTreeMap<String, bool>,
    /// Branches may use its tools that need no approval (a branch cannot wait).
    #[serde(default)]
    pub branches: bool,
}

fn no_auth() -> Auth {
    Auth::None
}

/// The longest server name (it is part of every tool name the model sees).
pub const SERVER_NAME_LIMIT: usize = 20;

/// A server's name: 1 to 20 lowercase letters, digits and underscores.
pub fn check_name(name: &str) -> Result<(), String> {
    let fits = !name.is_empty() && name.len() <= SERVER_NAME_LIMIT;
    match fits && name.bytes().all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'_') {
        true => Ok(()),
        false => Err("a server's name is 1 to 20 lowercase letters, digits and underscores".into()),
    }
}

/// A secret's name: `MCP_` and capitals, digits or underscores. The prefix
/// keeps a typo (or a hostile edit) from sending, say, the Slack bot token
/// to a tool server.
pub fn check_secret_name(name: &str) -> Result<(), String> {
    let rest = name.strip_prefix("MCP_").unwrap_or_default();
    match !rest.is_empty()
        && rest.bytes().all(|byte| byte.is_ascii_uppercase() || byte.is_ascii_digit() || byte == b'_')
    {
        true => Ok(()),
        false => Err(format!("`{name}` is not a secret name edgebot reads for MCP: use MCP_ and capitals")),
    }
}

impl ServerSettings {
    /// The secrets' names are well formed and every list names tools plainly.
    /// (Addresses are checked by the edge's fetch guard, which knows the
    /// allowed hosts.)
    pub fn check(&self) -> Result<(), String> {
        match &self.auth {
            Auth::None => {}
            Auth::Bearer { token_secret } => check_secret_name(token_secret)?,
            Auth::Oauth { client_id, client_secret_secret, .. } => {
                check_secret_name(client_secret_secret)?;
                if client_id.trim().is_empty() {
                    return Err("OAuth needs a client id".into());
                }
            }
        }
        let mut named = self.expose.iter().flatten().chain(self.approval.keys());
        match named.clone().count() <= 500 && named.all(|tool| !tool.is_empty() && tool.len() <= 128) {
            true => Ok(()),
            false => Err("tool names are 1 to 128 characters, at most 500 of them".into()),
        }
    }

    /// Whether the operator offers `tool`.
    pub fn exposes(&self, tool: &str) -> bool {
        self.expose.as_ref().is_none_or(|names| names.iter().any(|name| name == tool))
    }
}

/// A server's tool as a process sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OfferedTool {
    pub server: String,
    /// The server's name for it.
    pub name: String,
    /// The name the model calls (`mcp_{server}_{tool}`).
    pub exposed_name: String,
    pub description: String,
    pub input_schema: Value,
    pub read_only: bool,
    pub needs_approval: bool,
}

/// The tools of `server` the operator offers, by the names the model calls.
/// A tool whose exposed name would be too long is left out.
pub fn offered(server: &str, settings: &ServerSettings, listed: &[RemoteTool]) -> Vec<OfferedTool> {
    listed
        .iter()
        .filter(|tool| settings.exposes(&tool.name))
        .filter_map(|tool| {
            Some(OfferedTool {
                server: server.to_string(),
                name: tool.name.clone(),
                exposed_name: exposed_name(server, &tool.name)?,
                description: tool.description.chars().take(1_000).collect(),
                input_schema: tool.input_schema.clone(),
                read_only: tool.read_only,
                needs_approval: needs_approval(tool, settings.approval.get(&tool.name).copied()),
            })
        })
        .collect()
}

/// A tool's input schema as the model providers take it: an object schema
/// (a server's other shapes become an object without properties).
pub fn parameters(schema: &Value) -> Value {
    match schema["type"] == "object" {
        true => schema.clone(),
        false => json!({ "type": "object", "properties": {} }),
    }
}

/// `notifications/cancelled` for a request given up on (a timeout).
pub fn cancelled(id: u64, reason: &str) -> Value {
    json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": id, "reason": reason } })
}

/// Where a redirect from `from` to `location` may go: the configured
/// endpoint's origin, nowhere else. (The edge then checks it as it checks
/// every URL: the fetch guard, and the runtime's parser.)
pub fn same_origin(endpoint: &Url, from: &Url, location: &str) -> Result<Url, String> {
    let next = from.join(location).map_err(|_| "refused: a redirect without a usable Location".to_string())?;
    if next.origin() != endpoint.origin() {
        return Err(format!(
            "refused: the server redirected to another origin ({})",
            next.origin().ascii_serialization()
        ));
    }
    Ok(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_json_rpc_and_initialize_asks_for_the_newest_revision() {
        let init = initialize(1, "0.1.0");
        assert_eq!(init["jsonrpc"], "2.0");
        assert_eq!((init["id"].as_u64(), init["method"].as_str()), (Some(1), Some("initialize")));
        assert_eq!(init["params"]["protocolVersion"], PROTOCOL_VERSIONS[0]);
        assert_eq!(init["params"]["clientInfo"]["name"], "edgebot");
        assert_eq!(notification("notifications/initialized").get("id"), None);
        assert_eq!(list_tools(2, None)["params"], json!({}));
        assert_eq!(list_tools(3, Some("c2"))["params"]["cursor"], "c2");
        assert_eq!(
            call_tool(4, "search", &json!({"q": "x"}))["params"],
            json!({"name": "search", "arguments": {"q": "x"}})
        );
    }

    #[test]
    fn answers_are_read_from_json_batches_and_event_streams() {
        let one = r#"{"jsonrpc":"2.0","id":7,"result":{"ok":true}}"#;
        assert_eq!(answer_from_json(one, 7).unwrap().result, json!({"ok": true}));
        let batch =
            r#"[{"jsonrpc":"2.0","method":"notifications/tools/list_changed"},{"jsonrpc":"2.0","id":7,"result":{}}]"#;
        assert!(answer_from_json(batch, 7).unwrap().tools_changed);
        let events = [
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}"#.to_string(),
            String::new(),
            r#"{"jsonrpc":"2.0","id":7,"result":{"tools":[]}}"#.to_string(),
        ];
        assert_eq!(answer_from_events(&events, 7).unwrap().result, json!({"tools": []}));
        assert_eq!(answer_from_events(&events, 8), Err(McpError::NoAnswer(8)));
        let refused = r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"unknown tool"}}"#;
        assert_eq!(
            answer_from_json(refused, 7),
            Err(McpError::Refused { code: -32602, message: "unknown tool".into() })
        );
        assert!(matches!(answer_from_json("<html>", 7), Err(McpError::Malformed(_))));
        assert!(matches!(answer_from_json(r#"{"jsonrpc":"2.0","id":7}"#, 7), Err(McpError::Malformed(_))));
    }

    #[test]
    fn the_server_chooses_a_revision_this_client_speaks_or_is_refused() {
        assert_eq!(negotiated_version(&json!({"protocolVersion": "2025-06-18"})), Ok("2025-06-18".into()));
        assert_eq!(
            negotiated_version(&json!({"protocolVersion": "2024-01-01"})),
            Err(McpError::UnsupportedVersion("2024-01-01".into()))
        );
    }

    #[test]
    fn tools_come_in_pages_and_need_approval_unless_read_only() {
        let page = json!({"tools": [
            {"name": "search", "description": "Find issues", "inputSchema": {"type": "object"},
             "annotations": {"readOnlyHint": true}},
            {"name": "close_issue", "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}}},
            {"description": "no name: skipped"}
        ], "nextCursor": "page-2"});
        let (tools, next) = tools_page(&page);
        assert_eq!(tools.len(), 2);
        assert_eq!(next.as_deref(), Some("page-2"));
        assert!(!needs_approval(&tools[0], None), "read-only: no approval by default");
        assert!(needs_approval(&tools[1], None), "anything else waits for a yes");
        assert!(
            needs_approval(&tools[0], Some(true)) && !needs_approval(&tools[1], Some(false)),
            "the operator decides"
        );
        assert_eq!(tools_page(&json!({"tools": [], "nextCursor": ""})).1, None);
    }

    #[test]
    fn exposed_names_are_namespaced_and_what_providers_take() {
        assert_eq!(exposed_name("linear", "create issue").as_deref(), Some("mcp_linear_create_issue"));
        assert_eq!(exposed_name("a.b", "x/y").as_deref(), Some("mcp_a_b_x_y"));
        assert_eq!(exposed_name("s", &"t".repeat(80)), None);
        assert_eq!(exposed_name("", "t"), None);
    }

    #[test]
    fn results_read_as_text_cut_and_marked_when_they_are_errors() {
        let result = json!({"content": [
            {"type": "text", "text": "3 issues"}, {"type": "image", "data": "...", "mimeType": "image/png"},
            {"type": "resource_link", "uri": "https://example.com/i/1"}
        ]});
        assert_eq!(result_text(&result), "3 issues\n[image content]\n[link: https://example.com/i/1]");
        assert_eq!(
            result_text(&json!({"content": [{"type": "text", "text": "no such id"}], "isError": true})),
            "error: no such id"
        );
        assert_eq!(result_text(&json!({"content": [], "structuredContent": {"n": 3}})), r#"{"n":3}"#);
        let long = result_text(&json!({"content": [{"type": "text", "text": "x".repeat(RESULT_LIMIT_CHARS + 5)}]}));
        assert!(long.ends_with("[cut: the result goes on]") && long.len() < RESULT_LIMIT_CHARS + 40);
    }

    fn tool(name: &str, read_only: bool) -> RemoteTool {
        RemoteTool { name: name.into(), description: "d".into(), input_schema: json!({"type": "object"}), read_only }
    }

    #[test]
    fn settings_name_secrets_never_hold_them_and_offer_what_the_operator_chose() {
        let settings: ServerSettings = serde_json::from_value(json!({
            "url": "https://mcp.example.com/mcp",
            "auth": { "kind": "bearer", "token_secret": "MCP_TRACKER_TOKEN" },
            "expose": ["lookup", "create_issue"],
            "approval": { "lookup": true }
        }))
        .unwrap();
        assert_eq!(settings.check(), Ok(()));
        let listed = [tool("lookup", true), tool("create_issue", false), tool("drop_table", false)];
        let chosen = offered("tracker", &settings, &listed);
        let names: Vec<(&str, bool)> =
            chosen.iter().map(|tool| (tool.exposed_name.as_str(), tool.needs_approval)).collect();
        // Only what is exposed; the operator's word over the read-only hint.
        assert_eq!(names, vec![("mcp_tracker_lookup", true), ("mcp_tracker_create_issue", true)]);
        let open = ServerSettings { expose: None, approval: BTreeMap::new(), ..settings.clone() };
        let defaults: Vec<bool> = offered("t", &open, &listed).iter().map(|tool| tool.needs_approval).collect();
        assert_eq!(defaults, vec![false, true, true], "read-only tools need no approval by default");

        for bad in ["SLACK_BOT_TOKEN", "MCP_", "mcp_x", "MCP_A-B", "ADMIN_TOKEN"] {
            let auth = Auth::Bearer { token_secret: bad.into() };
            assert!(ServerSettings { auth, ..settings.clone() }.check().is_err(), "{bad}");
        }
        let oauth = Auth::Oauth {
            token_url: "https://auth.example.com/token".into(),
            client_id: " ".into(),
            client_secret_secret: "MCP_S".into(),
            scope: None,
        };
        assert!(ServerSettings { auth: oauth, ..settings.clone() }.check().is_err(), "a client id is needed");
        for (name, ok) in [("tracker", true), ("t_2", true), ("", false), ("Tracker", false), ("a-b", false)] {
            assert_eq!(check_name(name).is_ok(), ok, "{name}");
        }
        assert!(check_name(&"a".repeat(21)).is_err());
        assert_eq!(cancelled(9, "timeout")["params"]["requestId"], 9);
        assert_eq!(parameters(&json!({"type": "string"}))["type"], "object");
        assert_eq!(parameters(&json!({"type": "object", "required": ["a"]}))["required"][0], "a");
    }

    #[test]
    fn a_redirect_is_followed_only_to_the_endpoints_own_origin() {
        let endpoint = Url::parse("https://mcp.example.com/mcp").unwrap();
        let from = Url::parse("https://mcp.example.com/mcp/v1").unwrap();
        let follow = |location| same_origin(&endpoint, &from, location);
        assert_eq!(follow("/mcp/v2").unwrap().as_str(), "https://mcp.example.com/mcp/v2");
        assert_eq!(follow("https://mcp.example.com/other").unwrap().as_str(), "https://mcp.example.com/other");
        assert_eq!(
            follow("https://evil.example/mcp"),
            Err("refused: the server redirected to another origin (https://evil.example)".into())
        );
        assert!(follow("http://mcp.example.com/mcp").unwrap_err().contains("another origin"), "the scheme counts");
        assert!(follow("https://mcp.example.com:8443/mcp").unwrap_err().contains("another origin"), "the port counts");
        assert_eq!(follow("https://[::1"), Err("refused: a redirect without a usable Location".into()));
    }
}
