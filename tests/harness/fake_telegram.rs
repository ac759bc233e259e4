//! A fake Telegram Bot API: records every call and answers like Telegram.

use std::sync::{Arc, Mutex};

use axum::extract::{Path, State};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};

use super::server::ServerHandle;

#[derive(Default)]
struct Calls {
    /// (token path segment, method, body)
    recorded: Vec<(String, String, Value)>,
    next_message_id: i64,
    /// What getChatMemberCount answers (bots included, as Telegram counts).
    member_count: u64,
}

pub struct FakeTelegram {
    pub base_url: String,
    calls: Arc<Mutex<Calls>>,
    _server: ServerHandle,
}

impl FakeTelegram {
    pub async fn start() -> Self {
        let calls = Arc::new(Mutex::new(Calls { next_message_id: 500, member_count: 10, ..Calls::default() }));
        let router = Router::new().route("/{bot}/{method}", post(call)).with_state(calls.clone());
        let server = ServerHandle::serve(router).await;
        FakeTelegram { base_url: server.base_url.clone(), calls, _server: server }
    }

    /// The bodies of every call of `method`, in order.
    pub fn calls(&self, method: &str) -> Vec<Value> {
        let calls = self.calls.lock().unwrap();
        calls.recorded.iter().filter(|(_, name, _)| name == method).map(|(_, _, body)| body.clone()).collect()
    }

    /// Sets the member count the fake reports for every chat.
    pub fn set_member_count(&self, count: u64) {
        self.calls.lock().unwrap().member_count = count;
    }

    /// How many calls of any method arrived.
    pub fn total_calls(&self) -> usize {
        self.calls.lock().unwrap().recorded.len()
    }

    /// The token path segments calls used (`bot<token>`).
    pub fn tokens_used(&self) -> Vec<String> {
        self.calls.lock().unwrap().recorded.iter().map(|(bot, _, _)| bot.clone()).collect()
    }
}

async fn call(
    State(calls): State<Arc<Mutex<Calls>>>,
    Path((bot, method)): Path<(String, String)>,
    Json(body): Json<Value>,
) -> Json<Value> {
    let mut calls = calls.lock().unwrap();
    if method == "getChatMemberCount" {
        let count = calls.member_count;
        calls.recorded.push((bot, method, body));
        return Json(json!({"ok": true, "result": count}));
    }
    calls.next_message_id += 1;
    let message_id = calls.next_message_id;
    let chat_id = body["chat_id"].clone();
    let text = body["text"].clone();
    calls.recorded.push((bot, method, body));
    Json(json!({"ok": true, "result": {"message_id": message_id, "date": 1_795_000_000,
        "chat": {"id": chat_id, "type": "private"}, "text": text}}))
}
