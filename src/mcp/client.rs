//! Remote MCP servers at the edge: the streamable HTTP exchange with one
//! server (its settings and state are kept by `servers`, the tools a process
//! is offered gathered by `toolbox`).
//!
//! Every request goes to the configured endpoint's origin only: the URL is
//! checked by the fetch guard (no private addresses unless allowed), a
//! redirect is followed only to the same origin (307/308, re-checked), and
//! nothing a server answers makes the Worker fetch anything else. A session
//! lives for one process step (initialize once, `Mcp-Session-Id` on every
//! later request, initialize again if the server forgot it). Tool lists are
//! cached in D1 and refreshed after [`TOOLS_FRESH_MS`] or when the server
//! says its list changed; a server that cannot be reached is left alone for
//! [`DOWN_FOR_MS`], and processes get a note instead of its tools.

mod streams;

use std::cell::{Cell, RefCell};
use std::time::Duration;

use futures_util::future::{select, Either};
use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::Value;
use url::Url;
use worker::{AbortController, D1Database, Delay, Env, Fetch, Headers, Method, Request, RequestInit, RequestRedirect};

use crate::config::Config;
use crate::log_line::LogLine;
use crate::mcp::elicit::Asker;
use crate::mcp::rules::{self as mcp, Auth, McpError, RemoteTool};
use crate::mcp::servers::{record_tools, Server};
use crate::ops::{self, Op};
use crate::redact::Redactor;
use crate::runtime::config::redactor;
use crate::runtime::d1::{number, Metered};
use crate::runtime::http::now_ms;
use crate::runtime::http::whole_body;
use crate::runtime::log::Emit;
use crate::web_tools::guard::check_url;

/// Pages of `tools/list` read at most (a server that pages forever is cut off).
const MAX_PAGES: usize = 20;
/// Same-origin redirects followed at most.
const MAX_REDIRECTS: usize = 3;
/// The largest JSON answer read.
const MAX_ANSWER_BYTES: usize = 4 << 20;
/// An OAuth token is renewed this long before it expires.
const TOKEN_MARGIN_MS: i64 = 60_000;

/// Why an exchange with a server failed (text a model or an operator reads;
/// it carries no secret).
#[derive(Debug)]
pub enum Failure {
    /// Not a URL edgebot may call (the guard's refusal, or a redirect elsewhere).
    Refused(String),
    Unreachable(String),
    TimedOut,
    Status(u16),
    Protocol(McpError),
    /// A secret the settings name is not set.
    NoSecret(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Refused(why) => write!(formatter, "refused: {why}"),
            Failure::Unreachable(why) => write!(formatter, "the server could not be reached: {why}"),
            Failure::TimedOut => formatter.write_str("the server did not answer in time (the request was cancelled)"),
            Failure::Status(status) => write!(formatter, "the server answered HTTP {status}"),
            Failure::Protocol(error) => write!(formatter, "{error}"),
            Failure::NoSecret(name) => write!(formatter, "the secret {name} is not set"),
        }
    }
}

/// What one POST brought back.
struct Posted {
    status: u16,
    session: Option<String>,
    /// The answer to the request (None for a notification or a non-2xx status).
    answer: Option<Result<mcp::Answer, McpError>>,
}

/// An established session: the server's id for it (if it keeps sessions) and the revision agreed.
#[derive(Clone)]
struct Established {
    session: Option<String>,
    version: String,
}

/// One server, spoken to for the length of a process step.
pub struct Client<'a> {
    config: &'a Config,
    env: &'a Env,
    db: &'a D1Database,
    pub server: Server,
    endpoint: Result<Url, String>,
    established: RefCell<Option<Established>>,
    next_id: Cell<u64>,
    /// The `Authorization` value, once read.
    authorization: RefCell<Option<Option<String>>>,
    /// Whom a server's question goes to (None: nobody; it is cancelled).
    pub asker: Option<Asker>,
    /// A person is being asked: the call's timeout waits for them.
    asking: Cell<bool>,
    /// The tool being called (named in a question).
    calling: RefCell<String>,
}

impl<'a> Client<'a> {
    pub fn new(config: &'a Config, env: &'a Env, db: &'a D1Database, server: Server) -> Self {
        let endpoint = checked(config, &server.settings.url);
        Client {
            config,
            env,
            db,
            server,
            endpoint,
            established: RefCell::new(None),
            next_id: Cell::new(1),
            authorization: RefCell::new(None),
            asker: None,
            asking: Cell::new(false),
            calling: RefCell::new(String::new()),
        }
    }

