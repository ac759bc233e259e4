//! A fake remote MCP server (Model Context Protocol, "streamable HTTP"
//! transport): JSON-RPC 2.0 messages POSTed to one endpoint, `/mcp`, each
//! request answered with JSON or a short server-sent-events stream, each
//! notification with 202. It hands out a session on `initialize` and asks
//! for it on every later request, lists four tools two per page, answers
//! `tools/call` (`lookup` as SSE with a progress notification first, `slow`
//! after a delay) and records every message. A test can take it down, put it
//! behind a bearer token, add tools, forget its sessions, or point the client
//! at its redirecting routes. The server stops when the fake is dropped.

// Nothing uses every helper in every binary that includes the harness.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

use super::server::ServerHandle;

/// The protocol versions the fake agrees to; it answers any other with [`FALLBACK_VERSION`].
pub const VERSIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];
pub const FALLBACK_VERSION: &str = "2025-06-18";
/// Where `/redirect-away` sends the client: another origin (nothing listens on port 9).
pub const ELSEWHERE: &str = "http://127.0.0.1:9/elsewhere";
/// Tools per `tools/list` page.
const PAGE: usize = 2;

/// One message received on `POST /mcp` (a hit on a redirect route is recorded
/// with method "redirect"), refused ones included.
#[derive(Debug, Clone)]
pub struct McpCall {
    /// The JSON-RPC `method` ("" for a response or a body that is not a message).
    pub method: String,
    /// The parsed body (Null when it is not JSON).
    pub body: Value,
    /// The `mcp-session-id` header.
    pub session: Option<String>,
    /// The `Authorization` header.
    pub authorization: Option<String>,
    /// The `mcp-protocol-version` header.
    pub protocol_version: Option<String>,
}

struct McpState {
    base_url: String,
    calls: Vec<McpCall>,
    tool_calls: Vec<(String, Value)>,
    tools: Vec<Value>,
    /// Every session id handed out, in order.
    sessions: Vec<String>,
    /// The ones the server still knows (not forgotten).
    live: Vec<String>,
    down: bool,
    slow_delay: Duration,
    token: Option<String>,
    /// A tool was added: the next SSE answer announces `notifications/tools/list_changed`.
    list_changed: bool,
    /// OAuth client credentials `/token` takes (client id, secret), and the form bodies it got.
    client: Option<(String, String)>,
    token_requests: Vec<String>,
}

type Shared = Arc<Mutex<McpState>>;

pub struct FakeMcp {
    pub base_url: String,
    state: Shared,
    _server: ServerHandle,
}

impl FakeMcp {
    pub async fn start() -> Self {
        let state = Arc::new(Mutex::new(McpState {
            base_url: String::new(),
            calls: Vec::new(),
            tool_calls: Vec::new(),
            tools: default_tools(),
            sessions: Vec::new(),
            live: Vec::new(),
            down: false,
            slow_delay: Duration::from_secs(3),
            token: None,
            list_changed: false,
            client: None,
            token_requests: Vec::new(),
        }));
        let router = Router::new()
            .route("/mcp", post(post_mcp).get(get_mcp))
            .route("/redirect-away", get(redirect_away).post(redirect_away))
            .route("/mcp-moved", post(mcp_moved))
            .route("/token", post(token))
            .with_state(state.clone());
        let server = ServerHandle::serve(router).await;
        state.lock().unwrap().base_url = server.base_url.clone();
        FakeMcp { base_url: server.base_url.clone(), state, _server: server }
    }

    /// The endpoint URL: `{base_url}/mcp`.
    pub fn url(&self) -> String {
        format!("{}/mcp", self.base_url)
    }

    /// Every JSON-RPC message received on `POST /mcp`, in order, with the
    /// headers we care about (refused ones too).
    pub fn received(&self) -> Vec<McpCall> {
        self.state.lock().unwrap().calls.clone()
    }

    /// The `tools/call` requests that got past the session check, unknown
    /// tools included: (tool name, arguments).
    pub fn tool_calls(&self) -> Vec<(String, Value)> {
        self.state.lock().unwrap().tool_calls.clone()
    }

