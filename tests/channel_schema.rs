//! A channel object made before its tables changed upgrades itself when it
//! next wakes (durable_objects/channel_object/schema.rs): `inbox`, `history`
//! and `envelopes` made with AUTOINCREMENT are copied once into their plain
//! rowid shape, rows and numbers kept, and its counts, kept then in the
//! one-row `stats` table, go on from there. The old object is made by
//! rewriting a current one's SQLite file (the Worker stopped) into the old
//! schema, with the rows it holds.

use std::time::Duration;

use serde_json::Value;

use crate::harness::worker::{channel_object_file as object_file, sqlite};
use crate::harness::{dm_update, wait_for, TestEnv};

const CHAT: i64 = 7301;

/// The object's tables put back as they were made before schema.rs (commits
/// cb7dac0 and 7109f49): AUTOINCREMENT, the inbox without its count columns,
/// and the counts in `stats` (the latest counted inbox row's); a turn logs
/// no envelope, so one is planted.
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
     INSERT INTO history_old SELECT * FROM history; DROP TABLE history; ALTER TABLE history_old RENAME TO history; \
     CREATE TABLE envelopes_old (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, \
     kind TEXT NOT NULL, body TEXT NOT NULL); \
     INSERT INTO envelopes_old SELECT * FROM envelopes; \
     INSERT INTO envelopes_old (id, kind, body) VALUES ('an-old-envelope', 'task', '{}'); DROP TABLE envelopes; \
     ALTER TABLE envelopes_old RENAME TO envelopes; \
     COMMIT;";

/// Each table's rows as `seq` and the row's own id, in order.
const ROWS: &str = "SELECT 'inbox' AS t, seq, delivery_id AS id FROM inbox UNION ALL \
     SELECT 'history', seq, id FROM history UNION ALL SELECT 'envelopes', seq, id FROM envelopes ORDER BY 1, 2";
/// How many of the three tables are still made with AUTOINCREMENT, and whether the inbox has its count columns.
const SHAPE: &str = "SELECT (SELECT count(*) FROM sqlite_master WHERE type = 'table' \
     AND name IN ('inbox', 'history', 'envelopes') AND sql LIKE '%AUTOINCREMENT%') AS old_tables, \
     (SELECT count(*) FROM pragma_table_info('inbox') WHERE name = 'messages') AS counted";

fn message_count(listed: &Value, conversation_key: &str) -> Option<i64> {
    listed.as_array()?.iter().find(|row| row["conversation_key"] == conversation_key)?["message_count"].as_i64()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_channel_object_with_the_old_tables_upgrades_keeping_its_rows() {
    let mut env = TestEnv::start().await;
    let key = format!("telegram:{CHAT}");
    env.llm.reply("the first answer");
    assert_eq!(env.telegram_update(&dm_update(1, CHAT, "hello")).await.status(), 200);
    env.wait_for_sent(1).await;
    env.settle().await;

    let (old_rows, old_shape) = env
        .while_stopped(|state_dir| {
            let file = object_file(state_dir, &key);
            sqlite(&file, OLD_SCHEMA);
            (sqlite(&file, ROWS), sqlite(&file, SHAPE))
        })
        .await;
    assert_eq!(old_shape[0]["old_tables"], 3, "the old schema: {old_shape:?}");
    assert_eq!(old_shape[0]["counted"], 0, "{old_shape:?}");
    for table in ["inbox", "history", "envelopes"] {
        assert!(old_rows.iter().any(|row| row["t"] == table), "a row in the old {table}: {old_rows:?}");
    }

    env.llm.reply("the second answer");
    assert_eq!(env.telegram_update(&dm_update(2, CHAT, "still there?")).await.status(), 200);
    env.wait_for_sent(2).await;
    // The counts go on from the old `stats` row.
    wait_for("the second message counted", Duration::from_secs(30), || async {
        (message_count(&env.admin("/api/conversations").await, &key) == Some(2)).then_some(())
    })
    .await;
    env.settle().await;
    assert_eq!(env.telegram.calls("sendMessage").len(), 2, "each message answered once");
    let requests = env.llm.requests();
    let last = requests.last().unwrap().to_string();
    assert!(last.contains("the first answer"), "the old history reached the turn: {last}");

    let (rows, shape) = env
        .while_stopped(|state_dir| {
            let file = object_file(state_dir, &key);
            (sqlite(&file, ROWS), sqlite(&file, SHAPE))
        })
        .await;
    assert_eq!(shape[0]["old_tables"], 0, "every table in its plain rowid shape: {shape:?}");
    assert_eq!(shape[0]["counted"], 1, "the inbox has its count columns: {shape:?}");
    for row in &old_rows {
        assert!(rows.contains(row), "{row} kept, its number too: {rows:?}");
    }
    for table in ["inbox", "history"] {
        let newest =
            |rows: &[Value]| rows.iter().filter(|row| row["t"] == table).filter_map(|row| row["seq"].as_i64()).max();
        assert!(newest(&rows) > newest(&old_rows), "the second turn's {table} rows come after the old: {rows:?}");
    }
}
