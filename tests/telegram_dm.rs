//! The first path: a Telegram direct message answered by the model.

use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::{
    all_message_text, dm_update, wait_for, Scripted, TestEnv, FAILURE_MESSAGE_START, TELEGRAM_SECRET,
};

#[tokio::test(flavor = "multi_thread")]
async fn health_answers_and_unknown_routes_are_json_404s() {
    let env = TestEnv::start().await;
    let health = env.client.get(format!("{}/health", env.worker.base_url)).send().await.unwrap();
    assert_eq!(health.status(), 200);
    let missing = env.client.get(format!("{}/nope", env.worker.base_url)).send().await.unwrap();
    assert_eq!(missing.status(), 404);
    assert_eq!(missing.json::<Value>().await.unwrap()["error"], "not found");
    let admin = env.client.get(format!("{}/api/channels/telegram:1/events", env.worker.base_url)).send().await.unwrap();
    assert_eq!(admin.status(), 401, "the admin API needs the token");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dm_gets_the_models_reply() {
    let env = TestEnv::start().await;
    env.llm.reply("Hello Ada, nice to meet you!");

    let response = env.telegram_update(&dm_update(1001, 77, "hi there")).await;
    assert_eq!(response.status(), 200);

    let sent = env.wait_for_sent(1).await;
    assert_eq!(sent[0]["chat_id"], 77);
    assert_eq!(sent[0]["text"], "Hello Ada, nice to meet you!");
    assert!(env.telegram.requests().iter().all(|call| call.path.starts_with("/bot4242:test-token/")));

    let requests = env.llm.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0]["model"], "scripted-model");
    assert!(all_message_text(&requests[0]).contains("Ada: hi there"));
    assert!(requests[0]["tools"].as_array().unwrap().iter().any(|tool| tool["function"]["name"] == "reply"));

    // The fake model reports 10 input and 5 output tokens per call.
    let usage = crate::harness::wait_for("the turn's usage", std::time::Duration::from_secs(10), || async {
        let usage = env.admin("/api/channels/telegram:77/usage").await;
        (usage["channel"]["input_tokens"] == 10).then_some(usage)
    })
    .await;
    assert_eq!(usage["channel"]["output_tokens"], 5);
}

