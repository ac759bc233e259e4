//! Reliable outbound, seen through Telegram: rate limits reschedule the send,
//! rejected markup falls back to plain text, long answers are split, and a
//! send that keeps failing is recorded for the admin API.

use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::{dm_update, wait_for, Scripted, TestEnv};

#[tokio::test(flavor = "multi_thread")]
async fn a_429_with_retry_after_is_retried_and_delivered_exactly_once() {
    let env = TestEnv::start().await;
    env.telegram.fail_next(
        "/sendMessage",
        429,
        json!({"ok": false, "error_code": 429, "description": "Too Many Requests: retry after 1", "parameters": {"retry_after": 1}}),
        None,
    );
    env.llm.reply("after the rate limit");
    env.telegram_update(&dm_update(1, 41, "hi")).await;
    let sent = env.wait_for_sent(2).await; // the refused attempt, then the delivery
    env.settle().await;
    let sent_now = env.telegram.calls("/sendMessage");
    assert_eq!(sent_now.len(), 2, "one refused attempt and exactly one delivery");
    assert_eq!(sent[1]["text"], "after the rate limit");
    assert_eq!(env.llm.requests().len(), 1, "the rate limit did not re-run the turn");
    let outbox = env.admin("/api/channels/telegram:41/outbox").await;
    assert_eq!(outbox[0]["status"], "sent");
    assert_eq!(outbox[0]["attempts"], 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn rejected_html_falls_back_to_plain_text() {
    let env = TestEnv::start().await;
    env.telegram.fail_next(
        "/sendMessage",
        400,
        json!({"ok": false, "error_code": 400, "description": "Bad Request: can't parse entities: Unsupported start tag \"x\" at byte offset 2"}),
        None,
    );
    env.llm.reply("a <x> b");
    env.telegram_update(&dm_update(1, 42, "markup?")).await;
    let sent = env.wait_for_sent(2).await;
    assert_eq!(sent[0]["parse_mode"], "HTML");
    assert_eq!(sent[0]["text"], "a &lt;x&gt; b", "the model's markup is escaped, never sent as HTML");
    assert_eq!(sent[1]["text"], "a <x> b", "the retry is what a reader would have seen");
    assert!(sent[1].get("parse_mode").is_none(), "the retry is plain text");
    let working = env.telegram.calls("/sendChatAction");
    assert_eq!(working[0]["action"], "typing");
}

#[tokio::test(flavor = "multi_thread")]
async fn long_answers_are_split_at_telegrams_limit() {
    let env = TestEnv::start().await;
    let long = "lorem ipsum ".repeat(1_000); // 12,000 characters
    env.llm.reply(&long);
    env.telegram_update(&dm_update(1, 43, "a long one")).await;
    env.wait_for_sent(3).await;
    env.settle().await;
    let sent: Vec<Value> = env.telegram.calls("/sendMessage");
    assert_eq!(sent.len(), 3);
    assert!(sent.iter().all(|piece| piece["text"].as_str().unwrap().chars().count() <= 4096));
    let joined: Vec<&str> = sent.iter().map(|piece| piece["text"].as_str().unwrap()).collect();
    assert_eq!(joined.join(" "), long.trim());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_send_that_keeps_failing_is_recorded_and_the_conversation_goes_on() {
    let env = TestEnv::start().await;
    for _ in 0..3 {
        env.telegram.fail_next("/sendMessage", 502, json!({"ok": false, "description": "Bad Gateway"}), None);
    }
    env.llm.reply("this one is lost to the outage");
    env.telegram_update(&dm_update(1, 44, "hello?")).await;
    let outbox = crate::harness::wait_for("the failure in the outbox", std::time::Duration::from_secs(20), || async {
        let outbox = env.admin("/api/channels/telegram:44/outbox").await;
        (outbox[0]["status"] == "failed").then_some(outbox)
    })
    .await;
    assert_eq!(outbox[0]["attempts"], 3, "bounded retries");
    assert!(outbox[0]["last_error"].as_str().unwrap().contains("502"));
    let history = env.admin("/api/channels/telegram:44/messages").await;
    assert_eq!(history[0]["content"], "hello?", "the inbound is kept");

    env.llm.reply("back again");
    env.telegram_update(&dm_update(2, 44, "still there?")).await;
    crate::harness::wait_for("the next reply", std::time::Duration::from_secs(20), || async {
        let sent = env.telegram.calls("/sendMessage");
        sent.iter().any(|piece| piece["text"] == "back again").then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_quick_answer_shows_typing_and_no_working_reaction() {
    let env = TestEnv::start().await;
    env.llm.reply("quick");
    env.telegram_update(&dm_update(1, 45, "hi")).await;
    env.wait_for_sent(1).await;
    env.settle().await;
    assert_eq!(env.telegram.calls("/sendChatAction")[0]["action"], "typing");
    let reactions = env.telegram.calls("/setMessageReaction");
    assert!(reactions.is_empty(), "a quick answer needs no 👀 (nor its removal): {reactions:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reaction_the_model_chooses_replaces_the_working_one() {
    let env = TestEnv::start_with(&[("LLM_TIMEOUT_MS", "30000")]).await;
    // Slow enough that the working reaction is put on (at the first renewal of typing).
    env.llm.push(Scripted::Delayed(
        Duration::from_secs(6),
        Box::new(Scripted::ToolCalls(vec![
            ("react".into(), json!({ "emoji": "👍" })),
            ("reply".into(), json!({ "content": "Done." })),
        ])),
    ));
    env.telegram_update(&dm_update(1, 44, "please note it")).await;
    env.wait_for_sent(1).await;
    let reactions = wait_for("three reaction calls", Duration::from_secs(5), || async {
        let reactions = env.telegram.calls("/setMessageReaction");
        (reactions.len() >= 3).then_some(reactions)
    })
    .await;
    let shown: Vec<Value> = reactions.iter().map(|call| call["reaction"].clone()).collect();
    assert_eq!(
        shown,
        vec![json!([{"type": "emoji", "emoji": "👀"}]), json!([]), json!([{"type": "emoji", "emoji": "👍"}])],
        "working, cleared, then the model's reaction stays"
    );
    assert_eq!(reactions[2]["message_id"], 10, "on the message answered");
}

#[tokio::test(flavor = "multi_thread")]
async fn typing_is_renewed_while_a_slow_model_thinks() {
    let env = TestEnv::start_with(&[("LLM_TIMEOUT_MS", "30000")]).await;
    env.llm.push(Scripted::SlowReply(Duration::from_secs(12), "done thinking".into()));
    env.telegram_update(&dm_update(1, 47, "think hard")).await;
    env.wait_for_sent(1).await;
    // Telegram shows "typing" for about 5 s: one at the start, then renewals.
    let typing = env.telegram.calls("/sendChatAction");
    assert!(typing.len() >= 3, "typing was renewed while the model thought: {} call(s)", typing.len());
    assert!(typing.iter().all(|call| call["action"] == "typing"));
    // A turn still at work after the first renewal gets 👀 once; it is taken
    // off right after the answer.
    let reactions = wait_for("the working reaction off", Duration::from_secs(5), || async {
        let reactions = env.telegram.calls("/setMessageReaction");
        (reactions.len() >= 2).then_some(reactions)
    })
    .await;
    let shown: Vec<Value> = reactions.iter().map(|call| call["reaction"].clone()).collect();
    assert_eq!(shown, vec![json!([{"type": "emoji", "emoji": "👀"}]), json!([])]);
}
