//! The chat platforms as the streaming tests and `make bench` drive them:
//! how a person asks on each, and what its fake shows afterwards.

use std::time::Duration;

use edgebot::redact::Redactor;
use edgebot::reply::markup::Flavor;
use edgebot::reply::pieces::prepare;
use serde_json::json;

use super::fake_api::{Call, FakeApi};
use super::{discord_ask, dm_update, slack_callback, wait_for, TestEnv, LLM_KEY};

/// One chat platform as the streaming tests and bench drive it.
#[derive(Clone, Copy)]
pub struct Chat {
    /// Its name in `STREAM_REPLIES`.
    pub name: &'static str,
    pub flavor: Flavor,
    pub limit: usize,
    /// The path ending of the call that edits a message.
    pub edit: &'static str,
}

pub const TELEGRAM: Chat =
    Chat { name: "telegram", flavor: Flavor::TelegramHtml, limit: 4096, edit: "/editMessageText" };
pub const SLACK: Chat = Chat { name: "slack", flavor: Flavor::SlackMrkdwn, limit: 12_000, edit: "/chat.update" };
pub const DISCORD: Chat = Chat { name: "discord", flavor: Flavor::DiscordMarkdown, limit: 2000, edit: "/messages/" };

impl Chat {
    /// A test environment where this platform streams (and `extra` holds).
    pub async fn start(self, extra: &[(&str, &str)]) -> TestEnv {
        let mut vars = vec![("STREAM_REPLIES", self.name)];
        vars.extend_from_slice(extra);
        TestEnv::start_with(&vars).await
    }

    pub fn api(self, env: &TestEnv) -> &FakeApi {
        match self.name {
            "telegram" => &env.telegram,
            "slack" => &env.slack,
            _ => &env.discord,
        }
    }

    /// A person asks (`n` makes the delivery new): a Telegram DM, a Slack DM,
    /// a Discord `/ask`.
    pub async fn ask(self, env: &TestEnv, n: u64, text: &str) {
        let status = match self.name {
            "telegram" => env.telegram_update(&dm_update(5_000 + n as i64, 77, text)).await.status(),
            "slack" => {
                let event = json!({"type": "message", "channel": "D1", "channel_type": "im", "user": "U1",
                                   "text": text, "ts": format!("1795000000.{n:06}")});
                env.slack_event(&slack_callback(&format!("Ev{n}"), event)).await.status()
            }
            _ => env.discord_interaction(&discord_ask(&format!("77{n}"), text)).await.status(),
        };
        assert_eq!(status, 200);
    }

    /// The pieces the platform should end up showing for `answer`: rendered,
    /// split and redacted the way every reply is.
    pub fn expected(self, answer: &str) -> Vec<String> {
        let redactor = Redactor::new([("OPENAI_API_KEY", LLM_KEY, None)]);
        prepare(&[answer.to_string()], self.flavor, self.limit, &redactor).pieces
    }

    /// Waits until the chat shows exactly `pieces` (each message's text after
    /// every edit), then a little longer to see it stays so.
    pub async fn shows(self, env: &TestEnv, pieces: &[String]) {
        let texts = || self.api(env).shown().into_iter().map(|message| message.text).collect::<Vec<_>>();
        wait_for("the whole answer, once", Duration::from_secs(40), || async { (texts() == pieces).then_some(()) })
            .await;
        env.settle().await;
        assert_eq!(texts(), pieces, "and nothing after it");
    }

    /// Scripts a rate limit (wait `seconds`) for the next edit, as the platform answers one.
    pub fn rate_limit_next_edit(self, env: &TestEnv, seconds: u64) {
        let (body, header) = match self.name {
            "telegram" => (
                json!({"ok": false, "error_code": 429, "description": format!("Too Many Requests: retry after {seconds}"),
                       "parameters": {"retry_after": seconds}}),
                None,
            ),
            "slack" => (json!({"ok": false, "error": "ratelimited"}), Some(seconds.to_string())),
            _ => (
                json!({"message": "You are being rate limited.", "retry_after": seconds as f64, "global": false}),
                None,
            ),
        };
        self.api(env).fail_next_containing(self.edit, 429, body, header.as_deref());
    }

    /// Waits for the first post of the reply's words.
    pub async fn first_post(self, env: &TestEnv) -> Call {
        wait_for("the first words", Duration::from_secs(30), || async { self.text_calls(env).first().cloned() }).await
    }

    /// Every call that carried text (posts and edits alike), in order.
    pub fn text_calls(self, env: &TestEnv) -> Vec<Call> {
        let carries_text = |call: &Call| call.body["text"].is_string() || call.body["content"].is_string();
        self.api(env).requests().into_iter().filter(carries_text).collect()
    }
}