    /// Lists the server's tools (every page) and keeps them in D1.
    pub async fn refresh(&self) -> Result<Vec<RemoteTool>, Failure> {
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let id = self.next_id();
            let answer = self.ask(&mcp::list_tools(id, cursor.as_deref()), id, self.config.mcp_timeout_ms).await?;
            let (page, next) = mcp::tools_page(&answer.result);
            tools.extend(page);
            cursor = next;
            if cursor.is_none() {
                break;
            }
        }
        tools.dedup_by(|a, b| a.name == b.name);
        if let Err(error) = record_tools(self.db, &self.server.name, &tools).await {
            LogLine::warn("mcp_tools_not_kept").field("server", self.server.name.as_str()).reason(&error).emit();
        }
        Ok(tools)
    }

    /// Calls a tool; the answer is text for the model, capped and redacted.
    pub async fn call(&self, tool: &str, arguments: &Value) -> String {
        let started = now_ms();
        ops::count(Op::McpToolCall);
        let id = self.next_id();
        *self.calling.borrow_mut() = mcp::exposed_name(&self.server.name, tool).unwrap_or_else(|| tool.to_string());
        // A server may ask on its own stream (a request not tied to the call): it is listened to meanwhile.
        let listening = AbortController::default();
        let standalone = self.listen(&listening).await;
        let message = mcp::call_tool(id, tool, arguments);
        let asked = self.ask(&message, id, self.config.mcp_timeout_ms);
        let outcome = match standalone {
            Some(stream) => match select(Box::pin(asked), Box::pin(self.serve(stream))).await {
                Either::Left((outcome, _)) => outcome,
                Either::Right((_, asked)) => asked.await,
            },
            None => asked.await,
        };
        listening.abort();
        let ok = outcome.is_ok();
        let text = match outcome {
            Ok(answer) => mcp::result_text(&answer.result),
            Err(Failure::TimedOut) => {
                // The server is told to stop; the model hears the call was cut.
                let _ = self.post(&mcp::cancelled(id, "timed out"), None, 2_000).await;
                format!("error: {}", Failure::TimedOut)
            }
            Err(failure) => format!("error: {failure}"),
        };
        let counted = self.db.prepare("UPDATE mcp_servers SET calls = calls + 1 WHERE name = ?1");
        if let Ok(statement) = counted.bind(&[self.server.name.as_str().into()]) {
            let _ = statement.run_counted().await;
        }
        LogLine::info("mcp_call")
            .field("server", self.server.name.as_str())
            .field("tool", tool)
            .field("ok", ok)
            .duration_ms(now_ms() - started)
            .emit();
        self.redacted(&text)
    }

    /// Cut of every configured secret and of this server's credentials.
    fn redacted(&self, text: &str) -> String {
        let credential = self.authorization.borrow().clone().flatten().unwrap_or_default();
        let token = credential.strip_prefix("Bearer ").unwrap_or_default().to_string();
        let own = Redactor::new([("MCP_SERVER_TOKEN", token.as_str(), None)]);
        own.redact(&redactor().redact(text)).into_owned()
    }

    fn next_id(&self) -> u64 {
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        id
    }

    /// Sends a request and reads its answer, opening (or reopening) the session first.
    async fn ask(&self, message: &Value, id: u64, timeout_ms: u64) -> Result<mcp::Answer, Failure> {
        for attempt in 0..2 {
            if self.established.borrow().is_none() {
                self.open().await?;
            }
            let posted = self.post(message, Some(id), timeout_ms).await?;
            let had_session = self.established.borrow().as_ref().is_some_and(|open| open.session.is_some());
            if posted.status == 404 && had_session && attempt == 0 {
                // The server forgot the session: a new one, once.
                *self.established.borrow_mut() = None;
                continue;
            }
            let answer = match posted.answer {
                Some(answer) if (200..300).contains(&posted.status) => answer.map_err(Failure::Protocol)?,
                _ => return Err(Failure::Status(posted.status)),
            };
            if answer.tools_changed {
                let stale = self.db.prepare("UPDATE mcp_servers SET stale = 1 WHERE name = ?1");
                if let Ok(statement) = stale.bind(&[self.server.name.as_str().into()]) {
                    let _ = statement.run_counted().await;
                }
            }
            return Ok(answer);
        }
        Err(Failure::Status(404))
    }

    /// `initialize`, then `notifications/initialized`.
    async fn open(&self) -> Result<(), Failure> {
        let id = self.next_id();
        let message = mcp::initialize(id, env!("CARGO_PKG_VERSION"));
        let posted = self.post(&message, Some(id), self.config.mcp_timeout_ms).await?;
        let answer = match posted.answer {
            Some(answer) if (200..300).contains(&posted.status) => answer.map_err(Failure::Protocol)?,
            _ => return Err(Failure::Status(posted.status)),
        };
        let version = mcp::negotiated_version(&answer.result).map_err(Failure::Protocol)?;
        *self.established.borrow_mut() = Some(Established { session: posted.session, version });
        let done = self.post(&mcp::notification("notifications/initialized"), None, self.config.mcp_timeout_ms).await?;
        match (200..300).contains(&done.status) {
            true => Ok(()),
            false => Err(Failure::Status(done.status)),
        }
    }

    /// One POST to the endpoint (following same-origin 307/308 redirects),
    /// within `timeout_ms` for the whole answer. An event-stream answer is
    /// read until the message answering `id` arrives.
    async fn post(&self, message: &Value, id: Option<u64>, timeout_ms: u64) -> Result<Posted, Failure> {
        let endpoint = self.endpoint.clone().map_err(Failure::Refused)?;
        let authorization = self.authorization().await?;
        // What leaves carries no configured secret (the model wrote the arguments).
        let mut body = message.clone();
        redactor().redact_json(&mut body);
        let established = self.established.borrow().clone();
        let controller = AbortController::default();
        let signal = controller.signal();
        let network = |error: worker::Error| Failure::Unreachable(redactor().redact(&error.to_string()).into_owned());
        let exchange = async move {
            let mut url = endpoint.clone();
            for _ in 0..=MAX_REDIRECTS {
                let request =
                    post_request(&url, &body, authorization.as_deref(), established.as_ref()).map_err(network)?;
                ops::count(Op::McpRequest);
                let mut response = Fetch::Request(request).send_with_signal(&signal).await.map_err(network)?;
                let status = response.status_code();
                if matches!(status, 307 | 308) {
                    let location = response.headers().get("location").map_err(network)?.unwrap_or_default();
                    url = same_origin(self.config, &endpoint, &url, &location).map_err(Failure::Refused)?;
                    continue;
                }
                let session = response.headers().get(mcp::SESSION_HEADER).map_err(network)?;
                let kind = response.headers().get("content-type").map_err(network)?.unwrap_or_default();
                let answer = match id {
                    Some(id) if (200..300).contains(&status) => {
                        let stream = response.stream().map_err(network)?;
                        Some(match kind.starts_with("text/event-stream") {
                            true => {
                                self.read_events(stream, id, &url, authorization.as_deref(), session.as_deref()).await
                            }
                            false => read_json(stream, id).await,
                        })
                    }
                    _ => None,
                };
                return Ok(Posted { status, session, answer });
            }
            Err(Failure::Refused("too many redirects".into()))
        };
        let mut exchange = Box::pin(exchange);
        loop {
            let deadline = Delay::from(Duration::from_millis(timeout_ms));
            match select(exchange, deadline).await {
                Either::Left((posted, _)) => return posted,
                // A person is being asked: their answer has its own bound (`elicit::MAX_WAIT_MS`).
                Either::Right((_, pending)) if self.asking.get() => exchange = pending,
                Either::Right(_) => {
                    controller.abort();
                    return Err(Failure::TimedOut);
                }
            }
        }
    }

    /// The `Authorization` header the settings call for, read once per client.
    async fn authorization(&self) -> Result<Option<String>, Failure> {
        if let Some(known) = self.authorization.borrow().clone() {
            return Ok(known);
        }
        let value = match &self.server.settings.auth {
            Auth::None => None,
            Auth::Bearer { token_secret } => Some(format!("Bearer {}", self.secret(token_secret)?)),
            Auth::Oauth { token_url, client_id, client_secret_secret, scope } => {
                let fresh = self.server.token_expires_at.is_some_and(|at| at > now_ms() + TOKEN_MARGIN_MS);
                let token = match (&self.server.access_token, fresh) {
                    (Some(token), true) => token.clone(),
                    _ => {
                        let secret = self.secret(client_secret_secret)?;
                        self.fetch_token(token_url, client_id, &secret, scope.as_deref()).await?
                    }
                };
                Some(format!("Bearer {token}"))
            }
        };
        *self.authorization.borrow_mut() = Some(value.clone());
        Ok(value)
    }

    fn secret(&self, name: &str) -> Result<String, Failure> {
        mcp::check_secret_name(name).map_err(Failure::Refused)?;
        let value =
            self.env.secret(name).map(|value| value.to_string()).or_else(|_| self.env.var(name).map(|v| v.to_string()));
        value.ok().filter(|value| !value.is_empty()).ok_or_else(|| Failure::NoSecret(name.to_string()))
    }

    /// OAuth 2.0 client credentials: a token from `token_url` (no redirects),
    /// kept in D1 until it expires.
    async fn fetch_token(
        &self,
        token_url: &str,
        client_id: &str,
        secret: &str,
        scope: Option<&str>,
    ) -> Result<String, Failure> {
        let url = checked(self.config, token_url).map_err(Failure::Refused)?;
        let mut form = form_urlencoded::Serializer::new(String::new());
        form.append_pair("grant_type", "client_credentials");
        form.append_pair("client_id", client_id);
        form.append_pair("client_secret", secret);
        if let Some(scope) = scope {
            form.append_pair("scope", scope);
        }
        let headers = Headers::new();
        let network = |error: worker::Error| Failure::Unreachable(redactor().redact(&error.to_string()).into_owned());
        headers.set("content-type", "application/x-www-form-urlencoded").map_err(network)?;
        headers.set("accept", "application/json").map_err(network)?;
        let mut init = RequestInit::new();
        init.with_method(Method::Post)
            .with_headers(headers)
            .with_redirect(RequestRedirect::Manual)
            .with_body(Some(form.finish().into()));
        let request = Request::new_with_init(url.as_str(), &init).map_err(network)?;
        ops::count(Op::McpRequest);
        let exchange = async {
            let response = Fetch::Request(request).send().await?;
            let status = response.status_code();
            Ok::<_, worker::Error>((status, whole_body(response).await?))
        };
        let (status, body) = crate::runtime::http::within(self.config.mcp_timeout_ms, exchange)
            .await
            .ok_or(Failure::TimedOut)?
            .map_err(network)?;
        if status != 200 {
            return Err(Failure::Status(status));
        }
        #[derive(Deserialize)]
        struct Token {
            access_token: String,
            #[serde(default)]
            expires_in: Option<i64>,
        }
        let token: Token = serde_json::from_slice(&body)
            .map_err(|_| Failure::Protocol(McpError::Malformed("the token answer is not OAuth JSON".into())))?;
        let expires_at = now_ms() + token.expires_in.unwrap_or(3_600).max(0) * 1000;
        let kept = self.db.prepare("UPDATE mcp_servers SET access_token = ?1, token_expires_at = ?2 WHERE name = ?3");
        if let Ok(statement) =
            kept.bind(&[token.access_token.as_str().into(), number(expires_at), self.server.name.as_str().into()])
        {
            let _ = statement.run_counted().await;
        }
        Ok(token.access_token)
    }
}

