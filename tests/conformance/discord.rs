//! Discord: the `/ask` command over signed interactions (the deferred
//! response is the reply's first message, follow-ups the rest), buttons as
//! message components. A command carries no file, so a file comes as a
//! channel message over the Gateway (to the same conversation).

use std::time::Instant;

use edgebot::reply::markup::Flavor;
use serde_json::{json, Value};

use super::kit::{
    eventually, files_in_calls, forged, update, Attachment, Change, Forged, Messenger, SentFile, Settlement, Support,
    Update,
};
use crate::harness::fake_gateway::{FakeGateway, BOT_USER_ID};
use crate::harness::{discord_ask, discord_headers, now_secs, TestEnv, DISCORD_APPLICATION};

/// Someone else in the channel who presses the buttons.
const OTHER: &str = "U9";

pub struct Discord {
    env: TestEnv,
    /// Connected only where a person sends a file.
    gateway: Option<FakeGateway>,
}

fn interaction_id(n: u64) -> String {
    format!("88{n:04}")
}

/// The path of a command's deferred response.
const ORIGINAL: &str = "/messages/@original";

impl Messenger for Discord {
    const NAME: &'static str = "discord";
    const LIMIT: usize = 2000;
    const FLAVOR: Flavor = Flavor::DiscordMarkdown;

    async fn start(vars: &[(&str, &str)]) -> Self {
        Discord { env: TestEnv::start_with(vars).await, gateway: None }
    }

    async fn start_for_attachments(vars: &[(&str, &str)]) -> Self {
        let gateway = FakeGateway::start(1000).await;
        let mut all = vec![
            ("DISCORD_GATEWAY", "on"),
            ("DISCORD_GATEWAY_URL", gateway.url.as_str()),
            ("DISCORD_BOT_TOKEN", "discord-bot-token"),
            ("COALESCE_DEBOUNCE_MS", "100"),
        ];
        all.extend_from_slice(vars);
        let env = TestEnv::start_with(&all).await;
        let (status, _) = env.admin_send(reqwest::Method::POST, "/api/discord/gateway", None).await;
        assert_eq!(status, 200);
        eventually("READY taken", || async {
            let status = env.admin("/api/discord/gateway").await;
            (status["connected"] == true && status["session_id"].is_string()).then_some(())
        })
        .await;
        Discord { env, gateway: Some(gateway) }
    }

    fn env(&self) -> &TestEnv {
        &self.env
    }

    async fn crash_and_restart(&mut self) {
        self.env.crash_and_restart().await;
    }

    fn conversation(&self) -> String {
        "discord:G1:C1".into()
    }

    async fn say(&self, n: u64, text: &str) {
        let response = self.env.discord_interaction(&discord_ask(&interaction_id(n), text)).await;
        assert_eq!(response.status(), 200);
        assert_eq!(response.json::<Value>().await.unwrap(), json!({"type": 5}), "a deferred response");
    }

    async fn say_again(&self, n: u64, text: &str) {
        let response = self.env.discord_interaction(&discord_ask(&interaction_id(n), text)).await;
        assert_eq!(response.status(), 200);
    }

    async fn forge(&self, n: u64, text: &str) -> Vec<Forged> {
        let body = discord_ask(&interaction_id(n), text).to_string().into_bytes();
        let unsigned = [("content-type", "application/json".to_string())];
        let mut wrong = discord_headers(&body, now_secs());
        wrong[2].1 = "00".repeat(64);
        let stale = discord_headers(&body, now_secs() - 600);
        let signed_other = discord_headers(b"{}", now_secs());
        let post = |headers: Vec<(&'static str, String)>, body: Vec<u8>| async move {
            self.env.post("/webhooks/discord", &headers, body).await
        };
        vec![
            forged("no signature", post(unsigned.to_vec(), body.clone()).await).await,
            forged("a wrong signature", post(wrong, body.clone()).await).await,
            forged("a stale signature", post(stale, body.clone()).await).await,
            forged("another body's signature", post(signed_other, body).await).await,
        ]
    }

    async fn shown(&self) -> Vec<String> {
        self.env.discord.shown().into_iter().map(|message| message.text).collect()
    }

