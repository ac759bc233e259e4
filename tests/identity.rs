//! Identity documents (docs/people-and-identity.md): SOUL, IDENTITY and USER edited
//! through the admin API reach the next turn of every conversation without a
//! restart, a restored version comes back, a conversation's override reaches
//! that conversation only, branches think with them and workers do not, and
//! changes over a limit or without an operator store nothing.

use std::time::Duration;

use reqwest::Method;
use serde_json::{json, Value};

use crate::harness::{all_message_text, dm_update, slack_callback, wait_for, Scripted, TestEnv};

/// A line of the shipped SOUL.md (prompts/identity/SOUL.md).
const DEFAULT_SOUL: &str = "You are warm, direct and honest.";
/// A line of the shipped USER.md.
const DEFAULT_USER: &str = "No principal user is described.";

/// The system prompt of a recorded model request.
fn system(request: &Value) -> String {
    request["messages"][0]["content"].as_str().unwrap_or_default().to_string()
}

/// Sends a Telegram DM and returns the system prompt of the turn it started.
async fn telegram_turn(env: &TestEnv, update_id: i64, chat: i64) -> String {
    let before = env.llm.requests().len();
    env.llm.reply("ok");
    let response = env.telegram_update(&dm_update(update_id, chat, &format!("hello {update_id}"))).await;
    assert_eq!(response.status(), 200);
    wait_for("the turn's model request", Duration::from_secs(20), || async {
        env.llm.requests().get(before).map(system)
    })
    .await
}

/// Sends a Slack DM (conversation `slack:T1:D1`) and returns its turn's system prompt.
async fn slack_turn(env: &TestEnv, n: u32) -> String {
    let before = env.llm.requests().len();
    env.llm.reply("ok");
    let event = json!({"type": "message", "channel": "D1", "channel_type": "im", "user": "U1",
                       "text": format!("hi {n}"), "ts": format!("1795000000.00010{n}")});
    assert_eq!(env.slack_event(&slack_callback(&format!("Ev{n}"), event)).await.status(), 200);
    wait_for("the Slack turn's model request", Duration::from_secs(20), || async {
        env.llm.requests().get(before).map(system)
    })
    .await
}

async fn put_document(env: &TestEnv, name: &str, text: &str) -> (u16, Value) {
    env.admin_send(Method::PUT, &format!("/api/identity/{name}"), Some(json!({ "text": text }))).await
}

