//! D1 sharded (issue 37; docs/scale.md, "D1 shards"): with `D1_SHARDS = 4`
//! every conversation's history, index row, spend and unsent count live on
//! the shard its key hashes to, and on no other database, and its people on
//! their platform ids' shards; the dashboard and
//! the budget read across all four; a shard that is down holds back only the
//! conversations that live on it, and what waited drains when it is back.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::harness::{dm_update, wait_for, TestEnv};
use edgebot::shards::{binding_of, shard_of};

const SHARDS: u32 = 4;
/// Telegram's fake answers every model call with this many tokens (15 a turn).
const TOKENS_PER_TURN: i64 = 15;

fn shard_binding(conversation_key: &str) -> String {
    binding_of(shard_of(conversation_key, SHARDS), SHARDS)
}

/// Chat ids whose DM conversations (`telegram:<id>`) land on each shard, `per_shard` for each.
fn chats_on_every_shard(per_shard: usize) -> Vec<i64> {
    let mut found = vec![Vec::new(); SHARDS as usize];
    for chat in 7000.. {
        let shard = shard_of(&format!("telegram:{chat}"), SHARDS) as usize;
        if found[shard].len() < per_shard {
            found[shard].push(chat);
        }
        if found.iter().all(|chats| chats.len() == per_shard) {
            return found.concat();
        }
    }
    unreachable!()
}

/// Rows each conversation has in the tables a shard holds, on one database.
const ROWS_PER_CONVERSATION: &str = "SELECT k AS conversation_key, \
     (SELECT count(*) FROM messages WHERE conversation_key = k) AS messages, \
     (SELECT count(*) FROM conversations WHERE conversation_key = k) AS indexed, \
     (SELECT count(*) FROM spend_daily WHERE scope = 'conversation' AND subject = k) AS spend, \
     (SELECT count(*) FROM usage WHERE conversation_key = k) AS usage \
     FROM (SELECT DISTINCT conversation_key AS k FROM messages UNION SELECT conversation_key FROM conversations \
     UNION SELECT subject FROM spend_daily WHERE scope = 'conversation')";