    /// A deferred response shows "thinking…" until its first edit gives it
    /// words: that edit is the message's post.
    fn updates(&self) -> Vec<Update> {
        let mut answered = std::collections::HashSet::new();
        let mut updates = Vec::new();
        for call in self.env.discord.requests() {
            let change = match call.method.as_str() {
                "PATCH" if call.path.ends_with(ORIGINAL) => match answered.insert(call.path.clone()) {
                    true => Change::Post,
                    false => Change::Edit,
                },
                "PATCH" => Change::Edit,
                "DELETE" => Change::Delete,
                "POST" if call.path.contains("/webhooks/") || call.path.ends_with("/messages") => Change::Post,
                _ => continue,
            };
            updates.push(update(&call, change));
        }
        updates
    }

    fn rate_limit_next_send(&self, seconds: u64) -> Support<()> {
        let body = json!({"message": "You are being rate limited.", "retry_after": seconds as f64, "global": false});
        self.env.discord.fail_next(ORIGINAL, 429, body, None);
        Support::Yes(())
    }

    fn send_attempts(&self) -> Vec<Instant> {
        let calls = self.env.discord.requests().into_iter();
        calls.filter(|call| call.method == "PATCH" && call.path.ends_with(ORIGINAL)).map(|call| call.at).collect()
    }

    fn hang_next_send(&self) -> Support<Settlement> {
        self.env.discord.hang_next(ORIGINAL, true);
        Support::Yes(Settlement::SentAgain)
    }

    fn lookups(&self) -> usize {
        0
    }

    fn deletes(&self) -> Support<()> {
        Support::Yes(())
    }

    async fn shows_buttons(&self, approval: &str) -> bool {
        self.env.discord.requests().iter().any(|call| {
            let buttons = &call.body["components"][0]["components"];
            buttons[0]["custom_id"] == format!("approve:{approval}").as_str()
                && buttons[1]["custom_id"] == format!("deny:{approval}").as_str()
        })
    }

    /// The answer to a press is the interaction's own response: one only the
    /// presser sees carries the ephemeral flag (64).
    async fn press(&self, n: u64, by_asker: bool, choice: &str, approval: &str) -> Option<String> {
        let user = if by_asker { "U1" } else { OTHER };
        let press = json!({ "id": interaction_id(n), "application_id": DISCORD_APPLICATION, "type": 3,
            "token": format!("press-{n}"), "guild_id": "G1", "channel_id": "C1",
            "member": { "user": { "id": user, "username": user } },
            "data": { "custom_id": format!("{choice}:{approval}"), "component_type": 2 } });
        let response = self.env.discord_interaction(&press).await;
        assert_eq!(response.status(), 200);
        let answer: Value = response.json().await.unwrap();
        (answer["data"]["flags"].as_u64().is_some_and(|flags| flags & 64 != 0))
            .then(|| answer["data"]["content"].as_str().unwrap_or_default().to_string())
    }

    async fn attach(&self, name: &str, bytes: &[u8]) -> Attachment {
        let platform_id = "A1";
        self.env.discord.serve_file(&format!("/attachments/1/2/{name}"), bytes.to_vec());
        Attachment {
            id: edgebot::files::rules::file_id(&self.conversation(), platform_id),
            name: name.into(),
            size: bytes.len(),
            handle: platform_id.into(),
        }
    }

    async fn say_with_file(&self, n: u64, text: &str, file: &Attachment) {
        let gateway = self.gateway.as_ref().expect("started for attachments");
        let message = json!({
            "id": format!("13000000000000{n:05}"), "channel_id": "C1", "guild_id": "G1", "type": 0,
            "content": format!("<@{BOT_USER_ID}> {text}"),
            "author": {"id": "U1", "username": "ada"}, "mentions": [{"id": BOT_USER_ID}],
            "attachments": [{"id": file.handle, "filename": file.name, "size": file.size, "content_type": "text/csv",
                             "url": format!("{}/attachments/1/2/{}", self.env.discord.base_url, file.name)}]
        });
        gateway.dispatch("MESSAGE_CREATE", message);
    }

    async fn files_sent(&self) -> Vec<SentFile> {
        files_in_calls(&self.env.discord)
    }

    async fn edit(&self, _delivery: u64, _n: u64, _text: &str) -> Support<()> {
        Support::Unsupported(
            "a command is no message: it has no edit (channel messages' edits come over the Gateway: tests/heard.rs)",
        )
    }

    async fn delete_own(&self, _delivery: u64, _n: u64) -> Support<()> {
        Support::Unsupported("a command is no message: it has no deletion (over the Gateway: tests/heard.rs)")
    }

    async fn react(&self, _delivery: u64, _bot_message: &str) -> Support<()> {
        Support::Unsupported("reactions come over the Gateway, which this adapter does not connect (tests/heard.rs)")
    }
}

super::conformance_tests!(Discord);
