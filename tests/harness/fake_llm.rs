//! A scripted OpenAI-compatible chat-completions server. Each test queues the
//! answers it wants; every request is recorded. An empty script answers 500,
//! so an unexpected model call shows up as a failure, never as a pass.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};

use super::server::ServerHandle;

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Scripted {
    /// A `reply` tool call with this text.
    Reply(String),
    /// Any tool calls: (name, arguments).
    ToolCalls(Vec<(String, Value)>),
    /// A plain assistant message without tool calls.
    Text(String),
    /// An HTTP error status.
    Status(u16),
    /// A 200 whose body is this raw text.
    Raw(String),
    /// Answer only after this long (for timeouts), then a 500.
    Hang(Duration),
    /// A `reply` tool call, sent only after this long (a slow model).
    SlowReply(Duration, String),
    /// Any other answer, given only after this long.
    Delayed(Duration, Box<Scripted>),
    /// Any other answer, given only once the test opens the gate (`Notify::notify_one`).
    Gated(std::sync::Arc<tokio::sync::Notify>, Box<Scripted>),
    /// A `reply` tool call that repeats the turn's "Current message(s)"
    /// section, so a test can tell which inbounds each answer covered.
    Echo,
    /// A `reply` tool call with this text whose answer breaks off halfway: a
    /// stream that stops without its finish (no finish reason, no `[DONE]`),
    /// or a whole body cut in the middle.
    CutOff(String),
}

#[derive(Default)]
struct Script {
    answers: VecDeque<Scripted>,
    /// Answers for requests whose system prompt contains a marker, taken
    /// before the general script (for processes that run concurrently).
    routed: Vec<(String, VecDeque<Scripted>)>,
    requests: Vec<Value>,
    /// Bodies sent to `/v1/embeddings`, in order.
    embeddings: Vec<Value>,
    in_flight: usize,
    /// The answer once the script is used up (None: a 500), for load that
    /// runs turns without counting them (the bench).
    fallback: Option<Scripted>,
    /// How answers asked for as a stream are sent.
    pace: Pace,
    /// When each streamed answer's first chunk went out (`make bench`).
    first_chunks: Vec<std::time::Instant>,
    /// When each streamed answer's last chunk went out.
    last_chunks: Vec<std::time::Instant>,
    /// The bodies of `/v1/audio/transcriptions` requests, and the transcript to answer.
    transcriptions: Vec<Vec<u8>>,
    transcript: Option<String>,
    /// When each chat request arrived (`make bench`).
    arrivals: Vec<std::time::Instant>,
}

pub struct FakeLlm {
    pub base_url: String,
    script: Arc<Mutex<Script>>,
    _server: ServerHandle,
}

impl FakeLlm {
    pub async fn start() -> Self {
        let script = Arc::new(Mutex::new(Script::default()));
        let router = Router::new()
            .route("/v1/chat/completions", post(complete))
            .route("/v1/embeddings", post(embed))
            .route("/v1/audio/transcriptions", post(transcribe))
            .with_state(script.clone());
        let server = ServerHandle::serve(router).await;
        FakeLlm { base_url: server.base_url.clone(), script, _server: server }
    }

    pub fn push(&self, answer: Scripted) {
        self.script.lock().unwrap().answers.push_back(answer);
    }

    /// Queues an answer for requests whose system prompt contains `marker`.
    pub fn push_for(&self, marker: &str, answer: Scripted) {
        let mut script = self.script.lock().unwrap();
        match script.routed.iter_mut().find(|(existing, _)| existing == marker) {
            Some((_, answers)) => answers.push_back(answer),
            None => script.routed.push((marker.to_string(), VecDeque::from([answer]))),
        }
    }

    pub fn reply(&self, text: &str) {
        self.push(Scripted::Reply(text.to_string()));
    }

    /// When each chat request arrived, in order.
    #[allow(dead_code)] // used by `make bench`
    pub fn arrivals(&self) -> Vec<std::time::Instant> {
        self.script.lock().unwrap().arrivals.clone()
    }

    /// When each streamed answer's first chunk went out, in order.
    #[allow(dead_code)] // used by `make bench`
    pub fn first_chunks(&self) -> Vec<std::time::Instant> {
        self.script.lock().unwrap().first_chunks.clone()
    }

    /// Transcriptions answer with `text`.
    pub fn set_transcript(&self, text: &str) {
        self.script.lock().unwrap().transcript = Some(text.to_string());
    }

    /// The multipart bodies transcriptions were asked with.
    pub fn transcriptions(&self) -> Vec<Vec<u8>> {
        self.script.lock().unwrap().transcriptions.clone()
    }

