//! A fake platform API (Telegram Bot API, Slack Web API, Discord webhooks):
//! records every call and answers the way the platform does. A test can
//! script failures for the next calls to a path.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Value};

use super::server::ServerHandle;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    Telegram,
    Slack,
    Discord,
    WhatsApp,
    /// The plain webhook's callback receiver: it keeps each `Idempotency-Key` once.
    Callback,
}

/// One recorded call.
/// The size of the fake's `/big-page`.
pub const BIG_PAGE_BYTES: usize = 200_000;

#[derive(Debug, Clone)]
pub struct Call {
    pub method: String,
    pub path: String,
    pub body: Value,
    /// When the fake took it.
    pub at: std::time::Instant,
    /// Its `Authorization` header.
    pub authorization: Option<String>,
    /// Its `X-Edgebot-Signature` and `Idempotency-Key` headers (the plain webhook's callback).
    pub signature: Option<String>,
    pub idempotency_key: Option<String>,
}

/// A message the platform shows now: its id and its text (after every edit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown {
    pub id: String,
    pub text: String,
}

/// A scripted answer for the next call whose path ends with `path_suffix`
/// (or, with `anywhere`, holds it).
struct Failure {
    path_suffix: String,
    anywhere: bool,
    status: u16,
    body: Value,
    retry_after: Option<String>,
}

/// The next call to a path ending with `path_suffix` never gets its answer
/// (the fake holds it open), as a platform that is slow when the Worker dies.
struct Hang {
    path_suffix: String,
    /// Whether the platform took the message before the answer was lost.
    lands: bool,
}

/// The next call to a path ending with `path_suffix` is answered only after
/// `delay`, as a platform that is slow but does answer.
struct Delay {
    path_suffix: String,
    delay: std::time::Duration,
}

struct ApiState {
    flavor: Flavor,
    calls: Vec<Call>,
    failures: VecDeque<Failure>,
    hangs: VecDeque<Hang>,
    delays: VecDeque<Delay>,
    /// Slack messages the bot posted (what conversations.history shows).
    posted: Vec<Value>,
    /// Discord messages created with `enforce_nonce`, by nonce.
    by_nonce: std::collections::HashMap<String, Value>,
    /// The messages the bot's chats show now, oldest first (Telegram and
    /// Discord; Slack's are in `posted`).
    board: Vec<Shown>,
    /// A command's deferred response (Discord's `@original`), by interaction token.
    originals: std::collections::HashMap<String, String>,
    next_id: i64,
    /// Members the platform reports (bots included).
    member_count: u64,
    /// Files the platform serves, by path: what a GET of that path answers.
    files: std::collections::HashMap<String, Vec<u8>>,
    /// How long calls to a path ending with the suffix take (a slow platform).
    latencies: Vec<(String, std::time::Duration)>,
    /// Slack OAuth codes already exchanged (each works once, as Slack's do).
    used_codes: std::collections::HashSet<String>,
    /// Discord's `GET /gateway/bot`: recommended shards and max_concurrency.
    gateway_bot: (u64, u64),
}

pub struct FakeApi {
    pub base_url: String,
    state: Arc<Mutex<ApiState>>,
    _server: ServerHandle,
}