    /// While down, every request is answered 503 with an empty body.
    pub fn set_down(&self, down: bool) {
        self.state.lock().unwrap().down = down;
    }

    /// Calls to the tool `slow` take this long before answering (default 3 s).
    pub fn set_slow_delay(&self, delay: Duration) {
        self.state.lock().unwrap().slow_delay = delay;
    }

    /// Requires `Authorization: Bearer <token>`; requests without it get 401.
    /// Default: no check.
    pub fn require_token(&self, token: &str) {
        self.state.lock().unwrap().token = Some(token.to_string());
    }

    /// An OAuth token endpoint at `{base_url}/token`: a client-credentials
    /// grant for this client gets an access token (the one [`Self::require_token`]
    /// then asks for), valid an hour.
    pub fn oauth_client(&self, client_id: &str, client_secret: &str, access_token: &str) {
        let mut state = self.state.lock().unwrap();
        state.client = Some((client_id.to_string(), client_secret.to_string()));
        state.token = Some(access_token.to_string());
    }

    /// The form bodies `/token` received.
    pub fn token_requests(&self) -> Vec<String> {
        self.state.lock().unwrap().token_requests.clone()
    }

    /// Adds a tool to the list from now on (for refresh tests); the next SSE
    /// answer (a `lookup` call) announces `notifications/tools/list_changed`
    /// before its response. A call to it answers "<name> done: <arguments>".
    pub fn add_tool(&self, tool: Value) {
        let mut state = self.state.lock().unwrap();
        state.tools.push(tool);
        state.list_changed = true;
    }

    /// The session ids the server handed out, in order (forgotten ones too).
    pub fn sessions(&self) -> Vec<String> {
        self.state.lock().unwrap().sessions.clone()
    }

    /// Forgets every session handed out so far, as a restarted server would:
    /// requests carrying one get 404 until the client initializes again.
    pub fn forget_sessions(&self) {
        self.state.lock().unwrap().live.clear();
    }
}

fn default_tools() -> Vec<Value> {
    vec![
        json!({"name": "lookup", "description": "Looks up an issue by number",
            "inputSchema": {"type": "object", "properties": {"number": {"type": "integer"}}, "required": ["number"]},
            "annotations": {"readOnlyHint": true}}),
        json!({"name": "create_issue", "description": "Creates an issue",
            "inputSchema": {"type": "object",
                "properties": {"title": {"type": "string"}, "body": {"type": "string"}}, "required": ["title"]},
            "annotations": {"readOnlyHint": false, "destructiveHint": false}}),
        json!({"name": "slow", "description": "Takes its time",
            "inputSchema": {"type": "object", "properties": {}},
            "annotations": {"readOnlyHint": true}}),
        json!({"name": "echo_secret", "description": "Echoes its input",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
            "annotations": {"readOnlyHint": true}}),
    ]
}

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers.get(name).and_then(|value| value.to_str().ok()).map(str::to_string)
}

impl McpState {
    /// Records one message with its headers.
    fn record(&mut self, method: &str, body: &Value, headers: &HeaderMap) {
        self.calls.push(McpCall {
            method: method.to_string(),
            body: body.clone(),
            session: header(headers, "mcp-session-id"),
            authorization: header(headers, "authorization"),
            protocol_version: header(headers, "mcp-protocol-version"),
        });
    }

    /// 503 while down; 401 without the required bearer token; None to go on.
    fn refusal(&self, headers: &HeaderMap) -> Option<Response> {
        if self.down {
            return Some(StatusCode::SERVICE_UNAVAILABLE.into_response());
        }
        let expected = format!("Bearer {}", self.token.as_ref()?);
        match header(headers, "authorization") == Some(expected) {
            true => None,
            false => Some((StatusCode::UNAUTHORIZED, Json(json!({"error": "unauthorized"}))).into_response()),
        }
    }
}

