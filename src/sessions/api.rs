//! Browser sign-in. The admin token is exchanged for a signed, expiring
//! session cookie that the admin API accepts like the bearer token; a
//! web-chat session is a cookie too. Nothing is stored per session: each
//! kind of session is signed with its own key (src/sessions/rules.rs).
//!
//! Every token check (sign-in, the chat invitation, a bearer token) first
//! asks the sign-in object whether its client may try (src/sessions/limit.rs):
//! over a limit it gets 429 without the token being judged. A wrong token is
//! answered after a pause.

use serde::Deserialize;
use worker::{Env, Method, Request, RequestInit, Response};

use crate::api_error::ApiError;
use crate::channel::routes::ChannelRoute;
use crate::config::Config;
use crate::runtime::failure::Answer;
use crate::security::{bearer_matches, constant_time_eq};
use crate::sessions::limit::{client_key, Outcome};
use crate::sessions::rules::{
    self as session, OperatorAccess, Session, SessionKind, ADMIN_COOKIE, ADMIN_SESSION_MS, CHAT_COOKIE, CHAT_SESSION_MS,
};

use crate::runtime::channel_stub;
use crate::runtime::config;
use crate::runtime::config::SIGN_IN_BINDING;
use crate::runtime::failure::internal;
use crate::runtime::http::now_ms;
use crate::runtime::http::read_body;
use crate::runtime::http::sleep_ms;

/// How long a wrong token waits for its refusal.
const REFUSAL_DELAY_MS: u64 = 1_000;
const MAX_SIGN_IN_BODY_BYTES: usize = 4 << 10;
/// Who a web-chat session belongs to (the page and the channel see it).
const OPERATOR: &str = "operator";
const GUEST: &str = "guest";
/// The one sign-in object of the deployment.
const SIGN_IN_OBJECT: &str = "sign-in";

fn header(request: &Request, name: &str) -> Result<Option<String>, ApiError> {
    request.headers().get(name).map_err(internal)
}

/// The session of `kind` the named cookie proves, verified with that kind's
/// own key (none when its secret is unset: no such sessions exist).
fn cookie_session(
    request: &Request,
    config: &Config,
    name: &str,
    kind: SessionKind,
) -> Result<Option<Session>, ApiError> {
    let cookies = header(request, "cookie")?;
    let value = session::cookie(cookies.as_deref(), name);
    Ok(value.and_then(|value| session::verify(&kind.signing_key(config)?, kind.name(), value, now_ms())))
}

/// Asks the sign-in object whether this client may have a token judged, and
/// tells it how the check went (it is recorded only when allowed). 429 with
/// Retry-After when a limit holds; a storage failure refuses (fails closed).
async fn limited(request: &Request, env: &Env, outcome: Outcome) -> Result<(), ApiError> {
    let client = client_key(header(request, "cf-connecting-ip")?.as_deref());
    let body = serde_json::json!({ "client": client, "outcome": outcome.name() }).to_string();
    let attempt = || {
        let mut init = RequestInit::new();
        init.with_method(Method::Post).with_body(Some(body.clone().into()));
        Request::new_with_init("https://sign-in/attempt", &init)
    };
    let stub = env.durable_object(SIGN_IN_BINDING).and_then(|namespace| namespace.get_by_name(SIGN_IN_OBJECT))?;
    let mut answer = stub.fetch_with_request(attempt()?).await?;
    let verdict: serde_json::Value = answer.json().await?;
    if verdict["verdict"] == "check" {
        return Ok(());
    }
    let retry_after_secs = verdict["retry_after_secs"].as_u64().ok_or(ApiError::Internal)?;
    let message = match verdict["held"].as_str() {
        Some("client") => "too many failed sign-ins from this address: try again after Retry-After seconds",
        _ => "too many failed sign-ins: try again after Retry-After seconds",
    };
    Err(ApiError::TooManyRequests { message, retry_after_secs })
}

/// A token check: the limits first, then a failure is refused slowly.
async fn judged(request: &Request, env: &Env, outcome: Outcome) -> Result<Outcome, ApiError> {
    limited(request, env, outcome).await?;
    match outcome {
        Outcome::Failed => Err(refuse_slowly().await),
        other => Ok(other),
    }
}