    /// When each streamed answer was finished: its last chunk went out.
    pub fn last_chunks(&self) -> Vec<std::time::Instant> {
        self.script.lock().unwrap().last_chunks.clone()
    }

    /// Paces the answers asked for as a stream (`"stream": true`).
    pub fn set_pace(&self, pace: Pace) {
        self.script.lock().unwrap().pace = pace;
    }

    /// Answers every request the script does not cover with `answer`.
    pub fn answer_always(&self, answer: Scripted) {
        self.script.lock().unwrap().fallback = Some(answer);
    }

    /// Requests received but not yet answered.
    pub fn in_flight(&self) -> usize {
        self.script.lock().unwrap().in_flight
    }

    /// Every embeddings request received so far, in order.
    pub fn embedding_requests(&self) -> Vec<Value> {
        self.script.lock().unwrap().embeddings.clone()
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.script.lock().unwrap().requests.clone()
    }
}

async fn complete(State(script): State<Arc<Mutex<Script>>>, Json(request): Json<Value>) -> Response {
    let request_copy = request.clone();
    let answer = {
        let mut script = script.lock().unwrap();
        let system = request["messages"][0]["content"].as_str().unwrap_or_default().to_string();
        script.requests.push(request.clone());
        script.arrivals.push(std::time::Instant::now());
        script.in_flight += 1;
        let routed = script
            .routed
            .iter_mut()
            .find(|(marker, answers)| system.contains(marker.as_str()) && !answers.is_empty())
            .and_then(|(_, answers)| answers.pop_front());
        routed.or_else(|| script.answers.pop_front()).or_else(|| script.fallback.clone())
    };
    let answer = match answer {
        Some(Scripted::Delayed(duration, inner)) => {
            tokio::time::sleep(duration).await;
            Some(*inner)
        }
        Some(Scripted::Gated(gate, inner)) => {
            gate.notified().await;
            Some(*inner)
        }
        other => other,
    };
    let answer = match answer {
        Some(Scripted::Echo) => Some(Scripted::Reply(format!("echo: {}", current_section(&request_copy)))),
        other => other,
    };
    let (answer, cut_off) = match answer {
        Some(Scripted::CutOff(text)) => (Some(Scripted::Reply(text)), true),
        other => (other, false),
    };
    let response = answer_with(answer).await;
    let pace = script.lock().unwrap().pace;
    let response = match (request_copy["stream"] == json!(true), cut_off) {
        (true, _) => as_events(response, pace, script.clone(), cut_off).await,
        (false, true) => {
            let body = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap_or_default();
            let half = body.slice(..body.len() / 2);
            Response::builder().header("content-type", "application/json").body(axum::body::Body::from(half)).unwrap()
        }
        (false, false) => response,
    };
    script.lock().unwrap().in_flight -= 1;
    response
}

/// How a streamed answer is sent: its first chunk after `first`, then one
/// every `every`, each with `chars` characters of text or tool arguments.
#[derive(Debug, Clone, Copy)]
pub struct Pace {
    pub first: Duration,
    pub every: Duration,
    pub chars: usize,
}

impl Default for Pace {
    fn default() -> Self {
        Pace { first: Duration::ZERO, every: Duration::from_millis(20), chars: 8 }
    }
}

