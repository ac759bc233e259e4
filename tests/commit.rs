//! One D1 commit per engaged turn (issue 37; docs/scale.md, "One commit per
//! turn"): the turn's spend, its people's sightings, its history and the
//! conversation's index row go to D1 in one batch after the reply; spend
//! counts once even when a commit is sent again; the deployment's spend is
//! split in buckets that the budget sums; a database from before keeps its
//! figures.

use serde_json::{json, Value};

use crate::harness::{dm_update, spent_tokens, TestEnv};
use edgebot::budget::rules::{bucket_of, day_of, Scope};

const DEPLOYMENT_NOTICE: &str = "I have used my whole budget for today";

/// Sends a DM and waits until its answer (or notice) went out and the Worker settled.
async fn dm(env: &TestEnv, update: i64, chat: i64, text: &str) {
    assert_eq!(env.telegram_update(&dm_update(update, chat, text)).await.status(), 200);
    env.settle().await;
}

fn today() -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    day_of(now.as_millis() as i64)
}

/// The first row of the first statement's results of a `wrangler d1 execute --json`.
fn first_row(results: &Value) -> Value {
    results[0]["results"][0].clone()
}

fn spend_of<'a>(report: &'a Value, list: &str, subject: &str) -> &'a Value {
    let rows = report[list].as_array().unwrap_or_else(|| panic!("{list} in {report}"));
    rows.iter().find(|row| row["subject"] == subject).unwrap_or_else(|| panic!("{subject} in {report}"))
}

/// A turn's writes reach D1 with its commit (history, the person, the
/// index row with its mark), and a second turn's commit adds its own spend
/// on top. (That a commit sent again after a crash counts its spend once
/// rests on the guard in `budget::usage::unsent_statement`; no test here
/// replays one yet: docs/scale.md says so.)
#[tokio::test(flavor = "multi_thread")]
async fn a_turns_commit_lands_whole_and_the_next_adds_its_own() {
    let mut env = TestEnv::start().await;
    env.llm.reply("first answer");
    dm(&env, 1, 341, "hello there").await;
    env.wait_for_sent(1).await;
    env.settle().await;
    // The commit lands after the send: its spend (which no listing flushes) shows it did.
    env.spend_when("the first turn's commit", |report| spent_tokens(report, "people", "telegram:341") >= Some(15))
        .await;

    // Read D1 as the commit left it (before any admin listing flushes anything).
    let landed = env
        .sql_while_stopped(
            "SELECT (SELECT count(*) FROM messages WHERE conversation_key = 'telegram:341') AS messages, \
             (SELECT flush_seq FROM conversations WHERE conversation_key = 'telegram:341') AS flush_seq, \
             (SELECT count(*) FROM person_ids WHERE platform_key = 'telegram:341') AS sighted, \
             (SELECT sum(input_tokens + output_tokens) FROM spend_daily WHERE scope = 'person' \
              AND subject = 'telegram:341') AS tokens",
        )
        .await;
    let landed = first_row(&landed);
    assert_eq!(landed["messages"], 2, "the message and the reply: {landed}");
    assert_eq!(landed["flush_seq"], 1, "the index row carries the commit's mark: {landed}");
    assert_eq!(landed["sighted"], 1, "the person was recorded: {landed}");
    assert_eq!(landed["tokens"], 15, "{landed}");

    env.llm.reply("second answer");
    dm(&env, 2, 341, "and again").await;
    env.wait_for_sent(2).await;
    env.settle().await;
    let report = env
        .spend_when("the second turn's commit", |report| spent_tokens(report, "people", "telegram:341") >= Some(30))
        .await;
    assert_eq!(spend_of(&report, "people", "telegram:341")["tokens"], 30, "two turns of 15 tokens: {report}");
    assert_eq!(spend_of(&report, "conversations", "telegram:341")["tokens"], 30, "{report}");
    assert_eq!(report["deployment"]["tokens"], 30, "{report}");
    assert_eq!(report["deployment"]["calls"], 2, "{report}");

    // What the dashboard shows still adds up.
    let people = env.admin("/api/people").await;
    assert!(people.to_string().contains("telegram:341"), "{people}");
    let conversations = env.admin("/api/conversations").await;
    let row = conversations.as_array().unwrap().iter().find(|row| row["conversation_key"] == "telegram:341").cloned();
    let row = row.unwrap_or_else(|| panic!("the conversation is listed: {conversations}"));
    assert_eq!((row["message_count"].as_i64(), row["engaged_count"].as_i64()), (Some(2), Some(2)), "{row}");
    assert_eq!(row["awaiting_since"], Value::Null, "nothing waits: {row}");
    let messages = env.admin("/api/channels/telegram:341/messages").await.to_string();
    for text in ["hello there", "first answer", "and again", "second answer"] {
        assert!(messages.contains(text), "{text} in {messages}");
    }
}

