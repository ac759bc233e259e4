//! The task board: approval, the ready-task loop handing tasks to workers
//! exactly once, outcomes reaching the conversation, failures retried.

use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::{all_message_text, wait_for, Scripted, TestEnv};

const WORKER: &str = "You are a worker";
const CHAT: &str = "telegram:97";

async fn propose(env: &TestEnv, title: &str) -> i64 {
    let body = json!({"conversation": CHAT, "title": title, "description": "Say the result.", "priority": "high"});
    let (status, task) = env.admin_send(reqwest::Method::POST, "/api/tasks", Some(body)).await;
    assert_eq!(status, 200, "{task}");
    assert_eq!(task["status"], "pending_approval");
    task["id"].as_i64().unwrap()
}

async fn task(env: &TestEnv, id: i64) -> Value {
    let tasks = env.admin(&format!("/api/tasks?conversation={CHAT}")).await;
    tasks.as_array().unwrap().iter().find(|task| task["id"] == id).cloned().expect("the task")
}

async fn task_in(env: &TestEnv, id: i64, status: &str) -> Value {
    wait_for(&format!("task {id} to be {status}"), Duration::from_secs(30), || async {
        Some(task(env, id).await).filter(|task| task["status"] == status)
    })
    .await
}

fn outcome(text: &str) -> Scripted {
    Scripted::ToolCalls(vec![("set_status".into(), json!({ "kind": "outcome", "text": text }))])
}

fn worker_requests(env: &TestEnv) -> usize {
    env.llm.requests().iter().filter(|request| all_message_text(request).contains(WORKER)).count()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_approved_task_is_done_by_a_worker_whose_outcome_reaches_the_conversation_once() {
    let env = TestEnv::start().await;
    let id = propose(&env, "Count the open invoices").await;
    // Nothing runs before approval, even on a cron tick.
    env.cron().await;
    assert_eq!(task(&env, id).await["status"], "pending_approval");

    env.llm.push_for(WORKER, outcome("There are 3 open invoices."));
    env.llm.reply("The invoice task is done: 3 are open.");
    // Approval, and two more claimers at the same moment: the task is claimed once.
    let path = format!("/api/tasks/{id}/approve");
    let approve = env.admin_send(reqwest::Method::POST, &path, None);
    let (approved, _, _) = tokio::join!(approve, env.cron(), env.cron());
    assert_eq!(approved.0, 200, "{}", approved.1);

    let done = task_in(&env, id, "done").await;
    assert_eq!(done["attempts"], 1, "claimed exactly once: {done}");
    assert_eq!(done["note"], "There are 3 open invoices.");
    assert!(done["approved_at"].is_i64() && done["completed_at"].is_i64(), "{done}");
    let sent = env.wait_for_sent(1).await;
    assert_eq!(sent[0]["text"], "The invoice task is done: 3 are open.");
    env.settle().await;
    assert_eq!(worker_requests(&env), 1, "one worker ran");
    let workers = env.admin(&format!("/api/channels/{CHAT}/workers")).await;
    assert_eq!(workers.as_array().unwrap().len(), 1, "{workers}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_worker_returns_its_task_to_ready_until_the_last_attempt_parks_it() {
    let env = TestEnv::start().await;
    let id = propose(&env, "Fetch the report").await;
    // Each attempt answers in plain text three times: nudged twice, then it fails.
    for _ in 0..9 {
        env.llm.push_for(WORKER, Scripted::Text("I cannot do that.".into()));
    }
    for _ in 0..3 {
        env.llm.reply("The report task failed this time.");
    }
    env.admin_send(reqwest::Method::POST, &format!("/api/tasks/{id}/approve"), None).await;
    let parked = task_in(&env, id, "backlog").await;
    assert_eq!(parked["attempts"], 3, "back to ready twice, then parked: {parked}");
    assert!(!parked["note"].as_str().unwrap().is_empty(), "the error is kept: {parked}");
    assert_eq!(worker_requests(&env), 9);

    // A person can send it round again.
    let (status, moved) =
        env.admin_send(reqwest::Method::POST, &format!("/api/tasks/{id}/move"), Some(json!({"status": "done"}))).await;
    assert_eq!(status, 400, "the board's rules refuse backlog → done: {moved}");
}
