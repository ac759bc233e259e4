//! Shared test harness: fake outside services and the Worker under test.

// Explicit paths, so the bench can include this harness too.
#[path = "harness/browser.rs"]
pub mod browser;
#[path = "harness/chat_socket.rs"]
pub mod chat_socket;
#[path = "harness/chats.rs"]
pub mod chats;
#[path = "harness/fake_api.rs"]
pub mod fake_api;
#[path = "harness/fake_gateway.rs"]
pub mod fake_gateway;
#[path = "harness/fake_llm.rs"]
pub mod fake_llm;
#[path = "harness/fake_mcp.rs"]
pub mod fake_mcp;
#[path = "harness/fake_teams.rs"]
pub mod fake_teams;
#[path = "harness/hog.rs"]
pub mod hog;
#[path = "harness/mail.rs"]
pub mod mail;
#[path = "harness/pages.rs"]
pub mod pages;
#[path = "harness/server.rs"]
mod server;
#[path = "harness/worker.rs"]
pub mod worker;

use std::future::Future;
use std::time::Duration;

use serde_json::{json, Value};

pub use fake_api::{FakeApi, Flavor};
pub use fake_llm::{FakeLlm, Scripted};
pub use worker::Worker;

pub const TELEGRAM_SECRET: &str = "test-webhook-secret";
pub const TELEGRAM_TOKEN: &str = "4242:test-token";
/// The model provider's key the Worker is configured with (a secret that must never show).
pub const LLM_KEY: &str = "test-llm-key";
pub const ADMIN_TOKEN: &str = "test-admin-token";
/// The friendly message's opening words (prompts/model_failure.md.j2).
pub const FAILURE_MESSAGE_START: &str = "Sorry, I couldn't think that through";

