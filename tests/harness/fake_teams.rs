//! A fake Microsoft for Teams tests, on one loopback server: the Bot
//! Framework's OpenID metadata and signing keys (`/openid`, `/keys`), the
//! identity platform's token endpoint (`/token`), and a Bot Framework
//! connector (`/v3/conversations/…`) that records every call, refuses any
//! without the token it issued, and shows what a person would see. Tokens
//! for inbound activities are signed here with a fixed test RSA key.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
use serde_json::{json, Value};

use super::server::ServerHandle;

/// The test key the fake publishes and signs with (a fixed PEM: generating
/// RSA keys in a debug build takes seconds).
pub const SIGNING_KEY: &str = include_str!("teams_test_key.pem");
/// A key the fake never publishes.
pub const OTHER_KEY: &str = include_str!("teams_other_key.pem");
/// The published key's modulus (base64url), as its JWK carries it.
const SIGNING_KEY_N: &str = "kPUxLwFRrRxvJysC4mzrMvzvF75RPlGnUlwaB2DEk3W9k6SZV38p_PvTn4imE7ocF9elr4KOiiq5oSjqftm3hCIbk-nExFgeSViqTMRCXweObpo3pBh3keKKWFlvzmb154BooUXdb11qWWCMlgB9_4Y_R2bVpbXa8u9KgSWttd77uGw67mgBi4kkVkOH9i9L91fM7ktPd6ENupracrdF_Su1z-VqPoj9OXFllhL1yjyrR7mpdD0i04E_hROcHsFom_NAUezqncvVNzG2oi1aE3d0TQIrUrCfAGimcM1_jsny0-9v5BsFICZ8f5vlu7g3ds2767MfzUfb7IZ37bkVEQ";
pub const KEY_ID: &str = "test-key-1";
pub const APP_ID: &str = "11111111-2222-3333-4444-555555555555";
pub const APP_PASSWORD: &str = "teams-test-app-password-9f2c";
/// The access token the fake's token endpoint issues.
pub const BOT_TOKEN: &str = "teams-bot-access-token-4d1e7a";
pub const ISSUER: &str = "https://api.botframework.com";
/// How long a hung call is held: longer than any test waits.
const HANG: Duration = Duration::from_secs(120);

/// One recorded call.
#[derive(Debug, Clone)]
pub struct Call {
    pub method: String,
    pub path: String,
    pub body: Value,
    pub authorization: Option<String>,
    pub at: Instant,
}

/// A message the bot's conversation shows now.
#[derive(Debug, Clone)]
pub struct Posted {
    pub conversation: String,
    pub id: String,
    pub activity: Value,
}

#[derive(Default)]
struct State {
    calls: Vec<Call>,
    board: Vec<Posted>,
    next_id: u64,
    /// (path suffix, status, retry-after) for the next matching call.
    failures: Vec<(String, u16, Option<u64>)>,
    /// Path suffixes whose next call is taken and never answered.
    hangs: Vec<String>,
    files: std::collections::HashMap<String, Vec<u8>>,
    /// Key ids published besides [`KEY_ID`] (a rotation), all for the test key.
    more_keys: Vec<String>,
}

pub struct FakeTeams {
    pub base_url: String,
    state: Arc<Mutex<State>>,
    _server: ServerHandle,
}

