//! Telegram: a private chat over the Bot API webhook (secret header).

use std::time::Instant;

use edgebot::reply::markup::Flavor;
use serde_json::{json, Value};

use super::kit::{
    eventually, files_in_calls, forged, update, Attachment, Change, Forged, Messenger, SentFile, Settlement, Support,
    Update,
};
use crate::harness::{dm_update, TestEnv, TELEGRAM_SECRET, TELEGRAM_TOKEN};

/// The person's chat (and user) id.
const CHAT: i64 = 77;
/// Someone else who presses the chat's buttons.
const OTHER: i64 = 99;

pub struct Telegram {
    env: TestEnv,
}

fn update_id(n: u64) -> i64 {
    8_000 + n as i64
}

impl Messenger for Telegram {
    const NAME: &'static str = "telegram";
    const LIMIT: usize = 4096;
    const FLAVOR: Flavor = Flavor::TelegramHtml;

    async fn start(vars: &[(&str, &str)]) -> Self {
        Telegram { env: TestEnv::start_with(vars).await }
    }

    fn env(&self) -> &TestEnv {
        &self.env
    }

    async fn crash_and_restart(&mut self) {
        self.env.crash_and_restart().await;
    }

    fn conversation(&self) -> String {
        format!("telegram:{CHAT}")
    }

    async fn say(&self, n: u64, text: &str) {
        let response = self.env.telegram_update(&dm_update(update_id(n), CHAT, text)).await;
        assert_eq!(response.status(), 200);
    }

    async fn say_again(&self, n: u64, text: &str) {
        self.say(n, text).await;
    }

    async fn forge(&self, n: u64, text: &str) -> Vec<Forged> {
        let update = dm_update(update_id(n), CHAT, text).to_string();
        vec![
            forged("no secret", self.env.telegram_raw(None, update.clone()).await).await,
            forged("a wrong secret", self.env.telegram_raw(Some("not-the-secret"), update.clone()).await).await,
            forged("the secret and more", self.env.telegram_raw(Some(&format!("{TELEGRAM_SECRET}x")), update).await)
                .await,
        ]
    }

    async fn shown(&self) -> Vec<String> {
        self.env.telegram.shown().into_iter().map(|message| message.text).collect()
    }

    fn updates(&self) -> Vec<Update> {
        let change = |path: &str| match path.rsplit('/').next()? {
            "sendMessage" => Some(Change::Post),
            "editMessageText" => Some(Change::Edit),
            "deleteMessage" => Some(Change::Delete),
            _ => None,
        };
        let calls = self.env.telegram.requests().into_iter();
        calls.filter_map(|call| change(&call.path).map(|change| update(&call, change))).collect()
    }

    fn rate_limit_next_send(&self, seconds: u64) -> Support<()> {
        let body = json!({"ok": false, "error_code": 429, "description": format!("Too Many Requests: retry after {seconds}"),
                          "parameters": {"retry_after": seconds}});
        self.env.telegram.fail_next("/sendMessage", 429, body, None);
        Support::Yes(())
    }

    fn send_attempts(&self) -> Vec<Instant> {
        let calls = self.env.telegram.requests().into_iter();
        calls.filter(|call| call.path.ends_with("/sendMessage")).map(|call| call.at).collect()
    }

    fn hang_next_send(&self) -> Support<Settlement> {
        self.env.telegram.hang_next("/sendMessage", true);
        Support::Yes(Settlement::ResentMarked)
    }

    fn lookups(&self) -> usize {
        0
    }

    fn deletes(&self) -> Support<()> {
        Support::Yes(())
    }

    async fn shows_buttons(&self, approval: &str) -> bool {
        self.env.telegram.calls("/sendMessage").iter().any(|sent| {
            let row = &sent["reply_markup"]["inline_keyboard"][0];
            row[0]["callback_data"] == format!("approve:{approval}").as_str()
                && row[1]["callback_data"] == format!("deny:{approval}").as_str()
        })
    }

    async fn press(&self, n: u64, by_asker: bool, choice: &str, approval: &str) -> Option<String> {
        let user = if by_asker { CHAT } else { OTHER };
        let callback = format!("cq{n}");
        let press = json!({ "update_id": update_id(n), "callback_query": {
            "id": callback, "from": { "id": user, "is_bot": false, "first_name": format!("user{user}") },
            "message": { "message_id": 1, "date": 1, "chat": { "id": CHAT, "type": "private" } },
            "data": format!("{choice}:{approval}") } });
        assert_eq!(self.env.telegram_update(&press).await.status(), 200);
        // Every press is answered to its presser alone; a refusal as an alert.
        let answer = eventually("the press answered", || async {
            let answers = self.env.telegram.calls("/answerCallbackQuery");
            answers.into_iter().find(|answer| answer["callback_query_id"] == callback.as_str())
        })
        .await;
        (answer["show_alert"] == true).then(|| answer["text"].as_str().unwrap_or_default().to_string())
    }

    async fn attach(&self, name: &str, bytes: &[u8]) -> Attachment {
        let platform_id = "DOC1";
        self.env.telegram.serve_file(&format!("/file/bot{TELEGRAM_TOKEN}/files/{platform_id}"), bytes.to_vec());
        Attachment {
            id: edgebot::files::rules::file_id(&self.conversation(), platform_id),
            name: name.into(),
            size: bytes.len(),
            handle: platform_id.into(),
        }
    }

    async fn say_with_file(&self, n: u64, text: &str, file: &Attachment) {
        let mut update = dm_update(update_id(n), CHAT, "");
        let message = update["message"].as_object_mut().unwrap();
        message.remove("text");
        message.insert("caption".into(), json!(text));
        let document: Value = json!({"file_id": file.handle, "file_unique_id": "u1", "file_name": file.name,
                                     "file_size": file.size});
        message.insert("document".into(), document);
        assert_eq!(self.env.telegram_update(&update).await.status(), 200);
    }

    async fn files_sent(&self) -> Vec<SentFile> {
        files_in_calls(&self.env.telegram)
    }

    async fn edit(&self, delivery: u64, n: u64, text: &str) -> Support<()> {
        let mut edited = dm_update(update_id(n), CHAT, text);
        edited["update_id"] = json!(update_id(delivery));
        edited["edited_message"] = edited["message"].take();
        edited.as_object_mut().unwrap().remove("message");
        assert_eq!(self.env.telegram_update(&edited).await.status(), 200);
        Support::Yes(())
    }

    async fn delete_own(&self, _delivery: u64, _n: u64) -> Support<()> {
        Support::Unsupported("Telegram tells bots of no deletion")
    }

    async fn react(&self, delivery: u64, bot_message: &str) -> Support<()> {
        let reaction = json!({"update_id": update_id(delivery), "message_reaction": {
            "chat": {"id": CHAT, "type": "private"}, "message_id": bot_message.parse::<i64>().unwrap(),
            "date": 1_795_000_000, "user": {"id": CHAT, "is_bot": false, "first_name": "Ada"},
            "old_reaction": [], "new_reaction": [{"type": "emoji", "emoji": "👍"}]}});
        assert_eq!(self.env.telegram_update(&reaction).await.status(), 200);
        Support::Yes(())
    }
}

super::conformance_tests!(Telegram);
