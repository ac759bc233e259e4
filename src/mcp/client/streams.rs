//! The streams of one server's session (part of [`super::Client`]): a
//! call's event stream read until its answer (resumed with `GET` and
//! `Last-Event-ID` when it ends early), the session's own stream listened to
//! during a call, and the requests a server makes on either answered (a
//! question goes to the person who started the work, `crate::mcp::elicit`).

use std::time::Duration;

use futures_util::StreamExt;
use serde_json::Value;
use url::Url;
use worker::{AbortController, Delay, Fetch, Headers, Method, Request, RequestInit, RequestRedirect};

use super::{post_request, Client, Failure};
use crate::log_line::LogLine;
use crate::mcp::elicit;
use crate::mcp::rules::{self as mcp, McpError};
use crate::mcp::stream::{self, Incoming, Resumable};
use crate::ops::{self, Op};
use crate::runtime::config::redactor;
use crate::runtime::log::Emit;

/// How long the session's own stream may take to open before a call goes on without it.
const LISTEN_MS: u64 = 5_000;

impl Client<'_> {
    /// Reads a request's event stream until the message answering `id`
    /// arrives: a question the server asks meanwhile is answered (a person
    /// is asked), and a stream that ends before the answer is resumed
    /// (`GET` with `Last-Event-ID` after the stream's `retry` time, a few times).
    pub(super) async fn read_events(
        &self,
        stream: worker::ByteStream,
        id: u64,
        url: &Url,
        authorization: Option<&str>,
        session: Option<&str>,
    ) -> Result<mcp::Answer, McpError> {
        use eventsource_stream::Eventsource;
        let session = session.map(str::to_string).or_else(|| self.session());
        let mut resumable = Resumable::default();
        let mut seen = Vec::new();
        let mut events = stream.eventsource();
        loop {
            while let Some(event) = events.next().await {
                let event = event.map_err(|error| McpError::Malformed(format!("event stream: {error}")))?;
                resumable.saw(&event.id, event.retry.map(|retry| retry.as_millis() as u64));
                let Ok(message) = serde_json::from_str::<Value>(&event.data) else {
                    continue; // a priming event (empty data) or a comment
                };
                match stream::classify(&message, id) {
                    Incoming::Answer => {
                        seen.push(event.data);
                        return mcp::answer_from_events(&seen, id);
                    }
                    Incoming::Request { id: asked, method, params } => {
                        self.answer_server(&asked, &method, &params, session.as_deref()).await;
                    }
                    Incoming::Other => seen.push(event.data),
                }
            }
            // The stream ended before the answer: resume it, or give up.
            let Some((wait_ms, last_event_id)) = resumable.resume() else {
                return Err(McpError::NoAnswer(id));
            };
            Delay::from(Duration::from_millis(wait_ms)).await;
            let resumed = self.resume(url, authorization, session.as_deref(), &last_event_id).await;
            let Some(resumed) = resumed else {
                return Err(McpError::NoAnswer(id));
            };
            events = resumed.eventsource();
        }
    }

    /// Opens the session's own stream (`GET`, for requests the server makes
    /// outside any call's stream), when the server keeps sessions and offers one.
    pub(super) async fn listen(&self, controller: &AbortController) -> Option<worker::ByteStream> {
        if self.established.borrow().is_none() && self.open().await.is_err() {
            return None;
        }
        let session = self.session()?;
        let endpoint = self.endpoint.clone().ok()?;
        let authorization = self.authorization().await.ok()?;
        let version = self.established.borrow().as_ref().map(|open| open.version.clone());
        let request =
            stream_request(&endpoint, authorization.as_deref(), Some(&session), version.as_deref(), None).ok()?;
        ops::count(Op::McpRequest);
        let fetch = Fetch::Request(request);
        let signal = controller.signal();
        let sent = fetch.send_with_signal(&signal);
        let mut response = crate::runtime::http::within(LISTEN_MS, sent).await?.ok()?;
        let kind = response.headers().get("content-type").ok().flatten().unwrap_or_default();
        (response.status_code() == 200 && kind.starts_with("text/event-stream"))
            .then(|| response.stream().ok())
            .flatten()
    }

    /// Serves the requests the server makes on its own stream; never ends
    /// before the call it runs beside (the caller drops it).
    pub(super) async fn serve(&self, stream: worker::ByteStream) {
        use eventsource_stream::Eventsource;
        let session = self.session();
        let mut events = stream.eventsource();
        while let Some(Ok(event)) = events.next().await {
            let Ok(message) = serde_json::from_str::<Value>(&event.data) else {
                continue;
            };
            if let Incoming::Request { id: asked, method, params } = stream::classify(&message, 0) {
                self.answer_server(&asked, &method, &params, session.as_deref()).await;
            }
        }
        futures_util::future::pending::<()>().await
    }

    pub(super) fn session(&self) -> Option<String> {
        self.established.borrow().as_ref().and_then(|open| open.session.clone())
    }

    /// `GET` the endpoint with `Last-Event-ID`: the resumed stream, or None if
    /// the server will not resume (any answer but a 200 event stream).
    pub(super) async fn resume(
        &self,
        url: &Url,
        authorization: Option<&str>,
        session: Option<&str>,
        last_event_id: &str,
    ) -> Option<worker::ByteStream> {
        let version = self.established.borrow().as_ref().map(|open| open.version.clone());
        let request = stream_request(url, authorization, session, version.as_deref(), Some(last_event_id)).ok()?;
        ops::count(Op::McpRequest);
        let mut response = Fetch::Request(request).send().await.ok()?;
        let kind = response.headers().get("content-type").ok().flatten().unwrap_or_default();
        let resumed = response.status_code() == 200 && kind.starts_with("text/event-stream");
        LogLine::info("mcp_stream_resumed").field("server", self.server.name.as_str()).field("ok", resumed).emit();
        resumed.then(|| response.stream().ok()).flatten()
    }

    /// A request the server makes on the stream: a question (elicitation)
    /// goes to the person who started the work; `ping` is answered; anything
    /// else is refused. The answer is POSTed back in the session.
    pub(super) async fn answer_server(&self, asked: &Value, method: &str, params: &Value, session: Option<&str>) {
        let answer = match method {
            "elicitation/create" => {
                self.asking.set(true);
                let names = (self.server.name.as_str(), self.calling.borrow().clone());
                let answer = elicit::answer(
                    self.config,
                    self.env,
                    self.db,
                    self.asker.as_ref(),
                    (names.0, &names.1),
                    asked,
                    params,
                )
                .await;
                self.asking.set(false);
                answer
            }
            other => stream::unserved(asked, other),
        };
        if let Err(failure) = self.send_answer(&answer, session).await {
            LogLine::warn("mcp_answer_not_sent").field("server", self.server.name.as_str()).reason(&failure).emit();
        }
    }

    /// POSTs a JSON-RPC response to the server (it answers 202, nothing to read).
    pub(super) async fn send_answer(&self, answer: &Value, session: Option<&str>) -> Result<(), Failure> {
        let endpoint = self.endpoint.clone().map_err(Failure::Refused)?;
        let authorization = self.authorization().await?;
        let mut established = self.established.borrow().clone();
        if let (Some(open), Some(session)) = (established.as_mut(), session) {
            open.session = Some(session.to_string());
        }
        let network = |error: worker::Error| Failure::Unreachable(redactor().redact(&error.to_string()).into_owned());
        let request =
            post_request(&endpoint, answer, authorization.as_deref(), established.as_ref()).map_err(network)?;
        ops::count(Op::McpRequest);
        let response = Fetch::Request(request).send().await.map_err(network)?;
        match (200..300).contains(&response.status_code()) {
            true => Ok(()),
            false => Err(Failure::Status(response.status_code())),
        }
    }
}

/// A `GET` of the session's stream, or one that resumes a stream after `last_event_id`.
fn stream_request(
    url: &Url,
    authorization: Option<&str>,
    session: Option<&str>,
    version: Option<&str>,
    last_event_id: Option<&str>,
) -> worker::Result<Request> {
    let headers = Headers::new();
    headers.set("accept", "text/event-stream")?;
    if let Some(last_event_id) = last_event_id {
        headers.set("last-event-id", last_event_id)?;
    }
    if let Some(value) = authorization {
        headers.set("authorization", value)?;
    }
    if let Some(session) = session {
        headers.set(mcp::SESSION_HEADER, session)?;
    }
    if let Some(version) = version {
        headers.set(mcp::VERSION_HEADER, version)?;
    }
    let mut init = RequestInit::new();
    init.with_method(Method::Get).with_headers(headers).with_redirect(RequestRedirect::Manual);
    Request::new_with_init(url.as_str(), &init)
}
