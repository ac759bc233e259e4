//! An agent's limits (issue 36): its `tools` narrow its workers as they
//! narrow its turns (a tool left out is neither offered to the worker nor
//! run), its `daily_micro_usd` caps the day's spend of all its conversations
//! (once reached its turns are refused, while the default agent answers),
//! and the operator's role and bio for a person (`[[humans]]`, set in bulk
//! for that agent's records) reach its prompt marked as the operator's, with
//! bad input a 400 that writes nothing.

use reqwest::Method;
use serde_json::{json, Value};

use crate::harness::{all_message_text, dm_update, Scripted, TestEnv};
use crate::workers::{spawn, status, tool_results, worker_requests, WORKER};

/// 32 bytes, base64: the key bot tokens are sealed with (SLACK_TOKEN_KEY).
const TOKEN_KEY: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
const TOKEN: &str = "3333:beta-token";
const SECRET: &str = "beta-webhook-secret";
const ROLE: &str = "ROLE-B7 Head of Sales";
const BIO: &str = "BIO-B7 Runs the Berlin office and signs off discounts";
const NOTICE: &str = "I have used my whole budget for today";

async fn beta_update(env: &TestEnv, update_id: i64, text: &str) {
    let mut update = dm_update(update_id, 81, text);
    update["message"]["from"]["first_name"] = json!("Dana");
    let response = env
        .client
        .post(format!("{}/webhooks/telegram/beta", env.worker.base_url))
        .header("content-type", "application/json")
        .header("X-Telegram-Bot-Api-Secret-Token", SECRET)
        .body(update.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
}

fn offered(request: &Value) -> Vec<String> {
    let tools = request["tools"].as_array().cloned().unwrap_or_default();
    tools.iter().filter_map(|tool| tool["function"]["name"].as_str().map(str::to_string)).collect()
}

fn beta_people(people: &Value) -> Vec<Value> {
    let people = people.as_array().cloned().unwrap_or_default();
    let is_beta = |person: &Value| person["platform_ids"].to_string().contains("agent:beta:telegram:");
    people.into_iter().filter(is_beta).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_keeps_to_its_tools_and_its_budget_and_sees_the_operators_word_on_people() {
    let env = TestEnv::start_with(&[("SLACK_TOKEN_KEY", TOKEN_KEY), ("LLM_TIMEOUT_MS", "10000")]).await;
    // Beta: workers may only read files; a dollar a day for now.
    let settings = json!({ "tools": ["file_read"], "daily_micro_usd": 1_000_000 });
    let (code, made) =
        env.admin_send(Method::POST, "/api/agents", Some(json!({ "id": "beta", "settings": settings }))).await;
    assert_eq!(code, 200, "{made}");
    let bot = json!({ "token": TOKEN, "secret": SECRET, "username": "beta_bot" });
    let (code, set) = env.admin_send(Method::PUT, "/api/agents/beta/telegram", Some(bot)).await;
    assert_eq!(code, 200, "{set}");

    // The operator's `[[humans]]` for Beta: one bad entry refuses the list and writes nothing.
    let too_long = "b".repeat(501);
    let bad = json!([{ "id": "telegram:82", "role": "Intern" }, { "id": "telegram:81", "bio": too_long }]);
    let (code, refused) = env.admin_send(Method::PUT, "/api/people?agent=beta", Some(bad)).await;
    assert_eq!(code, 400, "{refused}");
    assert!(refused.to_string().contains("person 2: a bio is at most 500"), "{refused}");
    assert!(beta_people(&env.admin("/api/people").await).is_empty(), "nothing was written");
    let humans = json!([{ "id": "telegram:81", "display_name": "Dana", "role": ROLE, "bio": BIO }]);
    let (code, set) = env.admin_send(Method::PUT, "/api/people?agent=beta", Some(humans)).await;
    assert_eq!(code, 200, "{set}");
    assert_eq!((set[0]["role"].as_str(), set[0]["bio"].as_str()), (Some(ROLE), Some(BIO)), "{set}");
    let id = set[0]["id"].as_str().unwrap().to_string();
    let (code, refused) =
        env.admin_send(Method::PUT, &format!("/api/people/{id}"), Some(json!({ "role": "r".repeat(81) }))).await;
    assert_eq!(code, 400, "{refused}");
    assert_eq!(env.admin(&format!("/api/people/{id}")).await["role"], ROLE, "unchanged");

    // Dana asks Beta; its worker tries run_code, which it is neither offered nor allowed.
    env.llm.push(spawn("work out the discount", false, "On it."));
    env.llm.push_for(WORKER, Scripted::ToolCalls(vec![("run_code".into(), json!({ "code": "print(0.1 * 200)" }))]));
    env.llm.push_for(WORKER, status("outcome", "20 off."));
    env.llm.reply("The discount is 20.");
    beta_update(&env, 1, "what discount may I give on 200?").await;
    env.wait_for_sent(2).await;
    let turn = all_message_text(&env.llm.requests()[0]);
    let facts = format!(" [the operator wrote this about them, not they: role: {ROLE}; bio: {BIO}]");
    assert!(turn.contains(&format!("- Dana{facts}")), "the role and bio as the operator's: {turn}");
    let worker = worker_requests(&env);
    let tools = offered(&worker[0]);
    assert!(tools.contains(&"file_read".into()) && tools.contains(&"set_status".into()), "{tools:?}");
    for absent in ["run_code", "http_fetch", "send_file"] {
        assert!(!tools.contains(&absent.to_string()), "{absent} offered: {tools:?}");
    }
    let results = tool_results(worker.last().unwrap());
    assert!(results[0].contains("no tool named `run_code`"), "run_code did not run: {results:?}");

    // Beta's budget lowered below what it spent today: its next turn is refused without a
    // model call, while the default agent still answers.
    let settings = json!({ "settings": { "tools": ["file_read"], "daily_micro_usd": 1 } });
    let (code, changed) = env.admin_send(Method::PUT, "/api/agents/beta", Some(settings)).await;
    assert_eq!(code, 200, "{changed}");
    let calls = env.llm.requests().len();
    beta_update(&env, 2, "and on 300?").await;
    let sent = env.wait_for_sent(3).await;
    assert!(sent[2]["text"].as_str().unwrap().starts_with(NOTICE), "{sent:?}");
    assert_eq!(env.llm.requests().len(), calls, "no model call past Beta's budget");
    env.llm.reply("Hello from the default agent.");
    env.telegram_update(&dm_update(3, 71, "hi")).await;
    let sent = env.wait_for_sent(4).await;
    assert_eq!(sent[3]["text"], "Hello from the default agent.");
    // Beta's spend reaches D1 with its turns' commit, after their replies.
    let beta_spent = |spend: &Value| {
        let beta = spend["agents"].as_array().into_iter().flatten().find(|row| row["subject"] == "beta");
        beta.and_then(|row| row["usd"].as_f64()).is_some_and(|usd| usd > 0.0)
    };
    let spend = env.spend_when("Beta's spend", beta_spent).await;
    let beta = spend["agents"].as_array().unwrap().iter().find(|row| row["subject"] == "beta").cloned();
    let beta = beta.unwrap_or_else(|| panic!("Beta's spend: {spend}"));
    assert!(beta["usd"].as_f64().unwrap() > 0.0 && beta["limit"]["usd"] == json!(0.000001), "{beta}");
}
