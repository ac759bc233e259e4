//! A channel object made before its tables changed upgrades itself when it
//! next wakes (durable_objects/channel_object/schema.rs): `inbox`, `history`
//! and `envelopes` made with AUTOINCREMENT (history with its `UNIQUE` id and
//! `mirrored` flags), and `outbox` and `sightings` made with a rowid, are
//! copied once into their current shape, rows and numbers kept; its counts, kept then in the one-row `stats` table, go on
//! from there; a history row D1 never got still goes, and the spend held in
//! the old `unsent_spend` table moves into the held row and counts once. The
//! old object is made by rewriting a current one's SQLite file (the Worker
//! stopped) into the old schema, with the rows it holds.

use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::worker::{channel_object_file as object_file, sqlite};
use crate::harness::{dm_update, spent_tokens, wait_for, TestEnv};

const CHAT: i64 = 7301;

/// The object's tables put back as they were made before schema.rs (commits
/// cb7dac0 and 7109f49): AUTOINCREMENT, the inbox without its count columns,
/// the counts in `stats` (the latest counted inbox row's), history flagged
/// `mirrored` (one row D1 never got is planted) and the spend held in
/// `unsent_spend` (one step's, numbered 57, is planted); a turn logs no
/// envelope, so one is planted.
const OLD_SCHEMA: &str = "BEGIN; \
     INSERT OR REPLACE INTO stats (id, conversation_key, title, messages, engaged, observed, last_activity) \
     SELECT 1, conversation_key, title, messages, engaged, observed, last_activity FROM inbox \
     WHERE messages IS NOT NULL ORDER BY seq DESC LIMIT 1; \
     CREATE TABLE inbox_old (seq INTEGER PRIMARY KEY AUTOINCREMENT, delivery_id TEXT NOT NULL UNIQUE, \
     event TEXT NOT NULL, decision TEXT NOT NULL, reason TEXT NOT NULL, received_at INTEGER NOT NULL, \
     status TEXT NOT NULL, membership TEXT); \
     INSERT INTO inbox_old SELECT seq, delivery_id, event, decision, reason, received_at, status, membership FROM inbox; \
     DROP TABLE inbox; ALTER TABLE inbox_old RENAME TO inbox; \
     CREATE INDEX inbox_open ON inbox (received_at) WHERE status IN ('queued', 'held'); \
     CREATE TABLE history_old (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, \
     conversation_key TEXT NOT NULL, role TEXT NOT NULL, author_id TEXT NOT NULL, author_name TEXT NOT NULL, \
     content TEXT NOT NULL, platform_message_id TEXT, created_at INTEGER NOT NULL, \
     compacted INTEGER NOT NULL DEFAULT 0, mirrored INTEGER NOT NULL DEFAULT 0); \
     INSERT INTO history_old SELECT seq, id, conversation_key, role, author_id, author_name, content, \
     platform_message_id, created_at, compacted, 1 FROM history; \
     INSERT INTO history_old (id, conversation_key, role, author_id, author_name, content, created_at, mirrored) \
     VALUES ('telegram:7301:in:planted', 'telegram:7301', 'user', '7301', 'Ada', 'a line D1 never got', 1, 0); \
     DROP TABLE history; ALTER TABLE history_old RENAME TO history; \
     DELETE FROM held; \
     CREATE TABLE outbox_old (id TEXT PRIMARY KEY, turn INTEGER NOT NULL, piece INTEGER NOT NULL, \
     text TEXT NOT NULL, reply_to TEXT, status TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, \
     platform_message_id TEXT, last_error TEXT, created_at INTEGER NOT NULL, file_id TEXT, approval_id TEXT); \
     INSERT INTO outbox_old SELECT id, turn, piece, text, reply_to, status, attempts, platform_message_id, \
     last_error, created_at, file_id, approval_id FROM outbox; \
     DROP TABLE outbox; ALTER TABLE outbox_old RENAME TO outbox; \
     CREATE INDEX outbox_by_turn ON outbox (turn, piece); \
     CREATE TABLE sightings_old (platform_key TEXT PRIMARY KEY, name TEXT NOT NULL, is_bot INTEGER NOT NULL, \
     seen_at INTEGER NOT NULL, pending INTEGER NOT NULL); \
     INSERT INTO sightings_old SELECT * FROM sightings; DROP TABLE sightings; \
     ALTER TABLE sightings_old RENAME TO sightings; \
     CREATE TABLE unsent_spend (seq INTEGER PRIMARY KEY AUTOINCREMENT, conversation_key TEXT NOT NULL, \
     day TEXT NOT NULL, person_key TEXT, person_name TEXT, input_tokens INTEGER NOT NULL, \
     output_tokens INTEGER NOT NULL, micro_usd INTEGER NOT NULL); \
     INSERT INTO unsent_spend VALUES (57, 'telegram:7301', strftime('%Y-%m-%d', 'now'), 'telegram:7301', 'Ada', \
     1000, 500, 12345); \
     CREATE TABLE envelopes_old (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, \
     kind TEXT NOT NULL, body TEXT NOT NULL); \
     INSERT INTO envelopes_old SELECT * FROM envelopes; \
     INSERT INTO envelopes_old (id, kind, body) VALUES ('an-old-envelope', 'task', '{}'); DROP TABLE envelopes; \
     ALTER TABLE envelopes_old RENAME TO envelopes; \
     COMMIT;";

