//! A conversation's history is served by its channel object and mirrored to
//! D1 after each alarm: it survives restarts, the admin API lists it, and a
//! turn's prompt never depends on reading D1.

use std::time::Duration;

use serde_json::Value;

use crate::harness::{all_message_text, dm_update, turn_message, wait_for, TestEnv};

/// Two turns in a DM with `chat`: "my dog is called Rex" / "Rex!", "I live in Oslo" / "Noted.".
async fn two_turns(env: &TestEnv, chat: i64, first_update: i64) {
    env.llm.reply("Rex!");
    env.telegram_update(&dm_update(first_update, chat, "my dog is called Rex")).await;
    env.wait_for_sent(1).await;
    env.llm.reply("Noted.");
    env.telegram_update(&dm_update(first_update + 1, chat, "I live in Oslo")).await;
    env.wait_for_sent(2).await;
}

async fn listed(env: &TestEnv, chat: i64, count: usize) -> Vec<String> {
    let path = format!("/api/channels/telegram:{chat}/messages");
    let history = wait_for(&format!("{count} messages listed"), Duration::from_secs(10), || async {
        let history = env.admin(&path).await;
        (history.as_array().map_or(0, Vec::len) == count).then_some(history)
    })
    .await;
    history.as_array().unwrap().iter().map(|row| row["content"].as_str().unwrap_or_default().to_string()).collect()
}

fn position(prompt: &str, needle: &str) -> usize {
    prompt.find(needle).unwrap_or_else(|| panic!("{needle:?} is in the prompt: {prompt}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn history_survives_a_restart_and_the_admin_api_lists_all_of_it() {
    let mut env = TestEnv::start().await;
    two_turns(&env, 71, 7101).await;
    env.wait_for_delivered("telegram:71", 2).await;
    env.crash_and_restart().await;

    env.llm.reply("You have a dog, Rex, and live in Oslo.");
    env.telegram_update(&dm_update(7103, 71, "what do you know about me?")).await;
    env.wait_for_sent(3).await;
    let requests = env.llm.requests();
    assert_eq!(requests.len(), 3);
    let prompt = all_message_text(&requests[2]);
    let (dog, rex, oslo) =
        (position(&prompt, "my dog is called Rex"), position(&prompt, "Rex!"), position(&prompt, "I live in Oslo"));
    assert!(dog < rex && rex < oslo && oslo < position(&prompt, "Noted."), "in order: {prompt}");
    assert!(turn_message(&requests[2]).contains("what do you know about me?"));

    let contents = listed(&env, 71, 6).await;
    assert_eq!(
        contents,
        vec![
            "my dog is called Rex",
            "Rex!",
            "I live in Oslo",
            "Noted.",
            "what do you know about me?",
            "You have a dog, Rex, and live in Oslo."
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_turn_prompts_from_the_objects_copy_without_reading_d1_history() {
    let mut env = TestEnv::start().await;
    two_turns(&env, 72, 7201).await;
    assert_eq!(listed(&env, 72, 4).await.len(), 4, "D1 holds the conversation");
    // Change the archive behind the object's back: a turn that read D1 would prompt with this.
    let changed = env
        .sql_while_stopped(
            "UPDATE messages SET content = 'TAMPERED' WHERE conversation_key = 'telegram:72'; \
             SELECT count(*) AS tampered FROM messages WHERE content = 'TAMPERED'",
        )
        .await;
    assert_eq!(changed[1]["results"][0]["tampered"], 4, "{changed}");

    env.llm.reply("Rex, in Oslo.");
    env.telegram_update(&dm_update(7203, 72, "remind me?")).await;
    env.wait_for_sent(3).await;
    let prompt = all_message_text(&env.llm.requests()[2]);
    assert!(!prompt.contains("TAMPERED"), "the prompt did not come from D1: {prompt}");
    position(&prompt, "my dog is called Rex");
    position(&prompt, "Noted.");

    // The new turn still reaches the archive.
    let contents = listed(&env, 72, 6).await;
    assert_eq!(contents[4..], ["remind me?", "Rex, in Oslo."]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_conversation_from_before_the_object_kept_history_takes_it_over_from_d1() {
    let mut env = TestEnv::start().await;
    let inserted: Value = env
        .sql_while_stopped(
            "INSERT INTO messages (id, conversation_key, role, author_id, author_name, content, created_at) VALUES \
             ('telegram:73:in:old', 'telegram:73', 'user', '73', 'Ada', 'I said this before the upgrade', 1000), \
             ('telegram:73:out:old', 'telegram:73', 'assistant', 'bot', 'edgebot', 'And I answered it', 2000); \
             SELECT count(*) AS old FROM messages WHERE conversation_key = 'telegram:73'",
        )
        .await;
    assert_eq!(inserted[1]["results"][0]["old"], 2, "{inserted}");

    env.llm.reply("I remember.");
    env.telegram_update(&dm_update(7301, 73, "do you remember?")).await;
    env.wait_for_sent(1).await;
    let prompt = all_message_text(&env.llm.requests()[0]);
    assert!(position(&prompt, "I said this before the upgrade") < position(&prompt, "And I answered it"));

    let contents = listed(&env, 73, 4).await;
    assert_eq!(contents[2..], ["do you remember?", "I remember."]);
}
