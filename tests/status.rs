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

    let status = env.admin("/api/status").await;
    assert_eq!(status["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(
        status["bindings"],
        json!({"DB": true, "CHANNEL": true, "GATEWAY": true, "JOBS": true, "AI": false, "VECTORS": false})
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