/// Each table's rows as `seq` and the row's own id, in order.
const ROWS: &str = "SELECT 'inbox' AS t, seq, delivery_id AS id FROM inbox UNION ALL \
     SELECT 'history', seq, id FROM history UNION ALL SELECT 'envelopes', seq, id FROM envelopes UNION ALL \
     SELECT 'outbox', turn, id FROM outbox UNION ALL SELECT 'sightings', seen_at, platform_key FROM sightings \
     ORDER BY 1, 2";
/// How many of the three tables are still in an old shape, whether the inbox
/// has its count columns, whether `unsent_spend` is there, and the number the
/// held row hands out next.
const SHAPE: &str = "SELECT (SELECT count(*) FROM sqlite_master WHERE type = 'table' \
     AND ((name IN ('inbox', 'history', 'envelopes') AND sql LIKE '%AUTOINCREMENT%') \
     OR (name IN ('history', 'inbox') AND sql LIKE '%UNIQUE%') \
     OR (name IN ('outbox', 'sightings') AND sql NOT LIKE '%WITHOUT ROWID%'))) AS old_tables, \
     (SELECT count(*) FROM pragma_table_info('inbox') WHERE name = 'messages') AS counted, \
     (SELECT count(*) FROM sqlite_master WHERE name = 'unsent_spend') AS old_spend, \
     (SELECT json_extract(body, '$.next_seq') FROM held) AS next_seq";
/// The person's tokens today in the spend report (D1's figures; none yet is 0).
async fn tokens_spent(env: &TestEnv) -> i64 {
    spent_tokens(&env.admin("/api/spend").await, "people", &format!("telegram:{CHAT}")).unwrap_or_default()
}

fn message_count(listed: &Value, conversation_key: &str) -> Option<i64> {
    listed.as_array()?.iter().find(|row| row["conversation_key"] == conversation_key)?["message_count"].as_i64()
}

/// The conversation's first message, answered, with nothing left to send.
async fn first_turn(env: &TestEnv) {
    env.llm.reply("the first answer");
    assert_eq!(env.telegram_update(&dm_update(1, CHAT, "hello")).await.status(), 200);
    env.wait_for_sent(1).await;
    env.settle().await;
}