/// A request that changes something, or opens a socket, with a cookie must
/// come from this site's own pages (cookies ride along on cross-site requests).
fn check_origin(request: &Request) -> Result<(), ApiError> {
    let is_upgrade = header(request, "upgrade")?.is_some_and(|value| value.eq_ignore_ascii_case("websocket"));
    if matches!(request.method(), Method::Get | Method::Head) && !is_upgrade {
        return Ok(());
    }
    let own = request.url()?.origin().ascii_serialization();
    match session::same_origin(header(request, "origin")?.as_deref(), &own) {
        true => Ok(()),
        false => Err(ApiError::Forbidden("cross-site request refused")),
    }
}

/// Sign-in from another site's page is refused; a client that is no browser
/// (no Origin) may sign in.
fn check_origin_if_sent(request: &Request) -> Result<(), ApiError> {
    match header(request, "origin")? {
        Some(_) => check_origin(request),
        None => Ok(()),
    }
}

async fn refuse_slowly() -> ApiError {
    sleep_ms(REFUSAL_DELAY_MS).await;
    ApiError::Unauthorized("wrong token")
}

/// Proof that a request came from the operator. Only [`authorize_operator`]
/// makes one, and the router asks for it once for every operator route
/// ([`crate::routes::Access`]); an admin handler takes it as an argument, so it
/// cannot be reached without the check, nor repeat it.
#[derive(Debug)]
pub struct Operator {
    access: OperatorAccess,
}

impl Operator {
    /// Which way the operator came in (a change records it as its author).
    pub fn access(&self) -> OperatorAccess {
        self.access
    }
}

/// The admin API's gate: the bearer token, or a signed-in session from this
/// site. A wrong bearer token is refused slowly.
pub async fn authorize_operator(request: &Request, env: &Env) -> Result<Operator, ApiError> {
    operator_access(request, env).await.map(|access| Operator { access })
}

/// Which way the operator came in, or why the request is refused.
async fn operator_access(request: &Request, env: &Env) -> Result<OperatorAccess, ApiError> {
    let config = config::load(env);
    if let Some(bearer) = header(request, "authorization")? {
        let outcome = match bearer_matches(Some(&bearer), config.admin_token.expose()) {
            true => Outcome::Operator,
            false => Outcome::Failed,
        };
        return judged(request, env, outcome).await.map(|_| OperatorAccess::AdminToken);
    }
    match cookie_session(request, &config, ADMIN_COOKIE, SessionKind::Operator)? {
        Some(_) => check_origin(request).map(|()| OperatorAccess::Dashboard),
        None => Err(ApiError::Unauthorized("sign in, or send Authorization: Bearer <ADMIN_TOKEN>")),
    }
}

#[derive(Deserialize, Default)]
struct SignIn {
    #[serde(default)]
    token: String,
}

async fn sign_in_body(request: &mut Request) -> Result<SignIn, ApiError> {
    let body = read_body(request, MAX_SIGN_IN_BODY_BYTES).await?;
    if body.is_empty() {
        return Ok(SignIn::default());
    }
    serde_json::from_slice(&body).map_err(|_| ApiError::BadRequest("expected {\"token\": \"…\"}".into()))
}

fn with_cookie(body: serde_json::Value, cookie: &str) -> Answer {
    let mut response = Response::from_json(&body)?;
    response.headers_mut().set("set-cookie", cookie)?;
    Ok(response)
}

/// `POST /api/session {"token"}`: the admin token for a session cookie.
pub async fn sign_in(mut request: Request, env: &Env) -> Answer {
    check_origin_if_sent(&request)?;
    let config = config::load(env);
    let presented = sign_in_body(&mut request).await?.token;
    let matches = config.admin_token.is_set()
        && constant_time_eq(presented.trim().as_bytes(), config.admin_token.expose().as_bytes());
    judged(&request, env, if matches { Outcome::Operator } else { Outcome::Failed }).await?;
    let expires = now_ms() + ADMIN_SESSION_MS;
    let key = SessionKind::Operator.signing_key(&config).ok_or(ApiError::Internal)?;
    let value = session::issue(&key, SessionKind::Operator.name(), OPERATOR, expires).ok_or(ApiError::Internal)?;
    let cookie = session::set_cookie(ADMIN_COOKIE, &value, ADMIN_SESSION_MS / 1000);
    with_cookie(serde_json::json!({ "signed_in": true, "expires_at": expires }), &cookie)
}

/// `GET /api/session`: whether this browser is signed in.
pub async fn current(request: &Request, env: &Env) -> Answer {
    match cookie_session(request, &config::load(env), ADMIN_COOKIE, SessionKind::Operator)? {
        Some(session) => {
            Response::from_json(&serde_json::json!({ "signed_in": true, "expires_at": session.expires_ms }))
                .map_err(internal)
        }
        None => Err(ApiError::Unauthorized("not signed in")),
    }
}

