//! "Heard, not only read": edits, deletions and reactions reach the channel
//! (src/inbound/heard.rs, durable_objects/channel_object/heard.rs), per
//! messenger, and modals submitted to the bot are answered.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::attacks_reply::slack_posts;
use crate::harness::fake_llm::current_section;
use crate::harness::{
    all_message_text, dm_update, now_secs, slack_callback, slack_headers, wait_for, Scripted, TestEnv, SLACK_BOT_USER,
};

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
    assert_eq!(edited["reason"], "edit: applied to the turn under way");
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
    assert_eq!(edited["reason"], "edit: applied", "{edited}");
    env.settle().await;
    assert_eq!(env.llm.requests().len(), 1, "an edit starts no turn");

    env.llm.reply("You are Rob.");
    env.telegram_update(&dm_update(1003, CHAT, "what is my name?")).await;
    env.wait_for_sent(2).await;
    let prompt = all_message_text(&env.llm.requests()[1]);
    assert!(prompt.contains("my name is Rob"), "the next turn reads the new text: {prompt}");
    assert!(!prompt.contains("my name is Bob"), "and not the old one: {prompt}");
    // The answer's row, stored after its send, shows D1's copy is current.
    let answered = |rows: &[Value]| rows.iter().any(|row| row["content"] == "You are Rob.");
    let listed = Value::from(env.history_when("telegram:77", "the answer in D1's copy", answered).await).to_string();
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
    assert_eq!(first["reason"], "edit: applied");
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

// Slack: a DM with U1 (`slack:T1:D1`).

fn slack_dm(text: &str, ts: &str) -> Value {
    json!({"type": "message", "channel": "D1", "channel_type": "im", "user": "U1", "text": text, "ts": ts})
}

fn slack_changed(ts: &str, text: &str) -> Value {
    json!({"type": "message", "subtype": "message_changed", "channel": "D1", "channel_type": "im", "hidden": true,
           "ts": "1795000099.000001",
           "message": {"type": "message", "user": "U1", "text": text, "ts": ts, "edited": {"user": "U1", "ts": "1"}}})
}

fn slack_reaction(ts: &str) -> Value {
    json!({"type": "reaction_added", "user": "U1", "reaction": "thumbsup", "item_user": SLACK_BOT_USER,
           "item": {"type": "message", "channel": "D1", "ts": ts}, "event_ts": "1795000100.000001"})
}

#[tokio::test(flavor = "multi_thread")]
async fn slack_an_edit_while_the_model_thinks_is_what_gets_answered() {
    let env = TestEnv::start_with(&[("STREAM_REPLIES", "off")]).await;
    let gate = Arc::new(tokio::sync::Notify::new());
    env.llm.push(Scripted::Gated(gate.clone(), Box::new(Scripted::Reply("about the old question".into()))));
    env.llm.push(Scripted::Echo);
    env.slack_event(&slack_callback("Ev1", slack_dm("book a table for two", "1795000000.000100"))).await;
    wait_for("the model is thinking", Duration::from_secs(20), || async { (env.llm.in_flight() == 1).then_some(()) })
        .await;
    let edited = answer(
        env.slack_event(&slack_callback("Ev2", slack_changed("1795000000.000100", "book a table for six"))).await,
    )
    .await;
    assert_eq!(edited["reason"], "edit: applied to the turn under way", "{edited}");
    gate.notify_one();
    let posts = slack_posts(&env, 1).await;
    env.settle().await;
    assert_eq!(env.slack.calls("/chat.postMessage").len(), 1);
    let text = posts[0]["text"].as_str().unwrap();
    assert!(text.contains("for six") && !text.contains("for two"), "{text}");
    assert!(current_section(&env.llm.requests()[1]).contains("book a table for six"));
}

