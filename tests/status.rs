//! `GET /api/status`: the bindings present, the migrations applied, each
//! platform's configuration state (never a secret's value), what the last
//! cron tick did, and the pieces still waiting to be sent.

use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::{dm_update, wait_for, TestEnv, ADMIN_TOKEN, SLACK_SECRET, TELEGRAM_SECRET, TELEGRAM_TOKEN};

#[tokio::test(flavor = "multi_thread")]
async fn status_reports_bindings_migrations_platforms_and_the_last_cron_tick() {
    let env = TestEnv::start().await;
    let anonymous = env.client.get(format!("{}/api/status", env.worker.base_url)).send().await.unwrap();
    assert_eq!(anonymous.status(), 401, "admin only");
    let posted = env.client.post(format!("{}/api/ops", env.worker.base_url)).send().await.unwrap();
    assert_eq!(posted.status(), 405, "a route that exists answers another method with 405, not 404");

    let status = env.admin("/api/status").await;
    assert_eq!(status["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(
        status["bindings"],
        json!({
            "DB": true, "CHANNEL": true, "GATEWAY": true, "SIGN_IN": true, "JOBS": true, "INDEX_QUEUE": true, "FILES": true,
            "AI": false, "VECTORS": false, "LOADER": true, "SELF": true, "BROWSER": true,
            "EMAIL": true
        })
    );
    let migrations: Vec<&str> = status["migrations"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert_eq!(migrations.first(), Some(&"0001_history.sql"));
    assert!(migrations.contains(&"0008_status.sql"), "{migrations:?}");
    let platforms = &status["platforms"];
    assert_eq!(platforms["telegram"], json!({"ready": true, "bot_token": true, "webhook_secret": true}));
    assert_eq!(platforms["slack"]["ready"], true);
    assert_eq!(
        (platforms["discord"]["ready"].as_bool(), platforms["discord"]["bot_token"].as_bool()),
        (Some(true), Some(false))
    );
    assert_eq!(
        (status["models"]["openai_api_key"].as_bool(), status["models"]["search_api_key"].as_bool()),
        (Some(true), Some(false))
    );
    assert_eq!(status["last_cron"], Value::Null, "no tick yet");
    assert_eq!(status["running_workers"], 0);
    assert_eq!(status["pending_sends"], json!({"pieces": 0, "conversations": 0}));
    let shown = status.to_string();
    for secret in [ADMIN_TOKEN, TELEGRAM_TOKEN, TELEGRAM_SECRET, SLACK_SECRET, "test-llm-key", "xoxb-test"] {
        assert!(!shown.contains(secret), "status shows {secret}");
    }

    env.cron().await;
    let tick = env.admin("/api/status").await["last_cron"].clone();
    assert!(tick["at_ms"].as_i64().unwrap() > 0, "{tick}");
    assert_eq!(tick["gateway"], "off");
    assert_eq!(tick["schedules"], "ok: woke 0 conversation(s)");
    assert_eq!(tick["tasks"], "ok: started 0 task(s)");
    assert_eq!(tick["cortex"], "ok");
    assert_eq!(tick["files"], "ok: deleted 0 file(s), 0 workspace file(s)");
    wait_for("the cron_tick log line", Duration::from_secs(5), || async {
        env.worker.log().contains(r#"{"level":"info","event":"cron_tick""#).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn pieces_held_back_by_a_rate_limit_count_as_pending_until_they_are_sent() {
    let env = TestEnv::start().await;
    env.telegram.fail_next(
        "/sendMessage",
        429,
        json!({"ok": false, "error_code": 429, "description": "Too Many Requests: retry after 3", "parameters": {"retry_after": 3}}),
        None,
    );
    env.llm.reply("after the wait");
    env.telegram_update(&dm_update(1, 74, "hi")).await;
    let pending = |expected: Value| {
        let env = &env;
        async move {
            let pending = env.admin("/api/status").await["pending_sends"].clone();
            (pending == expected).then_some(())
        }
    };
    wait_for("one piece pending", Duration::from_secs(10), || pending(json!({"pieces": 1, "conversations": 1}))).await;
    wait_for("the piece sent", Duration::from_secs(15), || pending(json!({"pieces": 0, "conversations": 0}))).await;
    assert_eq!(env.telegram.calls("/sendMessage").len(), 2, "refused once, then sent");
}

/// `/api/ops` once nothing has written to a Durable Object or D1 for 3 s in a row.
async fn quiet_ops(env: &TestEnv) -> Value {
    let written = |ops: &Value| (ops["do_rows_written"].as_u64(), ops["d1_rows_written"].as_u64());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let mut last = env.admin("/api/ops").await;
    let mut quiet_since = tokio::time::Instant::now();
    while quiet_since.elapsed() < Duration::from_secs(3) {
        assert!(tokio::time::Instant::now() < deadline, "the Worker kept writing for 60 s: {last}");
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = env.admin("/api/ops").await;
        if written(&now) != written(&last) {
            quiet_since = tokio::time::Instant::now();
        }
        last = now;
    }
    last
}

/// What `/api/ops` counted between two snapshots, by name.
fn ops_delta(before: &Value, after: &Value, name: &str) -> u64 {
    after[name].as_u64().expect(name) - before[name].as_u64().expect(name)
}

#[tokio::test(flavor = "multi_thread")]
async fn operation_counts_follow_a_turn_and_a_retried_webhook_writes_nothing() {
    let env = TestEnv::start().await;
    let anonymous = env.client.get(format!("{}/api/ops", env.worker.base_url)).send().await.unwrap();
    assert_eq!(anonymous.status(), 401, "admin only");

    env.llm.reply("Hello Ada.");
    let before = env.admin("/api/ops").await;
    let update = dm_update(1, 71, "hello");
    assert_eq!(env.telegram_update(&update).await.status(), 200);
    env.wait_for_sent(1).await;
    // The turn's history reaches D1 after the reply, in the same alarm.
    let after = wait_for("the history mirrored to D1", Duration::from_secs(10), || async {
        let now = env.admin("/api/ops").await;
        (ops_delta(&before, &now, "d1_rows_written") >= 2).then_some(now)
    })
    .await;
    assert_eq!(ops_delta(&before, &after, "model_calls"), 1);
    assert!(ops_delta(&before, &after, "platform_calls") >= 1, "the sendMessage");
    assert!(ops_delta(&before, &after, "do_requests") >= 2, "the inbound and the turn's alarm");
    assert!(ops_delta(&before, &after, "do_rows_written") >= 3, "inbox row, checkpoint, alarm");
    assert!(ops_delta(&before, &after, "worker_invocations") >= 2, "the webhook and /api/ops");
    assert_eq!(ops_delta(&before, &after, "queue_sends"), 0, "a plain reply queues nothing");

    // Telegram retries the same update: read once, written never, answered 200. The turn's
    // own writes (the mirror's bookkeeping, the checkpoint) finish first, however slow the machine.
    let settled = quiet_ops(&env).await;
    assert_eq!(env.telegram_update(&update).await.status(), 200);
    let retried = env.admin("/api/ops").await;
    // The duplicate, known to the object's memory (no row read for it), and
    // the sign-in object's check of the bearer token of `/api/ops`.
    assert_eq!(ops_delta(&settled, &retried, "do_requests"), 2);
    assert_eq!(ops_delta(&settled, &retried, "do_rows_written"), 0, "a duplicate writes nothing");
    assert_eq!(ops_delta(&settled, &retried, "model_calls"), 0);
}
