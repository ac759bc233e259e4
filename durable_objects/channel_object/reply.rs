//! A `POST` route's answer: a status and a body, which is all the RPC call
//! ([`super::ChannelObject::post`]) passes back. Not a `worker::Response`:
//! making one makes a JS `Headers` and sets its content type in it, only for
//! the RPC method to read the status and the body back out. A caller by
//! `fetch` gets the same answer as a response ([`Reply::into_response`]).

use serde::Serialize;
use worker::{Response, Result};

/// What a route answers: its status, and its body (JSON, or an error's text).
pub(super) struct Reply {
    pub status: u16,
    pub body: String,
    json: bool,
}

impl Reply {
    /// 200 with `value` as JSON.
    pub fn json(value: &impl Serialize) -> Result<Reply> {
        Ok(Reply { status: 200, body: serde_json::to_string(value)?, json: true })
    }

    /// 200 with nothing to say.
    pub fn done() -> Reply {
        Reply { status: 200, body: String::new(), json: false }
    }

    /// `status` (4xx or 5xx) with `message`, as `Response::error` says it.
    pub fn error(message: &str, status: u16) -> Reply {
        Reply { status, body: message.to_string(), json: false }
    }

    /// The same answer as an HTTP response.
    pub fn into_response(self) -> Result<Response> {
        match (self.json, self.status) {
            (true, _) => crate::runtime::http::json_ok(self.body),
            (false, 200) => Response::ok(self.body),
            (false, status) => Response::error(self.body, status),
        }
    }
}
