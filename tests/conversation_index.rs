//! The dashboard's conversation index is fed through the index queue: an
//! observed message makes no D1 statement of its own, its conversation shows in
//! `/api/conversations` with its counts once the queue's batch is written (one
//! statement), and a replayed or late row never moves the index back. The
//! counts the channel object keeps in memory stay those of its rows through
//! held messages, repeats and restarts.

use std::time::Duration;

use serde_json::Value;

use crate::harness::{group_update, wait_for, TestEnv, GROUP_CHAT};

const ADA: (i64, &str, bool) = (7, "Ada", false);
const BO: (i64, &str, bool) = (8, "Bo", false);

fn key() -> String {
    format!("telegram:{GROUP_CHAT}")
}

/// What `/api/ops` counted between two snapshots, by name.
fn delta(before: &Value, after: &Value, name: &str) -> u64 {
    after[name].as_u64().expect(name) - before[name].as_u64().expect(name)
}

/// The group's row in the dashboard's list, once it has `messages` messages.
async fn indexed(env: &TestEnv, messages: i64) -> Value {
    wait_for(&format!("the index at {messages} message(s)"), Duration::from_secs(30), || async {
        let listed = env.admin("/api/conversations").await;
        let row = listed.as_array().into_iter().flatten().find(|row| row["conversation_key"] == key()).cloned();
        row.filter(|row| row["message_count"] == messages)
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn an_observed_message_reaches_the_index_through_the_queue_with_no_d1_statement_of_its_own() {
    let mut env = TestEnv::start().await;
    env.telegram.set_member_count(50);
    // First contact (the group's member count) settled beforehand.
    env.telegram_update(&group_update(1, ADA, "morning all", false)).await;
    let first = indexed(&env, 1).await;
    assert_eq!(first["observed_count"], 1, "{first}");

    let before = env.admin("/api/ops").await;
    assert_eq!(env.telegram_update(&group_update(2, BO, "the deploy went out", false)).await.status(), 200);
    let acked = env.admin("/api/ops").await;
    assert_eq!(delta(&before, &acked, "d1_queries"), 0, "the inbound makes no D1 statement");
    let row = indexed(&env, 2).await;
    assert_eq!((row["observed_count"].as_i64(), row["engaged_count"].as_i64()), (Some(2), Some(0)), "{row}");
    assert_eq!(row["platform"], "telegram");
    assert!(row["awaiting_since"].is_null(), "nothing waits: {row}");
    let after = env.admin("/api/ops").await;
    assert!(delta(&before, &after, "queue_sends") >= 1, "the row went through the queue");
    // Listing the index reads D1; the only write is the batch's one statement.
    assert!(delta(&before, &after, "d1_rows_written") > 0, "the batch wrote the row");
    let events = env.admin(&format!("/api/channels/{}/events", key())).await;
    let decisions: Vec<&str> = events.as_array().into_iter().flatten().filter_map(|e| e["decision"].as_str()).collect();
    assert!(decisions.iter().all(|decision| *decision == "observe"), "observed messages only: {decisions:?}");

    // A row from the future stands in for one written after a row still in
    // flight: the late row (older activity, fewer messages) changes nothing.
    let future = row["last_activity_at"].as_i64().unwrap() + 3_600_000;
    env.sql_while_stopped(&format!(
        "UPDATE conversations SET last_activity_at = {future}, message_count = 40, observed_count = 40 \
         WHERE conversation_key = '{}'",
        key()
    ))
    .await;
    let before = env.admin("/api/ops").await;
    env.telegram_update(&group_update(3, ADA, "lunch?", false)).await;
    // A delivery is counted once its batch's write is done.
    wait_for("the late row's batch", Duration::from_secs(30), || async {
        let now = env.admin("/api/ops").await;
        (delta(&before, &now, "queue_deliveries") >= 1).then_some(())
    })
    .await;
    let kept = indexed(&env, 40).await;
    assert_eq!((kept["last_activity_at"].as_i64(), kept["observed_count"].as_i64()), (Some(future), Some(40)));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_counts_the_object_keeps_match_its_rows_through_held_messages_a_repeat_and_a_restart() {
    let mut env = TestEnv::start().await;
    env.telegram.set_member_count(50);
    // A new group's first two messages wait for the member count (held, counted when decided).
    env.telegram.delay_next("/getChatMemberCount", Duration::from_millis(800));
    for (update, author, text) in [(1, ADA, "morning all"), (2, BO, "morning")] {
        let held: Value = env.telegram_update(&group_update(update, author, text, false)).await.json().await.unwrap();
        assert_eq!(held["decision"], "held", "{held}");
    }
    wait_for("both held messages decided", Duration::from_secs(20), || async {
        let events = env.admin(&format!("/api/channels/{}/events", key())).await;
        let events = events.as_array().cloned().unwrap_or_default();
        (events.len() == 2 && events.iter().all(|event| event["decision"] == "observe")).then_some(())
    })
    .await;
    // Counted from the object's memory: the held decisions made it read them again.
    env.telegram_update(&group_update(3, ADA, "the deploy went out", false)).await;
    // A platform's retry of the same delivery counts nothing.
    env.telegram_update(&group_update(3, ADA, "the deploy went out", false)).await;
    env.telegram_update(&group_update(4, BO, "nice", false)).await;
    let row = indexed(&env, 4).await;
    assert_eq!(row["observed_count"], 4, "{row}");

    // A new isolate reads the counts from the rows, then keeps them again.
    env.crash_and_restart().await;
    env.telegram_update(&group_update(5, ADA, "lunch?", false)).await;
    env.telegram_update(&group_update(6, BO, "yes", false)).await;
    let row = indexed(&env, 6).await;
    assert_eq!((row["observed_count"].as_i64(), row["engaged_count"].as_i64()), (Some(6), Some(0)), "{row}");
}
