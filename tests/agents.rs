//! Agents (issue 36): two agents with their own Telegram bots and identity
//! documents answer their own chats, each with its own token; one agent's
//! memories, people notes and workspace files never reach the other; the
//! admin API refuses bad definitions and the default agent's deletion, and
//! never shows a bot token; an approval asked in an agent's chat is decided
//! with a press on that agent's bot (answered with its token), never by
//! someone else's press; a database from before agents keeps everything
//! under the default agent.

use reqwest::Method;
use serde_json::{json, Value};

use std::time::Duration;

use crate::harness::fake_mcp::FakeMcp;
use crate::harness::{all_message_text, dm_update, wait_for, Scripted, TestEnv};
use crate::mcp::press;
use crate::workers::{spawn, status, tool_results, worker_requests, WORKER};

/// 32 bytes, base64: the key bot tokens are sealed with (SLACK_TOKEN_KEY).
const TOKEN_KEY: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
const BRANCH: &str = "You are a branch";
const ALPHA_SOUL: &str = "SOUL-ALPHA you are Alpha, the support agent";
const BETA_SOUL: &str = "SOUL-BETA you are Beta, the sales agent";
const CANARY: &str = "CANARY-A51 Dana's locker code is 4471";
const NOTE: &str = "NOTE-A51 prefers the night shift";
const FILE: &str = "FILE-A51 the alpha plan";

fn token(agent: &str) -> String {
    format!("{}:{agent}-token-never-shown", if agent == "alpha" { 1111 } else { 2222 })
}

fn secret(agent: &str) -> String {
    format!("{agent}-webhook-secret")
}

/// POSTs an update to an agent's own webhook with `secret`.
async fn update_for(env: &TestEnv, agent: &str, secret: &str, update: &Value) -> reqwest::Response {
    env.client
        .post(format!("{}/webhooks/telegram/{agent}", env.worker.base_url))
        .header("content-type", "application/json")
        .header("X-Telegram-Bot-Api-Secret-Token", secret)
        .body(update.to_string())
        .send()
        .await
        .unwrap()
}

/// Dana (user and chat 81) writes to `agent`'s bot; waits for `sent` sendMessage calls in all.
async fn dana_writes(env: &TestEnv, agent: &str, update_id: i64, text: &str, sent: usize) {
    let mut update = dm_update(update_id, 81, text);
    update["message"]["from"]["first_name"] = json!("Dana");
    let response = update_for(env, agent, &secret(agent), &update).await;
    assert_eq!(response.status(), 200, "{agent}'s update");
    env.wait_for_sent(sent).await;
}

fn branch_requests(env: &TestEnv) -> Vec<Value> {
    env.llm.requests().into_iter().filter(|request| all_message_text(request).contains(BRANCH)).collect()
}

/// Scripts a turn that branches, the branch's `calls`, and the answers.
fn script_branch(env: &TestEnv, calls: Vec<(&str, Value)>) {
    env.llm.push(Scripted::ToolCalls(vec![
        ("branch".into(), json!({ "question": "work with what you know" })),
        ("reply".into(), json!({ "content": "One moment." })),
    ]));
    let calls = calls.into_iter().map(|(name, arguments)| (name.to_string(), arguments)).collect();
    env.llm.push_for(BRANCH, Scripted::ToolCalls(calls));
    env.llm.push_for(BRANCH, Scripted::Text("Done.".into()));
    env.llm.reply("Done.");
}

fn last_branch_results(env: &TestEnv) -> Vec<String> {
    tool_results(branch_requests(env).last().expect("a branch request"))
}