/// `DELETE /api/session`: signs this browser out.
pub async fn sign_out(request: &Request) -> Answer {
    check_origin(request)?;
    let mut response = Response::from_json(&serde_json::json!({ "signed_in": false }))?;
    for name in [ADMIN_COOKIE, CHAT_COOKIE] {
        response.headers_mut().append("set-cookie", &session::set_cookie(name, "", 0))?;
    }
    Ok(response)
}

/// A web-chat session: its conversation key and who holds it.
struct Chat {
    conversation_key: String,
    role: String,
}

/// The web chat this browser's cookie proves: a guest's (signed with the
/// invitation's key), an operator's (signed with the admin token's), or a
/// guest's of a non-default agent (signed with that agent's invitation's key,
/// read from the agents' directory; its conversation is the agent's).
async fn chat_of(request: &Request, env: &Env, config: &Config) -> Result<Option<Chat>, ApiError> {
    for (kind, role) in [(SessionKind::GuestChat, GUEST), (SessionKind::OperatorChat, OPERATOR)] {
        if let Some(session) = cookie_session(request, config, CHAT_COOKIE, kind)? {
            let conversation_key = format!("web:{}", session.subject);
            return Ok(Some(Chat { conversation_key, role: role.to_string() }));
        }
    }
    let cookies = header(request, "cookie")?;
    let Some(value) = session::cookie(cookies.as_deref(), CHAT_COOKIE) else { return Ok(None) };
    let Some(agent) = session::agent_guest_of(value) else { return Ok(None) };
    let directory = crate::agents::directory::get(env).await?;
    let Some(key) = directory.invitation(agent).and_then(|invitation| session::agent_guest_key(agent, invitation))
    else {
        return Ok(None);
    };
    let session = session::verify(&key, &session::agent_guest_kind(agent), value, now_ms());
    Ok(session.map(|session| Chat {
        conversation_key: crate::agents::within(agent, &format!("web:{}", session.subject)),
        role: GUEST.to_string(),
    }))
}

fn chat_answer(chat: &Chat) -> serde_json::Value {
    serde_json::json!({ "conversation": chat.conversation_key, "role": chat.role })
}

/// `POST /api/chat/session {"token"?}`: starts a web chat (or continues the
/// one this browser has). A signed-in operator needs no token; anyone else
/// brings an invitation (`WEB_CHAT_TOKEN`: the default agent's; an agent's
/// own: that agent's) or the admin token.
pub async fn start_chat(mut request: Request, env: &Env) -> Answer {
    check_origin_if_sent(&request)?;
    let config = config::load(env);
    if let Some(chat) = chat_of(&request, env, &config).await? {
        return Response::from_json(&chat_answer(&chat)).map_err(internal);
    }
    let operator = cookie_session(&request, &config, ADMIN_COOKIE, SessionKind::Operator)?.is_some()
        && check_origin(&request).is_ok();
    let token = sign_in_body(&mut request).await?.token;
    let token_is =
        |expected: &str| !expected.is_empty() && constant_time_eq(token.trim().as_bytes(), expected.as_bytes());
    let mut invited = None;
    let (kind, role) = if operator {
        (SessionKind::OperatorChat, OPERATOR)
    } else {
        let mut outcome = match (token_is(config.admin_token.expose()), token_is(config.web_chat_token.expose())) {
            (true, _) => Outcome::Operator,
            (false, true) => Outcome::Guest,
            (false, false) => Outcome::Failed,
        };
        if outcome == Outcome::Failed && !token.trim().is_empty() {
            let directory = crate::agents::directory::get(env).await?;
            invited = directory.invited(token.trim()).map(|agent| (agent.to_string(), token.trim().to_string()));
            outcome = if invited.is_some() { Outcome::Guest } else { Outcome::Failed };
        }
        match judged(&request, env, outcome).await? {
            Outcome::Operator => (SessionKind::OperatorChat, OPERATOR),
            _ => (SessionKind::GuestChat, GUEST),
        }
    };
    if role == GUEST {
        count_guest_session(&request, env, &config).await?;
    }
    let id = random_id()?;
    let expires = now_ms() + CHAT_SESSION_MS;
    let (value, conversation_key) = match &invited {
        Some((agent, invitation)) => {
            let key = session::agent_guest_key(agent, invitation).ok_or(ApiError::Internal)?;
            let value = session::issue(&key, &session::agent_guest_kind(agent), &id, expires);
            (value, crate::agents::within(agent, &format!("web:{id}")))
        }
        None => {
            let key = kind.signing_key(&config).ok_or(ApiError::Internal)?;
            (session::issue(&key, kind.name(), &id, expires), format!("web:{id}"))
        }
    };
    let value = value.ok_or(ApiError::Internal)?;
    let chat = Chat { conversation_key, role: role.to_string() };
    with_cookie(chat_answer(&chat), &session::set_cookie(CHAT_COOKIE, &value, CHAT_SESSION_MS / 1000))
}

