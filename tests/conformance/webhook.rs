//! The plain webhook: a system POSTs signed JSON for one conversation; the
//! replies arrive as signed JSON at its callback, which keeps each
//! `Idempotency-Key` once.

use std::time::Instant;

use base64::Engine;
use edgebot::platforms::plain_webhook::wire::{sign, verify};
use edgebot::reply::markup::Flavor;
use serde_json::{json, Value};

use super::kit::{eventually, forged, Attachment, Change, Forged, Messenger, SentFile, Settlement, Support, Update};
use crate::harness::fake_api::Call;
use crate::harness::{now_secs, FakeApi, Flavor as ApiFlavor, TestEnv};

pub const SECRET: &str = "test-plain-webhook-secret";
const CONVERSATION: &str = "orders-42";
const SENDER: &str = "alice";
/// Someone else the system speaks for, who presses the buttons.
const OTHER: &str = "mallory";

pub struct Webhook {
    env: TestEnv,
    pub callback: FakeApi,
}

/// A message `n` from `sender`.
pub fn request(n: u64, sender: &str, text: &str) -> Value {
    json!({ "id": format!("d{n}"), "conversation": CONVERSATION, "sender": { "id": sender, "name": "Alice" }, "text": text })
}

impl Webhook {
    /// POSTs `body` with this signature header (None: unsigned).
    pub async fn post(&self, body: &[u8], signature: Option<String>) -> reqwest::Response {
        let mut headers = vec![("content-type", "application/json".to_string())];
        if let Some(signature) = signature {
            headers.push(("X-Edgebot-Signature", signature));
        }
        self.env.post("/webhooks/plain", &headers, body.to_vec()).await
    }

    /// POSTs `body` signed now with the secret.
    pub async fn send(&self, body: &Value) -> reqwest::Response {
        let body = body.to_string().into_bytes();
        let signature = sign(&body, now_secs(), SECRET);
        self.post(&body, Some(signature)).await
    }

    /// The callback's calls carrying a message (every attempt).
    fn messages(&self) -> Vec<Call> {
        self.callback.requests().into_iter().filter(|call| call.body["type"] == "message").collect()
    }

    /// Every callback call is signed over its body with the secret.
    fn assert_signed(&self) {
        for call in self.callback.requests() {
            let signature = call.signature.as_deref();
            let verified = verify(signature, call.body.to_string().as_bytes(), SECRET, now_secs());
            assert_eq!(verified, Ok(()), "a signed callback: {call:?}");
        }
    }
}

impl Webhook {
    /// A fresh world with `vars` set (the kit's `start`, for tests outside it).
    pub async fn launch(vars: &[(&str, &str)]) -> Self {
        <Self as Messenger>::start(vars).await
    }

    pub fn test_env(&self) -> &TestEnv {
        &self.env
    }
}

impl Messenger for Webhook {
    const NAME: &'static str = "webhook";
    const LIMIT: usize = 8_000;
    const FLAVOR: Flavor = Flavor::Markdown;

    async fn start(vars: &[(&str, &str)]) -> Self {
        let callback = FakeApi::start(ApiFlavor::Callback).await;
        let url = format!("{}/callback", callback.base_url);
        let mut all = vec![
            ("WEBHOOK_SECRET", SECRET),
            ("WEBHOOK_CALLBACK_URL", url.as_str()),
            ("FETCH_ALLOW_HOSTS", "127.0.0.1"),
        ];
        all.extend_from_slice(vars);
        Webhook { env: TestEnv::start_with(&all).await, callback }
    }

    fn env(&self) -> &TestEnv {
        &self.env
    }

    async fn crash_and_restart(&mut self) {
        self.env.crash_and_restart().await;
    }

    fn conversation(&self) -> String {
        format!("webhook:{CONVERSATION}")
    }

    async fn say(&self, n: u64, text: &str) {
        assert_eq!(self.send(&request(n, SENDER, text)).await.status(), 200);
    }

    async fn say_again(&self, n: u64, text: &str) {
        self.say(n, text).await;
    }

    async fn forge(&self, n: u64, text: &str) -> Vec<Forged> {
        let body = request(n, SENDER, text).to_string().into_bytes();
        let other = request(n, SENDER, "something else").to_string().into_bytes();
        let now = now_secs();
        vec![
            forged("no signature", self.post(&body, None).await).await,
            forged("a wrong secret", self.post(&body, Some(sign(&body, now, "not-the-secret"))).await).await,
            forged("a signature over a different body", self.post(&body, Some(sign(&other, now, SECRET))).await).await,
            forged("a stale replay", self.post(&body, Some(sign(&body, now - 600, SECRET))).await).await,
            forged("a header without a time", self.post(&body, Some("v1=00".into())).await).await,
        ]
    }

    async fn shown(&self) -> Vec<String> {
        self.assert_signed();
        self.callback.shown().into_iter().map(|message| message.text).collect()
    }