impl FakeApi {
    pub async fn start(flavor: Flavor) -> Self {
        let state = Arc::new(Mutex::new(ApiState {
            flavor,
            calls: Vec::new(),
            failures: VecDeque::new(),
            hangs: VecDeque::new(),
            delays: VecDeque::new(),
            posted: Vec::new(),
            by_nonce: std::collections::HashMap::new(),
            board: Vec::new(),
            originals: std::collections::HashMap::new(),
            next_id: 500,
            member_count: 10,
            files: std::collections::HashMap::new(),
            latencies: Vec::new(),
            used_codes: std::collections::HashSet::new(),
            gateway_bot: (1, 1),
        }));
        let shared = state.clone();
        let router = Router::new().fallback(move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
            let state = shared.clone();
            async move {
                // Half the round trip before the platform takes the call, half
                // after: a crash in between loses an answer to a landed call.
                let latency = state.lock().unwrap().latency(uri.path()) / 2;
                tokio::time::sleep(latency).await;
                let (response, wait) = answer(&state, method, uri, headers, body);
                tokio::time::sleep(latency).await;
                if let Some(wait) = wait {
                    tokio::time::sleep(wait).await;
                }
                response
            }
        });
        let server = ServerHandle::serve(router).await;
        FakeApi { base_url: server.base_url.clone(), state, _server: server }
    }

    /// The bodies of the calls whose path ends with `suffix`, in order.
    pub fn calls(&self, suffix: &str) -> Vec<Value> {
        self.requests().into_iter().filter(|call| call.path.ends_with(suffix)).map(|call| call.body).collect()
    }

    /// Every call, in order.
    pub fn requests(&self) -> Vec<Call> {
        self.state.lock().unwrap().calls.clone()
    }

    pub fn total_calls(&self) -> usize {
        self.state.lock().unwrap().calls.len()
    }

    /// What Discord's `GET /gateway/bot` recommends: shards and max_concurrency.
    pub fn set_gateway_bot(&self, shards: u64, max_concurrency: u64) {
        self.state.lock().unwrap().gateway_bot = (shards, max_concurrency);
    }

    pub fn set_member_count(&self, count: u64) {
        self.state.lock().unwrap().member_count = count;
    }

    /// Every call to a path ending with `path_suffix` takes `latency` (a real
    /// platform's round trip): taken halfway, answered at the end.
    pub fn set_latency(&self, path_suffix: &str, latency: std::time::Duration) {
        self.state.lock().unwrap().latencies.push((path_suffix.to_string(), latency));
    }

    /// The next call to a path ending with `path_suffix` is held open for
    /// [`HANG`]; `lands` says whether the platform kept the message.
    pub fn hang_next(&self, path_suffix: &str, lands: bool) {
        self.state.lock().unwrap().hangs.push_back(Hang { path_suffix: path_suffix.to_string(), lands });
    }

    /// The next call to a path ending with `path_suffix` is answered (as
    /// usual) only after `delay`.
    pub fn delay_next(&self, path_suffix: &str, delay: std::time::Duration) {
        self.state.lock().unwrap().delays.push_back(Delay { path_suffix: path_suffix.to_string(), delay });
    }

    /// The platform serves `bytes` at `path` (a file a person sent).
    pub fn serve_file(&self, path: &str, bytes: Vec<u8>) {
        self.state.lock().unwrap().files.insert(path.to_string(), bytes);
    }

    /// The Slack messages the platform holds (posted and landed).
    pub fn posted(&self) -> Vec<Value> {
        self.state.lock().unwrap().posted.clone()
    }

    /// The messages the bot's chats show now, after every edit and delete,
    /// oldest first.
    pub fn shown(&self) -> Vec<Shown> {
        let state = self.state.lock().unwrap();
        match state.flavor {
            Flavor::Slack => state
                .posted
                .iter()
                .map(|message| Shown {
                    id: message["ts"].as_str().unwrap_or_default().to_string(),
                    text: message["text"].as_str().unwrap_or_default().to_string(),
                })
                .collect(),
            _ => state.board.clone(),
        }
    }

    /// The next call to a path ending with `path_suffix` gets this answer.
    pub fn fail_next(&self, path_suffix: &str, status: u16, body: Value, retry_after: Option<&str>) {
        self.script_failure(path_suffix, false, status, body, retry_after);
    }

    /// The next call to a path holding `part` anywhere gets this answer.
    pub fn fail_next_containing(&self, part: &str, status: u16, body: Value, retry_after: Option<&str>) {
        self.script_failure(part, true, status, body, retry_after);
    }

    fn script_failure(&self, path: &str, anywhere: bool, status: u16, body: Value, retry_after: Option<&str>) {
        self.state.lock().unwrap().failures.push_back(Failure {
            path_suffix: path.to_string(),
            anywhere,
            status,
            body,
            retry_after: retry_after.map(str::to_string),
        });
    }
}