/// Each guest session brings its own conversation (and branches and
/// workers): a client address starts at most so many a UTC day.
async fn count_guest_session(request: &Request, env: &Env, config: &Config) -> Result<(), ApiError> {
    let client = header(request, "cf-connecting-ip")?.unwrap_or_else(|| "unknown".into());
    let database = env.d1(config::DATABASE_BINDING)?;
    let now = now_ms();
    let cap = config.web_chat_sessions_per_client_per_day;
    match crate::budget::store::count_guest_session(&database, &client, cap, now).await? {
        true => Ok(()),
        false => Err(ApiError::TooManyRequests {
            message: "too many new web chats from this address today; try again tomorrow (UTC)",
            retry_after_secs: crate::budget::rules::seconds_until_next_day(now),
        }),
    }
}

/// `GET /api/chat/session`: this browser's web chat, if it has one.
pub async fn current_chat(request: &Request, env: &Env) -> Answer {
    match chat_of(request, env, &config::load(env)).await? {
        Some(chat) => Response::from_json(&chat_answer(&chat)).map_err(internal),
        None => Err(ApiError::Unauthorized("no web chat yet")),
    }
}

/// `GET /api/chat/socket`: the web chat's WebSocket, held by its
/// conversation's channel object.
pub async fn chat_socket(request: &Request, env: &Env) -> Answer {
    let chat = chat_of(request, env, &config::load(env)).await?.ok_or(ApiError::Unauthorized("no web chat yet"))?;
    check_origin(request)?;
    let headers = [("x-edgebot-role", chat.role.as_str())];
    open_socket(request, env, &chat.conversation_key, ChannelRoute::ChatSocket, &headers).await
}

/// The conversation of this browser's web chat, for a request that changes
/// it (an upload): 401 without a chat session, 403 from another site.
pub async fn chat_conversation(request: &Request, env: &Env) -> Result<String, ApiError> {
    let chat = chat_of(request, env, &config::load(env)).await?.ok_or(ApiError::Unauthorized("no web chat yet"))?;
    check_origin(request)?;
    Ok(chat.conversation_key)
}

/// The conversation of this browser's web chat and its role (`guest` or
/// `operator`), for a button pressed in it: 401 without a chat session, 403
/// from another site.
pub async fn chat_identity(request: &Request, env: &Env) -> Result<(String, String), ApiError> {
    let chat = chat_of(request, env, &config::load(env)).await?.ok_or(ApiError::Unauthorized("no web chat yet"))?;
    check_origin(request)?;
    Ok((chat.conversation_key, chat.role))
}

/// `GET /api/channels/{key}/live`: a socket that says when the conversation changed.
pub async fn watch_socket(request: &Request, env: &Env, conversation_key: &str, _operator: &Operator) -> Answer {
    open_socket(request, env, conversation_key, ChannelRoute::Live, &[]).await
}

async fn open_socket(
    request: &Request,
    env: &Env,
    conversation_key: &str,
    route: ChannelRoute,
    extra: &[(&str, &str)],
) -> Answer {
    if !header(request, "upgrade")?.is_some_and(|value| value.eq_ignore_ascii_case("websocket")) {
        return Err(ApiError::BadRequest("expected a WebSocket upgrade".into()));
    }
    let mut headers = vec![("upgrade", "websocket"), ("x-edgebot-conversation", conversation_key)];
    headers.extend_from_slice(extra);
    let forward = channel_stub::request(route, "", None, &headers)?;
    channel_stub::send(env, conversation_key, forward).await.map_err(internal)
}

/// A random (v4) UUID from the runtime's CSPRNG: a session names nothing that
/// is ordered, so v7's timestamp would only leak when it was made.
fn random_id() -> Result<String, ApiError> {
    Ok(uuid::Uuid::new_v4().to_string())
}