fn result(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

fn error(id: &Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// A `tools/call` result holding one text block.
fn text_result(id: &Value, text: &str) -> Value {
    result(id, json!({"content": [{"type": "text", "text": text}], "isError": false}))
}

/// Messages as one `text/event-stream` answer, an event each, then its end.
fn sse(messages: Vec<Value>) -> Response {
    let events: Vec<Result<Bytes, std::convert::Infallible>> =
        messages.iter().map(|message| Ok(Bytes::from(format!("event: message\ndata: {message}\n\n")))).collect();
    Response::builder()
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(Body::from_stream(futures_util::stream::iter(events)))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// `POST /token`: OAuth 2.0 client credentials (form-encoded), as an authorization server answers.
async fn token(State(state): State<Shared>, body: Bytes) -> Response {
    let mut state = state.lock().unwrap();
    let form = String::from_utf8_lossy(&body).to_string();
    state.token_requests.push(form.clone());
    let fields: Vec<(String, String)> = url::form_urlencoded::parse(form.as_bytes()).into_owned().collect();
    let field = |name: &str| fields.iter().find(|(key, _)| key == name).map(|(_, value)| value.clone());
    let granted = field("grant_type").as_deref() == Some("client_credentials")
        && state.client.as_ref().is_some_and(|(id, secret)| {
            field("client_id").as_ref() == Some(id) && field("client_secret").as_ref() == Some(secret)
        });
    match (granted, state.token.clone()) {
        (true, Some(access_token)) => {
            Json(json!({ "access_token": access_token, "token_type": "Bearer", "expires_in": 3600 })).into_response()
        }
        _ => (StatusCode::UNAUTHORIZED, Json(json!({ "error": "invalid_client" }))).into_response(),
    }
}

async fn post_mcp(State(state): State<Shared>, headers: HeaderMap, body: Bytes) -> Response {
    let (response, delay) = respond(&mut state.lock().unwrap(), &headers, &body);
    tokio::time::sleep(delay).await;
    response
}

/// The answer to one POSTed message, and how long to wait before giving it.
fn respond(state: &mut McpState, headers: &HeaderMap, body: &[u8]) -> (Response, Duration) {
    let now = |response: Response| (response, Duration::ZERO);
    let message: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let method = message["method"].as_str().unwrap_or_default().to_string();
    state.record(&method, &message, headers);
    if let Some(refusal) = state.refusal(headers) {
        return now(refusal);
    }
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    if !message.is_object() {
        let (code, text) =
            if body.is_empty() || message.is_null() { (-32700, "Parse error") } else { (-32600, "Invalid Request") };
        return now((StatusCode::BAD_REQUEST, Json(error(&Value::Null, code, text))).into_response());
    }
    // A notification (or a response to the server): taken, nothing to answer.
    if message.get("id").is_none() || method.is_empty() {
        return now(StatusCode::ACCEPTED.into_response());
    }
    if method == "initialize" {
        let asked = message["params"]["protocolVersion"].as_str().unwrap_or_default();
        let version = VERSIONS.into_iter().find(|version| *version == asked).unwrap_or(FALLBACK_VERSION);
        let session = format!("sess-{}", state.sessions.len() + 1);
        state.sessions.push(session.clone());
        state.live.push(session.clone());
        let server = json!({"protocolVersion": version, "capabilities": {"tools": {"listChanged": true}},
            "serverInfo": {"name": "fake-mcp", "version": "1.0.0"}});
        let answer = result(&id, server);
        return now(([("mcp-session-id", session)], Json(answer)).into_response());
    }
    match header(headers, "mcp-session-id") {
        None => {
            let answer = error(&id, -32000, "Bad Request: no mcp-session-id header");
            return now((StatusCode::BAD_REQUEST, Json(answer)).into_response());
        }
        Some(session) if !state.live.contains(&session) => {
            return now((StatusCode::NOT_FOUND, Json(error(&id, -32001, "Session not found"))).into_response());
        }
        Some(_) => {}
    }
    let params = &message["params"];
    match method.as_str() {
        "tools/list" => now(Json(list_tools(state, &id, params["cursor"].as_str())).into_response()),
        "tools/call" => call_tool(state, &id, params),
        _ => now(Json(error(&id, -32601, "Method not found")).into_response()),
    }
}

/// One page of tools: page 1 without a cursor, page N with cursor "page-N".
fn list_tools(state: &McpState, id: &Value, cursor: Option<&str>) -> Value {
    let page = match cursor {
        None => Some(0),
        Some(cursor) => cursor.strip_prefix("page-").and_then(|number| number.parse::<usize>().ok()),
    };
    let page = page.map(|number| number.saturating_sub(1));
    let Some(page) = page.filter(|page| *page == 0 || page * PAGE < state.tools.len()) else {
        return error(id, -32602, "Invalid cursor");
    };
    let tools: Vec<Value> = state.tools.iter().skip(page * PAGE).take(PAGE).cloned().collect();
    let mut answer = json!({ "tools": tools });
    if (page + 1) * PAGE < state.tools.len() {
        answer["nextCursor"] = json!(format!("page-{}", page + 2));
    }
    result(id, answer)
}

/// A `tools/call`: recorded, then answered as the tool does.
fn call_tool(state: &mut McpState, id: &Value, params: &Value) -> (Response, Duration) {
    let name = params["name"].as_str().unwrap_or_default().to_string();
    let arguments = params.get("arguments").cloned().unwrap_or_else(|| json!({}));
    state.tool_calls.push((name.clone(), arguments.clone()));
    let json_now = |answer: Value| (Json(answer).into_response(), Duration::ZERO);
    if !state.tools.iter().any(|tool| tool["name"] == name.as_str()) {
        return json_now(error(id, -32602, &format!("Unknown tool: {name}")));
    }
    match name.as_str() {
        "lookup" => {
            let number = match &arguments["number"] {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            let mut progress = json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}});
            if let Some(token) = params.pointer("/_meta/progressToken") {
                progress["params"]["progressToken"] = token.clone();
            }
            let mut messages = vec![progress];
            if std::mem::take(&mut state.list_changed) {
                messages.push(json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}));
            }
            messages.push(text_result(id, &format!("Issue #{number}: The login page is slow (open)")));
            (sse(messages), Duration::ZERO)
        }
        "create_issue" => {
            let title = arguments["title"].as_str().unwrap_or_default();
            json_now(text_result(id, &format!("Created issue #101: {title}")))
        }
        "slow" => (Json(text_result(id, "slow done")).into_response(), state.slow_delay),
        "echo_secret" => json_now(text_result(id, arguments["text"].as_str().unwrap_or_default())),
        // A tool a test added.
        _ => json_now(text_result(id, &format!("{name} done: {arguments}"))),
    }
}

/// The client must not need the server's GET stream.
async fn get_mcp(State(state): State<Shared>, headers: HeaderMap) -> Response {
    let state = state.lock().unwrap();
    state.refusal(&headers).unwrap_or_else(|| StatusCode::METHOD_NOT_ALLOWED.into_response())
}

/// `307` to another origin (nothing listens there).
async fn redirect_away(State(state): State<Shared>, headers: HeaderMap, body: Bytes) -> Response {
    redirect(&state, &headers, &body, StatusCode::TEMPORARY_REDIRECT, ELSEWHERE.to_string())
}

/// `308` to this server's own `/mcp` (the same origin).
async fn mcp_moved(State(state): State<Shared>, headers: HeaderMap, body: Bytes) -> Response {
    let location = format!("{}/mcp", state.lock().unwrap().base_url);
    redirect(&state, &headers, &body, StatusCode::PERMANENT_REDIRECT, location)
}

fn redirect(state: &Shared, headers: &HeaderMap, body: &[u8], status: StatusCode, location: String) -> Response {
    let mut state = state.lock().unwrap();
    state.record("redirect", &serde_json::from_slice(body).unwrap_or(Value::Null), headers);
    state.refusal(headers).unwrap_or_else(|| (status, [("location", location)]).into_response())
}