#[tokio::test(flavor = "multi_thread")]
async fn missing_or_wrong_secret_is_401_and_stores_nothing() {
    let env = TestEnv::start().await;
    let update = dm_update(2001, 88, "forged message").to_string();

    let missing = env.telegram_raw(None, update.clone()).await;
    assert_eq!(missing.status(), 401);
    assert!(missing.json::<Value>().await.unwrap()["error"].as_str().unwrap().contains("missing"));

    let wrong = env.telegram_raw(Some("not-the-secret"), update.clone()).await;
    assert_eq!(wrong.status(), 401);
    assert!(wrong.json::<Value>().await.unwrap()["error"].is_string());

    let almost = env.telegram_raw(Some(&format!("{TELEGRAM_SECRET}x")), update).await;
    assert_eq!(almost.status(), 401);

    env.settle().await;
    assert_eq!(env.admin("/api/channels/telegram:88/events").await, json!([]));
    assert_eq!(env.admin("/api/channels/telegram:88/messages").await, json!([]));
    assert!(env.llm.requests().is_empty());
    assert_eq!(env.telegram.total_calls(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_json_is_400_and_updates_without_a_message_are_ignored() {
    let env = TestEnv::start().await;
    for body in ["{not json", "[]", r#"{"message": {"text": "no update id"}}"#] {
        let response = env.telegram_raw(Some(TELEGRAM_SECRET), body.to_string()).await;
        assert_eq!(response.status(), 400, "{body}");
        assert!(response.json::<Value>().await.unwrap()["error"].as_str().unwrap().contains("malformed"));
    }

    let edited = json!({"update_id": 3002, "edited_message": {"message_id": 1, "date": 1,
        "chat": {"id": 99, "type": "private"}, "text": "edited"}});
    let response = env.telegram_update(&edited).await;
    assert_eq!(response.status(), 200);
    assert!(response.json::<Value>().await.unwrap()["ignored"].is_string());

    env.settle().await;
    assert!(env.llm.requests().is_empty());
    assert_eq!(env.telegram.total_calls(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_repeated_update_id_gets_one_reply() {
    let env = TestEnv::start().await;
    env.llm.reply("only once");
    let update = dm_update(4001, 55, "are you there?");

    let first = env.telegram_update(&update).await;
    assert_eq!(first.status(), 200);
    let second = env.telegram_update(&update).await;
    assert_eq!(second.status(), 200);
    assert_eq!(second.json::<Value>().await.unwrap()["duplicate"], true);

    env.wait_for_sent(1).await;
    let third = env.telegram_update(&update).await;
    assert_eq!(third.status(), 200, "a retry after the reply is acknowledged too");
    env.settle().await;
    assert_eq!(env.telegram.calls("sendMessage").len(), 1);
    assert_eq!(env.llm.requests().len(), 1);
    let events = env.admin("/api/channels/telegram:55/events").await;
    assert_eq!(events.as_array().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_second_prompt_carries_the_first_exchange() {
    let env = TestEnv::start().await;
    env.llm.reply("Tom is a fine name for a cat.");
    env.telegram_update(&dm_update(5001, 66, "my cat is called Tom")).await;
    env.wait_for_sent(1).await;

    env.llm.reply("Your cat is called Tom.");
    env.telegram_update(&dm_update(5002, 66, "what is my cat called?")).await;
    let sent = env.wait_for_sent(2).await;
    assert_eq!(sent[1]["text"], "Your cat is called Tom.");

    let requests = env.llm.requests();
    assert_eq!(requests.len(), 2);
    let messages = requests[1]["messages"].as_array().unwrap();
    let position =
        |needle: &str| messages.iter().position(|message| message["content"].as_str().unwrap_or("").contains(needle));
    let asked = position("Ada: my cat is called Tom").expect("first message in the second prompt");
    let answered = position("Tom is a fine name for a cat.").expect("first reply in the second prompt");
    let current = position("what is my cat called?").expect("current message");
    assert!(asked < answered && answered < current, "history comes in order before the current message");
    assert_eq!(messages[answered]["role"], "assistant");

    // History is recorded right after the send, so the fake can see the send first.
    let history = wait_for("the reply in history", Duration::from_secs(10), || async {
        let history = env.admin("/api/channels/telegram:66/messages").await;
        (history.as_array().map_or(0, Vec::len) == 4).then_some(history)
    })
    .await;
    let contents: Vec<&str> = history.as_array().unwrap().iter().map(|row| row["content"].as_str().unwrap()).collect();
    assert_eq!(
        contents,
        vec![
            "my cat is called Tom",
            "Tom is a fine name for a cat.",
            "what is my cat called?",
            "Your cat is called Tom."
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_model_is_retried_then_the_user_hears_a_friendly_message() {
    let env = TestEnv::start().await;
    // Three attempts, three kinds of failure: a 5xx, an unparseable answer, a timeout.
    env.llm.push(Scripted::Status(503));
    env.llm.push(Scripted::Raw("this is not JSON".into()));
    env.llm.push(Scripted::Hang(Duration::from_secs(4)));

    let response = env.telegram_update(&dm_update(6001, 44, "please help")).await;
    assert_eq!(response.status(), 200);
    let sent = env.wait_for_sent(1).await;
    assert!(sent[0]["text"].as_str().unwrap().starts_with(FAILURE_MESSAGE_START), "{}", sent[0]);
    assert_eq!(env.llm.requests().len(), 3, "bounded retries: exactly three attempts");

    let history = env.admin("/api/channels/telegram:44/messages").await;
    assert_eq!(history[0]["content"], "please help", "the inbound stays in history");

    // The Worker keeps serving: the next message is answered normally.
    env.llm.reply("I'm back.");
    env.telegram_update(&dm_update(6002, 44, "hello again")).await;
    let sent = env.wait_for_sent(2).await;
    assert_eq!(sent[1]["text"], "I'm back.");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_transient_model_failure_is_retried_invisibly() {
    let env = TestEnv::start().await;
    env.llm.push(Scripted::Status(500));
    env.llm.reply("worked on the second try");
    env.telegram_update(&dm_update(7001, 33, "hello")).await;
    let sent = env.wait_for_sent(1).await;
    assert_eq!(sent[0]["text"], "worked on the second try");
    env.settle().await;
    assert_eq!(env.telegram.calls("sendMessage").len(), 1);
    assert_eq!(env.llm.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plain_answer_is_the_reply_and_skip_sends_nothing() {
    let env = TestEnv::start().await;
    env.llm.push(Scripted::Text("plain words".into()));
    env.telegram_update(&dm_update(8001, 22, "say something")).await;
    let sent = env.wait_for_sent(1).await;
    assert_eq!(sent[0]["text"], "plain words");

    env.llm.push(Scripted::ToolCalls(vec![("skip".into(), json!({"reason": "nothing to add"}))]));
    env.telegram_update(&dm_update(8002, 22, "ok")).await;
    crate::harness::wait_for("the second model call", Duration::from_secs(20), || async {
        (env.llm.requests().len() >= 2).then_some(())
    })
    .await;
    env.settle().await;
    assert_eq!(env.telegram.calls("sendMessage").len(), 1, "skip sends nothing");
}
