//! The official MCP conformance suite (`@modelcontextprotocol/conformance`,
//! client scenarios) against edgebot's MCP client, which lives in the Worker.
//! `conformance client --scenario <name>` starts the scenario's server and
//! runs a "client" command with its URL: here `tests/harness/mcp_driver.mjs`,
//! which hands the URL to this test and waits. The test points the running
//! Worker at the server (the admin API), makes a worker call the scenario's
//! tool (the fake model scripts the call), answers a server's question as
//! the person (Telegram's buttons, or words on Slack), then lets the driver
//! exit; the suite's own checks (`checks.json`) must all pass. Scenarios
//! that do not apply are listed in docs/mcp-and-approvals.md.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::process::{Child, Command};

use crate::harness::{dm_update, slack_callback, wait_for, Scripted, TestEnv};
use crate::mcp::press;
use crate::workers::{spawn, status, tool_results, worker_requests, WORKER};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// One scenario's run of the suite.
struct Run {
    scenario: String,
    dir: tempfile::TempDir,
    out: tempfile::TempDir,
    suite: Child,
}

/// Starts the suite on `scenario`; returns the run and the server's URL (as the Worker may reach it).
async fn begin(scenario: &str) -> (Run, String) {
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let driver = root().join("tests/harness/mcp_driver.mjs");
    let command = format!("node {} {}", driver.display(), dir.path().display());
    let suite = Command::new(root().join("node_modules/.bin/conformance"))
        .args(["client", "--command", &command, "--scenario", scenario, "--timeout", "180000", "--output-dir"])
        .arg(out.path())
        .kill_on_drop(true)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("node_modules/.bin/conformance (npm ci)");
    let url_file = dir.path().join("url");
    let url = wait_for("the scenario's server URL", Duration::from_secs(60), || async {
        std::fs::read_to_string(&url_file).ok()
    })
    .await;
    // The suite names `localhost`; the fetch guard's allowed host is the loopback address.
    let url = url.trim().replace("://localhost:", "://127.0.0.1:");
    (Run { scenario: scenario.to_string(), dir, out, suite }, url)
}

/// Lets the driver exit and returns the suite's checks.
async fn finish(mut run: Run) -> Vec<Value> {
    std::fs::write(run.dir.path().join("done"), "0").unwrap();
    let waited = tokio::time::timeout(Duration::from_secs(60), run.suite.wait()).await;
    assert!(waited.is_ok(), "the suite did not end for {}", run.scenario);
    let checks = find_checks(run.out.path()).unwrap_or_else(|| panic!("no checks.json for {}", run.scenario));
    serde_json::from_str::<Value>(&std::fs::read_to_string(checks).unwrap()).unwrap().as_array().unwrap().clone()
}

fn find_checks(dir: &Path) -> Option<PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if let Some(found) = find_checks(&path) {
                return Some(found);
            }
        } else if path.file_name().is_some_and(|name| name == "checks.json") {
            return Some(path);
        }
    }
    None
}

/// Every check the suite made passed (no failure, no warning), and each of `required` is among them.
fn assert_passed(scenario: &str, checks: &[Value], required: &[&str]) {
    let bad: Vec<&Value> =
        checks.iter().filter(|check| matches!(check["status"].as_str(), Some("FAILURE" | "WARNING"))).collect();
    assert!(bad.is_empty(), "{scenario}: {bad:#?}");
    for id in required {
        assert!(
            checks.iter().any(|check| check["id"] == *id && check["status"] == "SUCCESS"),
            "{scenario}: no passing {id} in {checks:#?}"
        );
    }
}

/// Adds the scenario's server as `conf`, its tools run without an approval.
async fn add_server(env: &TestEnv, url: &str) -> Value {
    let approval =
        json!({ "add_numbers": false, "test_reconnection": false, "test_client_elicitation_defaults": false });
    let settings = json!({ "url": url, "approval": approval });
    let (status_code, server) = env.admin_send(reqwest::Method::PUT, "/api/mcp/servers/conf", Some(settings)).await;
    assert_eq!(status_code, 200, "{server}");
    server
}

