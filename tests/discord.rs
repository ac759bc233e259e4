//! Discord: signed interactions, PING, deferred /ask answered by editing the
//! original response, follow-ups for long answers, components.

use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::{discord_ask, discord_headers, now_secs, wait_for, TestEnv, DISCORD_APPLICATION};

#[tokio::test(flavor = "multi_thread")]
async fn ping_is_answered_with_pong_only_when_signed() {
    let env = TestEnv::start().await;
    let ping = json!({"id": "1", "application_id": DISCORD_APPLICATION, "type": 1}).to_string().into_bytes();

    let response = env.post("/webhooks/discord", &discord_headers(&ping, now_secs()), ping.clone()).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.json::<Value>().await.unwrap(), json!({"type": 1}));

    let missing = env.post("/webhooks/discord", &[("content-type", "application/json".into())], ping.clone()).await;
    assert_eq!(missing.status(), 401);
    let mut forged = discord_headers(&ping, now_secs());
    forged[2].1 = "00".repeat(64);
    assert_eq!(env.post("/webhooks/discord", &forged, ping.clone()).await.status(), 401);
    let stale = discord_headers(&ping, now_secs() - 600);
    assert_eq!(env.post("/webhooks/discord", &stale, ping.clone()).await.status(), 401);
    let other_body = discord_headers(&ping, now_secs());
    let response =
        env.post("/webhooks/discord", &other_body, br#"{"id":"2","application_id":"x","type":1}"#.to_vec()).await;
    assert_eq!(response.status(), 401);
    assert!(response.json::<Value>().await.unwrap()["error"].is_string());
}

#[tokio::test(flavor = "multi_thread")]
async fn ask_gets_a_deferred_response_then_the_edit_with_the_answer() {
    let env = TestEnv::start().await;
    env.llm.reply("edgebot is a serverless agent.");
    let response = env.discord_interaction(&discord_ask("9001", "what are you?")).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.json::<Value>().await.unwrap(), json!({"type": 5}));

    let edits = wait_for("the edit of the original response", Duration::from_secs(20), || async {
        let edits: Vec<_> = env.discord.requests().into_iter().filter(|call| call.method == "PATCH").collect();
        (!edits.is_empty()).then_some(edits)
    })
    .await;
    assert_eq!(edits[0].path, format!("/api/v10/webhooks/{DISCORD_APPLICATION}/token-9001/messages/@original"));
    assert_eq!(edits[0].body["content"], "edgebot is a serverless agent.");
    env.settle().await;
    assert_eq!(env.discord.total_calls(), 1, "one edit, no follow-ups");
    assert!(crate::harness::all_message_text(&env.llm.requests()[0]).contains("what are you?"));

    // The same interaction delivered again is not answered twice.
    let again = env.discord_interaction(&discord_ask("9001", "what are you?")).await;
    assert_eq!(again.status(), 200);
    env.settle().await;
    assert_eq!(env.discord.total_calls(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn answers_over_2000_characters_continue_in_follow_ups() {
    let env = TestEnv::start().await;
    let long = "chunk ".repeat(800); // 4,800 characters
    env.llm.reply(&long);
    env.discord_interaction(&discord_ask("9002", "long please")).await;
    let calls = wait_for("the edit and two follow-ups", Duration::from_secs(20), || async {
        let calls = env.discord.requests();
        (calls.len() >= 3).then_some(calls)
    })
    .await;
    assert_eq!(calls[0].method, "PATCH");
    assert!(calls[1..].iter().all(
        |call| call.method == "POST" && call.path == format!("/api/v10/webhooks/{DISCORD_APPLICATION}/token-9002")
    ));
    assert!(calls.iter().all(|call| call.body["content"].as_str().unwrap().chars().count() <= 2000));
    let joined: Vec<&str> = calls.iter().map(|call| call.body["content"].as_str().unwrap()).collect();
    assert_eq!(joined.join(" "), long.trim());
}

#[tokio::test(flavor = "multi_thread")]
async fn components_get_a_deferred_update() {
    let env = TestEnv::start().await;
    let component = json!({"id": "77", "application_id": DISCORD_APPLICATION, "type": 3, "token": "t",
        "channel_id": "C1", "data": {"custom_id": "more", "component_type": 2}});
    let response = env.discord_interaction(&component).await;
    assert_eq!(response.json::<Value>().await.unwrap(), json!({"type": 6}));
    let malformed = env.discord_interaction(&json!({"type": "nope"})).await;
    assert_eq!(malformed.status(), 400);
}