#[tokio::test(flavor = "multi_thread")]
async fn slack_a_deletion_leaves_the_history_and_a_reaction_is_seen_by_the_next_turn_only() {
    let env = TestEnv::start().await;
    env.llm.reply("Got it, I will keep that in mind.");
    env.slack_event(&slack_callback("Ev1", slack_dm("my door code is 4711", "1795000000.000100"))).await;
    slack_posts(&env, 1).await;
    let bot_ts = bot_message_id(&env, "slack:T1:D1").await;

    let deleted = json!({"type": "message", "subtype": "message_deleted", "channel": "D1", "channel_type": "im",
        "hidden": true, "deleted_ts": "1795000000.000100", "ts": "1795000099.000002",
        "previous_message": {"type": "message", "user": "U1", "text": "my door code is 4711", "ts": "1795000000.000100"}});
    let gone = answer(env.slack_event(&slack_callback("Ev2", deleted)).await).await;
    assert_eq!(gone["reason"], "delete: applied", "{gone}");
    let noted = answer(env.slack_event(&slack_callback("Ev3", slack_reaction(&bot_ts))).await).await;
    assert_eq!(noted["reason"], "reaction: noted for the next turn", "{noted}");
    // The same delivery again (Slack retries it): taken once.
    let again = answer(env.slack_event(&slack_callback("Ev3", slack_reaction(&bot_ts))).await).await;
    assert_eq!(again["duplicate"], true, "{again}");
    let elsewhere = answer(env.slack_event(&slack_callback("Ev4", slack_reaction("1795000000.000100"))).await).await;
    assert_eq!(elsewhere["reason"], "reaction: ignored: not a message of the bot's", "{elsewhere}");
    env.settle().await;
    assert_eq!(env.llm.requests().len(), 1, "neither starts a turn");

    let listed = env.admin("/api/channels/slack:T1:D1/messages").await.to_string();
    assert!(!listed.contains("4711"), "the deleted text is gone from D1's copy: {listed}");
    env.llm.reply("Sure.");
    env.slack_event(&slack_callback("Ev5", slack_dm("what did I tell you?", "1795000000.000200"))).await;
    slack_posts(&env, 2).await;
    let prompt = all_message_text(&env.llm.requests()[1]);
    assert!(!prompt.contains("4711"), "the deleted message is not in the next turn: {prompt}");
    assert!(prompt.contains("reacted :thumbsup: to your message “Got it, I will keep that in mind.”"), "{prompt}");
    assert_eq!(prompt.matches("reacted").count(), 1, "{prompt}");
}

#[tokio::test(flavor = "multi_thread")]
async fn slack_a_deleted_message_takes_the_memories_learned_from_it_and_no_others() {
    let env = TestEnv::start().await;
    let branch = "You are a branch";
    for (n, (ts, told, fact)) in [
        ("1795000000.000100", "my door code is 4711", "Ada's door code is 4711"),
        ("1795000000.000200", "my cat is called Tom", "Ada's cat is called Tom"),
    ]
    .into_iter()
    .enumerate()
    {
        env.llm.push(Scripted::ToolCalls(vec![
            ("branch".into(), json!({ "question": format!("remember: {told}") })),
            ("reply".into(), json!({ "content": "I'll remember that." })),
        ]));
        env.llm.push_for(
            branch,
            Scripted::ToolCalls(vec![("memory_save".into(), json!({ "content": fact, "memory_type": "fact" }))]),
        );
        env.llm.push_for(branch, Scripted::Text("Saved.".into()));
        env.llm.reply("Noted.");
        env.slack_event(&slack_callback(&format!("Ev{n}"), slack_dm(told, ts))).await;
        slack_posts(&env, 2 * (n + 1)).await;
    }
    let contents = |listed: Value| -> Vec<String> {
        let rows = listed.as_array().cloned().unwrap_or_default();
        rows.iter().map(|row| row["content"].as_str().unwrap_or_default().to_string()).collect()
    };
    let branch_results: Vec<String> = env
        .llm
        .requests()
        .iter()
        .filter(|request| all_message_text(request).contains(branch))
        .filter_map(|request| {
            let messages = request["messages"].as_array()?;
            let result = messages.iter().rev().find(|message| message["role"] == "tool")?;
            Some(result["content"].as_str().unwrap_or_default().to_string())
        })
        .collect();
    assert_eq!(branch_results.len(), 2, "each branch saved once: {branch_results:?}");
    assert!(branch_results.iter().all(|result| result.starts_with("saved memory")), "{branch_results:?}");
    assert_eq!(contents(env.admin("/api/memories?mode=recent").await).len(), 2, "both facts saved");

    let deleted = json!({"type": "message", "subtype": "message_deleted", "channel": "D1", "channel_type": "im",
        "hidden": true, "deleted_ts": "1795000000.000100", "ts": "1795000099.000002"});
    let gone = answer(env.slack_event(&slack_callback("Ev9", deleted)).await).await;
    assert_eq!(gone["reason"], "delete: applied", "{gone}");
    let left = contents(env.admin("/api/memories?mode=recent").await);
    assert_eq!(left, vec!["Ada's cat is called Tom".to_string()], "only the deleted message's memory went");
    let searched = env.admin("/api/memories?mode=hybrid&query=door%20code").await.to_string();
    assert!(!searched.contains("4711"), "nor is it found by search: {searched}");
}

