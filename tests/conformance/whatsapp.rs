//! WhatsApp: a person's chat with a business number over the Cloud API
//! webhook (signed notifications), buttons as interactive reply buttons.

use std::time::Instant;

use edgebot::platforms::whatsapp::wire::sign;
use edgebot::reply::markup::Flavor;
use serde_json::{json, Value};

use super::kit::{
    eventually, files_in_calls, forged, Attachment, Change, Forged, Messenger, SentFile, Settlement, Support, Update,
};
use crate::harness::fake_api::{whatsapp_text, Call};
use crate::harness::{now_secs, FakeApi, Flavor as ApiFlavor, TestEnv};

pub const APP_SECRET: &str = "test-whatsapp-app-secret";
pub const VERIFY_TOKEN: &str = "test-whatsapp-verify-token";
pub const ACCESS_TOKEN: &str = "test-whatsapp-access-token";
/// The business number, the person, and someone else who presses the buttons.
pub const PHONE: &str = "106540352242922";
pub const PERSON: &str = "4915112345678";
const OTHER: &str = "4915199999999";
const MEDIA: &str = "1479537139650973";

pub struct WhatsApp {
    env: TestEnv,
    pub api: FakeApi,
}

/// A notification carrying `message` from `from`, as Meta sends it.
pub fn notification(from: &str, message: Value) -> Value {
    json!({ "object": "whatsapp_business_account", "entry": [{ "id": "WABA1", "changes": [{ "field": "messages",
        "value": { "messaging_product": "whatsapp",
            "metadata": { "display_phone_number": "15550001111", "phone_number_id": PHONE },
            "contacts": [{ "profile": { "name": format!("person {from}") }, "wa_id": from }],
            "messages": [message] } }] }] })
}

/// A text message `n` from `from`, written `age_secs` ago.
pub fn text_message(from: &str, n: u64, text: &str, age_secs: i64) -> Value {
    json!({ "from": from, "id": format!("wamid.in{n}"), "timestamp": (now_secs() - age_secs).to_string(),
            "type": "text", "text": { "body": text } })
}

impl WhatsApp {
    /// POSTs a notification signed with `secret` (None: unsigned).
    pub async fn post(&self, body: &[u8], secret: Option<&str>) -> reqwest::Response {
        let mut headers = vec![("content-type", "application/json".to_string())];
        if let Some(secret) = secret {
            headers.push(("X-Hub-Signature-256", sign(body, secret)));
        }
        self.env.post("/webhooks/whatsapp", &headers, body.to_vec()).await
    }

    /// POSTs a notification signed with the app secret.
    pub async fn notify(&self, notification: &Value) -> reqwest::Response {
        self.post(notification.to_string().as_bytes(), Some(APP_SECRET)).await
    }

    /// The calls that sent a message (not a read receipt) to `to`.
    pub fn sends_to(&self, to: &str) -> Vec<Call> {
        let calls = self.api.requests().into_iter().filter(|call| call.path.ends_with("/messages"));
        calls.filter(|call| call.body["to"] == to && call.body["type"] != "reaction").collect()
    }
}

impl WhatsApp {
    /// A fresh world with `vars` set (the kit's `start`, for tests outside it).
    pub async fn launch(vars: &[(&str, &str)]) -> Self {
        <Self as Messenger>::start(vars).await
    }

    pub fn test_env(&self) -> &TestEnv {
        &self.env
    }

    /// The person says `text` now, as message `n`.
    pub async fn say_now(&self, n: u64, text: &str) {
        <Self as Messenger>::say(self, n, text).await;
    }
}

impl Messenger for WhatsApp {
    const NAME: &'static str = "whatsapp";
    const LIMIT: usize = 4096;
    const FLAVOR: Flavor = Flavor::WhatsApp;

    async fn start(vars: &[(&str, &str)]) -> Self {
        let api = FakeApi::start(ApiFlavor::WhatsApp).await;
        let base = format!("{}/v21.0", api.base_url);
        let mut all = vec![
            ("WHATSAPP_APP_SECRET", APP_SECRET),
            ("WHATSAPP_VERIFY_TOKEN", VERIFY_TOKEN),
            ("WHATSAPP_ACCESS_TOKEN", ACCESS_TOKEN),
            ("WHATSAPP_API_BASE", base.as_str()),
        ];
        all.extend_from_slice(vars);
        WhatsApp { env: TestEnv::start_with(&all).await, api }
    }

    fn env(&self) -> &TestEnv {
        &self.env
    }

    async fn crash_and_restart(&mut self) {
        self.env.crash_and_restart().await;
    }

    fn conversation(&self) -> String {
        format!("whatsapp:{PHONE}:{PERSON}")
    }

    async fn say(&self, n: u64, text: &str) {
        let response = self.notify(&notification(PERSON, text_message(PERSON, n, text, 0))).await;
        assert_eq!(response.status(), 200);
    }

    async fn say_again(&self, n: u64, text: &str) {
        self.say(n, text).await;
    }

