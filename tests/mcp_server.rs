//! edgebot as a remote MCP server (docs/mcp-server.md): the MCP conformance
//! suite's server scenarios that apply to a tools-only server pass against
//! `/mcp`; a client sees only the memories and tasks its scope allows, posts
//! once per idempotency key (the post is then the agent's message in the
//! conversation's history, once), and is refused when revoked, over its rate
//! or over its budget.

use std::process::Stdio;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Value};

use crate::harness::{all_message_text, dm_update, Scripted, TestEnv};

/// The conversation the main client may reach (a person's DM: 4242 is the
/// bot's own id), and one it may not.
const OURS: &str = "telegram:4343";
const THEIRS: &str = "telegram:9999";
const SHARED: &str = "SHARED-OFFICE the team's office is in Lisbon";
const PRIVATE: &str = "OPERATORS-ONLY the office door code is 7781";

/// The conformance scenarios that apply to a server offering only its own
/// tools (docs/mcp-server.md lists the rest and why not).
const SCENARIOS: [&str; 4] = ["server-initialize", "ping", "tools-list", "dns-rebinding-protection"];

/// A loopback proxy in front of `/mcp` that adds the client's bearer token
/// (the conformance CLI has no option for one) and forwards Origin and the
/// body as they came; the Host is the Worker's own. Returns its base URL.
async fn token_proxy(worker: &str, token: &str) -> String {
    async fn forward(
        State((target, token)): State<(String, String)>,
        method: Method,
        headers: HeaderMap,
        body: Bytes,
    ) -> Response {
        let client = reqwest::Client::new();
        let method = reqwest::Method::from_bytes(method.as_str().as_bytes()).unwrap();
        let mut request = client.request(method, &target).bearer_auth(&token).body(body.to_vec());
        for (name, value) in &headers {
            if !["host", "authorization", "content-length", "accept-encoding"].contains(&name.as_str()) {
                request = request.header(name.as_str(), value.as_bytes());
            }
        }
        let answer = request.send().await.expect("the Worker answers");
        let status = StatusCode::from_u16(answer.status().as_u16()).unwrap();
        let mut out = HeaderMap::new();
        for name in ["content-type", "retry-after", "mcp-session-id"] {
            if let Some(value) = answer.headers().get(name) {
                out.insert(name, value.to_str().unwrap().parse().unwrap());
            }
        }
        let body = answer.bytes().await.unwrap_or_default();
        (status, out, body).into_response()
    }
    let router = Router::new().fallback(forward).with_state((format!("{worker}/mcp"), token.to_string()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind a loopback port");
    let address = listener.local_addr().unwrap();
    // Serves until the test's runtime ends.
    tokio::spawn(async move { axum::serve(listener, router).await });
    format!("http://{address}")
}

/// Runs one conformance scenario; returns whether it passed and its output.
async fn conformance(url: &str, scenario: &str) -> (bool, String) {
    let output = tokio::process::Command::new("node_modules/.bin/conformance")
        .args(["server", "--url", url, "--scenario", scenario])
        .stdin(Stdio::null())
        .output()
        .await
        .expect("node_modules/.bin/conformance runs (npm ci)");
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    (output.status.success(), text)
}

async fn create_client(env: &TestEnv, body: Value) -> (String, String) {
    let (status, created) = env.admin_send(reqwest::Method::POST, "/api/mcp-clients", Some(body)).await;
    assert_eq!(status, 201, "{created}");
    (created["id"].as_str().unwrap().to_string(), created["token"].as_str().unwrap().to_string())
}

/// One JSON-RPC request to `/mcp`: the HTTP status, its Retry-After, the body.
async fn rpc(env: &TestEnv, token: &str, method: &str, params: Value) -> (u16, Option<String>, Value) {
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    let response = env
        .client
        .post(format!("{}/mcp", env.worker.base_url))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let retry = response.headers().get("retry-after").map(|value| value.to_str().unwrap().to_string());
    (status, retry, response.json().await.unwrap_or(Value::Null))
}

async fn call(env: &TestEnv, token: &str, tool: &str, arguments: Value) -> Value {
    let (status, _, body) = rpc(env, token, "tools/call", json!({ "name": tool, "arguments": arguments })).await;
    assert_eq!(status, 200, "{body}");
    body
}

#[tokio::test(flavor = "multi_thread")]
async fn the_conformance_suite_passes_and_a_client_reaches_only_its_scope_within_its_limits() {
    let env = TestEnv::start().await;
    let memories = json!([{ "content": SHARED, "memory_type": "fact" },
                          { "content": PRIVATE, "memory_type": "fact", "shared": false }]);
    assert_eq!(env.admin_send(reqwest::Method::POST, "/api/memories", Some(memories)).await.0, 200);
    for conversation in [OURS, THEIRS] {
        let task = json!({ "conversation": conversation, "title": format!("task of {conversation}"),
                      "description": "d", "priority": "high" });
        assert_eq!(env.admin_send(reqwest::Method::POST, "/api/tasks", Some(task)).await.0, 200);
    }
    let (id, token) =
        create_client(&env, json!({ "name": "ci", "conversations": [OURS], "rate_per_minute": 1000 })).await;

    // The conformance suite, through a proxy that adds the token.
    let proxy = token_proxy(&env.worker.base_url, &token).await;
    for scenario in SCENARIOS {
        let (passed, output) = conformance(&format!("{proxy}/mcp"), scenario).await;
        assert!(passed, "conformance scenario {scenario} failed:\n{output}");
    }

    // Who may come in: a token, no foreign origin; GET offers no stream.
    assert_eq!(rpc(&env, "ebm_nothing", "ping", json!({})).await.0, 401);
    let foreign = env.client.post(format!("{}/mcp", env.worker.base_url)).bearer_auth(&token);
    let foreign =
        foreign.header("origin", "https://evil.example.com").body(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
    assert_eq!(foreign.send().await.unwrap().status(), 403);
    let get = env.client.get(format!("{}/mcp", env.worker.base_url)).bearer_auth(&token).send().await.unwrap();
    assert_eq!(get.status(), 405);
    let (status, _, garbled) = rpc(&env, &token, "nothing/here", json!({})).await;
    assert_eq!((status, garbled["error"]["code"].as_i64()), (200, Some(-32601)));

    // What it may read: shared memories, not operators-only ones; its conversations' tasks.
    let found = call(&env, &token, "search_memories", json!({})).await.to_string();
    assert!(found.contains("SHARED-OFFICE") && !found.contains("OPERATORS-ONLY"), "{found}");
    let tasks = call(&env, &token, "list_tasks", json!({})).await.to_string();
    assert!(tasks.contains(&format!("task of {OURS}")) && !tasks.contains(THEIRS), "{tasks}");

    // What it may send: to its conversation, once per idempotency key; nowhere else.
    let post = json!({ "conversation": OURS, "text": "MCP-POSTED hello", "idempotency_key": "k1" });
    let first = call(&env, &token, "post", post.clone()).await;
    let again = call(&env, &token, "post", post).await;
    assert_eq!(first["result"]["structuredContent"]["status"], "sent", "{first}");
    assert_eq!(again["result"]["structuredContent"]["repeat"], true, "{again}");
    assert_eq!(again["result"]["structuredContent"]["message_id"], first["result"]["structuredContent"]["message_id"]);
    let sent = env.telegram.calls("sendMessage");
    assert_eq!(sent.iter().filter(|call| call.to_string().contains("MCP-POSTED")).count(), 1, "{sent:?}");
    let elsewhere = json!({ "conversation": THEIRS, "text": "MCP-ELSEWHERE", "idempotency_key": "k2" });
    assert_eq!(call(&env, &token, "post", elsewhere).await["result"]["isError"], true);
    assert!(!env.telegram.calls("sendMessage").iter().any(|call| call.to_string().contains("MCP-ELSEWHERE")));

    // The post is the agent's own message in the history: the next turn's model reads it, once, as the agent's.
    env.llm.reply("NEXT-TURN noted");
    env.telegram_update(&dm_update(1, 4343, "what did you post?")).await;
    crate::harness::wait_for("the next turn's reply", std::time::Duration::from_secs(30), || async {
        env.telegram.calls("sendMessage").iter().any(|call| call["text"] == "NEXT-TURN noted").then_some(())
    })
    .await;
    let turn = env.llm.requests().last().unwrap().clone();
    assert_eq!(all_message_text(&turn).matches("MCP-POSTED hello").count(), 1, "{turn}");
    let said = turn["messages"].as_array().unwrap().iter().find(|m| m.to_string().contains("MCP-POSTED")).unwrap();
    assert_eq!(said["role"], "assistant", "{said}");

    // What it may cost: `ask` runs one model call over the memories it may read, priced.
    env.llm.push(Scripted::Text("ASKED-ANSWER the office is in Lisbon".into()));
    let asked = call(&env, &token, "ask", json!({ "question": "Where is the office?" })).await;
    let answer = &asked["result"]["structuredContent"];
    assert!(answer["answer"].as_str().unwrap().contains("ASKED-ANSWER"), "{asked}");
    assert!(answer["sources"].to_string().contains("SHARED-OFFICE"), "{asked}");
    let prompt = env.llm.requests().last().unwrap().to_string();
    assert!(prompt.contains("SHARED-OFFICE") && !prompt.contains("OPERATORS-ONLY"), "{prompt}");
    let clients = env.admin("/api/mcp-clients").await;
    let listed = clients.as_array().unwrap().iter().find(|client| client["id"] == id.as_str()).unwrap().clone();
    assert!(listed["calls"].as_i64().unwrap() >= 6, "{listed}");
    assert!(listed["spent_today_usd"].as_f64().unwrap() > 0.0, "{listed}");
    assert!(!listed.to_string().contains(&token[20..]), "the list never shows the token");

    // Over its budget: told so before the model is asked again.
    let (_, poor) = create_client(&env, json!({ "name": "poor", "tools": ["ask"], "daily_budget_usd": 0.0001 })).await;
    env.llm.push(Scripted::Text("FIRST-ASK".into()));
    assert_eq!(call(&env, &poor, "ask", json!({ "question": "q" })).await["result"]["isError"], false);
    let asked_before = env.llm.requests().len();
    let refused = call(&env, &poor, "ask", json!({ "question": "q" })).await;
    assert_eq!(refused["error"]["code"], -32000, "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("daily budget"), "{refused}");
    assert_eq!(env.llm.requests().len(), asked_before);
    let (status, _, hidden) = rpc(&env, &poor, "tools/call", json!({ "name": "post", "arguments": {} })).await;
    assert_eq!((status, hidden["error"]["code"].as_i64()), (200, Some(-32602)), "a tool out of scope is unknown");

    // Over its rate: the request past it is refused with 429 and when to come back.
    let (_, hasty) = create_client(&env, json!({ "name": "hasty", "rate_per_minute": 2 })).await;
    let mut statuses = Vec::new();
    for _ in 0..3 {
        statuses.push(rpc(&env, &hasty, "ping", json!({})).await);
    }
    // Two minutes may meet in the three requests; then the count started again.
    if statuses[2].0 != 429 {
        statuses.push(rpc(&env, &hasty, "ping", json!({})).await);
        statuses.push(rpc(&env, &hasty, "ping", json!({})).await);
    }
    let (status, retry, over) = statuses.into_iter().find(|(status, _, _)| *status == 429).expect("a 429");
    assert_eq!(status, 429);
    assert!(retry.unwrap().parse::<u64>().unwrap() >= 1);
    assert!(over["error"]["message"].as_str().unwrap().contains("rate"), "{over}");

    // Revoked: the token is refused from then on.
    assert_eq!(env.admin_send(reqwest::Method::DELETE, &format!("/api/mcp-clients/{id}"), None).await.0, 200);
    assert_eq!(rpc(&env, &token, "ping", json!({})).await.0, 401);
    let clients = env.admin("/api/mcp-clients").await;
    let revoked = clients.as_array().unwrap().iter().find(|client| client["id"] == id.as_str()).unwrap().clone();
    assert!(revoked["revoked_at"].is_i64(), "{revoked}");
    assert_eq!(env.admin_send(reqwest::Method::DELETE, "/api/mcp-clients/ffffffffffffffff", None).await.0, 404);
}
