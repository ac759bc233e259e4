//! Memory and cortex: what a branch saves in a conversation is recalled there
//! later (other conversations never see it: tests/attacks_memory.rs); the cron
//! trigger builds the bulletin only when shared memory changed and every
//! channel prompt carries it; the admin API lists, searches and deletes.

use std::time::Duration;

use reqwest::Method;
use serde_json::{json, Value};

use crate::harness::{all_message_text, dm_update, wait_for, Scripted, TestEnv};

pub const BRANCH: &str = "You are a branch";
const CORTEX: &str = "You are the cortex";

fn branch_requests(env: &TestEnv) -> Vec<Value> {
    env.llm.requests().into_iter().filter(|request| all_message_text(request).contains(BRANCH)).collect()
}

fn cortex_calls(env: &TestEnv) -> usize {
    env.llm.requests().iter().filter(|request| all_message_text(request).contains(CORTEX)).count()
}

fn last_tool_result(request: &Value) -> String {
    let messages = request["messages"].as_array().unwrap();
    let result = messages.iter().rev().find(|message| message["role"] == "tool").expect("a tool result");
    result["content"].as_str().unwrap_or_default().to_string()
}

fn branch_then_reply(question: &str, reply: &str) -> Scripted {
    Scripted::ToolCalls(vec![
        ("branch".into(), json!({ "question": question })),
        ("reply".into(), json!({ "content": reply })),
    ])
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fact_saved_by_a_branch_is_recalled_in_a_later_turn_of_its_chat() {
    let env = TestEnv::start().await;
    env.llm.push(branch_then_reply("remember what Ada told us about her cat", "I'll remember that."));
    env.llm.push_for(
        BRANCH,
        Scripted::ToolCalls(vec![(
            "memory_save".into(),
            json!({ "content": "Ada's cat is called Tom and he is ginger", "memory_type": "fact" }),
        )]),
    );
    env.llm.push_for(BRANCH, Scripted::Text("Saved the cat's name.".into()));
    env.llm.reply("Noted: Tom the ginger cat.");
    env.telegram_update(&dm_update(1, 71, "my cat is called Tom, he's ginger")).await;
    env.wait_for_sent(2).await;
    assert!(last_tool_result(&branch_requests(&env)[1]).starts_with("saved memory mem-"));

    // A later turn of the same chat: the memory is this conversation's.
    env.llm.push(branch_then_reply("what is the name of Ada's cat?", "Let me remember."));
    env.llm
        .push_for(BRANCH, Scripted::ToolCalls(vec![("memory_recall".into(), json!({ "query": "name of Ada's cat" }))]));
    env.llm.push_for(BRANCH, Scripted::Text("Her cat is Tom.".into()));
    env.llm.reply("Your cat is Tom.");
    env.telegram_update(&dm_update(2, 71, "what's my cat called again?")).await;
    env.wait_for_sent(4).await;
    let recall = branch_requests(&env);
    assert_eq!(recall.len(), 4);
    let found = last_tool_result(&recall[3]);
    assert!(found.contains("Ada's cat is called Tom and he is ginger") && found.contains("(fact,"), "{found}");

    let listed = env.admin("/api/memories?mode=recent").await;
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["scope"], "telegram:71", "private to the chat it was learned in");
    assert_eq!(listed[0]["access_count"], 1, "the branch's recall counted as an access");
    assert_eq!(env.admin("/api/memories?mode=recent").await[0]["access_count"], 2, "and so did the listing");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_cron_builds_a_bulletin_only_when_memory_changed_and_prompts_carry_it() {
    // Channel objects reuse a bulletin for 15 minutes by default; this test wants the rebuilt one at once.
    let env = TestEnv::start_with(&[("BULLETIN_CACHE_MS", "0")]).await;
    let (status, imported) = env
        .admin_send(
            Method::POST,
            "/api/memories",
            Some(json!([{ "content": "Ada prefers tea over coffee", "memory_type": "preference" }])),
        )
        .await;
    assert_eq!((status, imported["imported"].as_u64()), (200, Some(1)));
    env.llm.push_for(CORTEX, Scripted::Text("BULLETIN-1: Ada prefers tea over coffee.".into()));
    env.cron().await;
    wait_for("the bulletin", Duration::from_secs(20), || async { (cortex_calls(&env) == 1).then_some(()) }).await;
    let cortex = env.llm.requests().into_iter().find(|request| all_message_text(request).contains(CORTEX)).unwrap();
    assert!(all_message_text(&cortex).contains("## Recent\n- Ada prefers tea over coffee"), "{cortex}");

    env.llm.reply("Tea it is.");
    env.telegram_update(&dm_update(1, 73, "what should I drink?")).await;
    env.wait_for_sent(1).await;
    let turn = env.llm.requests().last().cloned().unwrap();
    let system = turn["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("## What you remember") && system.contains("BULLETIN-1"), "{system}");

    // Nothing changed: no model call.
    env.cron().await;
    env.settle().await;
    assert_eq!(cortex_calls(&env), 1, "an unchanged store costs no model call");

    // A change moves the version: the next tick rebuilds.
    let new_memory = json!([{ "content": "Ada's birthday is on the third of May", "memory_type": "event" }]);
    assert_eq!(env.admin_send(Method::POST, "/api/memories", Some(new_memory)).await.0, 200);
    env.llm.push_for(CORTEX, Scripted::Text("BULLETIN-2: tea; birthday 3 May.".into()));
    env.cron().await;
    wait_for("the rebuilt bulletin", Duration::from_secs(20), || async { (cortex_calls(&env) == 2).then_some(()) })
        .await;
    env.llm.reply("Happy early birthday.");
    env.telegram_update(&dm_update(2, 73, "and now?")).await;
    env.wait_for_sent(2).await;
    let system = env.llm.requests().last().unwrap()["messages"][0]["content"].as_str().unwrap().to_string();
    assert!(system.contains("BULLETIN-2") && !system.contains("BULLETIN-1"), "{system}");
    let usage = env.admin("/api/channels/cortex/usage").await;
    assert_eq!(usage["cortex"]["input_tokens"], 20, "two syntheses of 10 tokens: {usage}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_memory_admin_api_needs_the_token_and_rejects_bad_input() {
    let env = TestEnv::start().await;
    let anonymous = env.client.get(format!("{}/api/memories", env.worker.base_url)).send().await.unwrap();
    assert_eq!(anonymous.status(), 401);
    let (status, body) = env.admin_send(Method::POST, "/api/memories", Some(json!({ "not": "a list" }))).await;
    assert_eq!(status, 400);
    assert!(body["error"].as_str().unwrap().contains("JSON array"), "{body}");
    let (status, _) = env.admin_send(Method::DELETE, "/api/memories/mem-missing", None).await;
    assert_eq!(status, 404);

    let memories = json!([
        { "content": "The deploy key rotates every Monday", "memory_type": "fact" },
        { "content": "Bo decided to use Postgres for the ledger", "memory_type": "decision" },
        { "content": "not a memory", "memory_type": "rumour" }
    ]);
    let (status, body) = env.admin_send(Method::POST, "/api/memories", Some(memories)).await;
    assert_eq!((status, body["imported"].as_u64()), (200, Some(2)), "an unknown type is skipped");
    let found = env.admin("/api/memories?query=which+database+for+the+ledger").await;
    assert_eq!(found[0]["content"], "Bo decided to use Postgres for the ledger", "{found}");
    let typed = env.admin("/api/memories?mode=typed&memory_type=decision").await;
    assert_eq!(typed.as_array().unwrap().len(), 1);
    let filtered = env.admin("/api/memories?query=which+database+for+the+ledger&memory_type=fact").await;
    let filtered = filtered.as_array().unwrap();
    assert!(!filtered.is_empty() && filtered.iter().all(|memory| memory["memory_type"] == "fact"), "{filtered:?}");
    let id = found[0]["id"].as_str().unwrap();
    assert_eq!(env.admin_send(Method::DELETE, &format!("/api/memories/{id}"), None).await.0, 200);
    let left = env.admin("/api/memories?mode=recent").await;
    assert_eq!(left.as_array().unwrap().len(), 1);
    assert_eq!(left[0]["content"], "The deploy key rotates every Monday");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bulletin_that_fails_three_times_in_a_row_pauses_until_its_next_interval() {
    let env = TestEnv::start_with(&[("LLM_MAX_ATTEMPTS", "1")]).await;
    let memory = json!([{ "content": "Bo's team ships on Thursdays", "memory_type": "fact" }]);
    assert_eq!(env.admin_send(Method::POST, "/api/memories", Some(memory)).await.0, 200);
    for attempt in 1..=3 {
        env.llm.push_for(CORTEX, Scripted::Status(500));
        env.cron().await;
        wait_for("the cortex call", Duration::from_secs(20), || async {
            (cortex_calls(&env) == attempt).then_some(())
        })
        .await;
    }
    env.llm.push_for(CORTEX, Scripted::Text("BULLETIN: ships on Thursdays.".into()));
    env.cron().await;
    env.settle().await;
    assert_eq!(cortex_calls(&env), 3, "the open circuit skips the routine until its next interval");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_only_memory_with_a_rare_query_word_ranks_at_the_top_among_many_near_matches() {
    let env = TestEnv::start().await;
    // Every distractor holds all the query's other words, padded to different
    // lengths: both retrievers rank the short ones first, so plain reciprocal
    // rank fusion put twenty of them above the one full-text first place.
    let mut memories: Vec<Value> = (0..120)
        .map(|index| {
            let content = format!("The person mentioned the item in the week{}", " again".repeat(index % 40))
                + &" too".repeat(index / 40);
            json!({ "content": content, "memory_type": "fact" })
        })
        .collect();
    memories.push(json!({ "content": "Bo spent his honeymoon in Zanzibar", "memory_type": "event" }));
    let (status, body) = env.admin_send(Method::POST, "/api/memories", Some(json!(memories))).await;
    assert_eq!((status, body["imported"].as_u64()), (200, Some(121)), "{body}");

    let found = env.admin("/api/memories?query=which+item+did+the+person+mention+in+the+week+about+zanzibar").await;
    let contents: Vec<&str> =
        found.as_array().unwrap().iter().filter_map(|memory| memory["content"].as_str()).collect();
    let rank = contents.iter().position(|content| *content == "Bo spent his honeymoon in Zanzibar");
    assert!(rank.is_some_and(|rank| rank < 2), "the rare word's memory ranks first or second: {contents:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn memories_stored_before_sketches_are_still_found_and_the_cron_gives_them_sketches() {
    let mut env = TestEnv::start().await;
    let memories = json!([
        { "content": "Ada's cat is called Tom", "memory_type": "fact" },
        { "content": "Bo drinks green tea every morning", "memory_type": "preference" },
        { "content": "Deploy keys rotate every Monday", "memory_type": "fact" }
    ]);
    assert_eq!(env.admin_send(Method::POST, "/api/memories", Some(memories)).await.0, 200);
    // No stored word matches "cats" or "names": only the vectors' word pieces find it.
    let first_found = |found: &Value| found[0]["content"].as_str().unwrap_or_default().to_string();
    assert_eq!(first_found(&env.admin("/api/memories?query=cats+names").await), "Ada's cat is called Tom");

    // As rows from before migration 0005 are: a vector, no sketch.
    env.sql_while_stopped("UPDATE memories SET sketch = NULL").await;
    assert_eq!(first_found(&env.admin("/api/memories?query=cats+names").await), "Ada's cat is called Tom");

    env.llm.push_for(CORTEX, Scripted::Text("BULLETIN".into()));
    env.cron().await;
    // The bulletin is written after the backfill, in the same run.
    wait_for("the cortex run", Duration::from_secs(20), || async { (cortex_calls(&env) == 1).then_some(()) }).await;
    let counts = env.sql_while_stopped("SELECT count(*) AS unsketched FROM memories WHERE sketch IS NULL").await;
    assert_eq!(counts[0]["results"][0]["unsketched"], 0, "{counts}");
    assert_eq!(first_found(&env.admin("/api/memories?query=cats+names").await), "Ada's cat is called Tom");
}
