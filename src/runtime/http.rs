//! Outbound HTTP with a deadline, shared by the model providers and platform APIs.

use std::time::Duration;

use futures_util::future::{select, Either};
use futures_util::StreamExt;

use crate::api_error::ApiError;
use crate::files::rules::{Refusal, FILE_LIMIT_BYTES};
use crate::ops::{self, Op};
use crate::verb::{ObjectRoute, Verb};
use js_sys::Uint8Array;
use wasm_bindgen::JsValue;
use worker::{AbortController, Delay, Fetch, Headers, Method, Request, RequestInit, RequestRedirect, Response};

/// How long a file download may take.
const DOWNLOAD_TIMEOUT_MS: u64 = 30_000;

/// A finished exchange: the status, the whole body, and a `Retry-After`
/// header (seconds) when the server sent one.
pub struct HttpAnswer {
    pub status: u16,
    pub body: Vec<u8>,
    pub retry_after_secs: Option<f64>,
    /// Where a redirect points (requests made with manual redirects only).
    pub location: Option<String>,
}

/// What [`post_events`] got: a stream whose events were handed on, or a body read whole.
pub struct EventsAnswer {
    pub status: u16,
    /// The whole body when the answer was not an event stream (empty otherwise).
    pub body: Vec<u8>,
    /// The answer was an event stream.
    pub events: bool,
}

#[derive(Debug)]
pub enum HttpFailure {
    Timeout,
    Network(String),
}

/// POSTs a JSON body and waits at most `timeout_ms` for the whole answer.
/// `headers` are extra headers (authorization and the like); never log them.
/// `kind` says whom the call is for, for the operation counts.
pub async fn post_json(
    kind: Op,
    url: &str,
    headers: &[(&str, &str)],
    body: &serde_json::Value,
    timeout_ms: u64,
) -> Result<HttpAnswer, HttpFailure> {
    send_json(kind, Method::Post, url, headers, body, timeout_ms).await
}

/// Sends a JSON body with any method and waits at most `timeout_ms`.
pub async fn send_json(
    kind: Op,
    method: Method,
    url: &str,
    headers: &[(&str, &str)],
    body: &serde_json::Value,
    timeout_ms: u64,
) -> Result<HttpAnswer, HttpFailure> {
    // Every JSON body leaves redacted (secrets, key shapes), whoever built it:
    // platform messages, embeddings. A model request is scrubbed by the model
    // client itself (configured secrets only, and it says so in the log).
    let mut redacted;
    let body = match kind {
        Op::ModelCall => body,
        _ => {
            redacted = body.clone();
            crate::runtime::config::redactor().redact_json(&mut redacted);
            &redacted
        }
    };
    let request = build_request(method, url, headers, body).map_err(|error| HttpFailure::Network(error.to_string()))?;
    exchange(kind, request, timeout_ms, None).await
}

/// POSTs a JSON body whose answer is a stream of server-sent events, handing
/// each event's data to `on_event` as it arrives. `timeout_ms` bounds the wait
/// for the answer and then each wait for the next event (a model that writes
/// for longer than the timeout is fine as long as it keeps writing). An
/// answer that is not a 2xx is read whole instead (its body is the answer's,
/// and no event is handed on).
pub async fn post_events(
    kind: Op,
    url: &str,
    headers: &[(&str, &str)],
    body: &serde_json::Value,
    timeout_ms: u64,
    on_event: &mut dyn FnMut(&str),
) -> Result<EventsAnswer, HttpFailure> {
    let network = |error: worker::Error| HttpFailure::Network(error.to_string());
    let request = build_request(Method::Post, url, headers, body).map_err(network)?;
    ops::count(kind);
    let controller = AbortController::default();
    let signal = controller.signal();
    let timed_out = || {
        controller.abort();
        HttpFailure::Timeout
    };
    let deadline = || Delay::from(Duration::from_millis(timeout_ms));
    let fetch = Fetch::Request(request);
    let sent = fetch.send_with_signal(&signal);
    let mut response = match select(Box::pin(sent), deadline()).await {
        Either::Left((answer, _)) => answer.map_err(network)?,
        Either::Right(_) => return Err(timed_out()),
    };
    let status = response.status_code();
    // An error, or a server that answered whole although asked for a stream
    // (some OpenAI-compatible servers ignore `stream`): the body as it is.
    let content_type = response.headers().get("content-type").map_err(network)?.unwrap_or_default();
    if !(200..300).contains(&status) || !content_type.starts_with("text/event-stream") {
        let body = match select(Box::pin(whole_body(response)), deadline()).await {
            Either::Left((body, _)) => body.map_err(network)?,
            Either::Right(_) => return Err(timed_out()),
        };
        return Ok(EventsAnswer { status, body, events: false });
    }
    let stream = response.stream().map_err(network)?;
    match read_events(stream, timeout_ms, on_event).await {
        Ok(()) => Ok(EventsAnswer { status, body: Vec::new(), events: true }),
        Err(HttpFailure::Timeout) => Err(timed_out()),
        Err(failure) => Err(failure),
    }
}

