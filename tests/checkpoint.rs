//! The channel's state checkpoint (src/channel/checkpoint.rs): one row in the
//! object's storage, or filed on an inbound's own inbox row; an object made
//! before, with one row per slot, goes on where it was.

use crate::harness::worker::{channel_object_file, sqlite};
use crate::harness::{group_update, turn_message, TestEnv, GROUP_CHAT};

const ADA: (i64, &str, bool) = (11, "Ada", false);
const BO: (i64, &str, bool) = (12, "Bo", false);

/// The names of the `slots` rows.
const SLOT_NAMES: &str = "SELECT name FROM slots ORDER BY name";

/// Runs `sql` on the group's object (the Worker stopped meanwhile); the names it returns.
async fn slot_names(env: &mut TestEnv, sql: &str) -> Vec<String> {
    let key = format!("telegram:{GROUP_CHAT}");
    let rows = env.while_stopped(|state| sqlite(&channel_object_file(state, &key), sql)).await;
    rows.iter().filter_map(|row| row["name"].as_str().map(str::to_string)).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_object_with_a_row_per_slot_goes_on_where_it_was_and_then_keeps_one_row() {
    let mut env = TestEnv::start_with(&[("COALESCE_DEBOUNCE_MS", "300")]).await;
    env.llm.reply("Hello Ada.");
    env.telegram_update(&group_update(1, ADA, "hi", true)).await;
    env.wait_for_sent(1).await;
    env.telegram_update(&group_update(2, BO, "the deploy failed at 3pm", false)).await;
    env.settle().await;

    // Stored as one row; then rewritten as an object from before kept it:
    // a row per slot, named by the slot, its version beside it.
    assert_eq!(slot_names(&mut env, SLOT_NAMES).await, ["*"], "the whole state in one row");
    // The newest checkpoint (Bo's inbound filed it on its inbox row) goes into the row first.
    let split = "UPDATE slots SET body = (SELECT checkpoint FROM inbox WHERE checkpoint IS NOT NULL \
                 ORDER BY seq DESC LIMIT 1) WHERE name = '*' AND EXISTS (SELECT 1 FROM inbox WHERE checkpoint IS NOT NULL); \
                 UPDATE inbox SET checkpoint = NULL; \
                 INSERT INTO slots (name, version, body) \
                 SELECT key, value ->> '$[0]', value -> '$[1]' FROM slots, json_each(slots.body) WHERE slots.name = '*'; \
                 DELETE FROM slots WHERE name = '*'; ";
    let old = slot_names(&mut env, &format!("{split} {SLOT_NAMES}")).await;
    let has = |name: &str| old.iter().any(|slot| slot == name);
    assert!(has("context_buffer") && has("sticky") && !has("*"), "{old:?}");

    // The watched line survived in the old rows: the next turn sees it.
    env.llm.reply("Bo said it failed at 3pm.");
    env.telegram_update(&group_update(3, ADA, "what happened?", true)).await;
    let sent = env.wait_for_sent(2).await;
    assert_eq!(sent.len(), 2, "each message answered once: {sent:?}");
    let turn = turn_message(&env.llm.requests()[1]);
    assert!(turn.contains("Bo: the deploy failed at 3pm"), "the restored context reaches the prompt: {turn}");
    env.settle().await;

    assert_eq!(slot_names(&mut env, SLOT_NAMES).await, ["*"], "the first checkpoint replaced the old rows");
    assert_eq!(env.llm.requests().len(), 2, "no turn ran twice");
}

/// An observed message writes no checkpoint row: its checkpoint rides on its
/// own inbox row, and an object started again restores from it.
#[tokio::test(flavor = "multi_thread")]
async fn an_observed_message_files_its_checkpoint_on_its_inbox_row_and_a_new_object_restores_it() {
    let mut env = TestEnv::start_with(&[("COALESCE_DEBOUNCE_MS", "300")]).await;
    env.llm.reply("Hello Ada.");
    env.telegram_update(&group_update(1, ADA, "hi", true)).await;
    env.wait_for_sent(1).await;
    env.settle().await;
    env.telegram_update(&group_update(2, BO, "the deploy failed at 3pm", false)).await;
    env.settle().await;

    let key = format!("telegram:{GROUP_CHAT}");
    let where_it_is = "SELECT (SELECT body LIKE '%the deploy failed at 3pm%' FROM slots WHERE name = '*') AS in_row, \
                       (SELECT checkpoint LIKE '%the deploy failed at 3pm%' FROM inbox \
                        WHERE checkpoint IS NOT NULL ORDER BY seq DESC LIMIT 1) AS filed";
    // Stopping the Worker starts a new object afterwards: it must restore from the inbox row.
    let rows = env.while_stopped(|state| sqlite(&channel_object_file(state, &key), where_it_is)).await;
    assert_eq!(rows[0]["in_row"], 0, "the observed message wrote no slots row: {rows:?}");
    assert_eq!(rows[0]["filed"], 1, "its checkpoint is on its inbox row: {rows:?}");

    env.llm.reply("Bo said it failed at 3pm.");
    env.telegram_update(&group_update(3, ADA, "what happened?", true)).await;
    env.wait_for_sent(2).await;
    let turn = turn_message(&env.llm.requests()[1]);
    assert!(turn.contains("Bo: the deploy failed at 3pm"), "the filed checkpoint reaches the prompt: {turn}");
    assert_eq!(env.llm.requests().len(), 2, "no turn ran twice");
}