/// Chats whose conversations write to different buckets of the deployment's row.
fn chats_in_distinct_buckets(count: usize) -> Vec<i64> {
    let mut chats: Vec<i64> = Vec::new();
    let mut buckets = Vec::new();
    for chat in 361.. {
        let bucket = bucket_of(Scope::Deployment, &format!("telegram:{chat}"));
        if !buckets.contains(&bucket) {
            buckets.push(bucket);
            chats.push(chat);
        }
        if chats.len() == count {
            return chats;
        }
    }
    unreachable!()
}

/// The deployment's spend is split over buckets by conversation, and its
/// budget is their sum: three conversations in three buckets spend 45 tokens
/// (15 each, none near the limit alone) and the fourth is stopped.
#[tokio::test(flavor = "multi_thread")]
async fn the_deployment_budget_sums_its_buckets() {
    let mut env = TestEnv::start_with(&[("BUDGET_DEPLOYMENT_TOKENS_PER_DAY", "40")]).await;
    let chats = chats_in_distinct_buckets(4);
    for (update, chat) in chats.iter().take(3).enumerate() {
        env.llm.reply(&format!("hello {chat}"));
        dm(&env, update as i64 + 1, *chat, "hi").await;
        env.wait_for_sent(update + 1).await;
    }
    // The fourth turn's budget reads the other conversations' spend, which
    // reaches D1 with their commits, after their replies.
    env.spend_when("three turns' commits", |report| report["deployment"]["tokens"].as_i64() >= Some(45)).await;
    env.llm.reply("must never be sent");
    dm(&env, 4, chats[3], "hi").await;
    env.settle().await;
    assert_eq!(env.llm.requests().len(), 3, "the fourth turn is over the summed budget");
    let sent = env.telegram.calls("sendMessage");
    let last = sent.last().unwrap();
    assert_eq!(last["chat_id"], chats[3]);
    assert!(last["text"].as_str().unwrap().starts_with(DEPLOYMENT_NOTICE), "{last}");
    let report = env.admin("/api/spend").await;
    assert_eq!(report["deployment"]["tokens"], 45, "one line, the buckets summed: {report}");
    let rows = env
        .sql_while_stopped(
            "SELECT count(*) AS rows, count(DISTINCT bucket) AS buckets, sum(input_tokens + output_tokens) AS tokens \
             FROM spend_daily WHERE scope = 'deployment'",
        )
        .await;
    assert_eq!(first_row(&rows), json!({ "rows": 3, "buckets": 3, "tokens": 45 }));
}