/// Hands the data of each server-sent event in `stream` to `on_event` as it
/// arrives; `timeout_ms` bounds each wait for the next event.
pub async fn read_events(
    stream: worker::ByteStream,
    timeout_ms: u64,
    on_event: &mut dyn FnMut(&str),
) -> Result<(), HttpFailure> {
    use eventsource_stream::Eventsource;
    let mut events = stream.eventsource();
    loop {
        let deadline = Delay::from(Duration::from_millis(timeout_ms));
        match select(events.next(), deadline).await {
            Either::Left((Some(Ok(event)), _)) => on_event(&event.data),
            Either::Left((Some(Err(error)), _)) => return Err(HttpFailure::Network(format!("event stream: {error}"))),
            Either::Left((None, _)) => return Ok(()),
            Either::Right(_) => return Err(HttpFailure::Timeout),
        }
    }
}

/// Downloads a platform's file: a GET (no redirects) that reads at most one
/// byte past [`FILE_LIMIT_BYTES`], to tell a file that is too large.
pub async fn download(url: &str, headers: &[(&str, &str)]) -> Result<Vec<u8>, Refusal> {
    let limit = FILE_LIMIT_BYTES as usize + 1;
    let answer = get_manual(Op::PlatformCall, url, headers, DOWNLOAD_TIMEOUT_MS, limit)
        .await
        .map_err(|_| Refusal::Unreachable)?;
    if answer.status != 200 {
        return Err(Refusal::Unreachable);
    }
    if answer.body.len() >= limit {
        return Err(Refusal::TooLarge { limit_mb: FILE_LIMIT_BYTES / (1024 * 1024) });
    }
    Ok(answer.body)
}

/// Sends a `multipart/form-data` body (text `fields` and one file: field
/// name, file name, bytes), built by the runtime's `FormData`. The text
/// fields leave redacted, as every JSON body does (a model call's are its
/// own: the model client scrubs them).
pub async fn send_form(
    kind: Op,
    method: Method,
    url: &str,
    headers: &[(&str, &str)],
    fields: &[(&str, &str)],
    file: (&str, &str, &[u8]),
    timeout_ms: u64,
) -> Result<HttpAnswer, HttpFailure> {
    let network = |error: JsValue| HttpFailure::Network(format!("{error:?}"));
    let form = worker::web_sys::FormData::new().map_err(network)?;
    let redactor = crate::runtime::config::redactor();
    for (name, value) in fields {
        let value = if kind == Op::ModelCall { (*value).into() } else { redactor.redact(value) };
        form.append_with_str(name, &value).map_err(network)?;
    }
    // The file part's type comes from its name (the runtime's `File`), as
    // the receiving services read it.
    let (field, file_name, bytes) = file;
    let parts = js_sys::Array::of1(&Uint8Array::from(bytes).buffer());
    let part = worker::web_sys::File::new_with_u8_array_sequence(&parts, file_name).map_err(network)?;
    form.append_with_blob_and_filename(field, &part, file_name).map_err(network)?;
    let request_headers = Headers::new();
    for (name, value) in headers {
        request_headers.set(name, value).map_err(|error| HttpFailure::Network(error.to_string()))?;
    }
    let mut init = RequestInit::new();
    init.with_method(method).with_headers(request_headers).with_body(Some(form.into()));
    let request = Request::new_with_init(url, &init).map_err(|error| HttpFailure::Network(error.to_string()))?;
    exchange(kind, request, timeout_ms, None).await
}

