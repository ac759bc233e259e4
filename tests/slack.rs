//! Slack: signed Events API deliveries, the URL challenge, retries, threads,
//! long answers and the slash command.

use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::{now_secs, slack_callback, slack_headers, wait_for, TestEnv, SLACK_BOT_USER};

fn dm(text: &str, ts: &str) -> Value {
    json!({"type": "message", "channel": "D1", "channel_type": "im", "user": "U1", "text": text, "ts": ts})
}

async fn wait_for_posts(env: &TestEnv, count: usize) -> Vec<Value> {
    wait_for(&format!("{count} chat.postMessage call(s)"), Duration::from_secs(20), || async {
        let posts = env.slack.calls("/chat.postMessage");
        (posts.len() >= count).then_some(posts)
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn signatures_are_required_fresh_and_exact() {
    let env = TestEnv::start().await;
    let body = slack_callback("Ev1", dm("forged?", "1795000000.000100")).to_string().into_bytes();
    let now = now_secs();

    let missing = env.post("/webhooks/slack", &[("content-type", "application/json".into())], body.clone()).await;
    assert_eq!(missing.status(), 401);
    assert!(missing.json::<Value>().await.unwrap()["error"].as_str().unwrap().contains("missing"));

    let mut wrong = slack_headers(&body, now, "application/json");
    wrong[2].1 = wrong[2].1.replace('a', "b").replace('1', "2");
    assert_eq!(env.post("/webhooks/slack", &wrong, body.clone()).await.status(), 401);

    let tampered = slack_headers(&body, now, "application/json");
    assert_eq!(env.post("/webhooks/slack", &tampered, b"{\"type\":\"event_callback\"}".to_vec()).await.status(), 401);

    let stale = slack_headers(&body, now - 6 * 60, "application/json");
    let response = env.post("/webhooks/slack", &stale, body.clone()).await;
    assert_eq!(response.status(), 401);
    assert!(response.json::<Value>().await.unwrap()["error"].as_str().unwrap().contains("stale"));

    env.settle().await;
    assert_eq!(env.admin("/api/channels/slack:T1:D1/events").await, json!([]), "nothing stored");
    assert!(env.llm.requests().is_empty());

    env.llm.reply("signed and answered");
    let accepted = env.post("/webhooks/slack", &slack_headers(&body, now, "application/json"), body).await;
    assert_eq!(accepted.status(), 200);
    let posts = wait_for_posts(&env, 1).await;
    assert_eq!(posts[0]["channel"], "D1");
    assert_eq!(posts[0]["text"], "signed and answered");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_url_verification_challenge_is_answered() {
    let env = TestEnv::start().await;
    let response = env
        .slack_event(&json!({"token": "x", "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P", "type": "url_verification"}))
        .await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.json::<Value>().await.unwrap()["challenge"],
        "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn retries_and_repeated_events_get_one_reply() {
    let env = TestEnv::start().await;
    env.llm.reply("just once");
    let event = slack_callback("Ev42", dm("hello", "1795000000.000200"));
    assert_eq!(env.slack_event(&event).await.status(), 200);

    // Slack's retry of the same event, with the retry header.
    let body = event.to_string().into_bytes();
    let mut headers = slack_headers(&body, now_secs(), "application/json");
    headers.push(("X-Slack-Retry-Num", "1".into()));
    headers.push(("X-Slack-Retry-Reason", "http_timeout".into()));
    let retry = env.post("/webhooks/slack", &headers, body).await;
    assert_eq!(retry.status(), 200);
    // The same message delivered again under a new event id (Slack's app_mention twin).
    let twin = slack_callback(
        "Ev43",
        json!({"type": "app_mention", "channel": "D1", "user": "U1", "text": "hello", "ts": "1795000000.000200"}),
    );
    assert_eq!(env.slack_event(&twin).await.status(), 200);

    wait_for_posts(&env, 1).await;
    env.settle().await;
    assert_eq!(env.slack.calls("/chat.postMessage").len(), 1);
    assert_eq!(env.llm.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reply_in_a_thread_lands_in_that_thread_and_the_message_gets_eyes() {
    let env = TestEnv::start().await;
    env.llm.reply("answered in the thread");
    let mention = json!({
        "type": "app_mention", "channel": "C7", "channel_type": "channel", "user": "U1",
        "text": format!("<@{SLACK_BOT_USER}> can you look?"), "ts": "1795000000.000900",
        "thread_ts": "1795000000.000100", "parent_user_id": "U2"
    });
    let response = env.slack_event(&slack_callback("Ev7", mention)).await;
    assert_eq!(response.json::<Value>().await.unwrap()["decision"], "engage");

    let posts = wait_for_posts(&env, 1).await;
    assert_eq!(posts[0]["channel"], "C7");
    assert_eq!(posts[0]["thread_ts"], "1795000000.000100");
    let reactions = env.slack.calls("/reactions.add");
    assert_eq!(reactions.len(), 1);
    assert_eq!(reactions[0]["name"], "eyes");
    assert_eq!(reactions[0]["timestamp"], "1795000000.000900");
    let cleared = wait_for("the reaction removed", Duration::from_secs(10), || async {
        let removed = env.slack.calls("/reactions.remove");
        (!removed.is_empty()).then_some(removed)
    })
    .await;
    assert_eq!(cleared[0]["name"], "eyes");
    // The answer's history row is stored after its send: wait for it.
    let history = wait_for("the message and the answer in the thread's history", Duration::from_secs(10), || async {
        let history = env.admin("/api/channels/slack:T1:C7:1795000000.000100/messages").await;
        (history.as_array().map(Vec::len) >= Some(2)).then_some(history)
    })
    .await;
    assert_eq!(history.as_array().unwrap().len(), 2, "the thread is its own conversation");
}

#[tokio::test(flavor = "multi_thread")]
async fn long_answers_are_split_at_slacks_limit() {
    let env = TestEnv::start().await;
    let long = "word ".repeat(5_000); // 25,000 characters
    env.llm.reply(&long);
    env.slack_event(&slack_callback("Ev9", dm("tell me everything", "1795000000.000300"))).await;
    let posts = wait_for_posts(&env, 3).await;
    env.settle().await;
    let posts_now = env.slack.calls("/chat.postMessage");
    assert_eq!(posts_now.len(), posts.len());
    assert!(posts.iter().all(|post| post["text"].as_str().unwrap().chars().count() <= 12_000));
    let joined: Vec<&str> = posts.iter().map(|post| post["text"].as_str().unwrap()).collect();
    assert_eq!(joined.join(" "), long.trim());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_ask_slash_command_is_acknowledged_then_answered_in_the_channel() {
    let env = TestEnv::start().await;
    env.llm.reply("Four.");
    let body = b"token=x&team_id=T1&channel_id=C5&user_id=U1&user_name=ada&command=%2Fask&text=what+is+2%2B2%3F&response_url=https%3A%2F%2Fexample.invalid&trigger_id=13345224609.8088930838d88f008e0".to_vec();
    let headers = slack_headers(&body, now_secs(), "application/x-www-form-urlencoded");
    let response = env.post("/webhooks/slack", &headers, body).await;
    assert_eq!(response.status(), 200);
    let ack: Value = response.json().await.unwrap();
    assert_eq!(ack["response_type"], "ephemeral");
    assert!(!ack["text"].as_str().unwrap().is_empty());

    let posts = wait_for_posts(&env, 1).await;
    assert_eq!(posts[0]["channel"], "C5");
    assert_eq!(posts[0]["text"], "Four.");
    assert!(crate::harness::all_message_text(&env.llm.requests()[0]).contains("what is 2+2?"));
}