    fn updates(&self) -> Vec<Update> {
        let mut seen = std::collections::HashSet::new();
        let firsts = self.messages().into_iter().filter(|call| seen.insert(call.idempotency_key.clone()));
        let text = |call: &Call| call.body["text"].as_str().unwrap_or_default().to_string();
        firsts.map(|call| Update { at: call.at, change: Change::Post, text: text(&call) }).collect()
    }

    fn rate_limit_next_send(&self, seconds: u64) -> Support<()> {
        self.callback.fail_next("/callback", 429, json!({ "error": "slow down" }), Some(&seconds.to_string()));
        Support::Yes(())
    }

    fn send_attempts(&self) -> Vec<Instant> {
        self.messages().into_iter().map(|call| call.at).collect()
    }

    fn hang_next_send(&self) -> Support<Settlement> {
        self.callback.hang_next("/callback", true);
        Support::Yes(Settlement::SentAgain)
    }

    fn lookups(&self) -> usize {
        0
    }

    fn deletes(&self) -> Support<()> {
        Support::Unsupported("nothing already sent to the callback is ever changed or taken back")
    }

    fn streams(&self) -> Support<()> {
        Support::Unsupported("the receiver hears finished pieces only, each once by its idempotency key")
    }

    async fn shows_buttons(&self, approval: &str) -> bool {
        self.messages().iter().any(|call| {
            let buttons = &call.body["buttons"];
            buttons[0]["id"] == format!("approve:{approval}").as_str()
                && buttons[1]["id"] == format!("deny:{approval}").as_str()
        })
    }

    async fn press(&self, n: u64, by_asker: bool, choice: &str, approval: &str) -> Option<String> {
        let sender = if by_asker { SENDER } else { OTHER };
        let press = json!({ "id": format!("p{n}"), "conversation": CONVERSATION, "sender": { "id": sender },
                            "button": format!("{choice}:{approval}") });
        assert_eq!(self.send(&press).await.status(), 200);
        let note = || {
            let notes = self.callback.requests().into_iter().filter(|call| call.body["type"] == "note");
            notes
                .into_iter()
                .find(|call| call.body["to"] == sender && call.body["reply_to"] == format!("p{n}").as_str())
        };
        if by_asker {
            self.env.settle().await;
        } else {
            eventually("the private answer", || async { note().map(|_| ()) }).await;
        }
        note().map(|call| call.body["text"].as_str().unwrap_or_default().to_string())
    }

    async fn attach(&self, name: &str, bytes: &[u8]) -> Attachment {
        self.callback.serve_file(&format!("/files/{name}"), bytes.to_vec());
        Attachment {
            id: edgebot::files::rules::file_id(&self.conversation(), "F1"),
            name: name.into(),
            size: bytes.len(),
            handle: format!("{}/files/{name}", self.callback.base_url),
        }
    }

    async fn say_with_file(&self, n: u64, text: &str, file: &Attachment) {
        let mut body = request(n, SENDER, text);
        body["attachments"] = json!([{ "url": file.handle, "name": file.name, "id": "F1" }]);
        assert_eq!(self.send(&body).await.status(), 200);
    }

    async fn files_sent(&self) -> Vec<SentFile> {
        let decode = |data: &Value| base64::engine::general_purpose::STANDARD.decode(data.as_str()?).ok();
        let mut seen = std::collections::HashSet::new();
        let firsts = self.messages().into_iter().filter(|call| seen.insert(call.idempotency_key.clone()));
        firsts
            .filter_map(|call| {
                let file = &call.body["file"];
                let bytes = decode(&file["base64"])?;
                let name = file["name"].as_str()?.to_string();
                Some(SentFile { name, body: String::from_utf8_lossy(&bytes).into_owned() })
            })
            .collect()
    }

    async fn edit(&self, delivery: u64, n: u64, text: &str) -> Support<()> {
        let mut edit = request(delivery, SENDER, "");
        edit["edit"] = json!({ "message": request(n, SENDER, "")["id"], "text": text });
        assert_eq!(self.send(&edit).await.status(), 200);
        Support::Yes(())
    }

    async fn delete_own(&self, delivery: u64, n: u64) -> Support<()> {
        let mut delete = request(delivery, SENDER, "");
        delete["delete"] = json!({ "message": request(n, SENDER, "")["id"] });
        assert_eq!(self.send(&delete).await.status(), 200);
        Support::Yes(())
    }

    async fn react(&self, delivery: u64, bot_message: &str) -> Support<()> {
        let mut reaction = request(delivery, SENDER, "");
        reaction["reaction"] = json!({ "message": bot_message, "emoji": "👍" });
        assert_eq!(self.send(&reaction).await.status(), 200);
        Support::Yes(())
    }
}

super::conformance_tests!(Webhook);
