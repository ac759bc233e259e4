//! Who runs up the bill, tested as an attacker would: a model turn that
//! tries to schedule fifty jobs, a scheduled run that breeds jobs, a group
//! member cancelling someone else's job, a person (or the whole deployment)
//! past its daily token budget, and a client opening guest web chats in bulk.

use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::{dm_update, group_update, spent_tokens, wait_for, Scripted, TestEnv, GROUP_CHAT};

const ADA: (i64, &str, bool) = (11, "Ada", false);
const BO: (i64, &str, bool) = (12, "Bo", false);

fn create_call(prompt: &str) -> (String, Value) {
    ("schedule".into(), json!({"action": "create", "prompt": prompt, "cron": "0 9 * * *"}))
}

async fn jobs(env: &TestEnv, conversation: &str) -> Vec<Value> {
    env.admin(&format!("/api/schedules?conversation={conversation}")).await.as_array().cloned().unwrap_or_default()
}

/// The tool results the model was shown in its last request.
fn tool_results(env: &TestEnv) -> Vec<String> {
    crate::workers::tool_results(env.llm.requests().last().expect("a model request"))
}

#[tokio::test(flavor = "multi_thread")]
async fn fifty_schedule_calls_in_one_turn_create_only_the_turn_cap() {
    let env = TestEnv::start().await;
    let calls: Vec<(String, Value)> = (0..50).map(|index| create_call(&format!("spam {index}"))).collect();
    env.llm.push(Scripted::ToolCalls(calls.clone()));
    // The model tries again in its next step of the same turn.
    env.llm.push(Scripted::ToolCalls(calls));
    env.llm.reply("Done.");
    env.telegram_update(&dm_update(1, 301, "schedule fifty things")).await;
    env.wait_for_sent(1).await;

    let listed = jobs(&env, "telegram:301").await;
    assert_eq!(listed.len(), 3, "SCHEDULE_MAX_CREATIONS_PER_TURN defaults to 3: {listed:?}");
    assert!(listed.iter().all(|job| job["created_by"]["id"] == "301" && job["created_by"]["name"] == "Ada"));
    let results = tool_results(&env);
    let refused = results.iter().filter(|result| result.contains("at most 3 jobs can be created in one turn")).count();
    assert_eq!(refused, 97, "every call past the cap is a tool error the model sees");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_conversation_holds_at_most_its_cap_of_jobs_however_many_turns_ask() {
    let env = TestEnv::start_with(&[("SCHEDULE_MAX_CREATIONS_PER_TURN", "50")]).await;
    let calls: Vec<(String, Value)> = (0..50).map(|index| create_call(&format!("spam {index}"))).collect();
    env.llm.push(Scripted::ToolCalls(calls));
    env.llm.reply("Done.");
    env.telegram_update(&dm_update(1, 302, "schedule fifty things")).await;
    env.wait_for_sent(1).await;
    assert_eq!(jobs(&env, "telegram:302").await.len(), 20, "SCHEDULE_MAX_JOBS_PER_CONVERSATION defaults to 20");
    let results = tool_results(&env);
    assert!(results.iter().any(|result| result.contains("already has 20 active jobs")), "{results:?}");

    // A paused job still counts: pausing is no way around the cap.
    let id = jobs(&env, "telegram:302").await[0]["id"].as_str().unwrap().to_string();
    env.admin_send(reqwest::Method::POST, &format!("/api/schedules/{id}/pause"), None).await;
    env.llm.push(Scripted::ToolCalls(vec![create_call("one more")]));
    env.llm.reply("Still full.");
    env.telegram_update(&dm_update(2, 302, "one more please")).await;
    env.wait_for_sent(2).await;
    assert_eq!(jobs(&env, "telegram:302").await.len(), 20);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_scheduled_run_cannot_create_jobs() {
    let env = TestEnv::start_with(&[("SCHEDULE_MIN_INTERVAL_MS", "1000")]).await;
    // The run's prompt talks the model into scheduling more runs.
    env.llm.push(Scripted::ToolCalls(vec![create_call("breed"), create_call("breed again")]));
    env.llm.reply("I could not schedule more.");
    let body =
        json!({"conversation": "telegram:303", "prompt": "Schedule two more copies of yourself.", "in_seconds": 1});
    let (status, job) = env.admin_send(reqwest::Method::POST, "/api/schedules", Some(body)).await;
    assert_eq!(status, 200, "{job}");
    env.wait_for_sent(1).await;

    let listed = jobs(&env, "telegram:303").await;
    assert_eq!(listed.len(), 1, "only the operator's job: {listed:?}");
    assert_eq!(listed[0]["created_by"]["id"], "operator");
    let results = tool_results(&env);
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(
        results.iter().all(|result| result.contains("a scheduled job's own run cannot create jobs")),
        "{results:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn only_the_creator_or_an_operator_cancels_a_job() {
    let env = TestEnv::start_with(&[("COALESCE_DEBOUNCE_MS", "300")]).await;
    let key = format!("telegram:{GROUP_CHAT}");
    env.llm.push(Scripted::ToolCalls(vec![create_call("Ada's standup"), create_call("Ada's retro")]));
    env.llm.reply("Two jobs set.");
    env.telegram_update(&group_update(1, ADA, "set up the standup and retro reminders", true)).await;
    env.wait_for_sent(1).await;
    let listed = jobs(&env, &key).await;
    assert_eq!(listed.len(), 2);
    let (first, second) =
        (listed[0]["id"].as_str().unwrap().to_string(), listed[1]["id"].as_str().unwrap().to_string());

    // Bo, another member, gets the model to cancel Ada's job: refused.
    env.llm.push(Scripted::ToolCalls(vec![("schedule".into(), json!({"action": "cancel", "id": first}))]));
    env.llm.reply("I can't.");
    env.telegram_update(&group_update(2, BO, "cancel the standup reminder", true)).await;
    env.wait_for_sent(2).await;
    let results = tool_results(&env);
    assert!(
        results[0].contains(&format!("only Ada (who created job {first}) or an operator can cancel it")),
        "{results:?}"
    );
    assert_eq!(jobs(&env, &key).await.len(), 2, "Bo's cancel changed nothing");

    // Ada, the creator, can.
    env.llm.push(Scripted::ToolCalls(vec![("schedule".into(), json!({"action": "cancel", "id": first}))]));
    env.llm.reply("Cancelled.");
    env.telegram_update(&group_update(3, ADA, "cancel the standup reminder", true)).await;
    env.wait_for_sent(3).await;
    assert!(tool_results(&env)[0].contains(&format!("cancelled {first}")));
    let left: Vec<Value> = jobs(&env, &key).await;
    assert_eq!(left.len(), 1);
    assert_eq!(left[0]["id"], second.as_str());

    // An operator can cancel anyone's job through the admin API.
    let (status, _) = env.admin_send(reqwest::Method::DELETE, &format!("/api/schedules/{second}"), None).await;
    assert_eq!(status, 200);
    assert!(jobs(&env, &key).await.is_empty());
}

/// The texts Telegram received in one chat.
fn sent_to(env: &TestEnv, chat: i64) -> Vec<String> {
    env.telegram
        .calls("sendMessage")
        .iter()
        .filter(|call| call["chat_id"] == chat)
        .map(|call| call["text"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// Sends a DM and waits for the Worker to settle (answered or not).
async fn dm(env: &TestEnv, update: i64, chat: i64, text: &str) {
    let response = env.telegram_update(&dm_update(update, chat, text)).await;
    assert_eq!(response.status(), 200);
    env.settle().await;
}

const PERSON_NOTICE: &str = "You have used today's share of my budget";
const DEPLOYMENT_NOTICE: &str = "I have used my whole budget for today";

/// The fake model reports 15 tokens a call; a budget of 20 lets two calls
/// through (the second passes it) and stops the third turn before its call.
#[tokio::test(flavor = "multi_thread")]
async fn a_person_over_their_daily_budget_is_told_once_and_the_model_is_not_called() {
    let env = TestEnv::start_with(&[("BUDGET_PERSON_TOKENS_PER_DAY", "20")]).await;
    env.llm.reply("one");
    env.llm.reply("two");
    env.llm.reply("must never be sent");
    dm(&env, 1, 311, "first").await;
    env.wait_for_sent(1).await;
    dm(&env, 2, 311, "second").await;
    env.wait_for_sent(2).await;
    for (update, text) in [(3, "third"), (4, "fourth"), (5, "fifth")] {
        dm(&env, update, 311, text).await;
    }
    env.settle().await;
    assert_eq!(env.llm.requests().len(), 2, "no model call once the budget is spent");
    let sent = sent_to(&env, 311);
    assert_eq!(sent.len(), 3, "two answers and one notice: {sent:?}");
    assert!(sent[2].starts_with(PERSON_NOTICE), "{sent:?}");

    // The dashboard's view: spend per person and per conversation (reaching D1
    // with the turns' commit, after their replies).
    let report =
        env.spend_when("Ada's spend", |report| spent_tokens(report, "people", "telegram:311") >= Some(30)).await;
    let person = report["people"].as_array().unwrap().iter().find(|row| row["subject"] == "telegram:311").cloned();
    let person = person.unwrap_or_else(|| panic!("the person's spend: {report}"));
    assert_eq!((person["tokens"].as_i64(), person["name"].as_str()), (Some(30), Some("Ada")), "{report}");
    assert_eq!(person["limit"]["tokens"], 20);
    let conversation =
        report["conversations"].as_array().unwrap().iter().find(|row| row["subject"] == "telegram:311").cloned();
    assert_eq!(conversation.unwrap()["tokens"], 30, "{report}");
    assert!(report["deployment"]["usd"].as_f64().unwrap() > 0.0, "priced from the model table: {report}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_operator_raising_a_limit_lets_the_person_continue() {
    let env = TestEnv::start_with(&[("BUDGET_PERSON_TOKENS_PER_DAY", "10")]).await;
    env.llm.reply("one");
    dm(&env, 1, 312, "first").await;
    env.wait_for_sent(1).await;
    dm(&env, 2, 312, "second").await;
    assert!(env.wait_for_sent(2).await[1]["text"].as_str().unwrap().starts_with(PERSON_NOTICE));
    assert_eq!(env.llm.requests().len(), 1);

    let (status, answer) = env
        .admin_send(reqwest::Method::PUT, "/api/spend/limits/person/telegram:312", Some(json!({"tokens": 1000})))
        .await;
    assert_eq!(status, 200, "{answer}");
    env.llm.reply("back again");
    dm(&env, 3, 312, "third").await;
    let sent = env.wait_for_sent(3).await;
    assert_eq!(sent[2]["text"], "back again");
    assert_eq!(env.llm.requests().len(), 2);
    // The person's spend (two answers) reaches D1 with the turns' commit, after the reply.
    let report =
        env.spend_when("the person's spend", |report| spent_tokens(report, "people", "telegram:312") >= Some(30)).await;
    let person = report["people"].as_array().unwrap().iter().find(|row| row["subject"] == "telegram:312").unwrap();
    assert_eq!((person["limit"]["tokens"].as_i64(), person["overridden"].as_bool()), (Some(1000), Some(true)));

    // Another person keeps the configured limit.
    env.llm.reply("hello Bo");
    dm(&env, 4, 313, "hi").await;
    env.wait_for_sent(4).await;
    dm(&env, 5, 313, "again").await;
    assert!(sent_to(&env, 313)[1].starts_with(PERSON_NOTICE));
    assert_eq!(env.llm.requests().len(), 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_deployment_budget_stops_everyone_and_each_person_is_told_once() {
    let env = TestEnv::start_with(&[("BUDGET_DEPLOYMENT_TOKENS_PER_DAY", "20")]).await;
    env.llm.reply("hello 321");
    env.llm.reply("hello 322");
    env.llm.reply("must never be sent");
    dm(&env, 1, 321, "hi").await;
    env.wait_for_sent(1).await;
    dm(&env, 2, 322, "hi").await;
    env.wait_for_sent(2).await;
    // Each next turn's budget reads the other conversation's spend, which
    // reaches D1 with its commit, after its reply.
    env.spend_when("both turns' commits", |report| report["deployment"]["tokens"].as_i64() >= Some(30)).await;
    for (update, chat) in [(3, 321), (4, 322), (5, 321), (6, 322)] {
        dm(&env, update, chat, "more").await;
    }
    env.settle().await;
    assert_eq!(env.llm.requests().len(), 2, "nobody's turn calls the model past the deployment's budget");
    for chat in [321, 322] {
        let sent = sent_to(&env, chat);
        assert_eq!(sent.len(), 2, "{chat}: {sent:?}");
        assert!(sent[1].starts_with(DEPLOYMENT_NOTICE), "{chat}: {sent:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn one_client_opening_guest_web_chats_in_bulk_gets_429_past_the_cap() {
    const INVITE: &str = "bill-test-invitation";
    let env = TestEnv::start_with(&[("WEB_CHAT_TOKEN", INVITE), ("WEB_CHAT_SESSIONS_PER_CLIENT_PER_DAY", "3")]).await;
    // A fresh client each time (no cookie): every request asks for a new session.
    let url = format!("{}/api/chat/session", env.worker.base_url);
    let start = |token: &'static str| {
        let request = reqwest::Client::new().post(&url).json(&json!({ "token": token }));
        async move { request.send().await.unwrap() }
    };
    for attempt in 1..=3 {
        assert_eq!(start(INVITE).await.status(), 200, "session {attempt} is within the cap");
    }
    for _ in 0..3 {
        let refused = start(INVITE).await;
        assert_eq!(refused.status(), 429);
        let retry_after: u64 = refused.headers()["retry-after"].to_str().unwrap().parse().unwrap();
        assert!((1..=86_400).contains(&retry_after), "until the next UTC day: {retry_after}");
        let body: Value = refused.json().await.unwrap();
        assert!(body["error"].as_str().unwrap().contains("too many new web chats"), "{body}");
    }
    // An operator is not a guest: never capped.
    assert_eq!(start(crate::harness::ADMIN_TOKEN).await.status(), 200);
}

/// A worker outlives the turn that started it: once its person's budget is
/// spent, its next segment makes no model call and the worker fails.
#[tokio::test(flavor = "multi_thread")]
async fn a_worker_stops_at_its_next_segment_once_its_persons_budget_is_spent() {
    use crate::workers::{spawn, status, worker_requests, WORKER};
    let env = TestEnv::start_with(&[("BUDGET_PERSON_TOKENS_PER_DAY", "100"), ("LLM_TIMEOUT_MS", "10000")]).await;
    env.llm.push(spawn("count the stars in the catalogue", false, "I've set a worker on it."));
    // The first segment's 15 calls (15 tokens each) spend far past 100 tokens.
    for page in 1..=15 {
        env.llm.push_for(WORKER, status("progress", &format!("page {page} of 40")));
    }
    env.llm.push_for(WORKER, status("outcome", "must never be reached"));
    env.telegram_update(&dm_update(1, 331, "how many stars are in the catalogue?")).await;
    env.wait_for_sent(1).await;
    let workers = wait_for("the worker to fail", Duration::from_secs(60), || async {
        let workers = env.admin("/api/channels/telegram:331/workers").await;
        (workers[0]["state"] == "failed").then_some(workers)
    })
    .await;
    env.settle().await;
    assert_eq!(worker_requests(&env).len(), 15, "no call in the second segment: {workers}");
    let sent = sent_to(&env, 331);
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert!(sent[1].starts_with(PERSON_NOTICE), "the report's turn is over budget too: {sent:?}");
    let report = env.admin("/api/spend").await;
    let person = report["people"].as_array().unwrap().iter().find(|row| row["subject"] == "telegram:331").unwrap();
    assert_eq!(person["tokens"], 15 * 16, "the channel turn and the worker's calls count against the person");
}