/// A GET that does not follow redirects (the caller checks each hop) and
/// reads at most `max_body` bytes of the body, so a huge page cannot exhaust
/// the isolate's memory.
pub async fn get_manual(
    kind: Op,
    url: &str,
    headers: &[(&str, &str)],
    timeout_ms: u64,
    max_body: usize,
) -> Result<HttpAnswer, HttpFailure> {
    let build = || {
        let request_headers = Headers::new();
        for (name, value) in headers {
            request_headers.set(name, value)?;
        }
        let mut init = RequestInit::new();
        init.with_method(Method::Get).with_headers(request_headers).with_redirect(RequestRedirect::Manual);
        Request::new_with_init(url, &init)
    };
    let request = build().map_err(|error: worker::Error| HttpFailure::Network(error.to_string()))?;
    exchange(kind, request, timeout_ms, Some(max_body)).await
}

/// Sends a request and reads the answer (all of it, or its first `max_body`
/// bytes), within `timeout_ms`.
async fn exchange(
    kind: Op,
    request: Request,
    timeout_ms: u64,
    max_body: Option<usize>,
) -> Result<HttpAnswer, HttpFailure> {
    ops::count(kind);
    let controller = AbortController::default();
    let signal = controller.signal();
    let exchange = async move {
        let mut response = Fetch::Request(request).send_with_signal(&signal).await?;
        let retry_after_secs =
            response.headers().get("retry-after")?.and_then(|value| crate::platforms::parse_retry_after(&value));
        let location = response.headers().get("location")?;
        let status = response.status_code();
        let body = match max_body {
            None => whole_body(response).await?,
            Some(limit) => {
                let mut body = Vec::new();
                let mut stream = response.stream()?;
                while let Some(chunk) = stream.next().await {
                    body.extend_from_slice(&chunk?);
                    if body.len() >= limit {
                        body.truncate(limit);
                        break; // dropping the stream cancels the rest
                    }
                }
                body
            }
        };
        Ok::<_, worker::Error>(HttpAnswer { status, body, retry_after_secs, location })
    };
    let deadline = Delay::from(Duration::from_millis(timeout_ms));
    match select(Box::pin(exchange), deadline).await {
        Either::Left((Ok(answer), _)) => Ok(answer),
        Either::Left((Err(error), _)) => Err(HttpFailure::Network(error.to_string())),
        Either::Right(_) => {
            controller.abort();
            Err(HttpFailure::Timeout)
        }
    }
}

fn build_request(
    method: Method,
    url: &str,
    headers: &[(&str, &str)],
    body: &serde_json::Value,
) -> worker::Result<Request> {
    let request_headers = Headers::new();
    for (name, value) in headers {
        request_headers.set(name, value)?;
    }
    let mut init = RequestInit::new();
    // A null body means none at all (Discord's typing and reaction calls).
    if !body.is_null() {
        request_headers.set("content-type", "application/json")?;
        init.with_body(Some(body.to_string().into()));
    }
    init.with_method(method).with_headers(request_headers);
    Request::new_with_init(url, &init)
}

/// A whole response body, read in one runtime call: reading the stream chunk
/// by chunk from wasm costs a call per chunk and a lock release, which a V8
/// profile of the ack showed as a third of its time in runtime APIs.
pub async fn whole_body(response: Response) -> worker::Result<Vec<u8>> {
    let response: worker::web_sys::Response = response.into();
    let buffer = super::settled::settled(&response.array_buffer()?).await?;
    Ok(Uint8Array::new(&buffer).to_vec())
}