#[tokio::test(flavor = "multi_thread")]
async fn slack_a_modal_submitted_is_answered_and_a_forged_one_refused() {
    let env = TestEnv::start().await;
    let payload = json!({"type": "view_submission", "team": {"id": "T1"}, "user": {"id": "U1", "name": "ada"},
        "view": {"id": "V1", "callback_id": "someone_elses", "state": {"values": {}}}});
    let body = form_urlencoded::Serializer::new(String::new()).append_pair("payload", &payload.to_string()).finish();
    let headers = slack_headers(body.as_bytes(), now_secs(), "application/x-www-form-urlencoded");
    let answered = env.post("/webhooks/slack", &headers, body.clone().into_bytes()).await;
    assert_eq!(answered.status(), 200);
    let answered: Value = answered.json().await.unwrap();
    assert_eq!(answered["response_action"], "update", "{answered}");
    assert!(answered["view"]["blocks"][0]["text"]["text"].as_str().unwrap().contains("not read"));
    let mut forged = headers.clone();
    forged[2].1 = format!("v0={}", "ab".repeat(32));
    assert_eq!(env.post("/webhooks/slack", &forged, body.into_bytes()).await.status(), 401);
    // A forged edit is refused the same way, and changes nothing.
    let edit = slack_callback("Ev9", slack_changed("1795000000.000100", "forged")).to_string().into_bytes();
    let mut forged = slack_headers(&edit, now_secs(), "application/json");
    forged[2].1 = format!("v0={}", "cd".repeat(32));
    assert_eq!(env.post("/webhooks/slack", &forged, edit).await.status(), 401);
    assert_eq!(env.admin("/api/channels/slack:T1:D1/events").await, json!([]));
}

// Discord over the Gateway: a DM channel (`discord:dm:C9`).

