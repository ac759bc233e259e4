//! "Heard, not only read": edits, deletions and reactions reach the channel
//! (src/inbound/heard.rs, durable_objects/channel_object/heard.rs), per
//! messenger, and modals submitted to the bot are answered.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::fake_llm::current_section;
use crate::harness::{all_message_text, dm_update, wait_for, Scripted, TestEnv, TELEGRAM_SECRET};

const CHAT: i64 = 77;

/// Telegram's `edited_message` for the DM message [`dm_update`] numbered `original`.
fn telegram_edit(update_id: i64, original: i64, text: &str) -> Value {
    json!({
        "update_id": update_id,
        "edited_message": {
            "message_id": original * 10,
            "date": 1_795_000_000,
            "edit_date": 1_795_000_100,
            "from": { "id": CHAT, "is_bot": false, "first_name": "Ada" },
            "chat": { "id": CHAT, "type": "private", "first_name": "Ada" },
            "text": text
        }
    })
}

/// Telegram's `message_reaction`: Ada adds 👍 to `message_id`.
fn telegram_reaction(update_id: i64, message_id: i64) -> Value {
    json!({
        "update_id": update_id,
        "message_reaction": {
            "chat": { "id": CHAT, "type": "private" },
            "message_id": message_id,
            "date": 1_795_000_200,
            "user": { "id": CHAT, "is_bot": false, "first_name": "Ada" },
            "old_reaction": [],
            "new_reaction": [{ "type": "emoji", "emoji": "👍" }]
        }
    })
}

