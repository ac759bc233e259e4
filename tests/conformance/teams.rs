//! Microsoft Teams: a personal chat through the Bot Framework (activities
//! carrying a signed JWT), approvals as Adaptive Cards, a refusal told in
//! the presser's own personal chat with the bot.

use std::time::Instant;

use base64::Engine;
use edgebot::reply::markup::Flavor;
use serde_json::{json, Value};

use super::kit::{eventually, forged, Attachment, Change, Forged, Messenger, SentFile, Settlement, Support, Update};
use crate::harness::fake_teams::{text_of, FakeTeams, KEY_ID, OTHER_KEY, SIGNING_KEY};
use crate::harness::TestEnv;

/// The person's personal chat with the bot, and the person.
const CONVERSATION: &str = "a:1teams-dm-ada";
const USER: &str = "29:ada";
/// Someone else who presses the buttons.
const OTHER: &str = "29:bob";

pub struct Teams {
    env: TestEnv,
    teams: FakeTeams,
}

fn activity_id(n: u64) -> String {
    format!("17950000{n:05}")
}

impl Teams {
    async fn post(&self, body: &Value, token: Option<&str>) -> reqwest::Response {
        let mut headers = vec![("content-type", "application/json".to_string())];
        if let Some(token) = token {
            headers.push(("authorization", format!("Bearer {token}")));
        }
        self.env.post("/webhooks/teams", &headers, body.to_string().into_bytes()).await
    }

    fn message(&self, n: u64, text: &str) -> Value {
        self.teams.activity(&activity_id(n), CONVERSATION, USER, text)
    }

    /// Posts to the person's chat (not typing, not anyone's private chat).
    fn is_post_here(call: &crate::harness::fake_teams::Call) -> bool {
        call.method == "POST"
            && call.path.contains(&format!("/{CONVERSATION}/activities"))
            && call.body["type"] != "typing"
    }
}

impl Messenger for Teams {
    const NAME: &'static str = "teams";
    const LIMIT: usize = 4_000;
    const FLAVOR: Flavor = Flavor::TeamsMarkdown;

    async fn start(vars: &[(&str, &str)]) -> Self {
        let teams = FakeTeams::start().await;
        let mut all: Vec<(&str, String)> = teams.vars();
        all.extend(vars.iter().map(|(name, value)| (*name, value.to_string())));
        let all: Vec<(&str, &str)> = all.iter().map(|(name, value)| (*name, value.as_str())).collect();
        Teams { env: TestEnv::start_with(&all).await, teams }
    }

    fn env(&self) -> &TestEnv {
        &self.env
    }

    async fn crash_and_restart(&mut self) {
        self.env.crash_and_restart().await;
    }

    fn conversation(&self) -> String {
        format!("teams:{CONVERSATION}")
    }

    async fn say(&self, n: u64, text: &str) {
        let response = self.post(&self.message(n, text), Some(&self.teams.genuine_token())).await;
        assert_eq!(response.status(), 200, "{:?}", response.text().await);
    }

    /// The Bot Framework's retry: the same activity (same id) again.
    async fn say_again(&self, n: u64, text: &str) {
        self.say(n, text).await;
    }

    async fn forge(&self, n: u64, text: &str) -> Vec<Forged> {
        let body = self.message(n, text);
        let token = |key: &str, kid: &str, claims: Value| self.teams.token(key, kid, claims);
        let now = crate::harness::now_secs();
        let mut elsewhere = body.clone();
        elsewhere["serviceUrl"] = json!("http://127.0.0.1:9/");
        let cases = [
            ("no token", None),
            ("a wrong audience", Some(token(SIGNING_KEY, KEY_ID, json!({ "aud": "someone-elses-bot" })))),
            ("a wrong issuer", Some(token(SIGNING_KEY, KEY_ID, json!({ "iss": "https://evil.example" })))),
            ("another signing key", Some(token(OTHER_KEY, KEY_ID, json!({})))),
            ("an unpublished key id", Some(token(OTHER_KEY, "not-published", json!({})))),
            ("an expired token", Some(token(SIGNING_KEY, KEY_ID, json!({ "exp": now - 3600 })))),
            (
                "a token for another connector",
                Some(token(SIGNING_KEY, KEY_ID, json!({ "serviceurl": "http://127.0.0.1:9/" }))),
            ),
        ];
        let mut refused = Vec::new();
        for (what, token) in cases {
            refused.push(forged(what, self.post(&body, token.as_deref()).await).await);
        }
        let genuine = self.teams.genuine_token();
        refused.push(forged("a forged serviceUrl", self.post(&elsewhere, Some(&genuine)).await).await);
        refused
    }

    async fn shown(&self) -> Vec<String> {
        self.teams.shown(CONVERSATION).iter().map(|posted| text_of(&posted.activity)).collect()
    }

    fn updates(&self) -> Vec<Update> {
        let here = format!("/{CONVERSATION}/activities");
        let calls = self.teams.requests().into_iter().filter(|call| call.path.contains(&here));
        calls
            .filter_map(|call| {
                let change = match call.method.as_str() {
                    "POST" if call.body["type"] != "typing" => Change::Post,
                    "PUT" => Change::Edit,
                    "DELETE" => Change::Delete,
                    _ => return None,
                };
                Some(Update { at: call.at, change, text: text_of(&call.body) })
            })
            .collect()
    }