#[tokio::test(flavor = "multi_thread")]
async fn discord_edits_deletions_and_reactions_reach_the_channel() {
    use crate::gateway::{message, posts, start_with, HEARTBEAT_MS};
    use crate::harness::fake_gateway::FakeGateway;
    let gateway = FakeGateway::start(HEARTBEAT_MS).await;
    let env = start_with(&gateway, &[("STREAM_REPLIES", "off")]).await;
    let gate = Arc::new(tokio::sync::Notify::new());
    env.llm.push(Scripted::Gated(gate.clone(), Box::new(Scripted::Reply("about the old question".into()))));
    env.llm.push(Scripted::Echo);
    gateway.dispatch("MESSAGE_CREATE", message("1300000000000000101", "C9", None, "U1", "is it cold in Oslo?", &[]));
    wait_for("the model is thinking", Duration::from_secs(20), || async { (env.llm.in_flight() == 1).then_some(()) })
        .await;
    let mut update = message("1300000000000000101", "C9", None, "U1", "is it cold in Rome?", &[]);
    update["edited_timestamp"] = json!("2026-11-27T06:00:00Z");
    gateway.dispatch("MESSAGE_UPDATE", update.clone());
    wait_for("the edit is heard", Duration::from_secs(20), || async {
        let events = env.admin("/api/channels/discord:dm:C9/events").await;
        events.as_array()?.iter().any(|event| event["decision"] == "heard").then_some(())
    })
    .await;
    gate.notify_one();
    let sent = posts(&env, "C9", 1).await;
    let text = sent[0]["content"].as_str().unwrap();
    assert!(text.contains("Rome") && !text.contains("Oslo"), "{text}");
    // A RESUME's replay of the same edit is a repeat.
    gateway.dispatch("MESSAGE_UPDATE", update);
    let bot_message = bot_message_id(&env, "discord:dm:C9").await;

    env.llm.reply("Noted.");
    gateway.dispatch("MESSAGE_CREATE", message("1300000000000000102", "C9", None, "U1", "my pin is 9876", &[]));
    posts(&env, "C9", 2).await;
    gateway.dispatch("MESSAGE_DELETE", json!({"id": "1300000000000000102", "channel_id": "C9"}));
    let reaction = |message_id: &str| {
        json!({"user_id": "U1", "channel_id": "C9", "message_id": message_id,
        "emoji": {"id": null, "name": "🔥"}})
    };
    gateway.dispatch("MESSAGE_REACTION_ADD", reaction(&bot_message));
    gateway.dispatch("MESSAGE_REACTION_ADD", reaction("1300000000000000101"));
    let events = wait_for("five heard", Duration::from_secs(20), || async {
        let events = env.admin("/api/channels/discord:dm:C9/events").await;
        let heard: Vec<Value> =
            events.as_array()?.iter().filter(|event| event["decision"] == "heard").cloned().collect();
        (heard.len() >= 4).then_some(heard)
    })
    .await;
    env.settle().await;
    // The Gateway hands each over on its own, so they may be filed in any order.
    let mut reasons: Vec<&str> = events.iter().map(|event| event["reason"].as_str().unwrap()).collect();
    reasons.sort_unstable();
    assert_eq!(
        reasons,
        [
            "delete: applied",
            "edit: applied to the turn under way",
            "reaction: ignored: not a message of the bot's",
            "reaction: noted for the next turn",
        ],
        "the replayed edit is not among them"
    );
    assert_eq!(env.llm.requests().len(), 3, "two thoughts for the first turn, one for the second; none for these");

    env.llm.reply("Fine.");
    gateway.dispatch("MESSAGE_CREATE", message("1300000000000000103", "C9", None, "U1", "and now?", &[]));
    posts(&env, "C9", 3).await;
    let prompt = all_message_text(&env.llm.requests()[3]);
    assert!(!prompt.contains("9876"), "the deleted message is gone: {prompt}");
    assert!(prompt.contains("is it cold in Rome?") && !prompt.contains("Oslo"), "{prompt}");
    assert!(prompt.contains("(U1 reacted 🔥 to your message"), "{prompt}");
}

#[tokio::test(flavor = "multi_thread")]
async fn discord_a_modal_submitted_is_answered_never_dropped() {
    let env = TestEnv::start().await;
    let modal = json!({"id": "77", "application_id": crate::harness::DISCORD_APPLICATION, "type": 5,
        "token": "token-77", "guild_id": "G1", "channel_id": "C1", "version": 1,
        "member": {"user": {"id": "U1", "username": "ada"}},
        "data": {"custom_id": "feedback", "components": []}});
    let response = env.discord_interaction(&modal).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["type"], 4, "{body}");
    assert_eq!(body["data"]["flags"], 64, "only the one who submitted sees it");
    assert!(body["data"]["content"].as_str().unwrap().contains("not read"));
    env.settle().await;
    assert!(env.llm.requests().is_empty());
}
