//! The workspace (issue 34): a worker writes a file and edits it in a later
//! segment, and what it wrote is there after a restart and reaches the person
//! with `send_file`; every path trick is a tool error the worker gets past;
//! the conversation's attachments are listed read-only; the quotas hold; the
//! admin route and the dashboard list the workspace for operators only and
//! forget it.

use std::time::Duration;

use serde_json::{json, Value};

use crate::files::{dm_with_file, telegram_file, CSV};
use crate::harness::browser::Browser;
use crate::harness::{dm_update, wait_for, Scripted, TestEnv, LLM_KEY};
use crate::web::sign_in;
use crate::workers::{spawn, status, tool_results, worker_requests, WORKER};

fn call(name: &str, arguments: Value) -> Scripted {
    Scripted::ToolCalls(vec![(name.to_string(), arguments)])
}

/// The tool results of the last worker request: its run's whole history.
fn all_results(env: &TestEnv) -> Vec<String> {
    let requests = worker_requests(env);
    requests.last().map(tool_results).unwrap_or_default()
}

async fn workspace(env: &TestEnv, conversation: &str) -> Vec<Value> {
    let listing = env.admin(&format!("/api/conversations/{conversation}/workspace")).await;
    listing["entries"].as_array().cloned().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_written_and_edited_over_two_segments_survives_a_restart_and_is_sent() {
    let mut env = TestEnv::start_with(&[("LLM_TIMEOUT_MS", "10000")]).await;
    env.llm.push(spawn("keep the tally in notes/tally.md", false, "Keeping the tally."));
    let written = format!("# Tally\ncount: 1\nkey: {LLM_KEY}\n");
    env.llm.push_for(WORKER, call("file_write", json!({ "path": "notes/tally.md", "content": written })));
    for step in 2..=15 {
        env.llm.push_for(WORKER, status("progress", &format!("step {step}")));
    }
    // The second segment's first call.
    let edit = json!({ "path": "notes/tally.md", "old": "count: 1", "new": "count: 2" });
    env.llm.push_for(WORKER, call("file_edit", edit));
    env.llm.push_for(WORKER, status("outcome", "The tally is 2."));
    env.llm.reply("The tally is 2.");
    env.telegram_update(&dm_update(1, 91, "keep a tally for me")).await;
    env.wait_for_sent(2).await;

    let requests = worker_requests(&env);
    assert_eq!(requests.len(), 17, "15 calls in the first segment, two in the second");
    let results = tool_results(&requests[16]);
    assert!(results[0].starts_with("wrote notes/tally.md (3 lines"), "{results:?}");
    assert!(results.last().unwrap().starts_with("edited notes/tally.md"), "{results:?}");
    let workers = env.admin("/api/channels/telegram:91/workers").await;
    assert_eq!(workers[0]["segments"], 2, "{workers}");

    env.crash_and_restart().await;

    let listed = workspace(&env, "telegram:91").await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!((listed[0]["path"].as_str(), listed[0]["read_only"].as_bool()), (Some("notes/tally.md"), Some(false)));

    env.llm.push(spawn("send the tally", false, "Sending it."));
    env.llm.push_for(WORKER, call("file_read", json!({ "path": "notes/tally.md", "from": 2 })));
    env.llm.push_for(WORKER, call("send_file", json!({ "path": "notes/tally.md" })));
    env.llm.push_for(WORKER, status("outcome", "Sent the tally."));
    env.llm.answer_always(Scripted::Reply("Here is the tally.".into()));
    env.telegram_update(&dm_update(2, 91, "send me the tally")).await;
    let document = wait_for("the tally as a file", Duration::from_secs(40), || async {
        env.telegram.requests().into_iter().find(|call| call.path.ends_with("/sendDocument"))
    })
    .await;
    let body = document.body.as_str().unwrap();
    assert!(body.contains("filename=\"tally.md\"") && body.contains("count: 2"), "the edited file: {body}");
    assert!(!body.contains("count: 1") && !body.contains(LLM_KEY), "{body}");
    assert!(body.contains("[redacted]"), "the secret the model wrote was redacted: {body}");

    let read = all_results(&env).into_iter().find(|result| result.starts_with("notes/tally.md (lines"));
    let read = read.expect("the file_read result");
    assert!(read.starts_with("notes/tally.md (lines 2-3 of 3):\ncount: 2\n"), "{read}");

    // A worker of another conversation has a workspace of its own: the same path is not there.
    env.llm.push(spawn("read the tally", false, "Reading it."));
    env.llm.push_for(WORKER, call("file_read", json!({ "path": "notes/tally.md" })));
    env.llm.push_for(WORKER, status("outcome", "There is no tally here."));
    env.telegram_update(&dm_update(3, 93, "read me the tally")).await;
    let refused = wait_for("the other conversation's read", Duration::from_secs(40), || async {
        let results = all_results(&env);
        results.iter().find(|result| result.contains("no file notes/tally.md")).cloned()
    })
    .await;
    assert!(refused.starts_with("error: there is no file notes/tally.md"), "{refused}");
    assert!(workspace(&env, "telegram:93").await.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn path_tricks_attachments_and_quotas_are_tool_errors_and_the_worker_goes_on() {
    let mut env = TestEnv::start_with(&[("LLM_TIMEOUT_MS", "10000"), ("WORKSPACE_MAX_FILES", "2")]).await;
    telegram_file(&env, "CSV9", CSV.as_bytes().to_vec());
    let long = "a".repeat(201);
    let deep = ["d"; 9].join("/");
    // Each trick with a word its refusal must give.
    let tricks: Vec<(&str, &str)> = vec![
        ("..", "`..`"),
        ("/etc/passwd", "absolute"),
        ("a/../../b", "`..`"),
        ("a\\b", "backslash"),
        ("a\u{0}b", "U+0000"),
        ("evil\u{202e}dm.exe", "U+202E"),
        ("zero\u{200b}width.md", "U+200B"),
        (&long, "bytes long"),
        (&deep, "folders deep"),
        ("", "empty"),
        ("notes//x.md", "empty segment"),
    ];
    let mut calls = vec![
        ("file_write".to_string(), json!({ "path": "ok.txt", "content": "one" })),
        ("file_write".to_string(), json!({ "path": "two.txt", "content": "two" })),
        ("file_write".to_string(), json!({ "path": "three.txt", "content": "three" })),
        ("file_list".to_string(), json!({})),
        ("file_read".to_string(), json!({ "path": "attachments/sales.csv" })),
        ("file_write".to_string(), json!({ "path": "attachments/sales.csv", "content": "x" })),
        ("file_edit".to_string(), json!({ "path": "Attachments/sales.csv", "old": "north", "new": "west" })),
        ("file_edit".to_string(), json!({ "path": "ok.txt", "old": "missing", "new": "x" })),
    ];
    calls.extend(tricks.iter().map(|(path, _)| ("file_write".to_string(), json!({ "path": path, "content": "x" }))));
    env.llm.push(spawn("tidy the sales file", false, "Tidying it."));
    env.llm.push_for(WORKER, Scripted::ToolCalls(calls));
    env.llm.push_for(WORKER, status("outcome", "Tidied what I could; the attachment is read-only."));
    env.llm.reply("Done: the attachment stays as it was.");
    let file = json!({ "file_id": "CSV9", "file_unique_id": "c9", "file_name": "sales.csv" });
    env.telegram_update(&dm_with_file(9001, 92, "document", file, "tidy this")).await;
    let sent = env.wait_for_sent(2).await;
    assert_eq!(sent[1]["text"], "Done: the attachment stays as it was.", "the worker went on and reported");

    let results = tool_results(&worker_requests(&env)[1]);
    assert_eq!(results.len(), 8 + tricks.len(), "{results:?}");
    assert!(results[0].starts_with("wrote ok.txt") && results[1].starts_with("wrote two.txt"), "{results:?}");
    assert!(results[2].starts_with("error: ") && results[2].contains("holds 2 files"), "{}", results[2]);
    let listing = &results[3];
    assert!(listing.contains("attachments/sales.csv (") && listing.contains("read-only)"), "{listing}");
    assert!(listing.contains("ok.txt (3 B") && !listing.contains("three.txt"), "{listing}");
    assert!(results[4].contains("north,120"), "an attachment is read: {}", results[4]);
    for refused in &results[5..7] {
        assert!(refused.starts_with("error: ") && refused.contains("read-only"), "{refused}");
    }
    assert!(results[7].starts_with("error: the passage was not found in ok.txt"), "{}", results[7]);
    for ((trick, reason), result) in tricks.iter().zip(&results[8..]) {
        assert!(result.starts_with("error: ") && result.contains(reason), "{trick:?}: {result}");
    }

    // The admin route: the workspace as the dashboard shows it, nothing a trick made.
    let listed = workspace(&env, "telegram:92").await;
    let paths: Vec<(&str, bool)> =
        listed.iter().map(|entry| (entry["path"].as_str().unwrap(), entry["read_only"].as_bool().unwrap())).collect();
    assert_eq!(paths, vec![("attachments/sales.csv", true), ("ok.txt", false), ("two.txt", false)]);
    assert_eq!(listed[0]["bytes"], CSV.len());
    let anonymous = env
        .client
        .get(format!("{}/api/conversations/telegram:92/workspace", env.worker.base_url))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status().as_u16(), 401, "operators only");
    let wrong = env
        .client
        .delete(format!("{}/api/conversations/telegram:92/workspace", env.worker.base_url))
        .bearer_auth("not-the-admin-token")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status().as_u16(), 401);
    assert_eq!(workspace(&env, "telegram:92").await.len(), 3, "a refused forget removed nothing");

    // The dashboard's conversation view lists it, and forgets it at an operator's click.
    let browser = Browser::start(1280, 900).await;
    sign_in(&browser, &env).await;
    browser.goto(&format!("{}/dashboard/#/c/telegram%3A92", env.worker.base_url)).await;
    let shown = browser.wait_for_text("#workspace", "attachments/sales.csv", Duration::from_secs(20)).await;
    assert!(shown.contains("read-only") && shown.contains("ok.txt") && shown.contains("two.txt"), "{shown}");
    browser.eval("window.confirm = () => true;", json!([])).await;
    browser.click("#forget-workspace").await;
    browser.wait_for_text("main", "0 of 2 files", Duration::from_secs(20)).await;

    // Forgetting removed the workspace's own files; the attachment is the files room's.
    let (code, answer) =
        env.admin_send(reqwest::Method::DELETE, "/api/conversations/telegram:92/workspace", None).await;
    assert_eq!((code, answer["removed"].as_bool()), (200, Some(true)), "{answer}");
    let listed = workspace(&env, "telegram:92").await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["path"], "attachments/sales.csv");
    // And it stays forgotten across a restart (nothing was only cached).
    env.crash_and_restart().await;
    assert_eq!(workspace(&env, "telegram:92").await.len(), 1);
}