impl FakeTeams {
    pub async fn start() -> Self {
        let state = Arc::new(Mutex::new(State::default()));
        let shared = state.clone();
        let router = Router::new().fallback(move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
            let state = shared.clone();
            async move {
                let (response, hang) = respond(&state, method, uri, headers, body);
                if hang {
                    tokio::time::sleep(HANG).await;
                }
                response
            }
        });
        let server = ServerHandle::serve(router).await;
        FakeTeams { base_url: server.base_url.clone(), state, _server: server }
    }

    /// The Worker's settings for this fake: its keys, its token endpoint, and
    /// its connector as the one allowed (loopback, with its port).
    pub fn vars(&self) -> Vec<(&'static str, String)> {
        let host = self.base_url.trim_start_matches("http://").to_string();
        vec![
            ("TEAMS_APP_ID", APP_ID.into()),
            ("TEAMS_APP_PASSWORD", APP_PASSWORD.into()),
            ("TEAMS_OPENID_URL", format!("{}/openid", self.base_url)),
            ("TEAMS_TOKEN_URL", format!("{}/token", self.base_url)),
            ("TEAMS_SERVICE_URL", format!("{}/", self.base_url)),
            ("TEAMS_SERVICE_URL_HOSTS", host),
        ]
    }

    /// The connector's address as activities name it.
    pub fn service_url(&self) -> String {
        format!("{}/", self.base_url)
    }

    pub fn requests(&self) -> Vec<Call> {
        self.state.lock().unwrap().calls.clone()
    }

    /// The messages `conversation` shows now, oldest first.
    pub fn shown(&self, conversation: &str) -> Vec<Posted> {
        let state = self.state.lock().unwrap();
        state.board.iter().filter(|posted| posted.conversation == conversation).cloned().collect()
    }

    /// The next call whose path ends with `suffix` is refused with `status`.
    pub fn fail_next(&self, suffix: &str, status: u16, retry_after: Option<u64>) {
        self.state.lock().unwrap().failures.push((suffix.to_string(), status, retry_after));
    }

    /// The next call whose path ends with `suffix` is taken and never answered.
    pub fn hang_next(&self, suffix: &str) {
        self.state.lock().unwrap().hangs.push(suffix.to_string());
    }

    /// The connector serves `bytes` at `path`, to the bot's token only.
    pub fn serve_file(&self, path: &str, bytes: Vec<u8>) {
        self.state.lock().unwrap().files.insert(path.to_string(), bytes);
    }

    /// Publishes the test key under another id too (the keys rotated).
    pub fn publish(&self, kid: &str) {
        self.state.lock().unwrap().more_keys.push(kid.to_string());
    }

    /// How many times the signing keys were fetched.
    pub fn key_fetches(&self) -> usize {
        self.requests().iter().filter(|call| call.path == "/keys").count()
    }

    /// How many tokens the bot asked for.
    pub fn token_requests(&self) -> usize {
        self.requests().iter().filter(|call| call.path == "/token").count()
    }

    /// A token as the Bot Framework would send with an activity, with `claims`
    /// over the genuine ones, signed with `key` under key id `kid`.
    pub fn token(&self, key: &str, kid: &str, claims: Value) -> String {
        let now = super::now_secs();
        let mut all = json!({ "iss": ISSUER, "aud": APP_ID, "exp": now + 3600, "nbf": now - 60,
                              "serviceurl": self.service_url() });
        for (name, value) in claims.as_object().cloned().unwrap_or_default() {
            all[name] = value;
        }
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some(kid.to_string());
        encode(&header, &all, &EncodingKey::from_rsa_pem(key.as_bytes()).expect("test PEM")).expect("sign")
    }

    /// A message activity from `from` in `conversation` (a personal chat
    /// when it starts with `a:`), through this fake's connector.
    pub fn activity(&self, id: &str, conversation: &str, from: &str, text: &str) -> Value {
        let kind = if conversation.starts_with("a:") { "personal" } else { "channel" };
        json!({
            "type": "message", "id": id, "timestamp": "2026-11-27T05:00:00.000Z",
            "serviceUrl": self.service_url(), "channelId": "msteams",
            "from": { "id": from, "name": from.trim_start_matches("29:") },
            "recipient": { "id": format!("28:{APP_ID}"), "name": "edgebot" },
            "conversation": { "id": conversation, "conversationType": kind, "tenantId": "tenant-1" },
            "text": text,
        })
    }

    /// The genuine token.
    pub fn genuine_token(&self) -> String {
        self.token(SIGNING_KEY, KEY_ID, json!({}))
    }
}

/// An activity's visible text: its own, or its card's first text block.
pub fn text_of(activity: &Value) -> String {
    let own = activity["text"].as_str().unwrap_or_default();
    let card = activity.pointer("/attachments/0/content/body/0/text").and_then(Value::as_str);
    match (own.is_empty(), card) {
        (true, Some(card)) => card.to_string(),
        _ => own.to_string(),
    }
}