/// The second message, answered and counted as the conversation's second.
async fn second_turn_counted(env: &TestEnv, key: &str) {
    env.llm.reply("the second answer");
    assert_eq!(env.telegram_update(&dm_update(2, CHAT, "still there?")).await.status(), 200);
    env.wait_for_sent(2).await;
    wait_for("the second message counted", Duration::from_secs(30), || async {
        (message_count(&env.admin("/api/conversations").await, key) == Some(2)).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_channel_object_with_the_old_tables_upgrades_keeping_its_rows() {
    let mut env = TestEnv::start().await;
    let key = format!("telegram:{CHAT}");
    first_turn(&env).await;

    // The first turn's commit lands after its reply: waited for, so the
    // object is rewritten with nothing left to send.
    let first_turn = wait_for("the first turn's spend in D1", Duration::from_secs(30), || async {
        let tokens = tokens_spent(&env).await;
        (tokens > 0).then_some(tokens)
    })
    .await;
    let (old_rows, old_shape) = env
        .while_stopped(|state_dir| {
            let file = object_file(state_dir, &key);
            sqlite(&file, OLD_SCHEMA);
            (sqlite(&file, ROWS), sqlite(&file, SHAPE))
        })
        .await;
    assert_eq!(old_shape[0]["old_tables"], 5, "the old schema: {old_shape:?}");
    assert_eq!(old_shape[0]["counted"], 0, "{old_shape:?}");
    assert_eq!((&old_shape[0]["old_spend"], &old_shape[0]["next_seq"]), (&json!(1), &Value::Null), "{old_shape:?}");
    for table in ["inbox", "history", "envelopes", "outbox", "sightings"] {
        assert!(old_rows.iter().any(|row| row["t"] == table), "a row in the old {table}: {old_rows:?}");
    }

    // The counts go on from the old `stats` row.
    second_turn_counted(&env, &key).await;
    let again: Value = env.telegram_update(&dm_update(1, CHAT, "hello")).await.json().await.unwrap();
    assert_eq!(again["duplicate"], true, "the old inbox's delivery ids are known: {again}");
    env.settle().await;
    assert_eq!(env.telegram.calls("sendMessage").len(), 2, "each message answered once");
    let requests = env.llm.requests();
    let last = requests.last().unwrap().to_string();
    assert!(last.contains("the first answer"), "the old history reached the turn: {last}");
    assert!(last.contains("a line D1 never got"), "the planted row reached the turn: {last}");
    // The second turn's commit took the old held step (1,500 tokens) with
    // its own, each counted once; the planted row went to D1 too.
    let tokens = wait_for("the second turn's spend in D1", Duration::from_secs(30), || async {
        let tokens = tokens_spent(&env).await;
        (tokens != first_turn).then_some(tokens)
    })
    .await;
    env.settle().await;
    assert_eq!(tokens_spent(&env).await, first_turn * 2 + 1500, "the old step and the new one, once each ({tokens})");
    let history = env.admin(&format!("/api/channels/{key}/messages")).await;
    let ids: Vec<&str> = history.as_array().unwrap().iter().filter_map(|row| row["id"].as_str()).collect();
    assert_eq!(ids.len(), 5, "two turns and the planted row: {ids:?}");
    assert!(ids.contains(&"telegram:7301:in:planted"), "{ids:?}");

    let (rows, shape) = env
        .while_stopped(|state_dir| {
            let file = object_file(state_dir, &key);
            (sqlite(&file, ROWS), sqlite(&file, SHAPE))
        })
        .await;
    assert_eq!(shape[0]["old_tables"], 0, "every table in its current shape: {shape:?}");
    assert_eq!(shape[0]["counted"], 1, "the inbox has its count columns: {shape:?}");
    assert_eq!(shape[0]["old_spend"], 0, "the old spend table is gone: {shape:?}");
    assert_eq!(shape[0]["next_seq"], 59, "numbers go on above the old 57 (58 was the second turn's): {shape:?}");
    for row in &old_rows {
        assert!(rows.contains(row), "{row} kept, its number too: {rows:?}");
    }
    for table in ["inbox", "history"] {
        let newest =
            |rows: &[Value]| rows.iter().filter(|row| row["t"] == table).filter_map(|row| row["seq"].as_i64()).max();
        assert!(newest(&rows) > newest(&old_rows), "the second turn's {table} rows come after the old: {rows:?}");
    }
}

/// The inbox as objects made it before its delivery ids moved to the
/// object's memory: its count columns and checkpoint, and a `UNIQUE`
/// delivery id (an index row written per inbound).
const UNIQUE_INBOX: &str = "BEGIN; \
     CREATE TABLE inbox_old (seq INTEGER PRIMARY KEY, delivery_id TEXT NOT NULL UNIQUE, event TEXT NOT NULL, \
     decision TEXT NOT NULL, reason TEXT NOT NULL, received_at INTEGER NOT NULL, status TEXT NOT NULL, \
     membership TEXT, conversation_key TEXT, title TEXT, messages INTEGER, engaged INTEGER, observed INTEGER, \
     last_activity INTEGER, checkpoint TEXT); \
     INSERT INTO inbox_old SELECT * FROM inbox; DROP TABLE inbox; ALTER TABLE inbox_old RENAME TO inbox; \
     CREATE INDEX inbox_open ON inbox (received_at) WHERE status IN ('queued', 'held'); \
     COMMIT;";
/// The inbox's rows as the upgrade must keep them, and whether it is `UNIQUE`.
const INBOX_ROWS: &str = "SELECT seq, delivery_id, messages, checkpoint IS NOT NULL AS checkpointed, \
     (SELECT sql LIKE '%UNIQUE%' FROM sqlite_master WHERE name = 'inbox') AS unique_id FROM inbox ORDER BY seq";

#[tokio::test(flavor = "multi_thread")]
async fn an_inbox_with_a_unique_delivery_id_is_copied_with_its_counts_and_checkpoint() {
    let mut env = TestEnv::start().await;
    let key = format!("telegram:{CHAT}");
    first_turn(&env).await;
    let old = env
        .while_stopped(|state_dir| {
            let file = object_file(state_dir, &key);
            sqlite(&file, UNIQUE_INBOX);
            sqlite(&file, INBOX_ROWS)
        })
        .await;
    assert_eq!(old[0]["unique_id"], 1, "the old shape: {old:?}");
    assert_eq!((&old[0]["messages"], &old[0]["checkpointed"]), (&json!(1), &json!(1)), "{old:?}");

    let again: Value = env.telegram_update(&dm_update(1, CHAT, "hello")).await.json().await.unwrap();
    assert_eq!(again["duplicate"], true, "{again}");
    // The counts go on from the copied row's (there is no other).
    second_turn_counted(&env, &key).await;
    env.settle().await;
    assert_eq!(env.telegram.calls("sendMessage").len(), 2, "each message answered once");
    let last = env.llm.requests().last().unwrap().to_string();
    assert!(last.contains("the first answer"), "the conversation went on: {last}");

    let rows = env.while_stopped(|state_dir| sqlite(&object_file(state_dir, &key), INBOX_ROWS)).await;
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[0]["unique_id"], 0, "no index on the delivery id now: {rows:?}");
    for field in ["seq", "delivery_id", "messages", "checkpointed"] {
        assert_eq!(rows[0][field], old[0][field], "{field} kept: {rows:?}");
    }
    assert!(rows[1]["seq"].as_i64() > rows[0]["seq"].as_i64(), "numbered on: {rows:?}");
}
