//! Slack: a direct message over the Events API (signed requests), buttons as
//! Block Kit actions.

use std::time::Instant;

use edgebot::reply::markup::Flavor;
use serde_json::{json, Value};

use super::kit::{
    eventually, files_in_calls, forged, update, Attachment, Change, Forged, Messenger, SentFile, Settlement, Support,
    Update,
};
use crate::harness::{now_secs, slack_callback, slack_headers, TestEnv};

/// The person's direct-message channel, and the person.
const CHANNEL: &str = "D1";
const USER: &str = "U1";
/// Someone else who presses the buttons.
const OTHER: &str = "U2";

/// `INSTALLED`: the workspace installed the app through "Add to Slack" (its
/// own token, sealed in D1) instead of the single `SLACK_BOT_TOKEN`.
pub struct Slack<const INSTALLED: bool = false> {
    env: TestEnv,
}

fn message(n: u64, text: &str) -> Value {
    let event = json!({"type": "message", "channel": CHANNEL, "channel_type": "im", "user": USER, "text": text,
                       "ts": format!("1795000000.{n:06}")});
    slack_callback(&format!("Ev{n}"), event)
}

impl<const INSTALLED: bool> Slack<INSTALLED> {
    async fn post(&self, body: Vec<u8>, content_type: &str, extra: &[(&'static str, String)]) -> reqwest::Response {
        let mut headers = slack_headers(&body, now_secs(), content_type);
        headers.extend_from_slice(extra);
        self.env.post("/webhooks/slack", &headers, body).await
    }
}

impl<const INSTALLED: bool> Messenger for Slack<INSTALLED> {
    const NAME: &'static str = "slack";
    const LIMIT: usize = 12_000;
    const FLAVOR: Flavor = Flavor::SlackMrkdwn;

    async fn start(vars: &[(&str, &str)]) -> Self {
        if !INSTALLED {
            return Slack { env: TestEnv::start_with(vars).await };
        }
        let mut all = crate::slack_workspaces::INSTALLS_ON.to_vec();
        all.extend_from_slice(vars);
        let env = TestEnv::start_with(&all).await;
        crate::slack_workspaces::install(&env, "T1").await;
        Slack { env }
    }

    fn env(&self) -> &TestEnv {
        &self.env
    }

    async fn crash_and_restart(&mut self) {
        self.env.crash_and_restart().await;
    }

    fn conversation(&self) -> String {
        format!("slack:T1:{CHANNEL}")
    }

    async fn say(&self, n: u64, text: &str) {
        assert_eq!(self.env.slack_event(&message(n, text)).await.status(), 200);
    }

    /// Slack's retry: the same event, with its retry headers.
    async fn say_again(&self, n: u64, text: &str) {
        let body = message(n, text).to_string().into_bytes();
        let retry = [("X-Slack-Retry-Num", "1".to_string()), ("X-Slack-Retry-Reason", "http_timeout".to_string())];
        assert_eq!(self.post(body, "application/json", &retry).await.status(), 200);
    }

    async fn forge(&self, n: u64, text: &str) -> Vec<Forged> {
        let body = message(n, text).to_string().into_bytes();
        let unsigned = [("content-type", "application/json".to_string())];
        let mut wrong = slack_headers(&body, now_secs(), "application/json");
        wrong[2].1 = format!("v0={}", "ab".repeat(32));
        let stale = slack_headers(&body, now_secs() - 6 * 60, "application/json");
        let signed_other = slack_headers(b"{}", now_secs(), "application/json");
        vec![
            forged("no signature", self.env.post("/webhooks/slack", &unsigned, body.clone()).await).await,
            forged("a wrong signature", self.env.post("/webhooks/slack", &wrong, body.clone()).await).await,
            forged("a stale signature", self.env.post("/webhooks/slack", &stale, body.clone()).await).await,
            forged("another body's signature", self.env.post("/webhooks/slack", &signed_other, body).await).await,
        ]
    }

    async fn shown(&self) -> Vec<String> {
        self.env.slack.shown().into_iter().map(|message| message.text).collect()
    }

    fn updates(&self) -> Vec<Update> {
        let change = |path: &str| match path.rsplit('/').next()? {
            "chat.postMessage" => Some(Change::Post),
            "chat.update" => Some(Change::Edit),
            "chat.delete" => Some(Change::Delete),
            _ => None,
        };
        let calls = self.env.slack.requests().into_iter();
        calls.filter_map(|call| change(&call.path).map(|change| update(&call, change))).collect()
    }

    fn rate_limit_next_send(&self, seconds: u64) -> Support<()> {
        let body = json!({"ok": false, "error": "ratelimited"});
        self.env.slack.fail_next("/chat.postMessage", 429, body, Some(&seconds.to_string()));
        Support::Yes(())
    }

    fn send_attempts(&self) -> Vec<Instant> {
        let calls = self.env.slack.requests().into_iter();
        calls.filter(|call| call.path.ends_with("/chat.postMessage")).map(|call| call.at).collect()
    }

    fn hang_next_send(&self) -> Support<Settlement> {
        self.env.slack.hang_next("/chat.postMessage", true);
        Support::Yes(Settlement::LookedUp)
    }

    fn lookups(&self) -> usize {
        let calls = self.env.slack.requests().into_iter();
        calls
            .filter(|call| {
                call.path.ends_with("/conversations.history") || call.path.ends_with("/conversations.replies")
            })
            .count()
    }

    fn deletes(&self) -> Support<()> {
        Support::Yes(())
    }

    async fn shows_buttons(&self, approval: &str) -> bool {
        self.env.slack.calls("/chat.postMessage").iter().any(|posted| {
            let buttons = &posted["blocks"][1]["elements"];
            buttons[0]["value"] == format!("approve:{approval}").as_str()
                && buttons[1]["value"] == format!("deny:{approval}").as_str()
        })
    }

    async fn press(&self, _n: u64, by_asker: bool, choice: &str, approval: &str) -> Option<String> {
        let user = if by_asker { USER } else { OTHER };
        let value = format!("{choice}:{approval}");
        let click = json!({ "type": "block_actions", "user": { "id": user, "username": user }, "team": { "id": "T1" },
                            "channel": { "id": CHANNEL }, "actions": [{ "action_id": value, "value": value }] });
        let body = form_urlencoded::Serializer::new(String::new())
            .append_pair("payload", &click.to_string())
            .finish()
            .into_bytes();
        let before = self.env.slack.calls("/chat.postEphemeral").len();
        assert_eq!(self.post(body, "application/x-www-form-urlencoded", &[]).await.status(), 200);
        if by_asker {
            self.env.settle().await;
        } else {
            eventually("the private answer", || async {
                (self.env.slack.calls("/chat.postEphemeral").len() > before).then_some(())
            })
            .await;
        }
        let told =
            self.env.slack.calls("/chat.postEphemeral").into_iter().skip(before).find(|told| told["user"] == user);
        told.map(|told| told["text"].as_str().unwrap_or_default().to_string())
    }

    async fn attach(&self, name: &str, bytes: &[u8]) -> Attachment {
        let platform_id = "F1";
        self.env.slack.serve_file(&format!("/files/{name}"), bytes.to_vec());
        Attachment {
            id: edgebot::files::rules::file_id(&self.conversation(), platform_id),
            name: name.into(),
            size: bytes.len(),
            handle: platform_id.into(),
        }
    }

    async fn say_with_file(&self, n: u64, text: &str, file: &Attachment) {
        let mut delivery = message(n, text);
        delivery["event"]["files"] = json!([{"id": file.handle, "name": file.name, "size": file.size,
            "url_private_download": format!("{}/files/{}", self.env.slack.base_url, file.name)}]);
        assert_eq!(self.env.slack_event(&delivery).await.status(), 200);
    }

    async fn files_sent(&self) -> Vec<SentFile> {
        files_in_calls(&self.env.slack)
    }

    async fn edit(&self, delivery: u64, n: u64, text: &str) -> Support<()> {
        let event = json!({"type": "message", "subtype": "message_changed", "channel": CHANNEL, "hidden": true,
            "channel_type": "im", "ts": format!("1795000001.{delivery:06}"),
            "message": {"type": "message", "user": USER, "text": text, "ts": format!("1795000000.{n:06}")}});
        assert_eq!(self.env.slack_event(&slack_callback(&format!("Ev{delivery}"), event)).await.status(), 200);
        Support::Yes(())
    }

    async fn delete_own(&self, delivery: u64, n: u64) -> Support<()> {
        let ts = format!("1795000000.{n:06}");
        let event = json!({"type": "message", "subtype": "message_deleted", "channel": CHANNEL, "hidden": true,
            "channel_type": "im", "deleted_ts": ts, "ts": format!("1795000001.{delivery:06}"),
            "previous_message": {"type": "message", "user": USER, "ts": ts}});
        assert_eq!(self.env.slack_event(&slack_callback(&format!("Ev{delivery}"), event)).await.status(), 200);
        Support::Yes(())
    }

    async fn react(&self, delivery: u64, bot_message: &str) -> Support<()> {
        let event = json!({"type": "reaction_added", "user": USER, "reaction": "thumbsup",
            "item": {"type": "message", "channel": CHANNEL, "ts": bot_message}, "event_ts": "1795000002.000001"});
        assert_eq!(self.env.slack_event(&slack_callback(&format!("Ev{delivery}"), event)).await.status(), 200);
        Support::Yes(())
    }
}

super::conformance_tests!(Slack);

/// The same behaviours in a workspace that installed the app through OAuth
/// (no single bot token): every call goes out with that workspace's token.
mod installed {
    crate::conformance::conformance_tests!(super::Slack<true>);
}