/// Polls `check` until it yields a value or `timeout` passes.
pub async fn wait_for<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        if tokio::time::Instant::now() > deadline {
            panic!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// One test's world: the fakes and a Worker pointed at them.
pub struct TestEnv {
    pub llm: FakeLlm,
    pub telegram: FakeApi,
    pub slack: FakeApi,
    pub discord: FakeApi,
    pub worker: Worker,
    pub client: reqwest::Client,
    vars: Vec<(String, String)>,
    /// The Worker's persisted state (local D1, Durable Objects), removed at the end.
    state: tempfile::TempDir,
}

impl TestEnv {
    pub async fn start() -> Self {
        Self::start_with(&[]).await
    }

    /// Starts with extra vars (or overrides of the defaults below).
    pub async fn start_with(extra_vars: &[(&str, &str)]) -> Self {
        let llm = FakeLlm::start().await;
        let telegram = FakeApi::start(Flavor::Telegram).await;
        let slack = FakeApi::start(Flavor::Slack).await;
        let discord = FakeApi::start(Flavor::Discord).await;
        let mut vars: Vec<(String, String)> = [
            ("TELEGRAM_BOT_TOKEN", TELEGRAM_TOKEN.to_string()),
            ("TELEGRAM_BOT_USERNAME", "edge_bot".into()),
            ("TELEGRAM_WEBHOOK_SECRET", TELEGRAM_SECRET.into()),
            ("TELEGRAM_API_BASE", telegram.base_url.clone()),
            ("OPENAI_BASE_URL", format!("{}/v1", llm.base_url)),
            ("OPENAI_API_KEY", LLM_KEY.into()),
            ("CHANNEL_MODEL", "openai/scripted-model".into()),
            ("ADMIN_TOKEN", ADMIN_TOKEN.into()),
            ("LLM_TIMEOUT_MS", "1500".into()),
            ("LLM_BACKOFF_MS", "50".into()),
            ("SLACK_SIGNING_SECRET", SLACK_SECRET.into()),
            ("SLACK_BOT_TOKEN", "xoxb-test".into()),
            ("SLACK_BOT_USER_ID", SLACK_BOT_USER.into()),
            ("SLACK_API_BASE", format!("{}/api", slack.base_url)),
            ("DISCORD_PUBLIC_KEY", discord_public_key()),
            ("DISCORD_APPLICATION_ID", DISCORD_APPLICATION.into()),
            ("DISCORD_API_BASE", format!("{}/api/v10", discord.base_url)),
            // Telegram, Slack and Discord stream by default; the tests that
            // read a reply from its one send turn it on where they test it
            // (tests/streaming.rs).
            ("STREAM_REPLIES", "web".into()),
        ]
        .into_iter()
        .map(|(name, value)| (name.to_string(), value))
        .collect();
        for (name, value) in extra_vars {
            vars.retain(|(existing, _)| existing != name);
            vars.push((name.to_string(), value.to_string()));
        }
        let state = tempfile::TempDir::new().expect("state dir");
        let worker = Worker::start(&vars, state.path()).await;
        TestEnv { llm, telegram, slack, discord, worker, client: reqwest::Client::new(), vars, state }
    }

    /// Kills the Worker at once (as a crash would) and starts a new one on the
    /// same persisted state and the same fakes.
    pub async fn crash_and_restart(&mut self) {
        self.crash_for(Duration::ZERO).await;
    }

    /// Kills the Worker, leaves it down this long, then starts it again.
    pub async fn crash_for(&mut self, downtime: Duration) {
        self.worker.kill();
        tokio::time::sleep(downtime).await;
        self.worker = Worker::start(&self.vars, self.state.path()).await;
    }

    /// Stops the Worker and starts it again on the same state with these vars
    /// changed (as a deploy with new settings would).
    pub async fn restart_with(&mut self, changed: &[(&str, &str)]) {
        self.worker.kill();
        for (name, value) in changed {
            self.vars.retain(|(kept, _)| kept != name);
            self.vars.push((name.to_string(), value.to_string()));
        }
        self.worker = Worker::start(&self.vars, self.state.path()).await;
    }

    /// Kills the Worker, deletes every Durable Object alarm from its persisted
    /// state (as a platform that dropped them would leave it), and starts it again.
    pub async fn crash_losing_alarms(&mut self) {
        self.worker.kill();
        worker::drop_alarms(self.state.path());
        self.worker = Worker::start(&self.vars, self.state.path()).await;
    }

    /// Stops the Worker, runs SQL on its local D1 (`wrangler d1 execute`), and
    /// starts it again on the same state; returns each statement's rows.
    pub async fn sql_while_stopped(&mut self, sql: &str) -> Value {
        self.worker.kill();
        let results = worker::d1_execute(self.state.path(), sql);
        self.worker = Worker::start(&self.vars, self.state.path()).await;
        results
    }

    /// Runs `sql` on the D1 database of each binding in `bindings` (the shared
    /// `DB` or a shard) with the Worker stopped, then starts it again.
    pub async fn sql_on_while_stopped(&mut self, bindings: &[&str], sql: &str) -> Vec<Value> {
        self.worker.kill();
        let results = bindings.iter().map(|binding| worker::d1_execute_on(self.state.path(), binding, sql)).collect();
        self.worker = Worker::start(&self.vars, self.state.path()).await;
        results
    }

    /// Stops the Worker, runs `work` on its persisted state (a Durable
    /// Object's SQLite file, say), and starts it again; returns what `work` did.
    #[allow(dead_code)] // used by some test modules only
    pub async fn while_stopped<T>(&mut self, work: impl FnOnce(&std::path::Path) -> T) -> T {
        self.worker.kill();
        let done = work(self.state.path());
        self.worker = Worker::start(&self.vars, self.state.path()).await;
        done
    }

    /// The Worker's persisted state (local D1 files, Durable Objects).
    pub fn state_dir(&self) -> &std::path::Path {
        self.state.path()
    }

    /// POSTs a Telegram update with the right secret.
    pub async fn telegram_update(&self, update: &Value) -> reqwest::Response {
        self.telegram_raw(Some(TELEGRAM_SECRET), update.to_string()).await
    }

    /// POSTs any body with any (or no) secret header.
    pub async fn telegram_raw(&self, secret: Option<&str>, body: String) -> reqwest::Response {
        let mut request = self
            .client
            .post(format!("{}/webhooks/telegram", self.worker.base_url))
            .header("content-type", "application/json")
            .body(body);
        if let Some(secret) = secret {
            request = request.header("X-Telegram-Bot-Api-Secret-Token", secret);
        }
        request.send().await.expect("webhook request")
    }

    /// POSTs a body to a webhook path with these headers.
    pub async fn post(&self, path: &str, headers: &[(&str, String)], body: Vec<u8>) -> reqwest::Response {
        let mut request = self.client.post(format!("{}{path}", self.worker.base_url)).body(body);
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        request.send().await.expect("webhook request")
    }

    /// POSTs a Slack Events API body, signed now.
    pub async fn slack_event(&self, body: &Value) -> reqwest::Response {
        let body = body.to_string().into_bytes();
        self.post("/webhooks/slack", &slack_headers(&body, now_secs(), "application/json"), body).await
    }

    /// POSTs a Discord interaction, signed now.
    pub async fn discord_interaction(&self, body: &Value) -> reqwest::Response {
        let body = body.to_string().into_bytes();
        self.post("/webhooks/discord", &discord_headers(&body, now_secs()), body).await
    }

    /// Sends an admin API request with the admin token; returns the status and JSON body.
    pub async fn admin_send(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut request =
            self.client.request(method, format!("{}{path}", self.worker.base_url)).bearer_auth(ADMIN_TOKEN);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.expect("admin request");
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// Fires the cron trigger as the scheduler would (`wrangler dev --test-scheduled`).
    pub async fn cron(&self) {
        let url = format!("{}/__scheduled?cron=*/15+*+*+*+*", self.worker.base_url);
        let response = self.client.get(url).send().await.expect("scheduled request");
        assert!(response.status().is_success(), "the scheduled handler ran");
    }

    /// Fires the every-minute trigger (the sweeper), as the scheduler would.
    pub async fn cron_every_minute(&self) {
        let url = format!("{}/__scheduled?cron=*+*+*+*+*", self.worker.base_url);
        let response = self.client.get(url).send().await.expect("scheduled request");
        assert!(response.status().is_success(), "the scheduled handler ran");
    }

    /// An object of the Worker's local R2 bucket `bucket`, if there is one.
    #[allow(dead_code)] // used by some test modules only
    pub fn r2_object(&self, bucket: &str, key: &str) -> Option<Vec<u8>> {
        worker::r2_object(self.state.path(), bucket, key)
    }

    /// GETs an admin API path with the admin token and returns its JSON.
    pub async fn admin(&self, path: &str) -> Value {
        serde_json::from_str(&self.admin_text(path).await).expect("admin JSON")
    }

    /// GETs an admin API path until `ready` holds for its JSON, and returns
    /// that JSON. A turn's D1 commit (its history rows, spend, people and the
    /// index row) lands just after its reply is sent, so what a test reads
    /// from D1 after a send is waited for; the test then asserts on it whole.
    #[allow(dead_code)] // used by some test modules only
    pub async fn admin_when(&self, path: &str, what: &str, ready: impl Fn(&Value) -> bool) -> Value {
        wait_for(what, Duration::from_secs(20), || async {
            let value = self.admin(path).await;
            ready(&value).then_some(value)
        })
        .await
    }

    /// `/api/spend` once `ready` holds for it (a turn's spend reaches D1 with
    /// its commit, after its reply: see [`TestEnv::admin_when`]).
    #[allow(dead_code)] // used by some test modules only
    pub async fn spend_when(&self, what: &str, ready: impl Fn(&Value) -> bool) -> Value {
        self.admin_when("/api/spend", what, ready).await
    }

    /// A conversation's stored history (`/api/channels/{key}/messages`) once
    /// `ready` holds for its rows: a reply's row is stored after its send.
    #[allow(dead_code)] // used by some test modules only
    pub async fn history_when(&self, key: &str, what: &str, ready: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let path = format!("/api/channels/{key}/messages");
        let listed = self.admin_when(&path, what, |listed| listed.as_array().is_some_and(|rows| ready(rows))).await;
        listed.as_array().cloned().unwrap_or_default()
    }

    /// GETs an admin API path that answers text (JSON lines).
    pub async fn admin_text(&self, path: &str) -> String {
        let response = self
            .client
            .get(format!("{}{path}", self.worker.base_url))
            .bearer_auth(ADMIN_TOKEN)
            .send()
            .await
            .expect("admin request");
        assert_eq!(response.status(), 200, "admin {path}");
        response.text().await.expect("admin text")
    }

    /// Waits until the fake Telegram has received `count` sendMessage calls.
    pub async fn wait_for_sent(&self, count: usize) -> Vec<Value> {
        wait_for(&format!("{count} sendMessage call(s)"), Duration::from_secs(20), || async {
            let sent = self.telegram.calls("sendMessage");
            (sent.len() >= count).then_some(sent)
        })
        .await
    }

    /// Waits until the conversation's outbox records `count` pieces as sent:
    /// the platform has them AND the Worker knows it (a crash before that
    /// point finds the piece mid-send, which is another test).
    pub async fn wait_for_delivered(&self, conversation_key: &str, count: usize) {
        let path = format!("/api/channels/{conversation_key}/outbox");
        wait_for(&format!("{count} piece(s) recorded as sent"), Duration::from_secs(20), || async {
            let outbox = self.admin(&path).await;
            let sent =
                outbox.as_array().map_or(0, |pieces| pieces.iter().filter(|piece| piece["status"] == "sent").count());
            (sent >= count).then_some(())
        })
        .await;
    }

    /// Gives a wrongly queued extra turn time to show itself before asserting on counts.
    pub async fn settle(&self) {
        tokio::time::sleep(Duration::from_millis(1500)).await;
    }
}

/// The day's tokens of `subject` in a list (`people`, `conversations`,
/// `workspaces`, `agents`) of a `/api/spend` report; None while it has none.
#[allow(dead_code)] // used by some test modules only
pub fn spent_tokens(report: &Value, list: &str, subject: &str) -> Option<i64> {
    report[list].as_array()?.iter().find(|row| row["subject"] == subject)?["tokens"].as_i64()
}

/// A Telegram update carrying a private text message.
pub fn dm_update(update_id: i64, chat_id: i64, text: &str) -> Value {
    json!({
        "update_id": update_id,
        "message": {
            "message_id": update_id * 10,
            "date": 1_795_000_000,
            "from": { "id": chat_id, "is_bot": false, "first_name": "Ada" },
            "chat": { "id": chat_id, "type": "private", "first_name": "Ada" },
            "text": text
        }
    })
}

/// Every message text of a recorded chat-completions request, joined by newlines.
pub fn all_message_text(request: &Value) -> String {
    request["messages"]
        .as_array()
        .map(|messages| {
            // A message with images has its text as one of its parts.
            let text = |message: &Value| match &message["content"] {
                Value::Array(parts) => parts.iter().find_map(|part| part["text"].as_str()).map(str::to_string),
                content => content.as_str().map(str::to_string),
            };
            messages.iter().filter_map(text).collect::<Vec<_>>().join("\n")
        })
        .unwrap_or_default()
}

/// The chat id every group test uses (negative, as Telegram numbers groups).
pub const GROUP_CHAT: i64 = -100_777;

/// A Telegram supergroup message. `mention_bot` adds an `@edge_bot` mention entity.
pub fn group_update(update_id: i64, author: (i64, &str, bool), text: &str, mention_bot: bool) -> Value {
    let (author_id, name, is_bot) = author;
    let mut text = text.to_string();
    let mut entities = Vec::new();
    if mention_bot {
        let offset = text.encode_utf16().count() + 1;
        text = format!("{text} @edge_bot");
        entities.push(json!({"type": "mention", "offset": offset, "length": 9}));
    }
    json!({
        "update_id": update_id,
        "message": {
            "message_id": update_id * 10,
            "date": 1_795_000_000,
            "from": { "id": author_id, "is_bot": is_bot, "first_name": name },
            "chat": { "id": GROUP_CHAT, "type": "supergroup", "title": "Team" },
            "text": text,
            "entities": entities
        }
    })
}

/// The last message (the turn's user message) of a recorded model request.
pub fn turn_message(request: &Value) -> String {
    request["messages"]
        .as_array()
        .and_then(|messages| messages.last())
        .and_then(|message| message["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// A group message that replies to message `parent_id` written by `parent_author_id`.
pub fn group_reply_update(update_id: i64, author: (i64, &str, bool), text: &str, parent: (i64, i64)) -> Value {
    let (parent_id, parent_author_id) = parent;
    let mut update = group_update(update_id, author, text, false);
    update["message"]["reply_to_message"] = json!({
        "message_id": parent_id,
        "date": 1_795_000_000,
        "from": { "id": parent_author_id, "is_bot": parent_author_id == 4242, "first_name": "someone" },
        "chat": { "id": GROUP_CHAT, "type": "supergroup" }
    });
    update
}

pub const SLACK_SECRET: &str = "test-slack-signing-secret";
pub const SLACK_BOT_USER: &str = "UEDGEBOT";
pub const DISCORD_APPLICATION: &str = "775799577604522054";

pub fn now_secs() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_secs() as i64
}

/// Headers of a Slack request signed with the test secret at `timestamp`.
pub fn slack_headers(body: &[u8], timestamp: i64, content_type: &str) -> Vec<(&'static str, String)> {
    let timestamp = timestamp.to_string();
    vec![
        ("content-type", content_type.to_string()),
        ("X-Slack-Request-Timestamp", timestamp.clone()),
        ("X-Slack-Signature", edgebot::platforms::slack::wire::sign(body, &timestamp, SLACK_SECRET)),
    ]
}

fn discord_keys() -> ed25519_dalek::SigningKey {
    ed25519_dalek::SigningKey::from_bytes(&[42; 32])
}

use edgebot::security::encode_hex as hex;

pub fn discord_public_key() -> String {
    hex(discord_keys().verifying_key().as_bytes())
}

/// Headers of a Discord interaction signed with the test key at `timestamp`.
pub fn discord_headers(body: &[u8], timestamp: i64) -> Vec<(&'static str, String)> {
    let timestamp = timestamp.to_string();
    let signed = [timestamp.as_bytes(), body].concat();
    vec![
        ("content-type", "application/json".to_string()),
        ("X-Signature-Timestamp", timestamp),
        ("X-Signature-Ed25519", hex(ed25519_dalek::Signer::sign(&discord_keys(), &signed).to_bytes())),
    ]
}

/// A Slack `event_callback` around `event`.
pub fn slack_callback(event_id: &str, event: Value) -> Value {
    json!({
        "token": "unused", "team_id": "T1", "api_app_id": "A1", "type": "event_callback",
        "event_id": event_id, "event_time": 1_795_000_000,
        "authorizations": [{"team_id": "T1", "user_id": SLACK_BOT_USER, "is_bot": true}],
        "event": event
    })
}

/// A Discord `/ask` interaction in a guild channel.
pub fn discord_ask(interaction_id: &str, text: &str) -> Value {
    json!({
        "id": interaction_id, "application_id": DISCORD_APPLICATION, "type": 2, "token": format!("token-{interaction_id}"),
        "guild_id": "G1", "channel_id": "C1", "version": 1,
        "member": {"user": {"id": "U1", "username": "ada", "global_name": "Ada", "bot": false}},
        "data": {"id": "cmd1", "name": "ask", "type": 1, "options": [{"name": "text", "type": 3, "value": text}]}
    })
}
