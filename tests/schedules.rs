//! Scheduled jobs: the model's `schedule` tool, the channel's alarm firing
//! runs exactly once, cancels that hold, restarts and downtime.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::harness::{all_message_text, dm_update, turn_message, wait_for, Scripted, TestEnv};

/// Short recurring intervals for tests (production keeps a minute).
fn env_vars() -> [(&'static str, &'static str); 2] {
    [("SCHEDULE_MIN_INTERVAL_MS", "1000"), ("LLM_TIMEOUT_MS", "10000")]
}

fn create(arguments: Value) -> Scripted {
    let mut arguments = arguments;
    arguments["action"] = json!("create");
    Scripted::ToolCalls(vec![("schedule".into(), arguments)])
}

async fn jobs(env: &TestEnv, chat: i64) -> Vec<Value> {
    env.admin(&format!("/api/schedules?conversation=telegram:{chat}")).await.as_array().cloned().unwrap_or_default()
}

/// The texts Telegram received in this chat.
fn sent_texts(env: &TestEnv) -> Vec<String> {
    env.telegram.calls("sendMessage").iter().map(|call| call["text"].as_str().unwrap_or_default().to_string()).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reminder_is_posted_once_at_its_time_and_not_before() {
    let env = TestEnv::start_with(&env_vars()).await;
    env.llm.push(create(json!({"prompt": "Remind Ada to call Anna.", "in_seconds": 4})));
    env.llm.reply("I will remind you in 4 seconds.");
    env.llm.reply("Time to call Anna!");
    let asked = Instant::now();
    env.telegram_update(&dm_update(1, 91, "remind me in 4 seconds to call Anna")).await;
    env.wait_for_sent(1).await;

    let listed = jobs(&env, 91).await;
    assert_eq!(listed.len(), 1);
    assert!(listed[0]["next_run"].as_str().unwrap().ends_with("UTC (UTC+00:00)"), "{}", listed[0]);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(sent_texts(&env).len(), 1, "nothing before the due time");

    let sent = env.wait_for_sent(2).await;
    assert!(asked.elapsed() >= Duration::from_secs(4), "posted at its time, not before");
    assert_eq!(sent[1]["text"], "Time to call Anna!");
    let run_prompt = all_message_text(env.llm.requests().last().unwrap());
    assert!(run_prompt.contains("Remind Ada to call Anna."), "the run's prompt reached the model");
    env.settle().await;
    env.settle().await;
    assert_eq!(sent_texts(&env).len(), 2, "once");
    let runs = env.admin(&format!("/api/schedules/{}/runs", listed[0]["id"].as_str().unwrap())).await;
    assert_eq!(runs.as_array().unwrap().len(), 1);
    assert_eq!(runs[0]["status"], "delivered");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_recurring_job_runs_until_cancelled_and_never_after() {
    let env = TestEnv::start_with(&env_vars()).await;
    env.llm.push(create(json!({"prompt": "Post the time.", "every_seconds": 2})));
    env.llm.reply("Every two seconds it is.");
    for run in 1..=3 {
        env.llm.reply(&format!("run {run}"));
    }
    env.telegram_update(&dm_update(1, 92, "post the time every 2 seconds")).await;
    env.wait_for_sent(4).await;
    // Cancel right after the third run, while the alarm for the fourth is armed.
    let id = jobs(&env, 92).await[0]["id"].as_str().unwrap().to_string();
    let (status, _) = env.admin_send(reqwest::Method::DELETE, &format!("/api/schedules/{id}"), None).await;
    assert_eq!(status, 200);
    env.llm.reply("run 4 must never happen");
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(sent_texts(&env), ["Every two seconds it is.", "run 1", "run 2", "run 3"]);
    assert!(jobs(&env, 92).await.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_list_the_model_sees_matches_the_admin_api() {
    let env = TestEnv::start_with(&env_vars()).await;
    env.llm.push(create(json!({"prompt": "Water the plants.", "cron": "0 9 * * *", "timezone": "Europe/Berlin"})));
    env.llm.push(create(json!({"prompt": "Weekly report.", "cron": "30 8 * * mon-fri"})));
    env.llm.push(Scripted::ToolCalls(vec![("schedule".into(), json!({"action": "list"}))]));
    env.llm.reply("Two jobs are set.");
    env.telegram_update(&dm_update(1, 93, "set up my jobs")).await;
    env.wait_for_sent(1).await;

    let listed = jobs(&env, 93).await;
    assert_eq!(listed.len(), 2);
    let seen = all_message_text(env.llm.requests().last().unwrap());
    for job in &listed {
        assert!(seen.contains(job["id"].as_str().unwrap()), "{seen}");
        assert!(seen.contains(job["next_run"].as_str().unwrap()), "next run in the job's own zone: {seen}");
    }
    assert!(listed[0]["next_run"].as_str().unwrap().contains("09:00 Europe/Berlin"), "{}", listed[0]);

    // Cancelled through the tool: gone from both.
    let id = listed[0]["id"].as_str().unwrap().to_string();
    env.llm.push(Scripted::ToolCalls(vec![("schedule".into(), json!({"action": "cancel", "id": id}))]));
    env.llm.push(Scripted::ToolCalls(vec![("schedule".into(), json!({"action": "list"}))]));
    env.llm.reply("Cancelled.");
    env.telegram_update(&dm_update(2, 93, "cancel the plants")).await;
    env.wait_for_sent(2).await;
    let listed = jobs(&env, 93).await;
    assert_eq!(listed.len(), 1);
    let seen = all_message_text(env.llm.requests().last().unwrap());
    assert!(!seen.contains(&format!("{id} (")), "the cancelled job is not listed: {seen}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_restart_before_the_due_time_loses_nothing_and_duplicates_nothing() {
    let mut env = TestEnv::start_with(&env_vars()).await;
    env.llm.push(create(json!({"prompt": "Remind about the stand-up.", "in_seconds": 6})));
    env.llm.reply("Noted.");
    env.llm.reply("Stand-up now!");
    env.telegram_update(&dm_update(1, 94, "remind me about the stand-up")).await;
    env.wait_for_delivered("telegram:94", 1).await;
    env.crash_and_restart().await;
    // The object's alarm fires the run; the cron tick (every 15 minutes in
    // production) wakes any object with an overdue job as a backstop.
    tokio::time::sleep(Duration::from_secs(6)).await;
    env.cron().await;
    let sent = env.wait_for_sent(2).await;
    assert_eq!(sent[1]["text"], "Stand-up now!");
    env.settle().await;
    env.settle().await;
    assert_eq!(sent_texts(&env).len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_recurring_job_that_missed_runs_during_downtime_runs_once_and_says_so() {
    let mut env = TestEnv::start_with(&env_vars()).await;
    env.llm.push(create(json!({"prompt": "Check the queue.", "every_seconds": 3})));
    env.llm.reply("Checking every 3 seconds.");
    env.llm.reply("caught up");
    env.llm.reply("on time again");
    env.telegram_update(&dm_update(1, 95, "check the queue every 3 seconds")).await;
    env.wait_for_delivered("telegram:95", 1).await;
    // Down for 10 s from here: nothing can run before that (the restarted
    // Worker may run its alarm before the harness sees it ready).
    let went_down_at = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    env.crash_for(Duration::from_secs(10)).await;
    let restarted_at = went_down_at + 10_000;
    env.cron().await;

    let sent = env.wait_for_sent(2).await;
    assert_eq!(sent[1]["text"], "caught up");
    let run_prompt = all_message_text(&env.llm.requests()[2]);
    assert!(run_prompt.contains("missed"), "the run says it missed earlier runs: {run_prompt}");
    let id = jobs(&env, 95).await[0]["id"].as_str().unwrap().to_string();
    env.admin_send(reqwest::Method::DELETE, &format!("/api/schedules/{id}"), None).await;
    // Every run due while the Worker was down became one run, not a burst.
    let runs = env.admin(&format!("/api/schedules/{id}/runs")).await;
    let during_downtime: Vec<&Value> =
        runs.as_array().unwrap().iter().filter(|run| run["due_at"].as_i64().unwrap() < restarted_at).collect();
    assert_eq!(during_downtime.len(), 1, "{runs}");
    assert!(during_downtime[0]["missed"].as_i64().unwrap() >= 2, "{runs}");
}

#[tokio::test(flavor = "multi_thread")]
async fn three_failed_runs_in_a_row_disable_a_job_and_the_person_is_told_once() {
    let env = TestEnv::start_with(&[("SCHEDULE_MIN_INTERVAL_MS", "1000"), ("LLM_MAX_ATTEMPTS", "1")]).await;
    env.llm.push(create(json!({"prompt": "Summarise the day.", "every_seconds": 2})));
    env.llm.reply("Every two seconds.");
    for _ in 0..3 {
        env.llm.push(Scripted::Status(500));
    }
    env.telegram_update(&dm_update(1, 96, "summarise every 2 seconds")).await;
    let sent = env.wait_for_sent(2).await;
    let id = jobs(&env, 96).await[0]["id"].as_str().unwrap().to_string();
    assert!(sent[1]["text"].as_str().unwrap().contains(&format!("scheduled job {id} failed three times")), "{sent:?}");
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(sent_texts(&env).len(), 2, "disabled: no more runs, and the notice came once");
    let job = &jobs(&env, 96).await[0];
    assert_eq!((job["status"].as_str(), job["consecutive_failures"].as_i64()), (Some("disabled"), Some(3)));
    let runs = env.admin(&format!("/api/schedules/{id}/runs")).await;
    assert!(runs.as_array().unwrap().iter().all(|run| run["status"] == "failed" && run["error"].is_string()), "{runs}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_paused_job_does_not_run_until_resumed() {
    let env = TestEnv::start_with(&env_vars()).await;
    let body = json!({"conversation": "telegram:98", "prompt": "Ping.", "every_seconds": 2});
    let (status, job) = env.admin_send(reqwest::Method::POST, "/api/schedules", Some(body)).await;
    assert_eq!(status, 200, "{job}");
    let id = job["id"].as_str().unwrap().to_string();
    let (status, paused) = env.admin_send(reqwest::Method::POST, &format!("/api/schedules/{id}/pause"), None).await;
    assert_eq!((status, paused["status"].as_str()), (200, Some("paused")));
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert!(sent_texts(&env).is_empty(), "a paused job does not run");

    env.llm.reply("pong");
    env.admin_send(reqwest::Method::POST, &format!("/api/schedules/{id}/resume"), None).await;
    assert_eq!(env.wait_for_sent(1).await[0]["text"], "pong");
    env.admin_send(reqwest::Method::DELETE, &format!("/api/schedules/{id}"), None).await;
    let (status, _) = env.admin_send(reqwest::Method::DELETE, &format!("/api/schedules/{id}"), None).await;
    assert_eq!(status, 404, "gone");
}

/// The case, shortened: a job whose runs all fail (each after two
/// attempts at the model), the Worker stopped in the middle of the third run
/// and left down for several intervals. After the restart the third run
/// resumes and its failure disables the job; no catch-up run starts beside
/// it or after it.
#[tokio::test(flavor = "multi_thread")]
async fn a_failing_job_cut_off_by_a_restart_is_disabled_by_its_third_run_and_never_runs_a_fourth() {
    let vars = [("SCHEDULE_MIN_INTERVAL_MS", "1000"), ("LLM_MAX_ATTEMPTS", "2"), ("LLM_TIMEOUT_MS", "10000")];
    let mut env = TestEnv::start_with(&vars).await;
    // Runs 1 and 2 fail twice each; run 3's first attempt hangs, and the
    // Worker is stopped while it does. Past the script, the model answers 500.
    for _ in 0..4 {
        env.llm.push(Scripted::Status(500));
    }
    env.llm.push(Scripted::Hang(Duration::from_secs(60)));
    let body = json!({"conversation": "telegram:97", "prompt": "Summarise the day.", "every_seconds": 3});
    let (status, job) = env.admin_send(reqwest::Method::POST, "/api/schedules", Some(body)).await;
    assert_eq!(status, 200, "{job}");
    let id = job["id"].as_str().unwrap().to_string();
    wait_for("the third run's first attempt", Duration::from_secs(30), || async {
        (env.llm.requests().len() == 5 && env.llm.in_flight() == 1).then_some(())
    })
    .await;
    assert_eq!(jobs(&env, 97).await[0]["consecutive_failures"], 2, "two runs failed before the stop");

    // Down for more than three intervals: the job is overdue when it comes back.
    env.crash_for(Duration::from_secs(10)).await;
    env.cron().await;
    let sent = env.wait_for_sent(1).await;
    assert!(sent[0]["text"].as_str().unwrap().contains(&format!("scheduled job {id} failed three times")), "{sent:?}");
    // Time for a wrongly claimed run to show itself, and the cron's backstop.
    tokio::time::sleep(Duration::from_secs(7)).await;
    env.cron().await;
    env.settle().await;

    let job = &jobs(&env, 97).await[0];
    assert_eq!((job["status"].as_str(), job["consecutive_failures"].as_i64()), (Some("disabled"), Some(3)), "{job}");
    let runs = env.admin(&format!("/api/schedules/{id}/runs")).await;
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 3, "three runs, no catch-up run: {runs:?}");
    assert!(runs.iter().all(|run| run["status"] == "failed"), "{runs:?}");
    let requests = env.llm.requests();
    let caught_up: Vec<String> =
        requests.iter().map(turn_message).filter(|message| message.contains("missed")).collect();
    assert!(caught_up.is_empty(), "no catch-up run reached the model: {caught_up:?}");
    assert_eq!(requests.len(), 7, "three runs of two attempts, the third's first cut off and resumed whole");
    assert_eq!(sent_texts(&env).len(), 1, "the person is told once");
}

/// A run that outlasts its job's interval holds the next one back, and its
/// end lets it go: one catch-up run follows at once (no cron needed), saying
/// what it missed, and the job keeps its pace after.
#[tokio::test(flavor = "multi_thread")]
async fn a_run_longer_than_its_interval_is_followed_by_one_catch_up_run() {
    let env = TestEnv::start_with(&env_vars()).await;
    env.llm.push(Scripted::SlowReply(Duration::from_secs(5), "slow run".into()));
    env.llm.reply("caught up");
    env.llm.reply("on time");
    let body = json!({"conversation": "telegram:99", "prompt": "Take stock.", "every_seconds": 2});
    let (status, job) = env.admin_send(reqwest::Method::POST, "/api/schedules", Some(body)).await;
    assert_eq!(status, 200, "{job}");
    let id = job["id"].as_str().unwrap().to_string();
    wait_for("the slow run's model call", Duration::from_secs(10), || async {
        (env.llm.in_flight() == 1).then_some(())
    })
    .await;
    // Two more intervals pass while it runs: nothing starts beside it.
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(env.llm.requests().len(), 1, "no run starts while one is unresolved");

    let sent = env.wait_for_sent(3).await;
    env.admin_send(reqwest::Method::DELETE, &format!("/api/schedules/{id}"), None).await;
    let texts: Vec<&str> = sent.iter().map(|message| message["text"].as_str().unwrap()).collect();
    assert_eq!(texts[..3], ["slow run", "caught up", "on time"]);
    let catch_up = turn_message(&env.llm.requests()[1]);
    assert!(catch_up.contains("missed"), "the catch-up run says it missed runs: {catch_up}");
}