impl ApiState {
    fn latency(&self, path: &str) -> std::time::Duration {
        let matching = self.latencies.iter().filter(|(suffix, _)| path.ends_with(suffix.as_str()));
        matching.map(|(_, latency)| *latency).max().unwrap_or_default()
    }
}

/// How long a hung call is held: longer than any test waits.
const HANG: std::time::Duration = std::time::Duration::from_secs(120);

/// The answer to one call, and how long to hold it open first.
fn answer(
    state: &Mutex<ApiState>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> (Response, Option<std::time::Duration>) {
    let mut state = state.lock().unwrap();
    if is_receipt(state.flavor, &body) {
        // A WhatsApp read receipt shares the send's path: scripts are for sends.
        return (respond(&mut state, method, uri, headers, body, true), None);
    }
    let hang = state.hangs.iter().position(|hang| uri.path().ends_with(&hang.path_suffix));
    let hang = hang.and_then(|position| state.hangs.remove(position));
    let delay = state.delays.iter().position(|delay| uri.path().ends_with(&delay.path_suffix));
    let delay = delay.and_then(|position| state.delays.remove(position)).map(|delay| delay.delay);
    let response = respond(&mut state, method, uri, headers, body, hang.as_ref().is_none_or(|hang| hang.lands));
    (response, if hang.is_some() { Some(HANG) } else { delay })
}

fn respond(state: &mut ApiState, method: Method, uri: Uri, headers: HeaderMap, body: Bytes, lands: bool) -> Response {
    let path = uri.path().to_string();
    let is_form = headers
        .get("content-type")
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/x-www-form-urlencoded"));
    let is_multipart = headers
        .get("content-type")
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("multipart/form-data"));
    let body: Value = if is_form || is_multipart {
        json!(String::from_utf8_lossy(&body))
    } else {
        serde_json::from_slice(&body).unwrap_or(Value::Null)
    };
    let at = std::time::Instant::now();
    let authorization = headers.get("authorization").and_then(|value| value.to_str().ok()).map(str::to_string);
    let header = |name: &str| headers.get(name).and_then(|value| value.to_str().ok()).map(str::to_string);
    let (signature, idempotency_key) = (header("x-edgebot-signature"), header("idempotency-key"));
    let call = Call {
        method: method.to_string(),
        path: path.clone(),
        body: body.clone(),
        at,
        authorization,
        signature,
        idempotency_key,
    };
    state.calls.push(call);
    let scripted = |failure: &Failure| match failure.anywhere {
        true => path.contains(&failure.path_suffix),
        false => path.ends_with(&failure.path_suffix),
    };
    let receipt = state.flavor == Flavor::WhatsApp && (body["status"] == "read" || body["type"] == "reaction");
    if let Some(position) = state.failures.iter().position(scripted).filter(|_| !receipt) {
        let failure = state.failures.remove(position).expect("position is in range");
        let status = StatusCode::from_u16(failure.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut response = (status, axum::Json(failure.body)).into_response();
        if let Some(seconds) = failure.retry_after.and_then(|value| value.parse().ok()) {
            response.headers_mut().insert("retry-after", seconds);
        }
        return response;
    }
    if method == Method::GET {
        if let Some(bytes) = state.files.get(&path) {
            return (StatusCode::OK, bytes.clone()).into_response();
        }
    }
    if path.ends_with("/oauth.v2.access") {
        return axum::Json(slack_oauth_access(state, &uri, &headers)).into_response();
    }
    // Slack's upload flow: an upload URL on the fake itself, the bytes, the completion.
    if path.ends_with("/files.getUploadURLExternal") {
        let host = headers.get("host").and_then(|value| value.to_str().ok()).unwrap_or_default();
        let answer = json!({"ok": true, "upload_url": format!("http://{host}/upload/F900"), "file_id": "F900"});
        return axum::Json(answer).into_response();
    }
    if path.starts_with("/upload/") {
        return (StatusCode::OK, "OK - uploaded").into_response();
    }
    if path.ends_with("/files.completeUploadExternal") {
        return axum::Json(json!({"ok": true, "files": [{"id": "F900", "title": "file"}]})).into_response();
    }
    if path.ends_with("/getFile") {
        let file_id = body["file_id"].as_str().unwrap_or_default();
        let answer = json!({"ok": true, "result": {"file_id": file_id, "file_path": format!("files/{file_id}")}});
        return axum::Json(answer).into_response();
    }
    if state.flavor == Flavor::WhatsApp {
        return whatsapp(state, &path, &body, lands);
    }
    if state.flavor == Flavor::Callback && method == Method::POST {
        let key = headers.get("idempotency-key").and_then(|value| value.to_str().ok()).unwrap_or_default();
        return callback(state, key, &body, lands);
    }
    if path == "/big-page" {
        // A page far over the tools' 50,000-byte cap.
        return (StatusCode::OK, "x".repeat(BIG_PAGE_BYTES)).into_response();
    }
    state.next_id += 1;
    let id = state.next_id;
    let members = state.member_count;
    if let Some(response) = edit(state, &method, &path, &body, lands) {
        return response;
    }
    let reply = match state.flavor {
        Flavor::Telegram if path.ends_with("/getChatMemberCount") => json!({"ok": true, "result": members}),
        Flavor::Telegram => {
            if path.ends_with("/sendMessage") && lands {
                state.board.push(Shown { id: id.to_string(), text: text_of(&body) });
            }
            json!({"ok": true, "result": {"message_id": id, "date": 1_795_000_000,
                "chat": {"id": body["chat_id"]}, "text": body["text"]}})
        }
        Flavor::Slack if path.ends_with("/conversations.members") => {
            let ids: Vec<String> = (0..members).map(|index| format!("U{index}")).collect();
            json!({"ok": true, "members": ids, "response_metadata": {"next_cursor": ""}})
        }
        Flavor::Slack if path.ends_with("/conversations.history") || path.ends_with("/conversations.replies") => {
            json!({"ok": true, "messages": state.posted, "has_more": false})
        }
        Flavor::Slack => {
            let ts = format!("1795000000.{id:06}");
            if path.ends_with("/chat.postMessage") && lands {
                state.posted.push(json!({"ts": ts, "text": body["text"], "metadata": body["metadata"]}));
            }
            json!({"ok": true, "channel": body["channel"], "ts": ts})
        }
        Flavor::Discord if path.ends_with("/gateway/bot") => {
            let (shards, max_concurrency) = state.gateway_bot;
            json!({"url": "wss://gateway.discord.invalid", "shards": shards,
                "session_start_limit": {"total": 1000, "remaining": 1000, "reset_after": 0, "max_concurrency": max_concurrency}})
        }
        Flavor::Discord if path.starts_with("/api/v10/guilds/") => {
            json!({"id": "G", "approximate_member_count": members})
        }
        Flavor::WhatsApp => unreachable!("answered by `whatsapp`"),
        Flavor::Callback => json!({}),
        Flavor::Discord => {
            let created = json!({"id": id.to_string(), "content": body["content"]});
            let message = match body["nonce"].as_str().filter(|_| body["enforce_nonce"] == true) {
                // Discord answers a repeated nonce with the first message, creating none.
                Some(nonce) => state.by_nonce.entry(nonce.to_string()).or_insert(created.clone()).clone(),
                None => created.clone(),
            };
            let creates = path.ends_with("/messages") || path.contains("/webhooks/");
            if message == created && method == Method::POST && creates && lands {
                state.board.push(Shown { id: id.to_string(), text: text_of(&body) });
            }
            message
        }
    };
    axum::Json(reply).into_response()
}

/// The text of a call that sends or edits one (Discord's `content`).
fn text_of(body: &Value) -> String {
    body["text"].as_str().or(body["content"].as_str()).unwrap_or_default().to_string()
}

/// Edits and deletes of the bot's messages, as each platform answers them
/// (Telegram refuses an edit that changes nothing); None for other calls.
fn edit(state: &mut ApiState, method: &Method, path: &str, body: &Value, lands: bool) -> Option<Response> {
    let ok = |result: Value| Some(axum::Json(result).into_response());
    let refused = |status: StatusCode, answer: Value| Some((status, axum::Json(answer)).into_response());
    match state.flavor {
        Flavor::Telegram if path.ends_with("/editMessageText") || path.ends_with("/deleteMessage") => {
            let id = body["message_id"].as_i64().map(|id| id.to_string()).unwrap_or_default();
            let Some(at) = state.board.iter().position(|message| message.id == id) else {
                let answer =
                    json!({"ok": false, "error_code": 400, "description": "Bad Request: message to edit not found"});
                return refused(StatusCode::BAD_REQUEST, answer);
            };
            if path.ends_with("/deleteMessage") {
                if lands {
                    state.board.remove(at);
                }
                return ok(json!({"ok": true, "result": true}));
            }
            let text = text_of(body);
            if state.board[at].text == text {
                let description = "Bad Request: message is not modified: specified new message content and reply \
                                   markup are exactly the same as a current content and reply markup of the message";
                return refused(
                    StatusCode::BAD_REQUEST,
                    json!({"ok": false, "error_code": 400, "description": description}),
                );
            }
            if lands {
                state.board[at].text = text.clone();
            }
            ok(
                json!({"ok": true, "result": {"message_id": body["message_id"], "chat": {"id": body["chat_id"]}, "text": text}}),
            )
        }
        Flavor::Slack if path.ends_with("/chat.update") || path.ends_with("/chat.delete") => {
            let ts = body["ts"].as_str().unwrap_or_default();
            let Some(at) = state.posted.iter().position(|message| message["ts"] == ts) else {
                return ok(json!({"ok": false, "error": "message_not_found"}));
            };
            if lands && path.ends_with("/chat.delete") {
                state.posted.remove(at);
            } else if lands {
                state.posted[at]["text"] = body["text"].clone();
            }
            ok(json!({"ok": true, "channel": body["channel"], "ts": ts, "text": body["text"]}))
        }
        Flavor::Discord if *method == Method::PATCH || *method == Method::DELETE => {
            let mut id = path.rsplit('/').next().unwrap_or_default().to_string();
            if id == "@original" {
                // The deferred response is a message from the start ("thinking…").
                let token = path.split('/').rev().nth(2).unwrap_or_default().to_string();
                state.next_id += 1;
                let fresh = state.next_id.to_string();
                id = state.originals.entry(token).or_insert(fresh).clone();
                if !state.board.iter().any(|message| message.id == id) {
                    state.board.push(Shown { id: id.clone(), text: String::new() });
                }
            }
            let Some(at) = state.board.iter().position(|message| message.id == id) else {
                return refused(StatusCode::NOT_FOUND, json!({"message": "Unknown Message", "code": 10008}));
            };
            if *method == Method::DELETE {
                if lands {
                    state.board.remove(at);
                }
                return Some(StatusCode::NO_CONTENT.into_response());
            }
            if lands {
                state.board[at].text = text_of(body);
            }
            ok(json!({"id": id, "content": body["content"]}))
        }
        _ => None,
    }
}

/// WhatsApp's Graph API: `/{phone}/media` takes an upload, `/{phone}/messages`
/// a message (shown, with an id that ends with its recipient), a read
/// receipt with typing, or a reaction.
fn whatsapp(state: &mut ApiState, path: &str, body: &Value, lands: bool) -> Response {
    state.next_id += 1;
    let id = state.next_id;
    if path.ends_with("/media") {
        return axum::Json(json!({ "id": format!("{id}") })).into_response();
    }
    if body["status"] == "read" || body["type"] == "reaction" {
        return axum::Json(json!({ "success": true })).into_response();
    }
    let to = body["to"].as_str().unwrap_or_default();
    let wamid = format!("wamid.{id}.{to}");
    if path.ends_with("/messages") && lands {
        state.board.push(Shown { id: wamid.clone(), text: whatsapp_text(body) });
    }
    axum::Json(json!({ "messaging_product": "whatsapp", "contacts": [{ "input": to, "wa_id": to }],
                       "messages": [{ "id": wamid }] }))
    .into_response()
}

/// The text a WhatsApp message shows: a text's body, an interactive
/// message's body, a file's caption.
pub fn whatsapp_text(body: &Value) -> String {
    let kind = body["type"].as_str().unwrap_or_default();
    let text = match kind {
        "text" => &body["text"]["body"],
        "interactive" => &body["interactive"]["body"]["text"],
        _ => &body[kind]["caption"],
    };
    text.as_str().unwrap_or_default().to_string()
}

/// A WhatsApp call that marks read (with typing) or reacts: not a message.
fn is_receipt(flavor: Flavor, body: &Bytes) -> bool {
    let body: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    flavor == Flavor::WhatsApp && (body["status"] == "read" || body["type"] == "reaction")
}

/// The plain webhook's receiver: a message is shown once per
/// `Idempotency-Key` (a repeat gets the first answer and shows nothing new).
fn callback(state: &mut ApiState, key: &str, body: &Value, lands: bool) -> Response {
    if let Some(first) = state.by_nonce.get(key) {
        return axum::Json(first.clone()).into_response();
    }
    state.next_id += 1;
    let answer = json!({ "id": format!("m{}", state.next_id) });
    if lands {
        if body["type"] == "message" {
            state.board.push(Shown { id: key.to_string(), text: text_of(body) });
        }
        state.by_nonce.insert(key.to_string(), answer.clone());
    }
    axum::Json(answer).into_response()
}

/// The Slack app's client id and secret the fake OAuth endpoint knows.
pub const SLACK_CLIENT_ID: &str = "1111.2222";
pub const SLACK_CLIENT_SECRET: &str = "test-slack-client-secret";

/// The code Slack would hand back after workspace `team` approves the install.
pub fn slack_code(team: &str) -> String {
    format!("code-{team}")
}

/// The bot token the fake issues to workspace `team`.
pub fn slack_workspace_token(team: &str) -> String {
    format!("xoxb-{team}-token-never-shown")
}

/// `oauth.v2.access`: the app's credentials as HTTP Basic, a code from
/// [`slack_code`] used once, answered as Slack does (a bot token for one workspace).
fn slack_oauth_access(state: &mut ApiState, uri: &Uri, headers: &HeaderMap) -> Value {
    use base64::Engine;
    let expected = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{SLACK_CLIENT_ID}:{SLACK_CLIENT_SECRET}"))
    );
    let authorization = headers.get("authorization").and_then(|value| value.to_str().ok());
    if authorization != Some(expected.as_str()) {
        return json!({"ok": false, "error": "invalid_client_id"});
    }
    let query = uri.query().unwrap_or_default();
    let code = url::form_urlencoded::parse(query.as_bytes())
        .find(|(name, _)| name == "code")
        .map(|(_, value)| value.into_owned())
        .unwrap_or_default();
    // `code-{team}`, or `code-{team}.{n}` for a later install of the same workspace.
    let Some(team) = code.strip_prefix("code-").and_then(|rest| rest.split('.').next()).map(str::to_string) else {
        return json!({"ok": false, "error": "invalid_code"});
    };
    if !state.used_codes.insert(code) {
        return json!({"ok": false, "error": "invalid_code"});
    }
    json!({
        "ok": true, "access_token": slack_workspace_token(&team), "token_type": "bot",
        "scope": "chat:write,commands", "bot_user_id": format!("UBOT{team}"), "app_id": "A1",
        "team": {"id": team, "name": format!("Workspace {team}")}, "enterprise": null,
        "is_enterprise_install": false
    })
}