    fn rate_limit_next_send(&self, seconds: u64) -> Support<()> {
        self.teams.fail_next("/activities", 429, Some(seconds));
        Support::Yes(())
    }

    fn send_attempts(&self) -> Vec<Instant> {
        self.teams.requests().into_iter().filter(Self::is_post_here).map(|call| call.at).collect()
    }

    /// The connector cannot look a sent activity up: sent again, marked.
    fn hang_next_send(&self) -> Support<Settlement> {
        self.teams.hang_next("/activities");
        Support::Yes(Settlement::ResentMarked)
    }

    fn lookups(&self) -> usize {
        0
    }

    fn deletes(&self) -> Support<()> {
        Support::Yes(())
    }

    async fn shows_buttons(&self, approval: &str) -> bool {
        self.teams.requests().into_iter().filter(Self::is_post_here).any(|call| {
            let actions = &call.body["attachments"][0]["content"]["actions"];
            actions[0]["data"]["edgebot_approval"] == format!("approve:{approval}").as_str()
                && actions[1]["data"]["edgebot_approval"] == format!("deny:{approval}").as_str()
        })
    }

    async fn press(&self, n: u64, by_asker: bool, choice: &str, approval: &str) -> Option<String> {
        let user = if by_asker { USER } else { OTHER };
        let mut pressed = self.teams.activity(&activity_id(n), CONVERSATION, user, "");
        pressed["value"] = json!({ "edgebot_approval": format!("{choice}:{approval}") });
        let private = format!("a:private-{user}");
        let before = self.teams.shown(&private).len();
        let response = self.post(&pressed, Some(&self.teams.genuine_token())).await;
        assert_eq!(response.status(), 200, "{:?}", response.text().await);
        if by_asker {
            self.env.settle().await;
        } else {
            eventually("the private answer", || async { (self.teams.shown(&private).len() > before).then_some(()) })
                .await;
        }
        self.teams.shown(&private).into_iter().skip(before).last().map(|posted| text_of(&posted.activity))
    }

    async fn attach(&self, name: &str, bytes: &[u8]) -> Attachment {
        let path = format!("/v3/attachments/{name}/views/original");
        self.teams.serve_file(&path, bytes.to_vec());
        let url = format!("{}{path}", self.teams.base_url);
        Attachment {
            id: edgebot::files::rules::file_id(&self.conversation(), &url),
            name: name.into(),
            size: bytes.len(),
            handle: url,
        }
    }

    async fn say_with_file(&self, n: u64, text: &str, file: &Attachment) {
        let mut message = self.message(n, text);
        message["attachments"] = json!([
            { "contentType": "text/html", "content": format!("<p>{text}</p>") },
            { "contentType": "text/csv", "contentUrl": file.handle, "name": file.name },
        ]);
        let response = self.post(&message, Some(&self.teams.genuine_token())).await;
        assert_eq!(response.status(), 200, "{:?}", response.text().await);
    }

    async fn files_sent(&self) -> Vec<SentFile> {
        let posts = self.teams.requests().into_iter().filter(Self::is_post_here);
        posts
            .filter_map(|call| {
                let attachment = &call.body["attachments"][0];
                let data = attachment["contentUrl"].as_str()?.split_once(";base64,")?.1.to_string();
                let bytes = base64::engine::general_purpose::STANDARD.decode(data).ok()?;
                let name = attachment["name"].as_str()?.to_string();
                Some(SentFile { name, body: String::from_utf8_lossy(&bytes).into_owned() })
            })
            .collect()
    }

    async fn edit(&self, delivery: u64, n: u64, text: &str) -> Support<()> {
        let mut edited = self.message(n, text);
        edited["type"] = json!("messageUpdate");
        edited["channelData"]["eventType"] = json!("editMessage");
        edited["timestamp"] = json!(format!("2026-11-27T06:00:{:02}.000Z", delivery % 60));
        let response = self.post(&edited, Some(&self.teams.genuine_token())).await;
        assert_eq!(response.status(), 200, "{:?}", response.text().await);
        Support::Yes(())
    }

    async fn delete_own(&self, delivery: u64, n: u64) -> Support<()> {
        let mut deleted = self.message(n, "");
        deleted["type"] = json!("messageDelete");
        deleted["channelData"]["eventType"] = json!("softDeleteMessage");
        deleted["timestamp"] = json!(format!("2026-11-27T06:00:{:02}.000Z", delivery % 60));
        let response = self.post(&deleted, Some(&self.teams.genuine_token())).await;
        assert_eq!(response.status(), 200, "{:?}", response.text().await);
        Support::Yes(())
    }

    async fn react(&self, delivery: u64, bot_message: &str) -> Support<()> {
        let mut reaction = self.message(delivery, "");
        reaction["type"] = json!("messageReaction");
        reaction["replyToId"] = json!(bot_message);
        reaction["reactionsAdded"] = json!([{ "type": "like" }]);
        let response = self.post(&reaction, Some(&self.teams.genuine_token())).await;
        assert_eq!(response.status(), 200, "{:?}", response.text().await);
        Support::Yes(())
    }
}

super::conformance_tests!(Teams);
