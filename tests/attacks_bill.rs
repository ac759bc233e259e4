//! Who runs up the bill, tested as an attacker would: a model turn that
//! tries to schedule fifty jobs, a scheduled run that breeds jobs, a group
//! member cancelling someone else's job, a person (or the whole deployment)
//! past its daily token budget, and a client opening guest web chats in bulk.

use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::{all_message_text, dm_update, group_update, wait_for, Scripted, TestEnv, GROUP_CHAT};

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
    let requests = env.llm.requests();
    let last = requests.last().expect("a model request");
    last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| message["content"].as_str().unwrap_or_default().to_string())
        .collect()
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
