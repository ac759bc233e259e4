//! WhatsApp beyond the conformance kit: the verification handshake, the
//! 24-hour customer-service window (ours and Graph's), and notifications
//! that are acknowledged without a turn (statuses, reactions).

use serde_json::{json, Value};

use crate::conformance::whatsapp::{notification, text_message, WhatsApp, PERSON, PHONE, VERIFY_TOKEN};
use crate::harness::{now_secs, wait_for};

fn conversation() -> String {
    format!("whatsapp%3A{PHONE}%3A{PERSON}")
}

async fn outbox(whatsapp: &WhatsApp) -> Vec<Value> {
    let path = format!("/api/channels/{}/outbox", conversation());
    whatsapp.test_env().admin(&path).await.as_array().cloned().unwrap_or_default()
}

async fn events(whatsapp: &WhatsApp) -> Vec<Value> {
    let path = format!("/api/channels/{}/events", conversation());
    whatsapp.test_env().admin(&path).await.as_array().cloned().unwrap_or_default()
}

async fn failed_piece(whatsapp: &WhatsApp) -> Value {
    wait_for("the piece given up", std::time::Duration::from_secs(40), || async {
        outbox(whatsapp).await.into_iter().find(|piece| piece["status"] == "failed")
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn the_handshake_answers_the_challenge_only_for_the_verify_token() {
    let whatsapp = WhatsApp::launch(&[]).await;
    let env = whatsapp.test_env();
    let handshake = |token: &str| {
        let url = format!("{}/webhooks/whatsapp", env.worker.base_url);
        let query = [("hub.mode", "subscribe"), ("hub.verify_token", token), ("hub.challenge", "1158201444")];
        env.client.get(url).query(&query).send()
    };
    let answered = handshake(VERIFY_TOKEN).await.unwrap();
    assert_eq!(answered.status(), 200);
    assert_eq!(answered.text().await.unwrap(), "1158201444");
    for wrong in ["not-the-token", "", &format!("{VERIFY_TOKEN}x")] {
        let refused = handshake(wrong).await.unwrap();
        assert_eq!(refused.status(), 403, "{wrong:?}");
        let body: Value = refused.json().await.unwrap();
        assert!(body["error"].is_string(), "a JSON error: {body}");
    }
    let unset = WhatsApp::launch(&[("WHATSAPP_VERIFY_TOKEN", "")]).await;
    let url = format!("{}/webhooks/whatsapp", unset.test_env().worker.base_url);
    let query = [("hub.mode", "subscribe"), ("hub.verify_token", ""), ("hub.challenge", "1")];
    let refused = unset.test_env().client.get(url).query(&query).send().await.unwrap();
    assert_eq!(refused.status(), 403, "an unset token accepts nothing");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reply_outside_the_24_hour_window_is_not_sent_and_fails_for_good() {
    let whatsapp = WhatsApp::launch(&[("STREAM_REPLIES", "off")]).await;
    let env = whatsapp.test_env();
    env.llm.reply("sorry for the wait");
    // Meta retried this message for more than a day (the Worker was down).
    let late = text_message(PERSON, 1, "are you there?", 25 * 3600);
    assert_eq!(whatsapp.notify(&notification(PERSON, late)).await.status(), 200);
    let piece = failed_piece(&whatsapp).await;
    assert!(piece["last_error"].as_str().unwrap_or_default().contains("24-hour"), "{piece}");
    assert_eq!(piece["attempts"], 1, "not retried: {piece}");
    assert_eq!(env.llm.requests().len(), 1, "the person was heard");
    env.settle().await;
    let texts = whatsapp.sends_to(PERSON).into_iter().filter(|call| call.body["type"] == "text").count();
    assert_eq!(texts, 0, "nothing was sent");
}

#[tokio::test(flavor = "multi_thread")]
async fn graphs_closed_window_fails_the_piece_for_good_at_once() {
    let whatsapp = WhatsApp::launch(&[("STREAM_REPLIES", "off")]).await;
    let env = whatsapp.test_env();
    let closed = json!({ "error": { "message": "Re-engagement message", "type": "OAuthException", "code": 131047 } });
    whatsapp.api.fail_next("/messages", 400, closed, None);
    env.llm.reply("hello");
    whatsapp.say_now(1, "hi").await;
    let piece = failed_piece(&whatsapp).await;
    assert!(piece["last_error"].as_str().unwrap_or_default().contains("24-hour"), "{piece}");
    assert_eq!(piece["attempts"], 1, "{piece}");
}

#[tokio::test(flavor = "multi_thread")]
async fn statuses_and_reactions_are_acknowledged_without_a_turn() {
    let whatsapp = WhatsApp::launch(&[]).await;
    let env = whatsapp.test_env();
    let reaction = json!({ "from": PERSON, "id": "wamid.r1", "timestamp": now_secs().to_string(), "type": "reaction",
                           "reaction": { "message_id": "wamid.BOT", "emoji": "👍" } });
    assert_eq!(whatsapp.notify(&notification(PERSON, reaction)).await.status(), 200);
    let mut failed = notification(PERSON, json!(null));
    failed["entry"][0]["changes"][0]["value"]["messages"] = json!([]);
    failed["entry"][0]["changes"][0]["value"]["statuses"] = json!([{ "id": "wamid.BOT", "status": "failed",
        "timestamp": now_secs().to_string(), "recipient_id": PERSON,
        "errors": [{ "code": 131047, "title": "Re-engagement message" }] }]);
    assert_eq!(whatsapp.notify(&failed).await.status(), 200);
    let malformed = whatsapp.post(b"{\"object\":\"page\"}", Some(crate::conformance::whatsapp::APP_SECRET)).await;
    assert_eq!(malformed.status(), 400, "not a WhatsApp notification");
    env.settle().await;
    assert!(env.llm.requests().is_empty(), "no turn");
    // The reaction is heard (on a message that is not the bot's: ignored); the status stores nothing.
    let stored = events(&whatsapp).await;
    assert_eq!(stored.len(), 1, "{stored:?}");
    assert_eq!(
        (stored[0]["decision"].as_str(), stored[0]["reason"].as_str()),
        (Some("heard"), Some("reaction: ignored: not a message of the bot's"))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_turn_marks_the_message_read_and_shows_typing() {
    let whatsapp = WhatsApp::launch(&[("STREAM_REPLIES", "off")]).await;
    let env = whatsapp.test_env();
    env.llm.reply("on it");
    whatsapp.say_now(1, "hi").await;
    let receipt = wait_for("the read receipt", std::time::Duration::from_secs(40), || async {
        let calls = whatsapp.api.requests().into_iter();
        calls.map(|call| call.body).find(|body| body["status"] == "read")
    })
    .await;
    assert_eq!(receipt["message_id"], "wamid.in1");
    assert_eq!(receipt["typing_indicator"]["type"], "text");
    let reply = wait_for("the reply", std::time::Duration::from_secs(40), || async {
        whatsapp.sends_to(PERSON).into_iter().find(|call| call.body["type"] == "text")
    })
    .await;
    assert_eq!(reply.body["text"]["body"], "on it");
    assert_eq!(reply.authorization.as_deref(), Some("Bearer test-whatsapp-access-token"), "the token, to Graph only");
}