    async fn forge(&self, n: u64, text: &str) -> Vec<Forged> {
        let genuine = notification(PERSON, text_message(PERSON, n, text, 0)).to_string();
        let other_body = notification(PERSON, text_message(PERSON, n, "something else", 0)).to_string();
        let signed_other = sign(other_body.as_bytes(), APP_SECRET);
        let headers = vec![("content-type", "application/json".to_string()), ("X-Hub-Signature-256", signed_other)];
        let over_other = self.env.post("/webhooks/whatsapp", &headers, genuine.clone().into_bytes()).await;
        // A genuine, signed message from long ago, sent again.
        let replayed = notification(PERSON, text_message(PERSON, n, text, 8 * 24 * 3600)).to_string();
        vec![
            forged("no signature", self.post(genuine.as_bytes(), None).await).await,
            forged("a wrong secret", self.post(genuine.as_bytes(), Some("not-the-secret")).await).await,
            forged("a signature over a different body", over_other).await,
            forged("a stale replay", self.post(replayed.as_bytes(), Some(APP_SECRET)).await).await,
        ]
    }

    async fn shown(&self) -> Vec<String> {
        let mine = self.api.shown().into_iter().filter(|message| message.id.ends_with(&format!(".{PERSON}")));
        mine.map(|message| message.text).collect()
    }

    fn updates(&self) -> Vec<Update> {
        let sends = self.sends_to(PERSON).into_iter();
        sends.map(|call| Update { at: call.at, change: Change::Post, text: whatsapp_text(&call.body) }).collect()
    }

    fn rate_limit_next_send(&self, seconds: u64) -> Support<()> {
        let body = json!({ "error": { "message": "(#130429) Rate limit hit", "type": "OAuthException",
                                      "code": 130429, "fbtrace_id": "A1" } });
        self.api.fail_next("/messages", 400, body, Some(&seconds.to_string()));
        Support::Yes(())
    }

    fn send_attempts(&self) -> Vec<Instant> {
        self.sends_to(PERSON).into_iter().map(|call| call.at).collect()
    }

    fn hang_next_send(&self) -> Support<Settlement> {
        self.api.hang_next("/messages", true);
        Support::Yes(Settlement::ResentMarked)
    }

    fn lookups(&self) -> usize {
        0
    }

    fn deletes(&self) -> Support<()> {
        Support::Unsupported("the Cloud API cannot delete a message a business sent")
    }

    fn streams(&self) -> Support<()> {
        Support::Unsupported("a bot cannot edit a WhatsApp message, so a draft could not grow")
    }

    async fn shows_buttons(&self, approval: &str) -> bool {
        self.sends_to(PERSON).iter().any(|call| {
            let buttons = &call.body["interactive"]["action"]["buttons"];
            buttons[0]["reply"]["id"] == format!("approve:{approval}").as_str()
                && buttons[1]["reply"]["id"] == format!("deny:{approval}").as_str()
        })
    }

    async fn press(&self, n: u64, by_asker: bool, choice: &str, approval: &str) -> Option<String> {
        let from = if by_asker { PERSON } else { OTHER };
        let press_id = format!("wamid.press{n}");
        let message = json!({ "from": from, "id": press_id, "timestamp": now_secs().to_string(), "type": "interactive",
            "context": { "from": "15550001111", "id": "wamid.question" },
            "interactive": { "type": "button_reply", "button_reply": { "id": format!("{choice}:{approval}"), "title": "Approve" } } });
        assert_eq!(self.notify(&notification(from, message)).await.status(), 200);
        let note =
            || self.sends_to(from).into_iter().find(|call| call.body["context"]["message_id"] == press_id.as_str());
        if by_asker {
            self.env.settle().await;
        } else {
            eventually("the private answer", || async { note().map(|_| ()) }).await;
        }
        note().map(|call| whatsapp_text(&call.body))
    }

    async fn attach(&self, name: &str, bytes: &[u8]) -> Attachment {
        let download = format!("/media-download/{MEDIA}");
        let lookup = json!({ "messaging_product": "whatsapp", "url": format!("{}{download}", self.api.base_url),
                             "mime_type": "text/csv", "file_size": bytes.len(), "id": MEDIA });
        self.api.serve_file(&format!("/v21.0/{MEDIA}"), lookup.to_string().into_bytes());
        self.api.serve_file(&download, bytes.to_vec());
        Attachment {
            id: edgebot::files::rules::file_id(&self.conversation(), MEDIA),
            name: name.into(),
            size: bytes.len(),
            handle: MEDIA.into(),
        }
    }

    async fn say_with_file(&self, n: u64, text: &str, file: &Attachment) {
        let message = json!({ "from": PERSON, "id": format!("wamid.in{n}"), "timestamp": now_secs().to_string(),
            "type": "document", "document": { "id": file.handle, "filename": file.name, "mime_type": "text/csv",
                                              "caption": text } });
        assert_eq!(self.notify(&notification(PERSON, message)).await.status(), 200);
    }

    async fn files_sent(&self) -> Vec<SentFile> {
        files_in_calls(&self.api)
    }

    async fn edit(&self, _delivery: u64, _n: u64, _text: &str) -> Support<()> {
        Support::Unsupported("the Cloud API's message webhooks carry no edit of a person's message that edgebot reads")
    }

    async fn delete_own(&self, _delivery: u64, _n: u64) -> Support<()> {
        Support::Unsupported("the Cloud API's message webhooks carry no deletion that edgebot reads")
    }

    async fn react(&self, delivery: u64, bot_message: &str) -> Support<()> {
        let reaction = json!({ "from": PERSON, "id": format!("wamid.react{delivery}"), "timestamp": now_secs().to_string(),
                               "type": "reaction", "reaction": { "message_id": bot_message, "emoji": "👍" } });
        assert_eq!(self.notify(&notification(PERSON, reaction)).await.status(), 200);
        Support::Yes(())
    }
}

super::conformance_tests!(WhatsApp);
