//! Reading a request's event stream, the pure part (protocol revision
//! 2025-11-25, "Resumability and redelivery"): what each message on the
//! stream is (the answer, a request the server makes of the client, a
//! notification), what the stream told the client for a resumption (the
//! last event id, the `retry` time), and whether and when to resume a
//! stream that ended before its answer (`GET` with `Last-Event-ID`).

use serde_json::Value;

/// Resumptions of one request's stream at most (a server that closes every
/// stream before answering is given up on).
pub const MAX_RESUMES: u32 = 5;
/// The wait before resuming when the server named none.
pub const DEFAULT_RETRY_MS: u64 = 1_000;
/// The longest wait honoured (a server asking for more is cut to this; the
/// call's own timeout still bounds it all).
pub const MAX_RETRY_MS: u64 = 10_000;

/// One message read on a stream, as it concerns request `id`.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// The answer to the request (a result or an error).
    Answer,
    /// The server asks the client something (`elicitation/create`, `ping`…): it waits for an answer.
    Request { id: Value, method: String, params: Value },
    /// A notification, or an answer to something else: noted, not answered.
    Other,
}

/// What a message on the stream of request `id` is.
pub fn classify(message: &Value, id: u64) -> Incoming {
    let is_answer = message.get("result").is_some() || message.get("error").is_some();
    if is_answer {
        return match message["id"] == id {
            true => Incoming::Answer,
            false => Incoming::Other,
        };
    }
    match (message.get("id"), message["method"].as_str()) {
        (Some(request_id), Some(method)) if !request_id.is_null() => Incoming::Request {
            id: request_id.clone(),
            method: method.to_string(),
            params: message.get("params").cloned().unwrap_or(Value::Null),
        },
        _ => Incoming::Other,
    }
}

/// What a stream told the client so far: the last event id it saw and the
/// last `retry` time (both stay across resumptions until the server sends new ones).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resumable {
    pub last_event_id: Option<String>,
    pub retry_ms: Option<u64>,
    /// Resumptions made so far.
    pub resumes: u32,
}

impl Resumable {
    /// Notes an event's `id:` (an empty one is no id) and `retry:` fields.
    pub fn saw(&mut self, id: &str, retry_ms: Option<u64>) {
        if !id.is_empty() {
            self.last_event_id = Some(id.to_string());
        }
        if retry_ms.is_some() {
            self.retry_ms = retry_ms;
        }
    }

    /// The stream ended (gracefully) without the answer: resume it after the
    /// returned milliseconds with `GET` and `Last-Event-ID`, or give up (no
    /// event id to resume from, or too many resumptions). Counts the resumption.
    pub fn resume(&mut self) -> Option<(u64, String)> {
        let last = self.last_event_id.clone()?;
        if self.resumes >= MAX_RESUMES {
            return None;
        }
        self.resumes += 1;
        Some((self.retry_ms.unwrap_or(DEFAULT_RETRY_MS).min(MAX_RETRY_MS), last))
    }
}

/// The answer to a request the server made that this client does not serve
/// (only `ping` is answered, with an empty result): JSON-RPC "method not found".
pub fn unserved(id: &Value, method: &str) -> Value {
    match method {
        "ping" => serde_json::json!({ "jsonrpc": "2.0", "id": id, "result": {} }),
        _ => serde_json::json!({
            "jsonrpc": "2.0", "id": id,
            "error": { "code": -32601, "message": format!("edgebot does not serve {method}") },
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_answer_a_server_request_and_the_rest_are_told_apart() {
        assert_eq!(classify(&json!({ "jsonrpc": "2.0", "id": 3, "result": {} }), 3), Incoming::Answer);
        assert_eq!(classify(&json!({ "jsonrpc": "2.0", "id": 3, "error": { "code": 1 } }), 3), Incoming::Answer);
        assert_eq!(classify(&json!({ "jsonrpc": "2.0", "id": 4, "result": {} }), 3), Incoming::Other, "another id");
        let asked =
            json!({ "jsonrpc": "2.0", "id": "e1", "method": "elicitation/create", "params": { "message": "m" } });
        assert_eq!(
            classify(&asked, 3),
            Incoming::Request {
                id: json!("e1"),
                method: "elicitation/create".into(),
                params: json!({ "message": "m" })
            }
        );
        // A server's request may reuse the client's id number: it is a request, not the answer.
        let same_number = json!({ "jsonrpc": "2.0", "id": 3, "method": "ping" });
        assert!(matches!(classify(&same_number, 3), Incoming::Request { .. }));
        let note = json!({ "jsonrpc": "2.0", "method": "notifications/progress" });
        assert_eq!(classify(&note, 3), Incoming::Other);
    }

    #[test]
    fn a_stream_that_ends_early_is_resumed_from_its_last_event_after_its_retry_time() {
        let mut stream = Resumable::default();
        assert_eq!(stream.resume(), None, "no event id: nothing to resume from");
        stream.saw("event-1", Some(500));
        stream.saw("", None);
        assert_eq!(stream.resume(), Some((500, "event-1".to_string())));
        stream.saw("event-2", None);
        assert_eq!(stream.resume(), Some((500, "event-2".to_string())), "the retry time stays");
        stream.saw("event-3", Some(3_600_000));
        assert_eq!(stream.resume().unwrap().0, MAX_RETRY_MS, "a huge retry is cut");
        let mut fresh = Resumable::default();
        fresh.saw("a", None);
        assert_eq!(fresh.resume(), Some((DEFAULT_RETRY_MS, "a".to_string())));
        for _ in 1..MAX_RESUMES {
            assert!(fresh.resume().is_some());
        }
        assert_eq!(fresh.resume(), None, "bounded");
    }

    #[test]
    fn requests_edgebot_does_not_serve_are_refused_and_ping_is_answered() {
        assert_eq!(unserved(&json!(9), "ping")["result"], json!({}));
        let refused = unserved(&json!("s1"), "sampling/createMessage");
        assert_eq!(refused["error"]["code"], -32601);
        assert_eq!(refused["id"], "s1");
    }
}