/// Reads a request body of at most `cap` bytes. A declared length over the
/// cap is refused before anything is read, one within it is read at once; a
/// body without one is read only until it passes the cap.
pub async fn read_body(request: &mut Request, cap: usize) -> Result<Vec<u8>, ApiError> {
    let declared = crate::api_error::declared_length(request.headers().get("content-length").ok().flatten(), cap)?;
    let unreadable = |_| ApiError::BadRequest("unreadable body".into());
    if declared.is_some() {
        // The runtime holds the body to its declared length.
        return request.bytes().await.map_err(unreadable);
    }
    let mut body = Vec::new();
    let Ok(mut stream) = request.stream() else {
        return Ok(body); // no body at all
    };
    while let Some(chunk) = stream.next().await {
        body.extend_from_slice(&chunk.map_err(unreadable)?);
        if body.len() > cap {
            return Err(ApiError::TooLarge(cap));
        }
    }
    Ok(body)
}

/// Milliseconds since the Unix epoch, from the JS clock (`Instant` panics on
/// wasm32): `Date.now()`, one call, where `worker::Date::now()` makes a `Date`
/// and asks it (two calls and an object, on every inbound more than once).
pub fn now_ms() -> i64 {
    js_sys::Date::now() as i64
}

/// A 200 whose body is JSON already (serialized once, passed on as it is).
pub fn json_ok(body: String) -> worker::Result<Response> {
    let mut response = Response::ok(body)?;
    response.headers_mut().set("content-type", "application/json")?;
    Ok(response)
}

/// Runs `work` for at most `timeout_ms`; None when the time ran out first.
pub async fn within<T>(timeout_ms: u64, work: impl std::future::Future<Output = T>) -> Option<T> {
    let deadline = Delay::from(Duration::from_millis(timeout_ms));
    match select(Box::pin(work), deadline).await {
        Either::Left((value, _)) => Some(value),
        Either::Right(_) => None,
    }
}

/// Waits, for backoff between attempts.
pub async fn sleep_ms(milliseconds: u64) {
    if milliseconds > 0 {
        Delay::from(Duration::from_millis(milliseconds)).await;
    }
}

/// The request method of a verb.
pub fn method(verb: Verb) -> Method {
    match verb {
        Verb::Get => Method::Get,
        Verb::Post => Method::Post,
        Verb::Put => Method::Put,
        Verb::Delete => Method::Delete,
    }
}

/// A request to a Durable Object's `route`; `query` is appended as given
/// (empty, or `?…`).
pub fn object_request<R: ObjectRoute>(
    route: R,
    query: &str,
    body: Option<String>,
    headers: &[(&str, &str)],
) -> worker::Result<Request> {
    let sent = Headers::new();
    for (name, value) in headers {
        sent.set(name, value)?;
    }
    let mut init = RequestInit::new();
    init.with_method(method(route.verb())).with_headers(sent).with_body(body.map(Into::into));
    Request::new_with_init(&format!("{}{query}", route.url()), &init)
}

/// The largest schedule or task body taken.
pub const MAX_ADMIN_BODY_BYTES: usize = 64 << 10;

/// A small JSON object body (schedules, tasks).
pub async fn json_object(request: &mut Request) -> Result<serde_json::Value, ApiError> {
    let body = read_body(request, MAX_ADMIN_BODY_BYTES).await?;
    serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .filter(serde_json::Value::is_object)
        .ok_or_else(|| ApiError::BadRequest("expected a JSON object".into()))
}

/// POSTs an `application/x-www-form-urlencoded` body (an OAuth token request)
/// and waits at most `timeout_ms`. Not redacted: such a body carries a
/// client secret to the one endpoint it is for, by design.
pub async fn post_urlencoded(
    kind: Op,
    url: &str,
    fields: &[(&str, &str)],
    timeout_ms: u64,
) -> Result<HttpAnswer, HttpFailure> {
    let body = form_urlencoded::Serializer::new(String::new()).extend_pairs(fields).finish();
    let build = || {
        let headers = Headers::new();
        headers.set("content-type", "application/x-www-form-urlencoded")?;
        let mut init = RequestInit::new();
        init.with_method(Method::Post).with_headers(headers).with_body(Some(body.into()));
        Request::new_with_init(url, &init)
    };
    let request = build().map_err(|error: worker::Error| HttpFailure::Network(error.to_string()))?;
    exchange(kind, request, timeout_ms, None).await
}