/// A completion sent as OpenAI's streamed chunks (server-sent events), paced;
/// anything else (an error status, a raw body) as it was. `cut_off` ends the
/// stream halfway through the answer's chunks, with no finish.
async fn as_events(response: Response, pace: Pace, script: Arc<Mutex<Script>>, cut_off: bool) -> Response {
    if response.status() != StatusCode::OK {
        return response;
    }
    let body = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap_or_default();
    let Some(message) =
        serde_json::from_slice::<Value>(&body).ok().and_then(|value| value.pointer("/choices/0/message").cloned())
    else {
        return (StatusCode::OK, body).into_response();
    };
    let pieces = |text: &str| -> Vec<String> {
        let characters: Vec<char> = text.chars().collect();
        characters.chunks(pace.chars.max(1)).map(|chunk| chunk.iter().collect()).collect()
    };
    let delta = |delta: Value| json!({"choices": [{"index": 0, "delta": delta, "finish_reason": null}]}).to_string();
    let mut chunks = vec![delta(json!({"role": "assistant"}))];
    for piece in pieces(message["content"].as_str().unwrap_or_default()) {
        chunks.push(delta(json!({"content": piece})));
    }
    for (index, call) in message["tool_calls"].as_array().into_iter().flatten().enumerate() {
        chunks.push(delta(json!({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
            "function": {"name": call["function"]["name"], "arguments": ""}}]})));
        for piece in pieces(call["function"]["arguments"].as_str().unwrap_or_default()) {
            chunks.push(delta(json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})));
        }
    }
    chunks.push(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}).to_string());
    chunks.push(json!({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5}}).to_string());
    chunks.push("[DONE]".to_string());
    if cut_off {
        chunks.truncate(chunks.len() / 2);
    }
    let frames = futures_util::stream::unfold(0, move |at| {
        let (chunks, script) = (chunks.clone(), script.clone());
        async move {
            let frame = chunks.get(at)?;
            tokio::time::sleep(if at == 0 { pace.first } else { pace.every }).await;
            if at == 0 {
                script.lock().unwrap().first_chunks.push(std::time::Instant::now());
            }
            if at + 1 == chunks.len() {
                script.lock().unwrap().last_chunks.push(std::time::Instant::now());
            }
            Some((Ok::<_, std::convert::Infallible>(axum::body::Bytes::from(format!("data: {frame}\n\n"))), at + 1))
        }
    });
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(axum::body::Body::from_stream(frames))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// An OpenAI-compatible transcription: the multipart body is kept (as text,
/// lossily) for the test to read; the answer is the scripted transcript.
async fn transcribe(State(script): State<Arc<Mutex<Script>>>, body: axum::body::Bytes) -> Response {
    let mut script = script.lock().unwrap();
    script.transcriptions.push(body.to_vec());
    match script.transcript.clone() {
        Some(text) => Json(json!({ "text": text })).into_response(),
        None => (StatusCode::INTERNAL_SERVER_ERROR, "no transcript scripted").into_response(),
    }
}

/// An OpenAI-compatible embeddings answer: one constant 384-wide vector per input.
async fn embed(State(script): State<Arc<Mutex<Script>>>, Json(request): Json<Value>) -> Response {
    let inputs = request["input"].as_array().map_or(1, Vec::len);
    script.lock().unwrap().embeddings.push(request);
    let data: Vec<Value> =
        (0..inputs).map(|index| json!({"object": "embedding", "index": index, "embedding": vec![0.05; 384]})).collect();
    Json(json!({"object": "list", "data": data})).into_response()
}

async fn answer_with(answer: Option<Scripted>) -> Response {
    let calls = |calls: Vec<(String, Value)>| {
        let tool_calls: Vec<Value> = calls
            .into_iter()
            .enumerate()
            .map(|(index, (name, arguments))| {
                json!({"id": format!("call_{index}"), "type": "function",
                       "function": {"name": name, "arguments": arguments.to_string()}})
            })
            .collect();
        completion(json!({"role": "assistant", "content": null, "tool_calls": tool_calls}))
    };
    match answer {
        Some(Scripted::Reply(text)) => calls(vec![("reply".into(), json!({ "content": text }))]),
        Some(Scripted::ToolCalls(list)) => calls(list),
        Some(Scripted::Text(text)) => completion(json!({"role": "assistant", "content": text})),
        Some(Scripted::Status(status)) => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            (status, Json(json!({"error": {"message": "scripted failure"}}))).into_response()
        }
        Some(Scripted::Raw(body)) => (StatusCode::OK, body).into_response(),
        Some(Scripted::SlowReply(duration, text)) => {
            tokio::time::sleep(duration).await;
            calls(vec![("reply".into(), json!({ "content": text }))])
        }
        Some(Scripted::Hang(duration)) => {
            tokio::time::sleep(duration).await;
            (StatusCode::INTERNAL_SERVER_ERROR, "too late").into_response()
        }
        Some(Scripted::Delayed(..) | Scripted::Gated(..) | Scripted::Echo | Scripted::CutOff(..)) | None => {
            (StatusCode::INTERNAL_SERVER_ERROR, Json(json!({"error": {"message": "script exhausted"}}))).into_response()
        }
    }
}

fn completion(message: Value) -> Response {
    Json(json!({
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    }))
    .into_response()
}

/// The "Current message(s)" section of a channel turn's last user message
/// (empty when the turn has none).
pub fn current_section(request: &Value) -> String {
    const HEADING: &str = "## Current message(s)";
    let last = request["messages"].as_array().and_then(|messages| messages.last());
    let text = last.and_then(|message| message["content"].as_str()).unwrap_or_default();
    let Some(start) = text.find(HEADING) else { return String::new() };
    let section = &text[start + HEADING.len()..];
    let end = section.find("\n\n").unwrap_or(section.len());
    section[..end].to_string()
}