/// Scripts a worker that calls `tool` once and reports.
fn script_call(env: &TestEnv, tool: &str, arguments: Value) {
    env.llm.push(spawn(&format!("call {tool}"), false, "On it."));
    env.llm.push_for(WORKER, Scripted::ToolCalls(vec![(tool.to_string(), arguments)]));
    env.llm.push_for(WORKER, status("outcome", "Called it."));
    env.llm.reply("Done.");
}

/// The result the worker's model read for its latest call of an MCP tool.
async fn result_read(env: &TestEnv, calls_before: usize) -> String {
    wait_for("the tool's result read by the worker", Duration::from_secs(60), || async {
        let requests = worker_requests(env);
        let later = requests.get(calls_before..)?;
        later.iter().flat_map(tool_results).find(|result| !result.is_empty())
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn the_client_scenarios_pass_and_a_question_is_answered_with_telegrams_buttons() {
    let env = TestEnv::start_with(&[("FETCH_ALLOW_HOSTS", "127.0.0.1"), ("LLM_TIMEOUT_MS", "10000")]).await;

    // initialize: adding the server opens a session and lists its tools.
    let (run, url) = begin("initialize").await;
    add_server(&env, &url).await;
    assert_passed("initialize", &finish(run).await, &["mcp-client-initialization"]);

    // tools_call: a worker calls add_numbers.
    let (run, url) = begin("tools_call").await;
    add_server(&env, &url).await;
    script_call(&env, "mcp_conf_add_numbers", json!({ "a": 2, "b": 40 }));
    env.telegram_update(&dm_update(1, 81, "add 2 and 40")).await;
    let result = result_read(&env, 0).await;
    assert_eq!(result, "The sum of 2 and 40 is 42");
    assert_passed("tools_call", &finish(run).await, &["tool-add-numbers"]);

    // sse-retry: the call's stream closes before the answer; the client resumes it.
    let before = worker_requests(&env).len();
    let (run, url) = begin("sse-retry").await;
    add_server(&env, &url).await;
    script_call(&env, "mcp_conf_test_reconnection", json!({}));
    env.telegram_update(&dm_update(2, 82, "test the reconnection")).await;
    assert_eq!(result_read(&env, before).await, "Reconnection test completed successfully");
    let checks = finish(run).await;
    assert_passed(
        "sse-retry",
        &checks,
        &["client-sse-graceful-reconnect", "client-sse-retry-timing", "client-sse-last-event-id"],
    );

    // elicitation: the server asks mid-call; the person who asked presses Approve (the defaults).
    let before = worker_requests(&env).len();
    let (run, url) = begin("elicitation-sep1034-client-defaults").await;
    add_server(&env, &url).await;
    script_call(&env, "mcp_conf_test_client_elicitation_defaults", json!({}));
    env.telegram_update(&dm_update(3, 83, "test the defaults")).await;
    let (asked, id) = wait_for("the question with buttons on Telegram", Duration::from_secs(40), || async {
        let sent = env.telegram.calls("sendMessage");
        let asked = sent.into_iter().find(|call| call["chat_id"] == 83 && call.get("reply_markup").is_some())?;
        let data = asked["reply_markup"]["inline_keyboard"][0][0]["callback_data"].as_str()?.to_string();
        Some((asked, data.trim_start_matches("approve:").to_string()))
    })
    .await;
    let text = asked["text"].as_str().unwrap();
    for part in ["please accept with defaults", "age", "John Doe", "Approve"] {
        assert!(text.contains(part), "{part}: {text}");
    }
    // Someone else's press answers nothing, and is told so alone.
    env.telegram_update(&press(10, 99, 83, &format!("approve:{id}"))).await;
    let refused = env.telegram.calls("answerCallbackQuery").pop().unwrap();
    assert!(refused["text"].as_str().unwrap().contains("Only Ada may"), "{refused}");
    env.telegram_update(&press(11, 83, 83, &format!("approve:{id}"))).await;
    let result = result_read(&env, before).await;
    assert!(result.starts_with("Elicitation completed"), "{result}");
    for part in ["\"name\":\"John Doe\"", "\"age\":30", "\"score\":95.5", "\"status\":\"active\"", "\"verified\":true"]
    {
        assert!(result.contains(part), "{part}: {result}");
    }
    let checks = finish(run).await;
    assert_passed(
        "elicitation-sep1034-client-defaults",
        &checks,
        &["client-elicitation-sep1034-string-default", "client-elicitation-sep1034-boolean-default"],
    );
    let decided = env.admin("/api/approvals").await;
    let question = decided.as_array().unwrap().iter().find(|approval| approval["id"] == id).unwrap().clone();
    assert_eq!((question["kind"].as_str(), question["status"].as_str()), (Some("question"), Some("approved")));
    assert!(question["decided_by"].as_str().unwrap().contains("telegram:83"), "{question}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_person_answers_a_servers_question_in_words_on_slack_and_a_bad_answer_is_asked_again() {
    let env = TestEnv::start_with(&[("FETCH_ALLOW_HOSTS", "127.0.0.1"), ("LLM_TIMEOUT_MS", "10000")]).await;
    let (run, url) = begin("elicitation-sep1034-client-defaults").await;
    add_server(&env, &url).await;
    script_call(&env, "mcp_conf_test_client_elicitation_defaults", json!({}));
    let message = |event: &str, text: &str, ts: &str| {
        let body =
            json!({ "type": "message", "channel": "D1", "channel_type": "im", "user": "U1", "text": text, "ts": ts });
        slack_callback(event, body)
    };
    env.slack_event(&message("Ev1", "test the defaults", "1795000000.000100")).await;
    wait_for("the question on Slack", Duration::from_secs(40), || async {
        let posted = env.slack.calls("chat.postMessage");
        let asks = |call: &Value| call["text"].as_str().is_some_and(|text| text.contains("asks:"));
        posted.iter().any(|call| call.get("blocks").is_some() && asks(call)).then_some(())
    })
    .await;
    // A value the schema does not allow is refused, with the reason, and the question still waits.
    env.slack_event(&message("Ev2", "status: gone", "1795000000.000200")).await;
    wait_for("the refusal of a bad answer", Duration::from_secs(20), || async {
        let posted = env.slack.calls("chat.postMessage");
        let refused = |text: &str| text.contains("does not fit") && text.contains("active, inactive, pending");
        posted.iter().any(|call| call["text"].as_str().is_some_and(refused)).then_some(())
    })
    .await;
    env.slack_event(&message("Ev3", "name: Ada Lovelace\nage: 36", "1795000000.000300")).await;
    let result = result_read(&env, 0).await;
    for part in ["\"name\":\"Ada Lovelace\"", "\"age\":36", "\"status\":\"active\"", "\"verified\":true"] {
        assert!(result.contains(part), "{part}: {result}");
    }
    let checks = finish(run).await;
    assert_passed(
        "elicitation-sep1034-client-defaults",
        &checks,
        &["client-elicitation-sep1034-string-default", "client-elicitation-sep1034-enum-default"],
    );
    // The answers were not messages for the agent: only the first message started a turn.
    let texts: Vec<String> = env.llm.requests().iter().map(crate::harness::all_message_text).collect();
    let channel_turns: Vec<&String> = texts.iter().filter(|text| !text.contains(WORKER)).collect();
    assert!(
        !channel_turns.is_empty() && channel_turns.iter().all(|text| !text.contains("Ada Lovelace")),
        "{channel_turns:?}"
    );
}