fn position(haystack: &str, needle: &str) -> usize {
    haystack.find(needle).unwrap_or_else(|| panic!("{needle:?} not in {haystack}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn an_edited_soul_reaches_the_next_turn_of_every_conversation_without_a_restart() {
    let env = TestEnv::start().await;
    let before = telegram_turn(&env, 1, 61).await;
    // The seed's order: the system prompt's own words, then SOUL, IDENTITY, USER.
    assert!(position(&before, "How you work") < position(&before, DEFAULT_SOUL), "{before}");
    assert!(position(&before, DEFAULT_SOUL) < position(&before, "(IDENTITY.md)"), "{before}");
    assert!(position(&before, "(IDENTITY.md)") < position(&before, DEFAULT_USER), "{before}");
    let documents = env.admin("/api/identity").await;
    assert_eq!(documents["documents"][0]["name"], "soul");
    assert_eq!(documents["documents"][0]["is_default"], true);
    assert_eq!(documents["limits"]["document_chars"], 8000);

    let (status, saved) = put_document(&env, "soul", "SOUL-V1: you speak like a lighthouse keeper.").await;
    assert_eq!(status, 200, "{saved}");
    assert_eq!((saved["version"].as_i64(), saved["author"].as_str()), (Some(1), Some("admin token")));
    assert_eq!(saved["saved"], true);

    // The same conversation and another on another platform, with no restart between.
    for prompt in [telegram_turn(&env, 2, 61).await, slack_turn(&env, 1).await] {
        assert!(prompt.contains("SOUL-V1: you speak like a lighthouse keeper."), "{prompt}");
        assert!(!prompt.contains(DEFAULT_SOUL), "the old SOUL is gone: {prompt}");
        assert!(prompt.contains(DEFAULT_USER), "the other documents stay: {prompt}");
    }
    // Saving the same text again makes no new version.
    let (status, again) = put_document(&env, "SOUL.md", "SOUL-V1: you speak like a lighthouse keeper.\r\n").await;
    assert_eq!((status, again["saved"].as_bool(), again["version"].as_i64()), (200, Some(false), Some(1)));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_restored_version_comes_back_into_the_next_prompt() {
    let env = TestEnv::start().await;
    assert_eq!(put_document(&env, "identity", "IDENTITY-ALPHA").await.0, 200);
    assert_eq!(put_document(&env, "identity", "IDENTITY-BETA").await.0, 200);
    let prompt = telegram_turn(&env, 1, 62).await;
    assert!(prompt.contains("IDENTITY-BETA") && !prompt.contains("IDENTITY-ALPHA"), "{prompt}");

    let listed = env.admin("/api/identity/identity/versions").await;
    let versions: Vec<(i64, String, String)> = listed["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|version| {
            (version["version"].as_i64().unwrap(), version["author"].to_string(), version["text"].to_string())
        })
        .collect();
    assert_eq!(versions.iter().map(|version| version.0).collect::<Vec<_>>(), vec![2, 1, 0], "{listed}");
    assert!(versions[0].1.contains("admin token") && versions[2].1.contains("shipped default"), "{listed}");
    assert!(listed["versions"][1]["created_at"].as_i64().is_some());

    let (status, restored) = env.admin_send(Method::POST, "/api/identity/identity/restore/1", None).await;
    assert_eq!(status, 200, "{restored}");
    assert_eq!((restored["version"].as_i64(), restored["restored_from"].as_i64()), (Some(3), Some(1)));
    assert_eq!(restored["text"], "IDENTITY-ALPHA");
    let prompt = telegram_turn(&env, 2, 62).await;
    assert!(prompt.contains("IDENTITY-ALPHA") && !prompt.contains("IDENTITY-BETA"), "{prompt}");

    // Version 0 is the shipped default.
    let (status, default) = env.admin_send(Method::POST, "/api/identity/identity/restore/0", None).await;
    assert_eq!((status, default["version"].as_i64()), (200, Some(4)));
    let prompt = telegram_turn(&env, 3, 62).await;
    assert!(prompt.contains("You are an AI agent that lives in this team's chats"), "{prompt}");
    assert!(!prompt.contains("IDENTITY-ALPHA"), "{prompt}");

    let (status, missing) = env.admin_send(Method::POST, "/api/identity/identity/restore/99", None).await;
    assert_eq!((status, missing["error"].as_str()), (404, Some("not found")));
    let (status, bad) = env.admin_send(Method::POST, "/api/identity/identity/restore/-1", None).await;
    assert_eq!(status, 400, "{bad}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_conversation_override_reaches_only_that_conversation() {
    let env = TestEnv::start().await;
    assert_eq!(put_document(&env, "user", "USER-TEXT: Ada runs the team.").await.0, 200);
    let path = "/api/channels/telegram:63/identity";
    let (status, set) = env.admin_send(Method::PUT, path, Some(json!({"text": "OVERRIDE-63: be formal here."}))).await;
    assert_eq!(status, 200, "{set}");
    assert_eq!(
        (set["text"].as_str(), set["author"].as_str()),
        (Some("OVERRIDE-63: be formal here."), Some("admin token"))
    );
    assert_eq!(env.admin(path).await["text"], "OVERRIDE-63: be formal here.");
    assert_eq!(env.admin("/api/channels/telegram:64/identity").await["text"], Value::Null);

    let with = telegram_turn(&env, 1, 63).await;
    assert!(position(&with, "USER-TEXT") < position(&with, "OVERRIDE-63: be formal here."), "after the three: {with}");
    let without = telegram_turn(&env, 2, 64).await;
    assert!(without.contains("USER-TEXT") && !without.contains("OVERRIDE-63"), "{without}");

    let (status, removed) = env.admin_send(Method::DELETE, path, None).await;
    assert_eq!((status, removed["text"].clone()), (200, Value::Null));
    let after = telegram_turn(&env, 3, 63).await;
    assert!(!after.contains("OVERRIDE-63"), "{after}");
    assert_eq!(env.admin_send(Method::DELETE, path, None).await.0, 404);

    let (status, refused) =
        env.admin_send(Method::PUT, "/api/channels/nowhere/identity", Some(json!({"text": "x"}))).await;
    assert_eq!(status, 400, "{refused}");
    let (status, empty) = env.admin_send(Method::PUT, path, Some(json!({"text": "  "}))).await;
    assert_eq!(status, 400, "{empty}");
}

#[tokio::test(flavor = "multi_thread")]
async fn changes_over_a_limit_or_without_an_operator_store_nothing() {
    let env = TestEnv::start().await;
    let url = |path: &str| format!("{}{path}", env.worker.base_url);

    // Over the size limits: 413 with a JSON error, nothing stored.
    let (status, refused) = put_document(&env, "soul", &"a".repeat(8_001)).await;
    assert_eq!(status, 413, "{refused}");
    assert_eq!(refused["error"], "SOUL.md is 8001 characters long: at most 8000 are allowed");
    let (status, refused) = env
        .admin_send(Method::PUT, "/api/channels/telegram:65/identity", Some(json!({"text": "b".repeat(1_001)})))
        .await;
    assert_eq!(status, 413, "{refused}");
    assert!(refused["error"].as_str().unwrap().contains("at most 1000"), "{refused}");
    // A body far over the cap is refused before it is read.
    let (status, refused) = put_document(&env, "soul", &"c".repeat(100_000)).await;
    assert_eq!(status, 413, "{refused}");
    // A secret, configured or shaped like a key: 400, named, never echoed.
    let (status, refused) = put_document(&env, "soul", "remember test-admin-token please").await;
    assert_eq!(status, 400, "{refused}");
    assert!(refused["error"].as_str().unwrap().contains("ADMIN_TOKEN"), "{refused}");
    assert!(!refused.to_string().contains("test-admin-token"), "{refused}");
    let (status, _) = put_document(&env, "user", "my key is sk-abcdefghijklmnopqrstuvwxyz0123456789").await;
    assert_eq!(status, 400);
    // Unknown documents and malformed bodies.
    assert_eq!(put_document(&env, "role", "x").await.0, 400);
    let (status, _) = env.admin_send(Method::PUT, "/api/identity/soul", Some(json!({"words": "x"}))).await;
    assert_eq!(status, 400);

    // Without an operator: 401, whatever the route.
    let attempts: Vec<(Method, &str, Option<Value>)> = vec![
        (Method::GET, "/api/identity", None),
        (Method::GET, "/api/identity/soul/versions", None),
        (Method::PUT, "/api/identity/soul", Some(json!({"text": "HIJACKED"}))),
        (Method::POST, "/api/identity/soul/restore/0", None),
        (Method::GET, "/api/channels/telegram:65/identity", None),
        (Method::PUT, "/api/channels/telegram:65/identity", Some(json!({"text": "HIJACKED"}))),
        (Method::DELETE, "/api/channels/telegram:65/identity", None),
    ];
    for (method, path, body) in attempts {
        let mut request = env.client.request(method.clone(), url(path));
        if let Some(body) = &body {
            request = request.json(body);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 401, "{method} {path}");
        assert!(response.json::<Value>().await.unwrap()["error"].is_string(), "{method} {path}: a JSON error");
    }
    let wrong = env
        .client
        .put(url("/api/identity/soul"))
        .bearer_auth("not-the-admin-token")
        .json(&json!({"text": "HIJACKED"}))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);

    // Nothing changed: every document is still its default, no override exists,
    // and the next turn carries the defaults.
    let documents = env.admin("/api/identity").await;
    for document in documents["documents"].as_array().unwrap() {
        assert_eq!(document["is_default"], true, "{document}");
    }
    assert_eq!(env.admin("/api/identity/soul/versions").await["versions"].as_array().unwrap().len(), 1);
    assert_eq!(env.admin("/api/channels/telegram:65/identity").await["text"], Value::Null);
    let prompt = telegram_turn(&env, 1, 65).await;
    assert!(prompt.contains(DEFAULT_SOUL) && !prompt.contains("HIJACKED"), "{prompt}");

    // What it may cost: the newest 50 versions are kept, the oldest dropped.
    for n in 1..=52 {
        assert_eq!(put_document(&env, "user", &format!("USER v{n}")).await.0, 200);
    }
    let versions = env.admin("/api/identity/user/versions").await;
    let numbers: Vec<i64> =
        versions["versions"].as_array().unwrap().iter().map(|version| version["version"].as_i64().unwrap()).collect();
    assert_eq!(numbers.len(), 51, "50 kept and the shipped default");
    assert_eq!((numbers[0], numbers[49], numbers[50]), (52, 3, 0));
    assert_eq!(env.admin_send(Method::POST, "/api/identity/user/restore/2", None).await.0, 404, "dropped");
}

#[tokio::test(flavor = "multi_thread")]
async fn branches_think_with_the_identity_and_workers_without_it() {
    let env = TestEnv::start_with(&[("LLM_TIMEOUT_MS", "10000")]).await;
    assert_eq!(put_document(&env, "soul", "SOUL-FOR-BRANCHES").await.0, 200);
    assert_eq!(put_document(&env, "user", "USER-PRIVATE-DETAILS").await.0, 200);
    let (status, _) =
        env.admin_send(Method::PUT, "/api/channels/telegram:66/identity", Some(json!({"text": "OVERRIDE-66"}))).await;
    assert_eq!(status, 200);

    env.llm.push(Scripted::ToolCalls(vec![
        ("branch".into(), json!({"question": "what should we name the boat?"})),
        ("spawn_worker".into(), json!({"task": "list ten boat names"})),
        ("reply".into(), json!({"content": "Thinking, and a worker is on it."})),
    ]));
    env.llm.push_for("You are a branch", Scripted::Text("Call it Tern.".into()));
    env.llm.push_for("You are a worker", Scripted::Text("Tern, Skua, Puffin.".into()));
    env.llm.answer_always(Scripted::Reply("noted".into()));
    env.telegram_update(&dm_update(1, 66, "name our boat")).await;

    let (branch, worker) =
        wait_for("the branch's and the worker's model requests", Duration::from_secs(30), || async {
            let requests = env.llm.requests();
            let find = |marker: &str| requests.iter().find(|request| system(request).contains(marker)).cloned();
            Some((find("You are a branch")?, find("You are a worker")?))
        })
        .await;
    let branch = system(&branch);
    assert!(position(&branch, "You are a branch") < position(&branch, "SOUL-FOR-BRANCHES"), "{branch}");
    assert!(branch.contains("USER-PRIVATE-DETAILS") && branch.contains("OVERRIDE-66"), "{branch}");
    let worker = all_message_text(&worker);
    for absent in ["SOUL-FOR-BRANCHES", "USER-PRIVATE-DETAILS", "OVERRIDE-66", "(IDENTITY.md)"] {
        assert!(!worker.contains(absent), "a worker gets no identity ({absent}): {worker}");
    }
}