async fn answer(response: reqwest::Response) -> Value {
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

/// The platform message id of the bot's reply in the conversation's history.
async fn bot_message_id(env: &TestEnv, key: &str) -> String {
    wait_for("the bot's reply in the history", Duration::from_secs(10), || async {
        let history = env.admin(&format!("/api/channels/{key}/messages")).await;
        history.as_array()?.iter().find(|row| row["role"] == "assistant")?["platform_message_id"]
            .as_str()
            .map(str::to_string)
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn telegram_an_edit_while_the_model_thinks_is_what_gets_answered() {
    let env = TestEnv::start_with(&[("STREAM_REPLIES", "off")]).await;
    let gate = Arc::new(tokio::sync::Notify::new());
    env.llm.push(Scripted::Gated(gate.clone(), Box::new(Scripted::Reply("about the old question".into()))));
    env.llm.push(Scripted::Echo);
    env.telegram_update(&dm_update(1001, CHAT, "what is the capital of Australia? Sydney?")).await;
    wait_for("the model is thinking", Duration::from_secs(20), || async { (env.llm.in_flight() == 1).then_some(()) })
        .await;

    let edited = answer(env.telegram_update(&telegram_edit(1002, 1001, "what is the capital of Canada?")).await).await;
    assert_eq!(edited["decision"], "heard", "{edited}");
    assert_eq!(edited["reason"], "applied to the turn under way");
    gate.notify_one();

    let sent = env.wait_for_sent(1).await;
    env.settle().await;
    assert_eq!(env.telegram.calls("sendMessage").len(), 1, "one answer, never the stale one as well");
    let text = sent[0]["text"].as_str().unwrap();
    assert!(text.contains("Canada") && !text.contains("Australia"), "the answer is to the new text: {text}");
    let requests = env.llm.requests();
    assert_eq!(requests.len(), 2, "the turn thought again once");
    assert!(current_section(&requests[1]).contains("capital of Canada"));
    assert!(!all_message_text(&requests[1]).contains("Australia"), "the old text is nowhere in the new request");
}

#[tokio::test(flavor = "multi_thread")]
async fn telegram_an_edit_of_an_older_message_replaces_it_in_the_history() {
    let env = TestEnv::start().await;
    env.llm.reply("Nice to meet you, Bob.");
    env.telegram_update(&dm_update(1001, CHAT, "my name is Bob")).await;
    env.wait_for_sent(1).await;

    let edited = answer(env.telegram_update(&telegram_edit(1002, 1001, "my name is Rob")).await).await;
    assert_eq!(edited["reason"], "applied", "{edited}");
    env.settle().await;
    assert_eq!(env.llm.requests().len(), 1, "an edit starts no turn");

    env.llm.reply("You are Rob.");
    env.telegram_update(&dm_update(1003, CHAT, "what is my name?")).await;
    env.wait_for_sent(2).await;
    let prompt = all_message_text(&env.llm.requests()[1]);
    assert!(prompt.contains("my name is Rob"), "the next turn reads the new text: {prompt}");
    assert!(!prompt.contains("my name is Bob"), "and not the old one: {prompt}");
    let listed = env.admin("/api/channels/telegram:77/messages").await.to_string();
    assert!(listed.contains("my name is Rob") && !listed.contains("my name is Bob"), "D1's copy too: {listed}");
}

#[tokio::test(flavor = "multi_thread")]
async fn telegram_a_reaction_to_the_bots_message_is_seen_next_turn_and_starts_none() {
    let env = TestEnv::start().await;
    env.llm.reply("The meeting is at 5 pm.");
    env.telegram_update(&dm_update(1001, CHAT, "when is the meeting?")).await;
    env.wait_for_sent(1).await;
    let bot_message: i64 = bot_message_id(&env, "telegram:77").await.parse().unwrap();

    let noted = answer(env.telegram_update(&telegram_reaction(1002, bot_message)).await).await;
    assert_eq!(noted["reason"], "reaction: noted for the next turn", "{noted}");
    // Ada's own message (10010) is not the bot's: ignored.
    let ignored = answer(env.telegram_update(&telegram_reaction(1003, 10010)).await).await;
    assert_eq!(ignored["reason"], "reaction: ignored: not a message of the bot's", "{ignored}");
    env.settle().await;
    assert_eq!(env.llm.requests().len(), 1, "a reaction starts no turn of its own");
    assert_eq!(env.telegram.calls("sendMessage").len(), 1);

    env.llm.reply("Glad it suits you.");
    env.telegram_update(&dm_update(1004, CHAT, "thanks")).await;
    env.wait_for_sent(2).await;
    let prompt = all_message_text(&env.llm.requests()[1]);
    assert!(prompt.contains("(Ada reacted 👍 to your message “The meeting is at 5 pm.”)"), "{prompt}");
    assert_eq!(prompt.matches("reacted").count(), 1, "the reaction to her own message is not shown: {prompt}");
}

#[tokio::test(flavor = "multi_thread")]
async fn telegram_forged_edits_are_refused_and_replayed_ones_taken_once() {
    let env = TestEnv::start().await;
    env.llm.reply("Noted: Bob.");
    env.telegram_update(&dm_update(1001, CHAT, "my name is Bob")).await;
    env.wait_for_sent(1).await;

    let forged =
        env.telegram_raw(Some("not-the-secret"), telegram_edit(1002, 1001, "my name is Eve").to_string()).await;
    assert_eq!(forged.status(), 401);
    let missing = env.telegram_raw(None, telegram_reaction(1003, 1).to_string()).await;
    assert_eq!(missing.status(), 401);

    let first = answer(env.telegram_update(&telegram_edit(1004, 1001, "my name is Rob")).await).await;
    assert_eq!(first["reason"], "applied");
    // Ada edits again, then Telegram redelivers the first edit: the redelivery is a repeat.
    answer(env.telegram_update(&telegram_edit(1005, 1001, "my name is Robert")).await).await;
    let replayed = answer(env.telegram_update(&telegram_edit(1004, 1001, "my name is Rob")).await).await;
    assert_eq!(replayed["duplicate"], true, "{replayed}");
    let events = env.admin("/api/channels/telegram:77/events").await;
    let heard: Vec<&Value> = events.as_array().unwrap().iter().filter(|event| event["decision"] == "heard").collect();
    assert_eq!(heard.len(), 2, "the two real edits, once each: {events}");
    let listed = env.admin("/api/channels/telegram:77/messages").await.to_string();
    assert!(listed.contains("my name is Robert"), "the replay did not roll the text back: {listed}");
    assert!(!listed.contains("Eve"));
    // A Telegram message edited by someone else than its author (a forged author id) changes nothing.
    let mut stranger = telegram_edit(1006, 1001, "my name is Mallory");
    stranger["edited_message"]["from"]["id"] = json!(666);
    answer(env.telegram_update(&stranger).await).await;
    let listed = env.admin("/api/channels/telegram:77/messages").await.to_string();
    assert!(!listed.contains("Mallory"), "{listed}");
    assert_eq!(env.llm.requests().len(), 1);
}