/// Each of `keys` (one DM and its answer each) has its history, index row and
/// spend on its own shard and nowhere else, and the shared database none.
async fn assert_every_row_on_its_shard(env: &mut TestEnv, keys: &[String]) {
    let bindings = ["DB", "DB_SHARD_0", "DB_SHARD_1", "DB_SHARD_2", "DB_SHARD_3"];
    let results = env.sql_on_while_stopped(&bindings, ROWS_PER_CONVERSATION).await;
    let shared = &results[0][0]["results"];
    assert_eq!(shared, &Value::Array(Vec::new()), "no conversation's rows in the shared database: {shared}");
    for key in keys {
        let home = shard_binding(key);
        for (binding, result) in bindings.iter().zip(&results).skip(1) {
            let rows = result[0]["results"].as_array().unwrap();
            let row = rows.iter().find(|row| row["conversation_key"] == key.as_str());
            match *binding == home {
                true => {
                    let row = row.unwrap_or_else(|| panic!("{key} has no rows on its shard {home}: {rows:?}"));
                    assert_eq!(row["messages"], 2, "{key} on {home}: {row}");
                    assert_eq!(row["indexed"], 1, "{key} on {home}: {row}");
                    assert_eq!(row["spend"], 1, "{key} on {home}: {row}");
                }
                false => assert!(row.is_none(), "{key} lives on {home} but has rows on {binding}: {row:?}"),
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_conversations_rows_live_on_its_shard_and_the_dashboard_reads_them_all() {
    let mut env = TestEnv::start_with(&[("D1_SHARDS", "4")]).await;
    let chats = chats_on_every_shard(2);
    for (update, chat) in chats.iter().enumerate() {
        env.llm.reply(&format!("answer {chat}"));
        let status = env.telegram_update(&dm_update(update as i64 + 1, *chat, "hello")).await.status();
        assert_eq!(status, 200);
        env.wait_for_sent(update + 1).await;
    }
    env.settle().await;

    // The dashboard lists every conversation, from every shard, with its counts.
    let keys: Vec<String> = chats.iter().map(|chat| format!("telegram:{chat}")).collect();
    let listed = wait_for("every conversation listed", Duration::from_secs(30), || async {
        let listed = env.admin("/api/conversations").await;
        let rows = listed.as_array().cloned().unwrap_or_default();
        keys.iter()
            .all(|key| rows.iter().any(|row| &row["conversation_key"] == key && row["message_count"] == 1))
            .then_some(rows)
    })
    .await;
    assert_eq!(listed.len(), keys.len(), "{listed:?}");
    // The budget sums the spend over the shards (each conversation's spend
    // reaches D1 with its commit, after its reply).
    let total = TOKENS_PER_TURN * keys.len() as i64;
    let spend =
        env.spend_when("every turn's commit", |spend| spend["deployment"]["tokens"].as_i64() >= Some(total)).await;
    assert_eq!(spend["deployment"]["tokens"], TOKENS_PER_TURN * keys.len() as i64, "{spend}");
    assert_eq!(spend["conversations"].as_array().map(Vec::len), Some(keys.len()), "{spend}");
    // A conversation's history is read from its shard.
    let history = env.admin(&format!("/api/channels/{}/messages", keys[0])).await;
    assert_eq!(history.as_array().map(Vec::len), Some(2), "the message and the answer: {history}");

    assert_every_row_on_its_shard(&mut env, &keys).await;
    // Their people live on the shards (each on its platform id's), none in the shared database.
    let bindings = ["DB", "DB_SHARD_0", "DB_SHARD_1", "DB_SHARD_2", "DB_SHARD_3"];
    let people = env.sql_on_while_stopped(&bindings, "SELECT count(*) AS people FROM person_ids").await;
    let counts: Vec<i64> = people.iter().map(|result| result[0]["results"][0]["people"].as_i64().unwrap()).collect();
    assert_eq!(counts[0], 0, "no people in the shared database: {counts:?}");
    assert_eq!(counts[1..].iter().sum::<i64>(), keys.len() as i64, "every person on a shard: {counts:?}");
}

/// The local D1 file of the database bound as `binding`: each database is
/// marked first (a row only it holds), then the files are searched for it.
fn database_file(state_dir: &Path, binding: &str) -> PathBuf {
    let directory = state_dir.join("v3/d1/miniflare-D1DatabaseObject");
    for file in std::fs::read_dir(&directory).expect("the local D1 files").flatten() {
        let path = file.path();
        if path.extension().is_none_or(|extension| extension != "sqlite") {
            continue;
        }
        let output = Command::new("sqlite3")
            .arg(&path)
            .arg("SELECT value FROM status_events WHERE key = 'test_shard_marker'")
            .output()
            .expect("sqlite3 (make test installs it)");
        if String::from_utf8_lossy(&output.stdout).trim() == binding {
            return path;
        }
    }
    panic!("no local D1 file is marked {binding} in {}", directory.display());
}

/// A shard that is down: another process holds its file's write lock (an
/// exclusive transaction) until [`Outage::end`].
struct Outage(Child);

impl Outage {
    fn begin(file: &Path) -> Outage {
        let mut child = Command::new("sqlite3")
            .arg(file)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("sqlite3 (make test installs it)");
        let stdin = child.stdin.as_mut().unwrap();
        stdin.write_all(b".bail on\n.timeout 10000\nBEGIN EXCLUSIVE;\nSELECT 'locked';\n").unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "locked", "the shard's file could not be locked");
        Outage(child)
    }

    fn end(mut self) {
        let stdin = self.0.stdin.as_mut().unwrap();
        stdin.write_all(b"ROLLBACK;\n.quit\n").unwrap();
        drop(self.0.stdin.take());
        self.0.wait().unwrap();
    }
}

impl Drop for Outage {
    fn drop(&mut self) {
        let _ = self.0.kill();
    }
}

fn conversation_tokens(spend: &Value, key: &str) -> Option<i64> {
    spend["conversations"].as_array()?.iter().find(|row| row["subject"] == key)?["tokens"].as_i64()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_shard_that_is_down_delays_only_its_own_conversations_and_drains_when_back() {
    let mut env = TestEnv::start_with(&[("D1_SHARDS", "4")]).await;
    let bindings = ["DB_SHARD_0", "DB_SHARD_1", "DB_SHARD_2", "DB_SHARD_3"];
    let marks = bindings.map(|binding| {
        format!("INSERT INTO status_events (key, value, updated_at) VALUES ('test_shard_marker', '{binding}', 0)")
    });
    for (binding, mark) in bindings.iter().zip(&marks) {
        env.sql_on_while_stopped(&[binding], mark).await;
    }
    let chats = chats_on_every_shard(1);
    let (down_chat, up_chat) = (chats[0], chats[1]);
    let (down, up) = (format!("telegram:{down_chat}"), format!("telegram:{up_chat}"));
    let outage = Outage::begin(&database_file(env.state_dir(), &shard_binding(&down)));

    env.llm.reply("answer on the healthy shard");
    assert_eq!(env.telegram_update(&dm_update(1, up_chat, "hello")).await.status(), 200);
    env.wait_for_sent(1).await;
    env.llm.reply("answer on the shard that is down");
    assert_eq!(env.telegram_update(&dm_update(2, down_chat, "hello")).await.status(), 200);

    // Both are answered: a reply never waits for D1.
    env.wait_for_sent(2).await;
    env.settle().await;
    // The healthy shard's conversation is committed: its spend and its index row show.
    wait_for("the healthy shard's commit", Duration::from_secs(30), || async {
        let spend = env.admin("/api/spend").await;
        (conversation_tokens(&spend, &up) == Some(TOKENS_PER_TURN)).then_some(())
    })
    .await;
    let listed = env.admin("/api/conversations").await;
    assert!(listed.to_string().contains(&up), "{listed}");
    // The shard that is down has none of its answered conversation's spend yet.
    let spend = env.admin("/api/spend").await;
    assert_eq!(conversation_tokens(&spend, &down), None, "the down shard took a write: {spend}");

    outage.end();
    // What waited drains: the commit lands (the object comes back for it by
    // itself; nothing here asks it to).
    wait_for("the waiting commit", Duration::from_secs(90), || async {
        let spend = env.admin("/api/spend").await;
        (conversation_tokens(&spend, &down) == Some(TOKENS_PER_TURN)).then_some(())
    })
    .await;
    let spend = env.admin("/api/spend").await;
    assert_eq!(spend["deployment"]["tokens"], 2 * TOKENS_PER_TURN, "each turn counted once: {spend}");
    let sent = env.telegram.calls("sendMessage");
    assert_eq!(sent.len(), 2, "each message answered once: {sent:?}");
}

/// The deployment's budget is the sum of every shard's spend: three turns on
/// three shards (15 tokens each, none near the limit alone) stop a fourth on
/// the last shard. Other shards' spend is reused for up to
/// `OTHER_SHARDS_FRESH_MS`, so the fourth turn comes after that.
#[tokio::test(flavor = "multi_thread")]
async fn the_deployment_budget_sums_every_shard() {
    let env = TestEnv::start_with(&[("D1_SHARDS", "4"), ("BUDGET_DEPLOYMENT_TOKENS_PER_DAY", "40")]).await;
    let chats = chats_on_every_shard(1);
    for (update, chat) in chats.iter().take(3).enumerate() {
        env.llm.reply(&format!("hello {chat}"));
        assert_eq!(env.telegram_update(&dm_update(update as i64 + 1, *chat, "hi")).await.status(), 200);
        env.wait_for_sent(update + 1).await;
    }
    wait_for("three shards' commits", Duration::from_secs(30), || async {
        let spend = env.admin("/api/spend").await;
        (spend["deployment"]["tokens"] == 3 * TOKENS_PER_TURN).then_some(())
    })
    .await;
    let fresh = edgebot::shards::OTHER_SHARDS_FRESH_MS as u64;
    tokio::time::sleep(Duration::from_millis(fresh + 500)).await;
    env.llm.reply("must never be sent");
    assert_eq!(env.telegram_update(&dm_update(4, chats[3], "hi")).await.status(), 200);
    let sent = env.wait_for_sent(4).await;
    env.settle().await;
    assert_eq!(env.llm.requests().len(), 3, "the fourth turn is over the budget summed over the shards");
    let last = sent.last().unwrap();
    assert_eq!(last["chat_id"], chats[3]);
    assert!(last["text"].as_str().unwrap().starts_with("I have used my whole budget for today"), "{last}");
}

fn d1_queries(ops: &Value) -> i64 {
    ops["d1_queries"].as_i64().unwrap_or_else(|| panic!("d1_queries in {ops}"))
}

/// With `SHARED_READS_FRESH_MS` (production sets 30 s) a conversation's next
/// turn reads only its spend in the shared database, not its agent, limits
/// and people again; an operator's edit (here, in the same isolate) ends
/// that at once, and the next turn sees the edit.
#[tokio::test(flavor = "multi_thread")]
async fn a_conversation_reuses_its_shared_reads_until_an_operator_edits() {
    let env = TestEnv::start_with(&[("SHARED_READS_FRESH_MS", "600000")]).await;
    let mut queries = vec![d1_queries(&env.admin("/api/ops").await)];
    for update in 1..=2 {
        env.llm.reply(&format!("answer {update}"));
        assert_eq!(env.telegram_update(&dm_update(update, 7101, "hello")).await.status(), 200);
        env.wait_for_sent(update as usize).await;
        env.settle().await;
        queries.push(d1_queries(&env.admin("/api/ops").await));
    }
    let (first, second) = (queries[1] - queries[0], queries[2] - queries[1]);
    // Identity, skills, links, settings and the person are not read again; the limits
    // and spend become the spend alone.
    assert!(second + 5 <= first, "the second turn made {second} statements, the first {first}");

    let soul = "SOUL-CACHED: you speak like a ship's captain.";
    let (status, saved) =
        env.admin_send(reqwest::Method::PUT, "/api/identity/soul", Some(serde_json::json!({ "text": soul }))).await;
    assert_eq!(status, 200, "{saved}");
    env.llm.reply("answer 3");
    assert_eq!(env.telegram_update(&dm_update(3, 7101, "hello")).await.status(), 200);
    env.wait_for_sent(3).await;
    let requests = env.llm.requests();
    let prompt = requests.last().unwrap()["messages"][0]["content"].as_str().unwrap_or_default().to_string();
    assert!(prompt.contains(soul), "the edit reached the next turn: {prompt}");
}

/// Every conversation of an agent that an isolate serves shares the agent's
/// reads (identity documents, skills, links, settings, which conversations
/// have an override, the limit overrides): a new conversation's first turn
/// reads none of them again, a conversation with its own override still
/// reads and gets it, and an operator's limit from the kept table holds.
#[tokio::test(flavor = "multi_thread")]
async fn the_conversations_of_an_agent_share_its_reads_in_an_isolate() {
    let env = TestEnv::start_with(&[("SHARED_READS_FRESH_MS", "600000")]).await;
    let own = "OVERRIDE-KEPT-APART: answer like a lighthouse keeper.";
    let body = serde_json::json!({ "text": own });
    let (status, saved) =
        env.admin_send(reqwest::Method::PUT, "/api/channels/telegram:7202/identity", Some(body)).await;
    assert_eq!(status, 200, "{saved}");
    // A token limit of 1 for the first person: their next turn is refused from the kept limits.
    let limit = serde_json::json!({ "tokens": 1 });
    let (status, set) =
        env.admin_send(reqwest::Method::PUT, "/api/spend/limits/person/telegram:7201", Some(limit)).await;
    assert_eq!(status, 200, "{set}");

    let mut queries = vec![d1_queries(&env.admin("/api/ops").await)];
    for (update, chat) in [(1, 7201), (2, 7202)] {
        env.llm.reply(&format!("answer {update}"));
        assert_eq!(env.telegram_update(&dm_update(update, chat, "hello")).await.status(), 200);
        env.wait_for_sent(update as usize).await;
        env.settle().await;
        queries.push(d1_queries(&env.admin("/api/ops").await));
    }
    let (first, overridden) = (queries[1] - queries[0], queries[2] - queries[1]);
    // The agent's snapshot (seven reads) is the first conversation's alone; the second reads its override.
    assert!(overridden + 5 <= first, "the second conversation made {overridden} statements, the first {first}");
    let prompts: Vec<String> = env
        .llm
        .requests()
        .iter()
        .map(|request| request["messages"][0]["content"].as_str().unwrap_or_default().to_string())
        .collect();
    assert!(!prompts[0].contains(own), "the override is the second conversation's only: {}", prompts[0]);
    assert!(prompts[1].contains(own), "the second conversation's own override: {}", prompts[1]);

    // The first person's turn spent past their limit (the second person has none).
    assert_eq!(env.telegram_update(&dm_update(3, 7201, "hello again")).await.status(), 200);
    let sent = env.wait_for_sent(3).await;
    let refusal = sent[2]["text"].as_str().unwrap_or_default();
    assert!(refusal.starts_with("You have used today's share of my budget"), "the person's limit held: {refusal}");
    assert_eq!(env.llm.requests().len(), 2, "no model call past the limit");
}

/// Whether the dashboard lists exactly `keys` and the day's spend is `tokens`.
async fn listed_with(env: &TestEnv, keys: &[String], tokens: i64) -> Option<()> {
    let listed = env.admin("/api/conversations").await;
    let rows = listed.as_array().cloned().unwrap_or_default();
    let all = keys.iter().all(|key| rows.iter().any(|row| &row["conversation_key"] == key));
    let spend = env.admin("/api/spend").await;
    (all && rows.len() == keys.len() && spend["deployment"]["tokens"] == tokens).then_some(())
}

/// One answered DM whose conversation will live on each of 4 shards, all in
/// the one database still: their chats, keys, and the tokens they spent together.
async fn a_turn_for_every_shard_in_one_database(env: &TestEnv) -> (Vec<i64>, Vec<String>, i64) {
    let chats = chats_on_every_shard(1);
    for (update, chat) in chats.iter().enumerate() {
        env.llm.reply(&format!("answer {chat}"));
        assert_eq!(env.telegram_update(&dm_update(update as i64 + 1, *chat, "hello")).await.status(), 200);
        env.wait_for_sent(update + 1).await;
    }
    let total = TOKENS_PER_TURN * chats.len() as i64;
    let keys: Vec<String> = chats.iter().map(|chat| format!("telegram:{chat}")).collect();
    wait_for("one database's list and spend", Duration::from_secs(30), || listed_with(env, &keys, total)).await;
    (chats, keys, total)
}

/// A deployment with data that turns shards on moves to them by itself: the
/// minute's cron moves every conversation's rows out of the shared database
/// to its shard, a second pass changes nothing, the spend and the list add up
/// as before, and a conversation goes on where it was, answered once.
#[tokio::test(flavor = "multi_thread")]
async fn a_deployment_with_data_moves_to_its_shards_by_itself() {
    let mut env = TestEnv::start().await;
    let (chats, keys, total) = a_turn_for_every_shard_in_one_database(&env).await;

    env.restart_with(&[("D1_SHARDS", "4")]).await;
    env.cron_every_minute().await;
    wait_for("the moved list and spend", Duration::from_secs(30), || listed_with(&env, &keys, total)).await;
    env.cron_every_minute().await;
    wait_for("a second pass changing nothing", Duration::from_secs(10), || listed_with(&env, &keys, total)).await;

    assert_every_row_on_its_shard(&mut env, &keys).await;

    // The conversation goes on where it was, on its shard, answered once.
    env.llm.reply("answer after the move");
    assert_eq!(env.telegram_update(&dm_update(100, chats[0], "still there?")).await.status(), 200);
    env.wait_for_sent(chats.len() + 1).await;
    env.settle().await;
    assert_eq!(env.telegram.calls("sendMessage").len(), chats.len() + 1, "answered once");
    // The answer's row is stored after its send.
    let history = env.history_when(&keys[0], "the answer after the move", |rows| rows.len() >= 4).await;
    assert_eq!(history.len(), 4, "the history before and after the move: {history:?}");
    let requests = env.llm.requests();
    let last = requests.last().unwrap().to_string();
    assert!(last.contains(&format!("answer {}", chats[0])), "the turn remembers what came before: {last}");
}

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64
}

const SHARD_BINDINGS: [&str; 4] = ["DB_SHARD_0", "DB_SHARD_1", "DB_SHARD_2", "DB_SHARD_3"];

/// The mover's marks go a day after they were written: the minute's cron
/// deletes an old mark on every shard and keeps a fresh one.
#[tokio::test(flavor = "multi_thread")]
async fn the_movers_marks_older_than_a_day_are_pruned() {
    let mut env = TestEnv::start_with(&[("D1_SHARDS", "4")]).await;
    // Two days old, and new (`MARKS_KEPT_MS` in src/cron/reshard.rs is a day).
    let (old, fresh) = (now_ms() - 2 * 24 * 60 * 60 * 1000, now_ms());
    let plant = format!(
        "INSERT INTO moved_rows (source, row_key, marked_at) VALUES \
         ('DB', 'usage|telegram:1|channel', {old}), ('DB', 'usage|telegram:2|channel', {fresh})"
    );
    env.sql_on_while_stopped(&SHARD_BINDINGS, &plant).await;
    env.cron_every_minute().await;
    let marks = env.sql_on_while_stopped(&SHARD_BINDINGS, "SELECT row_key FROM moved_rows ORDER BY row_key").await;
    for (binding, result) in SHARD_BINDINGS.iter().zip(&marks) {
        let keys: Vec<&str> =
            result[0]["results"].as_array().unwrap().iter().filter_map(|row| row["row_key"].as_str()).collect();
        assert_eq!(keys, ["usage|telegram:2|channel"], "only the fresh mark is left on {binding}");
    }
}

/// The tables a move copies, kept aside in the shared database (with the
/// Worker stopped) so they can be put back as they were.
const SAVE: &str = "CREATE TABLE saved_messages AS SELECT * FROM messages; \
     CREATE TABLE saved_summaries AS SELECT * FROM summaries; \
     CREATE TABLE saved_conversations AS SELECT * FROM conversations; \
     CREATE TABLE saved_usage AS SELECT * FROM usage; \
     CREATE TABLE saved_pending_sends AS SELECT * FROM pending_sends; \
     CREATE TABLE saved_spend_daily AS SELECT * FROM spend_daily;";
/// The saved rows back in the shared database, and the mover's scan of it
/// forgotten: the state a crash after the copy and before the delete leaves.
const RESTORE: &str = "INSERT INTO messages SELECT * FROM saved_messages; \
     INSERT INTO summaries SELECT * FROM saved_summaries; \
     INSERT INTO conversations SELECT * FROM saved_conversations; \
     INSERT INTO usage SELECT * FROM saved_usage; \
     INSERT INTO pending_sends SELECT * FROM saved_pending_sends; \
     INSERT INTO spend_daily SELECT * FROM saved_spend_daily; \
     DELETE FROM status_events WHERE key LIKE 'reshard_%';";
/// Every sum a database holds: each `usage` row and each spend row (tokens, µ$, calls).
const SUMS: &str =
    "SELECT 'usage|' || conversation_key || '|' || process AS k, input_tokens + output_tokens AS tokens, \
     0 AS micro_usd, calls FROM usage UNION ALL SELECT 'spend|' || day || '|' || scope || '|' || subject, \
     input_tokens + output_tokens, micro_usd, calls FROM spend_daily";

/// The sums of [`SUMS`] added over databases (`results`: each one's statements; the last is SUMS).
fn sums(results: &[Value]) -> std::collections::BTreeMap<String, [i64; 3]> {
    let mut sums = std::collections::BTreeMap::<String, [i64; 3]>::new();
    for result in results {
        let rows = result.as_array().and_then(|statements| statements.last()).expect("the SUMS rows");
        for row in rows["results"].as_array().expect("rows") {
            let sum = sums.entry(row["k"].as_str().expect("a key").to_string()).or_default();
            for (slot, column) in sum.iter_mut().zip(["tokens", "micro_usd", "calls"]) {
                *slot += row[column].as_i64().unwrap_or_else(|| panic!("{column} in {row}"));
            }
        }
    }
    sums
}

/// A move that stopped between its copy and its delete (as a crash would
/// leave it: copied and marked, the source untouched) is made again by the
/// next minute's cron: the source's rows go, the sums on the shards are added
/// once, and no message is answered twice.
#[tokio::test(flavor = "multi_thread")]
async fn a_move_stopped_between_its_copy_and_its_delete_adds_nothing_twice() {
    let mut env = TestEnv::start().await;
    let (chats, keys, total) = a_turn_for_every_shard_in_one_database(&env).await;
    // A worker's usage (a turn has none) is moved too.
    let usage = format!(
        "INSERT INTO usage (conversation_key, process, input_tokens, output_tokens, calls) \
         VALUES ('{}', 'worker', 40, 8, 2);",
        keys[0]
    );
    let before = sums(&env.sql_on_while_stopped(&["DB"], &format!("{usage} {SAVE} {SUMS}")).await);
    assert!(before.keys().any(|key| key.starts_with("usage|")), "usage rows to move: {before:?}");
    assert!(
        before.keys().any(|key| key.starts_with("spend|") && key.contains("|conversation|")),
        "spend to move: {before:?}"
    );

    env.restart_with(&[("D1_SHARDS", "4")]).await;
    env.cron_every_minute().await;
    wait_for("the moved list and spend", Duration::from_secs(30), || listed_with(&env, &keys, total)).await;
    // The crash: the copy and its marks are on the shards, the source is as it was.
    env.sql_on_while_stopped(&["DB"], RESTORE).await;
    env.cron_every_minute().await;
    wait_for("the move made again", Duration::from_secs(30), || listed_with(&env, &keys, total)).await;

    assert_every_row_on_its_shard(&mut env, &keys).await;
    let bindings = ["DB", "DB_SHARD_0", "DB_SHARD_1", "DB_SHARD_2", "DB_SHARD_3"];
    let after = sums(&env.sql_on_while_stopped(&bindings, SUMS).await);
    assert_eq!(after, before, "every sum once, over the shared database and the shards");

    assert_eq!(env.telegram.calls("sendMessage").len(), chats.len(), "nothing answered again");
    env.llm.reply("answer after the move");
    assert_eq!(env.telegram_update(&dm_update(100, chats[0], "still there?")).await.status(), 200);
    env.wait_for_sent(chats.len() + 1).await;
    env.settle().await;
    assert_eq!(env.telegram.calls("sendMessage").len(), chats.len() + 1, "answered once");
}

/// People's rows on one database: each platform id's row and each record,
/// with the person it names and its home key.
const PEOPLE_ROWS: &str = "SELECT 'id' AS kind, platform_key AS k, person_id AS person, home_key FROM person_ids \
     UNION ALL SELECT 'record', id, id, home_key FROM people ORDER BY kind, k";

/// A Telegram chat whose DM's platform id (`telegram:<id>`) lives on another shard than `other`.
fn chat_off_the_shard_of(other: &str) -> i64 {
    (7000..).find(|chat| shard_of(&format!("telegram:{chat}"), SHARDS) != shard_of(other, SHARDS)).unwrap()
}

/// Each database's people rows are `expected` (binding: rows), none elsewhere.
async fn assert_people_rows(env: &mut TestEnv, expected: &[(String, Vec<Value>)]) {
    let bindings = ["DB", "DB_SHARD_0", "DB_SHARD_1", "DB_SHARD_2", "DB_SHARD_3"];
    let results = env.sql_on_while_stopped(&bindings, PEOPLE_ROWS).await;
    for (binding, result) in bindings.iter().zip(&results) {
        let found = result[0]["results"].as_array().cloned().unwrap_or_default();
        let wanted = expected.iter().find(|(home, _)| home == binding).map(|(_, rows)| rows.clone());
        assert_eq!(found, wanted.unwrap_or_default(), "people rows on {binding}");
    }
}

fn person_row(kind: &str, key: &str, person: &str, home: &str) -> Value {
    serde_json::json!({ "kind": kind, "k": key, "person": person, "home_key": home })
}

fn platform_keys(person: &Value) -> Vec<String> {
    let ids = person["platform_ids"].as_array().cloned().unwrap_or_default();
    ids.iter().map(|id| id["platform_key"].as_str().unwrap_or_default().to_string()).collect()
}

/// With shards, a speaker's record and platform id live on the shard of
/// their id and nowhere else (the shared database holds no people); an
/// operator's link of a Slack id on another shard makes one person, whom the
/// People API shows with both ids and a Slack turn knows by name.
#[tokio::test(flavor = "multi_thread")]
async fn people_live_on_their_ids_shard_and_a_link_across_two_shards_is_one_person() {
    let mut env = TestEnv::start_with(&[("D1_SHARDS", "4")]).await;
    let slack = "slack:U1";
    let telegram = format!("telegram:{}", chat_off_the_shard_of(slack));
    let chat: i64 = telegram["telegram:".len()..].parse().unwrap();
    env.llm.reply("hello Ada");
    assert_eq!(env.telegram_update(&dm_update(1, chat, "hi")).await.status(), 200);
    env.wait_for_sent(1).await;
    let people =
        env.admin_when("/api/people", "Ada's record", |people| people.as_array().is_some_and(|p| p.len() == 1));
    let ada = people.await[0].clone();
    let id = ada["id"].as_str().unwrap().to_string();
    assert_eq!(ada["display_name"], "Ada");
    let home = shard_binding(&telegram);
    let at_home = vec![person_row("id", &telegram, &id, &telegram), person_row("record", &id, &id, &telegram)];
    assert_people_rows(&mut env, &[(home.clone(), at_home.clone())]).await;

    // The operator links her Slack id, which lives on another shard.
    let path = format!("/api/people/{id}/link");
    let (status, linked) =
        env.admin_send(reqwest::Method::POST, &path, Some(serde_json::json!({ "platform_key": slack }))).await;
    assert_eq!(status, 200, "{linked}");
    assert_eq!(platform_keys(&linked["person"]), [slack.to_string(), telegram.clone()]);
    let listed = env.admin("/api/people").await;
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "one person: {listed}");
    assert_eq!(platform_keys(&listed[0]), [slack.to_string(), telegram.clone()]);
    let found = env.admin("/api/people?q=slack:u1").await;
    assert_eq!(found[0]["id"], id.as_str(), "found by the id on the other shard: {found}");
    assert_eq!(platform_keys(&env.admin(&format!("/api/people/{id}")).await).len(), 2);

    // A Slack turn reads her record from her home shard: the bot knows her as Ada.
    env.llm.reply("Hi Ada.");
    let event = serde_json::json!({"type": "message", "channel": "D1", "channel_type": "im", "user": "U1",
        "text": "hello from slack", "ts": "1795000000.000100"});
    env.slack_event(&crate::harness::slack_callback("Ev1", event)).await;
    wait_for("the Slack answer", Duration::from_secs(20), || async {
        (!env.slack.calls("/chat.postMessage").is_empty()).then_some(())
    })
    .await;
    let turn = crate::harness::turn_message(env.llm.requests().last().unwrap());
    assert!(turn.contains("Ada (writing as U1)"), "{turn}");
    // Her Slack sighting lands on its own shard, naming her record at home.
    env.admin_when("/api/people", "the Slack sighting", |people| {
        people[0]["platform_ids"].as_array().is_some_and(|ids| ids.iter().all(|id| !id["last_seen_at"].is_null()))
    })
    .await;
    let linked_row = vec![person_row("id", slack, &id, &telegram)];
    assert_people_rows(&mut env, &[(home, at_home), (shard_binding(slack), linked_row)]).await;
}

/// A deployment whose people were in the shared database before they moved
/// to the shards: the minute's cron moves each record to its home key's
/// shard and each platform id to its own, giving the rows from before
/// migration 0036 their home key; a second pass changes nothing.
#[tokio::test(flavor = "multi_thread")]
async fn the_mover_moves_people_from_the_shared_database_to_their_shards() {
    let mut env = TestEnv::start_with(&[("D1_SHARDS", "4")]).await;
    let slack = "slack:U9";
    let telegram = format!("telegram:{}", chat_off_the_shard_of(slack));
    let id = edgebot::people::rules::person_id(&telegram);
    let plant = format!(
        "INSERT INTO people (id, display_name, notes, version, created_at, updated_at) VALUES ('{id}', 'Bea', \
         '[{{\"text\":\"likes tea\",\"at_ms\":1,\"by\":\"bot\"}}]', 1, 1, 1); \
         INSERT INTO person_ids (platform_key, person_id, display_name, first_seen_at, last_seen_at) VALUES \
         ('{telegram}', '{id}', 'Bea', 1, 1), ('{slack}', '{id}', 'bea', 1, 2);"
    );
    env.sql_on_while_stopped(&["DB"], &plant).await;
    let moved = |people: &Value| {
        people.as_array().is_some_and(|people| people.len() == 1)
            && platform_keys(&people[0]).len() == 2
            && people[0]["notes"][0]["text"] == "likes tea"
    };
    for pass in ["moved", "a second pass changing nothing"] {
        env.cron_every_minute().await;
        let people = env.admin_when("/api/people", pass, moved).await;
        assert_eq!(people[0]["id"], id.as_str(), "{people}");
    }
    let at_home = vec![person_row("id", &telegram, &id, &telegram), person_row("record", &id, &id, &telegram)];
    let linked_row = vec![person_row("id", slack, &id, &telegram)];
    assert_people_rows(&mut env, &[(shard_binding(&telegram), at_home), (shard_binding(slack), linked_row)]).await;
}