/// A database from before the buckets (migration 0033 run again over rows in
/// the old shape): every figure is kept, and the budget counts it.
#[tokio::test(flavor = "multi_thread")]
async fn a_database_from_before_the_buckets_keeps_every_figure() {
    let mut env = TestEnv::start_with(&[("BUDGET_DEPLOYMENT_TOKENS_PER_DAY", "40")]).await;
    let migration = include_str!("../migrations/0033_one_commit.sql");
    let rebuild = &migration[migration.find("CREATE TABLE spend_daily_buckets").unwrap()..];
    let rebuild: String =
        rebuild.lines().filter(|line| !line.trim_start().starts_with("--")).collect::<Vec<_>>().join(" ");
    let day = today();
    let before = format!(
        "DROP TABLE spend_daily; CREATE TABLE spend_daily (day TEXT NOT NULL, scope TEXT NOT NULL, \
         subject TEXT NOT NULL, name TEXT NOT NULL DEFAULT '', input_tokens INTEGER NOT NULL DEFAULT 0, \
         output_tokens INTEGER NOT NULL DEFAULT 0, micro_usd INTEGER NOT NULL DEFAULT 0, \
         calls INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (day, scope, subject)); \
         INSERT INTO spend_daily VALUES ('{day}', 'deployment', '*', '', 20, 10, 500, 2), \
         ('{day}', 'person', 'telegram:371', 'Ada', 8, 4, 200, 1), ('2020-01-01', 'deployment', '*', '', 7, 0, 1, 1);"
    );
    env.sql_while_stopped(&format!("{before} {rebuild}")).await;
    let report = env.admin("/api/spend").await;
    assert_eq!(report["deployment"]["tokens"], 30, "{report}");
    assert_eq!(spend_of(&report, "people", "telegram:371")["tokens"], 12, "{report}");
    let old = env.admin("/api/spend?day=2020-01-01").await;
    assert_eq!(old["deployment"]["tokens"], 7, "another day's row too: {old}");

    // 30 of 40: one more turn runs, and its 15 (in its conversation's bucket) stop the next.
    env.llm.reply("still within");
    env.llm.reply("must never be sent");
    dm(&env, 1, 371, "hi").await;
    env.wait_for_sent(1).await;
    // 372's budget reads 371's spend, which reaches D1 with its commit, after its reply.
    env.spend_when("371's commit", |report| spent_tokens(report, "people", "telegram:371") >= Some(27)).await;
    dm(&env, 2, 372, "hi").await;
    env.settle().await;
    assert_eq!(env.llm.requests().len(), 1, "the old figure counts against the budget");
    let report = env.admin("/api/spend").await;
    assert_eq!(report["deployment"]["tokens"], 45, "{report}");
    assert_eq!(spend_of(&report, "people", "telegram:371")["tokens"], 27, "{report}");
}

/// The tables as they were before migration 0037 (a rowid each, a TEXT key's
/// own index, the secondary indexes), rebuilt from the rows a running
/// deployment wrote.
const BEFORE_ONE_ROW: &str = "\
    CREATE TABLE messages_old (id TEXT PRIMARY KEY, conversation_key TEXT NOT NULL, \
      role TEXT NOT NULL CHECK (role IN ('user', 'assistant')), author_id TEXT NOT NULL, \
      author_name TEXT NOT NULL, content TEXT NOT NULL, platform_message_id TEXT, created_at INTEGER NOT NULL, \
      compacted INTEGER NOT NULL DEFAULT 0); \
    INSERT INTO messages_old SELECT id, conversation_key, role, author_id, author_name, content, \
      platform_message_id, created_at, compacted FROM messages; \
    DROP TABLE messages; ALTER TABLE messages_old RENAME TO messages; \
    CREATE INDEX messages_by_conversation ON messages (conversation_key, created_at); \
    CREATE INDEX messages_by_platform_message ON messages (conversation_key, platform_message_id); \
    CREATE TABLE conversations_old (conversation_key TEXT PRIMARY KEY, platform TEXT NOT NULL, title TEXT, \
      last_activity_at INTEGER NOT NULL, message_count INTEGER NOT NULL DEFAULT 0, \
      engaged_count INTEGER NOT NULL DEFAULT 0, observed_count INTEGER NOT NULL DEFAULT 0, \
      updated_at INTEGER NOT NULL, awaiting_since INTEGER, flush_seq INTEGER NOT NULL DEFAULT 0); \
    INSERT INTO conversations_old SELECT * FROM conversations; \
    DROP TABLE conversations; ALTER TABLE conversations_old RENAME TO conversations; \
    CREATE INDEX conversations_by_activity ON conversations (last_activity_at DESC); \
    CREATE INDEX conversations_awaiting ON conversations (awaiting_since) WHERE awaiting_since IS NOT NULL; \
    CREATE TABLE spend_old (day TEXT NOT NULL, scope TEXT NOT NULL, subject TEXT NOT NULL, \
      bucket INTEGER NOT NULL DEFAULT 0, name TEXT NOT NULL DEFAULT '', input_tokens INTEGER NOT NULL DEFAULT 0, \
      output_tokens INTEGER NOT NULL DEFAULT 0, micro_usd INTEGER NOT NULL DEFAULT 0, \
      calls INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (day, scope, subject, bucket)); \
    INSERT INTO spend_old SELECT * FROM spend_daily; \
    DROP TABLE spend_daily; ALTER TABLE spend_old RENAME TO spend_daily; \
    CREATE TABLE usage_old (conversation_key TEXT NOT NULL, process TEXT NOT NULL, \
      input_tokens INTEGER NOT NULL DEFAULT 0, output_tokens INTEGER NOT NULL DEFAULT 0, \
      calls INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (conversation_key, process)); \
    INSERT INTO usage_old SELECT * FROM usage; DROP TABLE usage; ALTER TABLE usage_old RENAME TO usage; \
    CREATE TABLE pending_old (conversation_key TEXT PRIMARY KEY, pending INTEGER NOT NULL, \
      updated_at INTEGER NOT NULL); \
    INSERT INTO pending_old SELECT * FROM pending_sends; \
    DROP TABLE pending_sends; ALTER TABLE pending_old RENAME TO pending_sends;";