/// Alpha's worker calls an MCP tool that needs approval: the buttons come
/// from Alpha's bot, someone else's press on it is refused (answered by
/// Alpha's bot), and Dana's press approves it (answered and edited by Alpha's bot).
async fn alpha_asks_and_its_bot_decides(env: &TestEnv, fake: &FakeMcp) {
    let server = json!({ "url": fake.url() });
    let (status_code, added) = env.admin_send(Method::PUT, "/api/mcp/servers/tracker", Some(server)).await;
    assert_eq!(status_code, 200, "{added}");
    let before = env.telegram.requests().len();
    env.llm.push(spawn("file an issue about the lockers", false, "I'll file it once you approve."));
    let create = json!({ "title": "Lockers jam" });
    env.llm.push_for(WORKER, Scripted::ToolCalls(vec![("mcp_tracker_create_issue".into(), create.clone())]));
    env.llm.push_for(WORKER, status("outcome", "Filed issue #101."));
    env.llm.reply("LOCKERS-FILED as issue #101.");
    let mut update = dm_update(20, 81, "please file an issue: the lockers jam");
    update["message"]["from"]["first_name"] = json!("Dana");
    assert_eq!(update_for(env, "alpha", &secret("alpha"), &update).await.status(), 200);
    let alpha_path = |call: &crate::harness::fake_api::Call| call.path.starts_with(&format!("/bot{}/", token("alpha")));
    let (asked_by_alpha, id) = wait_for("the approval's buttons", Duration::from_secs(40), || async {
        let calls = env.telegram.requests();
        let asked = calls[before..].iter().find(|call| call.body.get("reply_markup").is_some())?.clone();
        let data = asked.body["reply_markup"]["inline_keyboard"][0][0]["callback_data"].as_str()?.to_string();
        Some((alpha_path(&asked), data.trim_start_matches("approve:").to_string()))
    })
    .await;
    assert!(asked_by_alpha, "the question comes from Alpha's bot");

    // Someone else presses Approve on Alpha's bot: refused, by Alpha's bot, and nothing runs.
    let refused = update_for(env, "alpha", &secret("alpha"), &press(21, 99, 81, &format!("approve:{id}"))).await;
    assert_eq!(refused.status(), 200);
    let answers: Vec<_> =
        env.telegram.requests().into_iter().filter(|call| call.path.ends_with("/answerCallbackQuery")).collect();
    let answer = answers.last().expect("the press answered");
    assert!(alpha_path(answer), "answered by Alpha's bot: {}", answer.path);
    assert_eq!(answer.body["show_alert"], true, "{:?}", answer.body);
    assert!(answer.body["text"].as_str().unwrap().contains("Only Dana"), "{:?}", answer.body);
    assert!(fake.tool_calls().iter().all(|(tool, _)| tool != "create_issue"), "nothing runs before the yes");

    // Dana presses Approve on Alpha's bot: the call runs once, the answer and the edit are Alpha's.
    let approved = update_for(env, "alpha", &secret("alpha"), &press(22, 81, 81, &format!("approve:{id}"))).await;
    assert_eq!(approved.status(), 200);
    wait_for("the outcome after the yes", Duration::from_secs(40), || async {
        let sent = env.telegram.requests();
        sent.iter().any(|call| call.body["text"] == "LOCKERS-FILED as issue #101." && alpha_path(call)).then_some(())
    })
    .await;
    let filed: Vec<_> = fake.tool_calls().into_iter().filter(|(tool, _)| tool == "create_issue").collect();
    assert_eq!(filed, vec![("create_issue".to_string(), create)]);
    let calls = env.telegram.requests();
    let answer = calls.iter().rfind(|call| call.path.ends_with("/answerCallbackQuery")).unwrap();
    assert!(alpha_path(answer) && answer.body["text"] == "Done.", "{} {:?}", answer.path, answer.body);
    let edited = calls.iter().find(|call| {
        call.path.ends_with("/editMessageText")
            && call.body["text"].as_str().is_some_and(|text| text.contains("Approved"))
    });
    assert!(edited.is_some_and(alpha_path), "the approval's message edited by Alpha's bot");
    let approvals = env.admin("/api/approvals").await;
    let decided = approvals.as_array().unwrap().iter().find(|approval| approval["id"] == id.as_str()).unwrap().clone();
    assert_eq!(decided["status"], "approved", "{decided}");
    assert_eq!(decided["conversation_key"], "agent:alpha:telegram:81", "{decided}");
}

