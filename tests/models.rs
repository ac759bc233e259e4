//! Model routing: fallback chains, cooldowns, and what never falls back.

use crate::harness::{dm_update, Scripted, TestEnv, FAILURE_MESSAGE_START};

const CHAIN: &str = "openai/primary-model,openai/backup-model";

#[tokio::test(flavor = "multi_thread")]
async fn a_429_from_the_first_model_falls_back_to_the_second_which_then_leads() {
    let env = TestEnv::start_with(&[("CHANNEL_MODEL", CHAIN)]).await;
    env.llm.push(Scripted::Status(429));
    env.llm.reply("from the backup");
    env.telegram_update(&dm_update(1, 61, "hi")).await;
    let sent = env.wait_for_sent(1).await;
    assert_eq!(sent[0]["text"], "from the backup");
    let models: Vec<String> =
        env.llm.requests().iter().map(|request| request["model"].as_str().unwrap().to_string()).collect();
    assert_eq!(models, vec!["primary-model", "backup-model"]);

    // The rate-limited model cools down: the next turn goes straight to the backup.
    env.llm.reply("still the backup");
    env.telegram_update(&dm_update(2, 61, "again")).await;
    env.wait_for_sent(2).await;
    assert_eq!(env.llm.requests()[2]["model"], "backup-model");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_request_never_falls_back() {
    let env = TestEnv::start_with(&[("CHANNEL_MODEL", CHAIN)]).await;
    env.llm.push(Scripted::Status(400));
    env.telegram_update(&dm_update(1, 62, "hi")).await;
    let sent = env.wait_for_sent(1).await;
    assert!(sent[0]["text"].as_str().unwrap().starts_with(FAILURE_MESSAGE_START));
    env.settle().await;
    assert_eq!(env.llm.requests().len(), 1, "no retry and no fallback on a 400");
}