/// A populated database from before migration 0037 moves to one b-tree a
/// table: its history, index row and spend are all there, in order, and the
/// conversation goes on (a re-sent turn still answered once).
#[tokio::test(flavor = "multi_thread")]
async fn a_database_from_before_one_row_a_write_keeps_its_history_index_and_spend() {
    let mut env = TestEnv::start().await;
    env.llm.reply("first answer");
    dm(&env, 1, 351, "hello there").await;
    env.wait_for_sent(1).await;
    env.llm.reply("second answer");
    dm(&env, 2, 351, "and again").await;
    env.wait_for_sent(2).await;
    env.spend_when("both turns' commits", |report| spent_tokens(report, "people", "telegram:351") >= Some(30)).await;

    let migration: String = include_str!("../migrations/0037_one_row_a_write.sql")
        .lines()
        .filter(|line| !line.trim_start().starts_with("--"))
        .collect::<Vec<_>>()
        .join(" ");
    let shapes = "SELECT name, sql FROM sqlite_master WHERE tbl_name IN \
                  ('messages', 'conversations', 'spend_daily', 'usage', 'pending_sends') ORDER BY name";
    let before = env.sql_while_stopped(&format!("{BEFORE_ONE_ROW} {shapes}")).await;
    let old = before.as_array().unwrap().last().unwrap()["results"].to_string();
    assert!(old.contains("messages_by_platform_message") && !old.contains("WITHOUT ROWID"), "the old shape: {old}");

    let after = env.sql_while_stopped(&format!("{migration} {shapes}")).await;
    let new = after.as_array().unwrap().last().unwrap()["results"].as_array().unwrap().clone();
    let names: Vec<&str> = new.iter().map(|row| row["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["conversations", "conversations_awaiting", "messages", "pending_sends", "spend_daily", "usage"]);
    for row in new.iter().filter(|row| row["name"] != "conversations_awaiting") {
        assert!(row["sql"].as_str().unwrap().contains("WITHOUT ROWID"), "{row}");
    }

    let listed = |history: &Value| -> Vec<String> {
        history.as_array().unwrap().iter().map(|row| row["content"].as_str().unwrap().to_string()).collect()
    };
    let history = env.admin("/api/channels/telegram:351/messages").await;
    assert_eq!(listed(&history), ["hello there", "first answer", "and again", "second answer"], "{history}");
    let report = env.admin("/api/spend").await;
    assert_eq!(spend_of(&report, "people", "telegram:351")["tokens"], 30, "{report}");
    assert_eq!(spend_of(&report, "conversations", "telegram:351")["tokens"], 30, "{report}");

    // The conversation goes on; Telegram's delivery of the same update again is answered once.
    env.llm.reply("third answer");
    dm(&env, 3, 351, "once more").await;
    dm(&env, 3, 351, "once more").await;
    env.wait_for_sent(3).await;
    env.spend_when("the third turn's commit", |report| spent_tokens(report, "people", "telegram:351") >= Some(45))
        .await;
    let history = env.admin("/api/channels/telegram:351/messages").await;
    assert_eq!(
        listed(&history),
        ["hello there", "first answer", "and again", "second answer", "once more", "third answer"],
        "{history}"
    );
    let conversations = env.admin("/api/conversations").await;
    let row = conversations.as_array().unwrap().iter().find(|row| row["conversation_key"] == "telegram:351");
    let row = row.unwrap_or_else(|| panic!("listed: {conversations}"));
    assert_eq!(row["message_count"], 3, "{row}");
    assert_eq!(env.llm.requests().len(), 3, "three turns, the repeated update not one more");
}