async fn set_up_agents(env: &TestEnv) {
    for (agent, soul) in [("alpha", ALPHA_SOUL), ("beta", BETA_SOUL)] {
        let (status, made) = env.admin_send(Method::POST, "/api/agents", Some(json!({ "id": agent }))).await;
        assert_eq!(status, 200, "{made}");
        let bot = json!({ "token": token(agent), "secret": secret(agent), "username": format!("{agent}_bot") });
        let (status, set) = env.admin_send(Method::PUT, &format!("/api/agents/{agent}/telegram"), Some(bot)).await;
        assert_eq!(status, 200, "{set}");
        assert_eq!(set["telegram_bot"], format!("{agent}_bot"));
        let path = format!("/api/identity/soul?agent={agent}");
        let (status, saved) = env.admin_send(Method::PUT, &path, Some(json!({ "text": soul }))).await;
        assert_eq!(status, 200, "{saved}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn two_agents_answer_their_own_chats_with_their_own_bots_and_keep_their_data_apart() {
    let fake = FakeMcp::start().await;
    let env = TestEnv::start_with(&[
        ("SLACK_TOKEN_KEY", TOKEN_KEY),
        ("LLM_TIMEOUT_MS", "10000"),
        ("FETCH_ALLOW_HOSTS", "127.0.0.1"),
    ])
    .await;
    set_up_agents(&env).await;

    // The admin API: the default first, no token shown, bad input refused, the default kept.
    let listed = env.admin("/api/agents").await;
    let ids: Vec<&str> = listed["agents"].as_array().unwrap().iter().map(|a| a["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["default", "alpha", "beta"]);
    assert!(!listed.to_string().contains("token-never-shown") && !listed.to_string().contains("webhook-secret"));
    let refusals = [
        (Method::POST, "/api/agents", json!({ "id": "Bad Id" })),
        (Method::POST, "/api/agents", json!({ "id": "alpha" })),
        (Method::POST, "/api/agents", json!({ "id": "gamma", "settings": { "modle": "x" } })),
        (Method::POST, "/api/agents", json!({ "id": "gamma", "settings": { "model": "beta-model" } })),
        (Method::PUT, "/api/agents/alpha/telegram", json!({ "token": "nope", "secret": "s", "username": "a" })),
        (Method::DELETE, "/api/agents/default", json!({})),
    ];
    for (method, path, body) in refusals {
        let (status, answer) = env.admin_send(method.clone(), path, Some(body.clone())).await;
        assert!((400..500).contains(&status), "{method} {path} {body}: {status} {answer}");
    }
    assert_eq!(env.admin("/api/agents").await["agents"].as_array().unwrap().len(), 3, "nothing changed");

    // A wrong secret (the other agent's, none, the default's) is a 401 and stores nothing.
    let update = dm_update(1, 81, "hello");
    for wrong in [secret("beta"), String::new(), "test-secret".to_string()] {
        assert_eq!(update_for(&env, "alpha", &wrong, &update).await.status(), 401, "secret {wrong:?}");
    }
    assert_eq!(update_for(&env, "nobody", &secret("alpha"), &update).await.status(), 401);
    assert_eq!(env.admin("/api/channels/agent:alpha:telegram:81/events").await, json!([]));

    // Dana tells Alpha her locker code; Alpha's branch saves it and notes her shift.
    script_branch(
        &env,
        vec![
            ("memory_save", json!({ "content": CANARY, "memory_type": "fact" })),
            ("person_note", json!({ "note": NOTE })),
        ],
    );
    dana_writes(&env, "alpha", 1, "my locker code is 4471 and I work nights", 2).await;
    let saved = last_branch_results(&env);
    assert!(saved[0].starts_with("saved memory mem-") && saved[1].contains(NOTE), "{saved:?}");
    let alpha_turn = all_message_text(&env.llm.requests()[0]);
    assert!(alpha_turn.contains(ALPHA_SOUL) && !alpha_turn.contains(BETA_SOUL), "Alpha's identity: {alpha_turn}");
    let calls = env.telegram.requests();
    let sends: Vec<_> = calls.iter().filter(|call| call.path.ends_with("/sendMessage")).collect();
    assert!(sends.iter().all(|call| call.path.starts_with(&format!("/bot{}/", token("alpha")))), "Alpha's token");

    // Alpha's worker keeps a file in its workspace.
    env.llm.push(spawn("write the plan", false, "Writing it."));
    env.llm.push_for(
        WORKER,
        Scripted::ToolCalls(vec![("file_write".into(), json!({ "path": "plan.txt", "content": FILE }))]),
    );
    env.llm.push_for(WORKER, status("outcome", "Wrote the plan."));
    env.llm.reply("The plan is written.");
    dana_writes(&env, "alpha", 2, "write the plan down", 4).await;

    // Beta's settings narrow its turns: its own model, and of the host's tools only `open_skill`.
    let narrow = json!({ "settings": { "model": "openai/beta-model", "tools": ["open_skill"] } });
    let (code, changed) = env.admin_send(Method::PUT, "/api/agents/beta", Some(narrow)).await;
    assert_eq!(code, 200, "{changed}");

    // Dana writes to Beta, the same Telegram user and chat id: Beta's own conversation, identity and token.
    let before = env.telegram.requests().len();
    let mut hunt = vec![
        ("memory_recall", json!({ "query": "Dana's locker code" })),
        ("memory_recall", json!({ "mode": "recent", "limit": 50 })),
        ("memory_recall", json!({ "mode": "typed", "memory_type": "fact", "limit": 50 })),
    ];
    hunt.push(("person_note", json!({ "note": "asked about lockers" })));
    script_branch(&env, hunt);
    dana_writes(&env, "beta", 3, "what is my locker code?", 6).await;
    let results = last_branch_results(&env);
    assert_eq!(results.len(), 4, "{results:?}");
    for result in &results {
        assert!(
            !result.contains("CANARY") && !result.contains("4471") && !result.contains("NOTE-A51"),
            "Beta read: {result}"
        );
    }
    let beta_requests: Vec<Value> =
        env.llm.requests().into_iter().filter(|r| all_message_text(r).contains("SOUL-BETA")).collect();
    assert!(!beta_requests.is_empty(), "Beta's turns carry Beta's identity");
    for request in &beta_requests {
        let text = all_message_text(request);
        assert!(!text.contains(ALPHA_SOUL) && !text.contains("NOTE-A51") && !text.contains("CANARY"), "{text}");
    }
    let offered = |request: &Value| -> Vec<String> {
        let tools = request["tools"].as_array().cloned().unwrap_or_default();
        tools.iter().filter_map(|tool| tool["function"]["name"].as_str().map(str::to_string)).collect()
    };
    let is_turn = |request: &&Value| offered(request).contains(&"reply".to_string());
    let beta_turn = beta_requests.iter().find(is_turn).expect("a turn of Beta's");
    assert_eq!(beta_turn["model"], "beta-model", "Beta's own model");
    let beta_tools = offered(beta_turn);
    assert!(beta_tools.contains(&"open_skill".into()) && !beta_tools.contains(&"schedule".into()), "{beta_tools:?}");
    let requests = env.llm.requests();
    let alpha_turn = requests.iter().filter(|r| all_message_text(r).contains(ALPHA_SOUL)).find(is_turn).unwrap();
    assert_ne!(alpha_turn["model"], "beta-model");
    assert!(offered(alpha_turn).contains(&"schedule".into()), "Alpha's turns keep every tool");
    let new_calls = &env.telegram.requests()[before..];
    for call in new_calls.iter().filter(|call| call.path.ends_with("/sendMessage")) {
        assert!(call.path.starts_with(&format!("/bot{}/", token("beta"))), "Beta's token: {}", call.path);
    }

    // Beta's worker looks for Alpha's file: its workspace has none.
    env.llm.push(spawn("find the plan", false, "Looking."));
    env.llm.push_for(
        WORKER,
        Scripted::ToolCalls(vec![("file_list".into(), json!({})), ("file_read".into(), json!({ "path": "plan.txt" }))]),
    );
    env.llm.push_for(WORKER, status("outcome", "No plan here."));
    env.llm.reply("I found no plan.");
    dana_writes(&env, "beta", 4, "read me the plan", 8).await;
    let worker = worker_requests(&env);
    let found = tool_results(worker.last().unwrap());
    assert!(found.iter().all(|result| !result.contains("FILE-A51")), "Beta's worker read Alpha's file: {found:?}");

    // The controls: Alpha still recalls its memory and reads its file; the data is stored under Alpha's keys.
    script_branch(&env, vec![("memory_recall", json!({ "query": "Dana's locker code" }))]);
    dana_writes(&env, "alpha", 5, "remind me of my locker code", 10).await;
    assert!(last_branch_results(&env)[0].contains("CANARY-A51"), "Alpha's own recall");
    let alpha_turn = all_message_text(branch_requests(&env).last().unwrap());
    assert!(alpha_turn.contains("NOTE-A51"), "Alpha's branch sees its own note about Dana: {alpha_turn}");
    let memories = env.admin("/api/memories?mode=recent&limit=50").await;
    let canary = memories.as_array().unwrap().iter().find(|m| m["content"] == CANARY).expect("the canary").clone();
    assert_eq!(canary["scope"], "agent:alpha:telegram:81");
    let workspace = env.admin("/api/conversations/agent:alpha:telegram:81/workspace").await;
    assert!(workspace.to_string().contains("plan.txt"), "{workspace}");
    let beta_space = env.admin("/api/conversations/agent:beta:telegram:81/workspace").await;
    assert!(!beta_space.to_string().contains("plan.txt"), "{beta_space}");

    alpha_asks_and_its_bot_decides(&env, &fake).await;

    // Deleting Beta stops its webhook.
    let (status, _) = env.admin_send(Method::DELETE, "/api/agents/beta", None).await;
    assert_eq!(status, 200);
    assert_eq!(update_for(&env, "beta", &secret("beta"), &dm_update(9, 81, "hi")).await.status(), 401);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_database_from_before_agents_keeps_everything_under_the_default_agent() {
    let mut env = TestEnv::start().await;
    // Rows as a deployment before migration 0026 held them: an identity
    // version, a conversation's memory. Then 0026 runs again over them as the
    // upgrade would (its statements re-read from the file).
    let migration = include_str!("../migrations/0026_agents.sql");
    let rebuild = &migration[migration.find("CREATE TABLE identity_versions_by_agent").unwrap()..];
    let rebuild: String =
        rebuild.lines().filter(|line| !line.trim_start().starts_with("--")).collect::<Vec<_>>().join(" ");
    let before = "DROP TABLE identity_versions; \
        CREATE TABLE identity_versions (name TEXT NOT NULL, version INTEGER NOT NULL, text TEXT NOT NULL, \
        author TEXT NOT NULL, created_at INTEGER NOT NULL, restored_from INTEGER, PRIMARY KEY (name, version)); \
        INSERT INTO identity_versions VALUES ('soul', 1, 'SOUL-OLD the soul from before agents', 'admin token', 1, NULL); \
        INSERT INTO memories (id, memory_type, content, importance, created_at, updated_at, last_accessed_at, source, scope) \
        VALUES ('old-dm', 'fact', 'OLD-DM a fact from before agents', 0.6, 1, 1, 1, 'telegram:71', 'telegram:71'); \
        INSERT INTO memories_fts (rowid, content) SELECT seq, content FROM memories WHERE id = 'old-dm';";
    env.sql_while_stopped(&format!("{before} {rebuild}")).await;

    let agents = env.admin("/api/agents").await;
    assert_eq!(agents["agents"][0]["id"], "default");
    let documents = env.admin("/api/identity").await;
    assert!(documents.to_string().contains("SOUL-OLD"), "the default agent keeps its soul: {documents}");
    let (status, other) = env.admin_send(Method::GET, "/api/identity?agent=alpha", None).await;
    assert_eq!(status, 200);
    assert!(!other.to_string().contains("SOUL-OLD"), "another agent starts from the shipped default: {other}");

    // The old conversation goes on as the default agent's, with its soul and its memory.
    script_branch(&env, vec![("memory_recall", json!({ "mode": "recent", "limit": 50 }))]);
    env.telegram_update(&dm_update(1, 71, "what do you know?")).await;
    env.wait_for_sent(2).await;
    assert!(last_branch_results(&env)[0].contains("OLD-DM"), "the memory is still the conversation's");
    assert!(all_message_text(&env.llm.requests()[0]).contains("SOUL-OLD"), "the prompt carries the old soul");
    let sends = env.telegram.calls("sendMessage");
    assert_eq!(sends.len(), 2);
}