fn respond(state: &Mutex<State>, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> (Response, bool) {
    let mut state = state.lock().unwrap();
    let path = uri.path().to_string();
    let authorization = headers.get("authorization").and_then(|value| value.to_str().ok()).map(str::to_string);
    let parsed = serde_json::from_slice(&body).unwrap_or_else(|_| json!(String::from_utf8_lossy(&body)));
    state.calls.push(Call {
        method: method.to_string(),
        path: path.clone(),
        body: parsed.clone(),
        authorization: authorization.clone(),
        at: Instant::now(),
    });
    if path == "/openid" {
        return (
            axum::Json(json!({ "issuer": ISSUER, "jwks_uri": format!("http://{}/keys", host(&headers)) }))
                .into_response(),
            false,
        );
    }
    if path == "/keys" {
        let key = |kid: &str| {
            json!({ "kty": "RSA", "use": "sig", "kid": kid, "n": SIGNING_KEY_N, "e": "AQAB",
                    "endorsements": ["msteams", "webchat"] })
        };
        let mut keys = vec![key(KEY_ID)];
        keys.extend(state.more_keys.iter().map(|kid| key(kid)));
        return (axum::Json(json!({ "keys": keys })).into_response(), false);
    }
    if path == "/token" {
        let form = String::from_utf8_lossy(&body);
        let genuine =
            form.contains(&format!("client_secret={APP_PASSWORD}")) && form.contains("grant_type=client_credentials");
        if !genuine {
            return (
                (StatusCode::UNAUTHORIZED, axum::Json(json!({ "error": "invalid_client" }))).into_response(),
                false,
            );
        }
        return (
            axum::Json(json!({ "token_type": "Bearer", "expires_in": 3600, "access_token": BOT_TOKEN }))
                .into_response(),
            false,
        );
    }
    if authorization.as_deref() != Some(format!("Bearer {BOT_TOKEN}").as_str()) {
        return (
            (StatusCode::UNAUTHORIZED, axum::Json(json!({ "error": { "code": "Unauthorized" } }))).into_response(),
            false,
        );
    }
    // Scripted failures and hangs are for messages, never the typing indicator.
    let is_typing = parsed["type"] == "typing";
    let failure = state.failures.iter().position(|(suffix, _, _)| path.ends_with(suffix.as_str()));
    if let Some(position) = failure.filter(|_| !is_typing) {
        let (_, status, retry_after) = state.failures.remove(position);
        let mut response =
            (StatusCode::from_u16(status).unwrap(), axum::Json(json!({ "error": { "code": "Throttled" } })))
                .into_response();
        if let Some(seconds) = retry_after {
            response.headers_mut().insert("retry-after", seconds.into());
        }
        return (response, false);
    }
    let hang = match state.hangs.iter().position(|suffix| path.ends_with(suffix.as_str())).filter(|_| !is_typing) {
        Some(position) => {
            state.hangs.remove(position);
            true
        }
        None => false,
    };
    if method == Method::GET {
        if let Some(bytes) = state.files.get(&path) {
            return ((StatusCode::OK, bytes.clone()).into_response(), false);
        }
    }
    (connector(&mut state, &method, &path, parsed), hang)
}

fn host(headers: &HeaderMap) -> String {
    headers.get("host").and_then(|value| value.to_str().ok()).unwrap_or_default().to_string()
}

/// The connector's conversations and activities.
fn connector(state: &mut State, method: &Method, path: &str, body: Value) -> Response {
    let Some(rest) = path.strip_prefix("/v3/conversations") else {
        return (StatusCode::NOT_FOUND, axum::Json(json!({ "error": { "code": "NotFound" } }))).into_response();
    };
    if rest.is_empty() && method == Method::POST {
        let user = body["members"][0]["id"].as_str().unwrap_or_default();
        return axum::Json(json!({ "id": format!("a:private-{user}") })).into_response();
    }
    let rest = rest.trim_start_matches('/');
    if let Some(conversation) = rest.strip_suffix("/members") {
        let _ = conversation;
        return axum::Json(json!([{ "id": "29:ada" }, { "id": format!("28:{APP_ID}") }])).into_response();
    }
    let (conversation, activity) = match rest.split_once("/activities") {
        Some((conversation, tail)) => (conversation.to_string(), tail.trim_start_matches('/').to_string()),
        None => return StatusCode::NOT_FOUND.into_response(),
    };
    let conversation = percent_encoding::percent_decode_str(&conversation).decode_utf8_lossy().to_string();
    match (method.clone(), activity.is_empty()) {
        (Method::POST, _) if body["type"] == "typing" => axum::Json(json!({})).into_response(),
        (Method::POST, _) => {
            state.next_id += 1;
            let id = format!("act-{}", state.next_id);
            state.board.push(Posted { conversation, id: id.clone(), activity: body });
            axum::Json(json!({ "id": id })).into_response()
        }
        (Method::PUT, false) => match state.board.iter_mut().find(|posted| posted.id == activity) {
            Some(posted) => {
                posted.activity = body;
                axum::Json(json!({ "id": activity })).into_response()
            }
            None => StatusCode::NOT_FOUND.into_response(),
        },
        (Method::DELETE, false) => {
            state.board.retain(|posted| posted.id != activity);
            StatusCode::OK.into_response()
        }
        _ => StatusCode::METHOD_NOT_ALLOWED.into_response(),
    }
}