/// A URL edgebot may send to: the fetch guard's rules, cross-checked with the runtime's parser.
pub(crate) fn checked(config: &Config, url: &str) -> Result<Url, String> {
    check_url(url, &config.fetch_allowed_hosts)
        .and_then(crate::web_tools::tools::runtime_agrees)
        .map_err(|refusal| refusal.to_string())
}

/// Where a redirect may go: the configured endpoint's origin ([`mcp::same_origin`]),
/// checked like every URL.
fn same_origin(config: &Config, endpoint: &Url, from: &Url, location: &str) -> Result<Url, String> {
    let next = mcp::same_origin(endpoint, from, location)?;
    checked(config, next.as_str()).map_err(|why| format!("refused: {why}"))
}

/// One POST of a JSON-RPC message, with the session's headers; redirects are the caller's to check.
fn post_request(
    url: &Url,
    body: &Value,
    authorization: Option<&str>,
    established: Option<&Established>,
) -> worker::Result<Request> {
    let headers = Headers::new();
    headers.set("accept", mcp::ACCEPT)?;
    headers.set("content-type", "application/json")?;
    if let Some(value) = authorization {
        headers.set("authorization", value)?;
    }
    if let Some(open) = established {
        if let Some(session) = &open.session {
            headers.set(mcp::SESSION_HEADER, session)?;
        }
        headers.set(mcp::VERSION_HEADER, &open.version)?;
    }
    let mut init = RequestInit::new();
    init.with_method(Method::Post)
        .with_headers(headers)
        .with_redirect(RequestRedirect::Manual)
        .with_body(Some(body.to_string().into()));
    Request::new_with_init(url.as_str(), &init)
}

/// Reads a JSON answer, at most [`MAX_ANSWER_BYTES`] of it (a larger one is refused unread).
async fn read_json(mut stream: worker::ByteStream, id: u64) -> Result<mcp::Answer, McpError> {
    let mut body = Vec::new();
    while let Some(chunk) = stream.next().await {
        body.extend_from_slice(&chunk.map_err(|error| McpError::Malformed(error.to_string()))?);
        if body.len() > MAX_ANSWER_BYTES {
            return Err(McpError::Malformed("the answer is too large".into()));
        }
    }
    mcp::answer_from_json(&String::from_utf8_lossy(&body), id)
}
