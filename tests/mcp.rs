//! Remote MCP servers and approvals, against a fake MCP server (JSON and SSE
//! answers, a session id, a paged tool list, a slow tool, a server that is
//! down): the operator adds a server, a worker lists and calls its tools, a
//! call that needs approval waits for a person's press on each platform's
//! buttons, and nothing gets past who may decide, the configured origin or
//! a restart.

use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::browser::Browser;
use crate::harness::chat_socket::guest_cookie;
use crate::harness::fake_mcp::FakeMcp;
use crate::harness::{dm_update, slack_callback, wait_for, Scripted, TestEnv, ADMIN_TOKEN};
use crate::workers::{spawn, status, tool_results, worker_requests, WORKER};

const TOKEN: &str = "mcp-token-7f3a9c2e51";
const INVITE: &str = "test-invitation-mcp";

async fn start(extra: &[(&str, &str)]) -> (TestEnv, FakeMcp) {
    let fake = FakeMcp::start().await;
    fake.require_token(TOKEN);
    let mut vars = vec![
        ("FETCH_ALLOW_HOSTS", "127.0.0.1"),
        ("MCP_TRACKER_TOKEN", TOKEN),
        ("LLM_TIMEOUT_MS", "10000"),
        ("WEB_CHAT_TOKEN", INVITE),
    ];
    vars.extend_from_slice(extra);
    (TestEnv::start_with(&vars).await, fake)
}

/// Adds the fake as `tracker`; returns the admin API's answer.
async fn add_tracker(env: &TestEnv, url: &str) -> (u16, Value) {
    let settings = json!({ "url": url, "auth": { "kind": "bearer", "token_secret": "MCP_TRACKER_TOKEN" } });
    env.admin_send(reqwest::Method::PUT, "/api/mcp/servers/tracker", Some(settings)).await
}

fn call(tool: &str, arguments: Value) -> Scripted {
    Scripted::ToolCalls(vec![(tool.to_string(), arguments)])
}

/// The sent message that carries buttons, and the approval id its buttons carry.
async fn telegram_buttons(env: &TestEnv) -> (Value, String) {
    wait_for("the approval's buttons on Telegram", Duration::from_secs(30), || async {
        let sent = env.telegram.calls("sendMessage");
        let asked = sent.into_iter().find(|call| call.get("reply_markup").is_some())?;
        let data = asked["reply_markup"]["inline_keyboard"][0][0]["callback_data"].as_str()?.to_string();
        Some((asked, data.trim_start_matches("approve:").to_string()))
    })
    .await
}

pub(crate) fn press(update_id: i64, user: i64, chat: i64, data: &str) -> Value {
    json!({ "update_id": update_id, "callback_query": {
        "id": format!("cq{update_id}"), "from": { "id": user, "is_bot": false, "first_name": format!("user{user}") },
        "message": { "message_id": 1, "date": 1, "chat": { "id": chat, "type": "private" } }, "data": data } })
}

async fn approval(env: &TestEnv, id: &str) -> Value {
    let all = env.admin("/api/approvals").await;
    all.as_array().unwrap().iter().find(|approval| approval["id"] == id).cloned().unwrap_or(Value::Null)
}

#[tokio::test(flavor = "multi_thread")]
async fn an_operator_adds_a_server_and_a_worker_lists_and_calls_its_tools_over_a_session() {
    let (env, fake) = start(&[]).await;
    let (status_code, server) = add_tracker(&env, &fake.url()).await;
    assert_eq!(status_code, 200, "{server}");
    let tools: Vec<(String, bool)> = server["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| (tool["exposed_name"].as_str().unwrap().to_string(), tool["needs_approval"].as_bool().unwrap()))
        .collect();
    // Two pages of two tools; approval by default for the one not marked read-only.
    assert_eq!(
        tools,
        vec![
            ("mcp_tracker_lookup".to_string(), false),
            ("mcp_tracker_create_issue".to_string(), true),
            ("mcp_tracker_slow".to_string(), false),
            ("mcp_tracker_echo_secret".to_string(), false),
        ]
    );
    let listed = env.admin_text("/api/mcp/servers").await;
    assert!(listed.contains("MCP_TRACKER_TOKEN") && !listed.contains(TOKEN), "the secret by name only: {listed}");

    env.llm.push(spawn("look up issue 7", false, "Looking it up."));
    env.llm.push_for(WORKER, call("mcp_tracker_lookup", json!({ "number": 7 })));
    // The server echoes a configured secret back: the model never reads it.
    env.llm.push_for(
        WORKER,
        call("mcp_tracker_echo_secret", json!({ "text": format!("token {TOKEN} and {}", crate::harness::LLM_KEY) })),
    );
    env.llm.push_for(WORKER, status("outcome", "Issue 7: the login page is slow."));
    env.llm.reply("Issue 7 is about the slow login page.");
    env.telegram_update(&dm_update(1, 71, "what is issue 7?")).await;
    wait_for("the outcome relayed", Duration::from_secs(40), || async {
        (env.telegram.calls("sendMessage").len() >= 2).then_some(())
    })
    .await;

    let requests = worker_requests(&env);
    let offered: Vec<&str> =
        requests[0]["tools"].as_array().unwrap().iter().filter_map(|tool| tool["function"]["name"].as_str()).collect();
    assert!(offered.contains(&"mcp_tracker_lookup") && offered.contains(&"http_fetch"), "{offered:?}");
    let results = tool_results(&requests[2]);
    assert_eq!(results[0], "Issue #7: The login page is slow (open)", "the answer read from the event stream");
    assert!(!results[1].contains(TOKEN) && !results[1].contains(crate::harness::LLM_KEY), "{}", results[1]);

    let received = fake.received();
    let methods: Vec<&str> = received.iter().map(|call| call.method.as_str()).collect();
    assert_eq!(&methods[..2], ["initialize", "notifications/initialized"], "{methods:?}");
    let calls: Vec<_> = received.iter().filter(|call| call.method == "tools/call").collect();
    assert_eq!(calls.len(), 2);
    for call in calls {
        assert!(call.session.as_deref().is_some_and(|id| fake.sessions().contains(&id.to_string())), "{call:?}");
        assert_eq!(call.protocol_version.as_deref(), Some("2025-11-25"));
        assert_eq!(call.authorization.as_deref(), Some(format!("Bearer {TOKEN}").as_str()));
    }
    // The list was cached when the server was added: the worker did not list again.
    assert_eq!(received.iter().filter(|call| call.method == "tools/list").count(), 2);
    let ops = env.admin("/api/ops").await;
    assert!(ops["mcp_tool_calls"].as_u64().unwrap() >= 2, "{ops}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_waits_for_the_askers_press_on_telegram_and_nobody_else_decides_it() {
    // User 99 is an operator on Slack, not on Telegram.
    let (env, fake) = start(&[("APPROVERS", "slack:99")]).await;
    add_tracker(&env, &fake.url()).await;
    env.llm.push(spawn("file an issue about the slow login", false, "I'll file it once you approve."));
    env.llm.push_for(WORKER, call("mcp_tracker_create_issue", json!({ "title": "Login is slow" })));
    env.llm.push_for(WORKER, status("outcome", "Filed issue #101."));
    env.llm.reply("Filed as issue #101.");
    env.telegram_update(&dm_update(1, 72, "please file an issue: login is slow")).await;

    let (asked, id) = telegram_buttons(&env).await;
    let text = asked["text"].as_str().unwrap();
    for part in ["mcp_tracker_create_issue", "Login is slow", "Ada", "Waits until"] {
        assert!(text.contains(part), "{part}: {text}");
    }
    assert!(fake.tool_calls().iter().all(|(tool, _)| tool != "create_issue"), "nothing runs before the yes");
    assert_eq!(approval(&env, &id).await["status"], "waiting");

    // Someone else in the chat presses Approve: refused, to them alone.
    let refused = env.telegram_update(&press(2, 99, 72, &format!("approve:{id}"))).await;
    assert_eq!(refused.status(), 200);
    let answers = env.telegram.calls("answerCallbackQuery");
    assert_eq!(answers[0]["show_alert"], true, "{answers:?}");
    assert!(answers[0]["text"].as_str().unwrap().contains("Only Ada"), "{answers:?}");
    // A forged button for another id changes nothing either.
    env.telegram_update(&press(3, 72, 72, "approve:0000000000000000")).await;
    assert_eq!(approval(&env, &id).await["status"], "waiting");

    env.telegram_update(&press(4, 72, 72, &format!("approve:{id}"))).await;
    wait_for("the outcome after the yes", Duration::from_secs(40), || async {
        env.telegram.calls("sendMessage").iter().any(|call| call["text"] == "Filed as issue #101.").then_some(())
    })
    .await;
    let filed: Vec<_> = fake.tool_calls().into_iter().filter(|(tool, _)| tool == "create_issue").collect();
    assert_eq!(filed, vec![("create_issue".to_string(), json!({ "title": "Login is slow" }))]);
    let decided = approval(&env, &id).await;
    assert_eq!(decided["status"], "approved");
    assert!(decided["decided_by"].as_str().unwrap().contains("telegram:72"), "{decided}");
    let edits = env.telegram.calls("editMessageText");
    let edit = edits.iter().find(|edit| edit["text"].as_str().is_some_and(|text| text.contains("Approved"))).unwrap();
    assert!(edit.get("reply_markup").is_none(), "the buttons are gone: {edit}");

    // A second press (a double tap) decides nothing more.
    env.telegram_update(&press(5, 72, 72, &format!("deny:{id}"))).await;
    let last = env.telegram.calls("answerCallbackQuery").pop().unwrap();
    assert!(last["text"].as_str().unwrap().starts_with("Already decided"), "{last}");
    env.settle().await;
    assert_eq!(fake.tool_calls().iter().filter(|(tool, _)| tool == "create_issue").count(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_restart_while_waiting_loses_nothing_and_an_operator_may_decide() {
    let (mut env, fake) = start(&[("APPROVERS", "telegram:5")]).await;
    add_tracker(&env, &fake.url()).await;
    env.llm.push(spawn("file an issue", false, "Waiting for your yes."));
    env.llm.push_for(WORKER, call("mcp_tracker_create_issue", json!({ "title": "Crash" })));
    env.llm.push_for(WORKER, status("outcome", "Filed issue #101."));
    env.llm.reply("Filed.");
    env.telegram_update(&dm_update(1, 73, "file an issue: crash")).await;
    let (_, id) = telegram_buttons(&env).await;
    env.crash_and_restart().await;
    // Telegram operator 5 (not the asker) decides.
    env.telegram_update(&press(2, 5, 73, &format!("approve:{id}"))).await;
    wait_for("the outcome after the restart", Duration::from_secs(40), || async {
        env.telegram.calls("sendMessage").iter().any(|call| call["text"] == "Filed.").then_some(())
    })
    .await;
    assert_eq!(fake.tool_calls().iter().filter(|(tool, _)| tool == "create_issue").count(), 1);
    let decided = approval(&env, &id).await;
    assert_eq!(decided["status"], "approved");
    assert!(decided["decided_by"].as_str().unwrap().contains("telegram:5"), "{decided}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_denial_on_slack_ends_the_call_cleanly_and_the_worker_says_so() {
    let (env, fake) = start(&[]).await;
    add_tracker(&env, &fake.url()).await;
    env.llm.push(spawn("file an issue", false, "Asking for approval."));
    env.llm.push_for(WORKER, call("mcp_tracker_create_issue", json!({ "title": "Nope" })));
    env.llm.push_for(WORKER, status("outcome", "Not filed: the call was denied."));
    env.llm.reply("I did not file it: you denied the call.");
    let message = json!({"type": "message", "channel": "D1", "channel_type": "im", "user": "U1",
        "text": "file an issue", "ts": "1795000000.000100"});
    env.slack_event(&slack_callback("Ev1", message)).await;
    let (asked, id) = wait_for("the approval's buttons on Slack", Duration::from_secs(30), || async {
        let posted = env.slack.calls("chat.postMessage");
        let asked = posted.into_iter().find(|call| call.get("blocks").is_some())?;
        let value = asked["blocks"][1]["elements"][1]["value"].as_str()?.to_string();
        Some((asked, value.trim_start_matches("deny:").to_string()))
    })
    .await;
    assert_eq!(asked["blocks"][1]["elements"][0]["value"], format!("approve:{id}"));

    let click = |user: &str, value: String| {
        json!({ "type": "block_actions", "user": { "id": user, "username": user }, "team": { "id": "T1" },
                "channel": { "id": "D1" }, "actions": [{ "action_id": value, "value": value }] })
    };
    let form = |payload: Value| {
        form_urlencoded::Serializer::new(String::new())
            .append_pair("payload", &payload.to_string())
            .finish()
            .into_bytes()
    };
    let forged = form(click("U1", format!("deny:{id}")));
    let unsigned =
        env.post("/webhooks/slack", &[("content-type", "application/x-www-form-urlencoded".into())], forged).await;
    assert_eq!(unsigned.status(), 401, "an unsigned press is refused");
    let send = |payload: Value| {
        let body = form(payload);
        let headers =
            crate::harness::slack_headers(&body, crate::harness::now_secs(), "application/x-www-form-urlencoded");
        let env = &env;
        async move { env.post("/webhooks/slack", &headers, body).await }
    };
    assert_eq!(send(click("U2", format!("deny:{id}"))).await.status(), 200);
    let ephemeral = env.slack.calls("chat.postEphemeral");
    assert_eq!(ephemeral[0]["user"], "U2", "{ephemeral:?}");
    assert_eq!(approval(&env, &id).await["status"], "waiting");

    assert_eq!(send(click("U1", format!("deny:{id}"))).await.status(), 200);
    wait_for("the worker's word after the denial", Duration::from_secs(40), || async {
        let posted = env.slack.calls("chat.postMessage");
        posted.iter().any(|call| call["text"] == "I did not file it: you denied the call.").then_some(())
    })
    .await;
    assert!(fake.tool_calls().iter().all(|(tool, _)| tool != "create_issue"), "a denied call never runs");
    let told = tool_results(worker_requests(&env).last().unwrap()).pop().unwrap();
    assert!(told.starts_with("not run:") && told.contains("denied"), "{told}");
    let update = env.slack.calls("chat.update");
    let settled = update.iter().find(|call| call["text"].as_str().is_some_and(|text| text.contains("Denied"))).unwrap();
    assert_eq!(settled["blocks"].as_array().map(Vec::len), Some(1), "no buttons left: {settled}");
    assert_eq!(approval(&env, &id).await["status"], "denied");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unanswered_call_times_out_on_discord_and_the_worker_goes_on_without_it() {
    let (env, fake) = start(&[("APPROVAL_TIMEOUT_SECS", "3")]).await;
    add_tracker(&env, &fake.url()).await;
    env.llm.push(spawn("file an issue", false, "Asking for approval."));
    env.llm.push_for(WORKER, call("mcp_tracker_create_issue", json!({ "title": "Late" })));
    env.llm.push_for(WORKER, status("outcome", "Not filed: nobody approved in time."));
    env.llm.reply("Nobody approved in time, so I did not file it.");
    env.discord_interaction(&crate::harness::discord_ask("i1", "file an issue")).await;
    let id = wait_for("the approval's buttons on Discord", Duration::from_secs(30), || async {
        let sent = env.discord.requests();
        let asked = sent
            .iter()
            .find(|call| call.body.get("components").is_some_and(|c| c.as_array().is_some_and(|c| !c.is_empty())))?;
        // A follow-up message: the command's own answer is not replaced.
        assert_eq!(asked.method, "POST", "{asked:?}");
        let custom = asked.body["components"][0]["components"][0]["custom_id"].as_str()?.to_string();
        Some(custom.trim_start_matches("approve:").to_string())
    })
    .await;
    // Another member's press is answered to them alone.
    let other = json!({ "id": "i2", "application_id": crate::harness::DISCORD_APPLICATION, "type": 3, "token": "t2",
        "guild_id": "G1", "channel_id": "C1", "member": { "user": { "id": "U9", "username": "eve" } },
        "data": { "custom_id": format!("approve:{id}"), "component_type": 2 } });
    let answer: Value = env.discord_interaction(&other).await.json().await.unwrap();
    assert_eq!((answer["type"].as_u64(), answer["data"]["flags"].as_u64()), (Some(4), Some(64)), "{answer}");

    wait_for("the worker's word after the timeout", Duration::from_secs(40), || async {
        let sent = env.discord.requests();
        sent.iter().any(|call| call.body["content"] == "Nobody approved in time, so I did not file it.").then_some(())
    })
    .await;
    assert_eq!(approval(&env, &id).await["status"], "timed_out");
    assert!(fake.tool_calls().iter().all(|(tool, _)| tool != "create_issue"));
    let settled = env.discord.requests().into_iter().find(|call| {
        call.method == "PATCH" && call.body["content"].as_str().is_some_and(|text| text.contains("Timed out"))
    });
    assert_eq!(settled.expect("the message shows the timeout").body["components"], json!([]));
    // Too late now, even for the asker.
    let late = json!({ "id": "i3", "application_id": crate::harness::DISCORD_APPLICATION, "type": 3, "token": "t3",
        "guild_id": "G1", "channel_id": "C1", "member": { "user": { "id": "U1", "username": "ada" } },
        "data": { "custom_id": format!("approve:{id}"), "component_type": 2 } });
    let answer: Value = env.discord_interaction(&late).await.json().await.unwrap();
    assert!(answer["data"]["content"].as_str().unwrap().contains("Already decided"), "{answer}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_web_chat_shows_buttons_and_only_its_own_guest_decides() {
    let (env, fake) = start(&[]).await;
    add_tracker(&env, &fake.url()).await;
    env.llm.push(spawn("file an issue", false, "Asking for approval."));
    env.llm.push_for(WORKER, call("mcp_tracker_create_issue", json!({ "title": "Web" })));
    env.llm.push_for(WORKER, status("outcome", "Filed issue #101."));
    env.llm.reply("Filed it.");
    let cookie = guest_cookie(&env, INVITE).await;
    crate::harness::chat_socket::say(&env, &cookie, "file an issue").await;
    let id = wait_for("the approval's buttons in the web chat", Duration::from_secs(30), || async {
        let approvals = env.admin("/api/approvals").await;
        approvals.as_array()?.first()?["id"].as_str().map(str::to_string)
    })
    .await;
    let history = crate::harness::chat_socket::history(&env, &cookie).await;
    let line = history.iter().find(|line| line["approval"]["id"] == id.as_str()).expect("a line with buttons");
    assert_eq!(line["approval"]["open"], true);

    let decide = |cookie: String, choice: &'static str| {
        let url = format!("{}/api/chat/approvals/{id}", env.worker.base_url);
        let request = env.client.post(url).header("cookie", cookie).header("origin", env.worker.base_url.clone());
        let request = request.json(&json!({ "choice": choice }));
        async move {
            let response = request.send().await.unwrap();
            (response.status().as_u16(), response.json::<Value>().await.unwrap_or(Value::Null))
        }
    };
    let stranger = guest_cookie(&env, INVITE).await;
    let (status_code, answer) = decide(stranger, "approve").await;
    assert_eq!(status_code, 409, "another chat's guest cannot even see it: {answer}");
    let (status_code, _) = decide(String::new(), "approve").await;
    assert_eq!(status_code, 401);
    let cross_site = env.client.post(format!("{}/api/chat/approvals/{id}", env.worker.base_url));
    let cross_site = cross_site.header("cookie", &cookie).header("origin", "https://evil.example");
    let response = cross_site.json(&json!({ "choice": "approve" })).send().await.unwrap();
    assert_eq!(response.status(), 403, "another site's page cannot press it with the cookie");
    let (status_code, answer) = decide(cookie.clone(), "approve").await;
    assert_eq!(status_code, 200, "{answer}");
    assert!(answer["message"].as_str().unwrap().contains("Approved"));
    wait_for("the filed issue", Duration::from_secs(40), || async {
        fake.tool_calls().iter().any(|(tool, _)| tool == "create_issue").then_some(())
    })
    .await;
    let history = crate::harness::chat_socket::history(&env, &cookie).await;
    let line = history.iter().find(|line| line["id"] == format!("out:approval:{id}")).unwrap();
    assert!(line.get("approval").is_none() && line["text"].as_str().unwrap().contains("Approved"), "{line}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slow_tool_is_cancelled_and_a_server_that_is_down_costs_a_note() {
    let (env, fake) = start(&[("MCP_TIMEOUT_MS", "1500")]).await;
    fake.set_slow_delay(Duration::from_secs(4));
    add_tracker(&env, &fake.url()).await;
    env.llm.push(spawn("run the slow report", false, "Running it."));
    env.llm.push_for(WORKER, call("mcp_tracker_slow", json!({})));
    env.llm.push_for(WORKER, status("outcome", "The report timed out."));
    env.llm.reply("The report timed out.");
    env.telegram_update(&dm_update(1, 74, "run the slow report")).await;
    wait_for("the outcome", Duration::from_secs(40), || async {
        (env.telegram.calls("sendMessage").len() >= 2).then_some(())
    })
    .await;
    let told = tool_results(&worker_requests(&env)[1]).pop().unwrap();
    assert!(told.contains("did not answer in time"), "{told}");
    let cancelled = wait_for("the cancellation", Duration::from_secs(10), || async {
        fake.received().into_iter().find(|call| call.method == "notifications/cancelled")
    })
    .await;
    assert!(cancelled.body["params"]["requestId"].is_u64(), "{:?}", cancelled.body);

    // Down: the refresh fails, the next worker is told, and its turn goes on.
    fake.set_down(true);
    let (_, refreshed) = env.admin_send(reqwest::Method::POST, "/api/mcp/servers/tracker/refresh", None).await;
    assert!(refreshed["down_until"].as_i64().is_some() && refreshed["last_error"].is_string(), "{refreshed}");
    env.llm.push(spawn("look up issue 8", false, "Looking."));
    env.llm.push_for(WORKER, status("outcome", "The tracker is down."));
    env.llm.reply("The tracker is down right now.");
    env.telegram_update(&dm_update(2, 74, "look up issue 8")).await;
    wait_for("the second outcome", Duration::from_secs(40), || async {
        env.telegram
            .calls("sendMessage")
            .iter()
            .any(|call| call["text"] == "The tracker is down right now.")
            .then_some(())
    })
    .await;
    let last = worker_requests(&env).pop().unwrap();
    let note = crate::harness::all_message_text(&last);
    assert!(note.contains("The MCP server tracker cannot be reached now"), "{note}");
}

#[tokio::test(flavor = "multi_thread")]
async fn requests_go_to_the_configured_origin_only_and_settings_are_checked() {
    let (env, fake) = start(&[]).await;
    // A redirect within the origin is followed; one elsewhere is not.
    let (status_code, moved) = add_tracker(&env, &format!("{}/mcp-moved", fake.base_url)).await;
    assert_eq!(status_code, 200);
    assert_eq!(moved["tools"].as_array().unwrap().len(), 4, "{moved}");
    let (_, away) = add_tracker(&env, &format!("{}/redirect-away", fake.base_url)).await;
    assert!(away["last_error"].as_str().unwrap().contains("another origin"), "{away}");

    let put = |body: Value| env.admin_send(reqwest::Method::PUT, "/api/mcp/servers/other", Some(body));
    let (code, answer) = put(json!({ "url": "http://10.0.0.7/mcp" })).await;
    assert_eq!(code, 400, "a private address: {answer}");
    let (code, answer) =
        put(json!({ "url": fake.url(), "auth": { "kind": "bearer", "token_secret": "SLACK_BOT_TOKEN" } })).await;
    assert_eq!(code, 400, "only MCP_ secrets: {answer}");
    let (code, _) =
        env.admin_send(reqwest::Method::PUT, "/api/mcp/servers/Bad-Name", Some(json!({ "url": fake.url() }))).await;
    assert_eq!(code, 400);
    let anonymous = env.client.get(format!("{}/api/mcp/servers", env.worker.base_url)).send().await.unwrap();
    assert_eq!(anonymous.status(), 401);
    let wrong = env.client.get(format!("{}/api/approvals", env.worker.base_url)).bearer_auth(format!("{ADMIN_TOKEN}x"));
    assert_eq!(wrong.send().await.unwrap().status(), 401);
    let (code, _) = env.admin_send(reqwest::Method::DELETE, "/api/mcp/servers/tracker", None).await;
    assert_eq!(code, 200);
    assert_eq!(env.admin("/api/mcp/servers").await, json!([]));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_proposed_task_waits_for_the_same_buttons() {
    let (env, _fake) = start(&[]).await;
    env.llm.push(Scripted::ToolCalls(vec![
        ("branch".into(), json!({ "question": "plan the report" })),
        ("reply".into(), json!({ "content": "Thinking about it." })),
    ]));
    env.llm.push_for(
        "You are a branch",
        call("task_create", json!({ "title": "Write the quarterly report", "description": "Q3 numbers" })),
    );
    env.llm.push_for("You are a branch", Scripted::Text("Proposed a task.".into()));
    env.llm.reply("I proposed a task; approve it below.");
    env.telegram_update(&dm_update(1, 75, "we need the quarterly report")).await;
    let (asked, id) = telegram_buttons(&env).await;
    assert!(asked["text"].as_str().unwrap().contains("Write the quarterly report"), "{asked}");
    env.telegram_update(&press(2, 75, 75, &format!("deny:{id}"))).await;
    let task = wait_for("the task parked", Duration::from_secs(20), || async {
        let tasks = env.admin("/api/tasks").await;
        tasks.as_array()?.iter().find(|task| task["status"] == "backlog").cloned()
    })
    .await;
    assert_eq!(task["title"], "Write the quarterly report");
    assert_eq!(approval(&env, &id).await["kind"], "task");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_changed_tool_list_and_a_forgotten_session_are_taken_in_stride() {
    let (env, fake) = start(&[]).await;
    add_tracker(&env, &fake.url()).await;
    fake.add_tool(json!({ "name": "close_issue", "description": "Closes an issue",
        "inputSchema": { "type": "object", "properties": { "number": { "type": "integer" } } },
        "annotations": { "readOnlyHint": false } }));
    let gate = std::sync::Arc::new(tokio::sync::Notify::new());
    env.llm.push(spawn("look up issue 3 twice", false, "Looking."));
    env.llm.push_for(WORKER, call("mcp_tracker_lookup", json!({ "number": 3 })));
    env.llm
        .push_for(WORKER, Scripted::Gated(gate.clone(), Box::new(call("mcp_tracker_lookup", json!({ "number": 3 })))));
    env.llm.push_for(WORKER, status("outcome", "Issue 3, twice."));
    env.llm.reply("Issue 3 is slow.");
    env.telegram_update(&dm_update(1, 76, "look up issue 3")).await;
    wait_for("the first call", Duration::from_secs(30), || async {
        fake.tool_calls().iter().any(|(tool, _)| tool == "lookup").then_some(())
    })
    .await;
    // The server restarts between the calls: its sessions are gone.
    fake.forget_sessions();
    gate.notify_one();
    wait_for("the outcome", Duration::from_secs(40), || async {
        env.telegram.calls("sendMessage").iter().any(|call| call["text"] == "Issue 3 is slow.").then_some(())
    })
    .await;
    let results = tool_results(&worker_requests(&env)[2]);
    assert_eq!(results[1], "Issue #3: The login page is slow (open)", "answered in a new session");
    assert_eq!(fake.sessions().len(), 3, "the admin's list, the worker's first session, and its second");

    // The first call's answer said the list changed: the next worker lists again and sees the new tool.
    env.llm.push(spawn("close issue 3", false, "Closing."));
    env.llm.push_for(WORKER, status("outcome", "Done."));
    env.llm.reply("Closed.");
    env.telegram_update(&dm_update(2, 76, "close issue 3")).await;
    wait_for("the second outcome", Duration::from_secs(40), || async {
        env.telegram.calls("sendMessage").iter().any(|call| call["text"] == "Closed.").then_some(())
    })
    .await;
    let last = worker_requests(&env).pop().unwrap();
    let offered: Vec<&str> =
        last["tools"].as_array().unwrap().iter().filter_map(|tool| tool["function"]["name"].as_str()).collect();
    assert!(offered.contains(&"mcp_tracker_close_issue"), "{offered:?}");
    let servers = env.admin("/api/mcp/servers").await;
    let close = servers[0]["tools"].as_array().unwrap().iter().find(|tool| tool["name"] == "close_issue").cloned();
    assert_eq!(close.unwrap()["needs_approval"], true, "not read-only: it will ask");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_person_approves_in_the_chat_page_and_the_dashboard_shows_the_decision() {
    let (env, fake) = start(&[]).await;
    add_tracker(&env, &fake.url()).await;
    env.llm.push(spawn("file an issue", false, "Asking for approval."));
    env.llm.push_for(WORKER, call("mcp_tracker_create_issue", json!({ "title": "From the page" })));
    env.llm.push_for(WORKER, status("outcome", "Filed issue #101."));
    env.llm.reply("Filed it as #101.");
    let browser = crate::web::join_chat(&env, INVITE).await;
    browser.type_into("#message", "file an issue from the page").await;
    browser.click("#send").await;
    browser.wait_for_text("#messages", "Approval needed", Duration::from_secs(30)).await;
    browser.screenshot("chat-approval-asked").await;
    let id = env.admin("/api/approvals").await[0]["id"].as_str().unwrap().to_string();
    browser.click(&format!("li[data-approval=\"{id}\"] button.approve")).await;
    browser.wait_for_text("#messages", "Filed it as #101.", Duration::from_secs(40)).await;
    let buttons = browser.eval("return document.querySelectorAll('#messages button.approve').length;", json!([])).await;
    assert_eq!(buttons, 0, "the buttons are gone once decided");
    assert!(browser.text("#messages").await.contains("Approved by Guest"));
    browser.screenshot("chat-approval-decided").await;

    let dashboard = Browser::start(1280, 900).await;
    crate::web::sign_in(&dashboard, &env).await;
    dashboard.wait_for_text("nav", "Tools", Duration::from_secs(10)).await;
    dashboard.goto(&format!("{}/dashboard/#/tools", env.worker.base_url)).await;
    dashboard.wait_for_text("#approvals", "approved", Duration::from_secs(10)).await;
    let row = dashboard.text(&format!("tr[data-approval=\"{id}\"]")).await;
    assert!(row.contains("mcp_tracker_create_issue") && row.contains("Guest"), "{row}");
    dashboard.wait_for_text("li[data-server=tracker]", "mcp_tracker_lookup", Duration::from_secs(10)).await;
    assert!(!dashboard.text("body").await.contains(TOKEN), "no secret on the page");
    dashboard.screenshot("dashboard-tools").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn oauth_client_credentials_fetch_a_token_once_and_branches_see_only_tools_needing_no_approval() {
    const CLIENT_SECRET: &str = "client-secret-4b2e8f1d";
    const ACCESS: &str = "access-token-9d8c7b6a5f";
    let (env, fake) = start(&[("MCP_TRACKER_SECRET", CLIENT_SECRET)]).await;
    fake.oauth_client("edgebot", CLIENT_SECRET, ACCESS);
    let settings = json!({ "url": fake.url(), "branches": true, "auth": { "kind": "oauth",
        "token_url": format!("{}/token", fake.base_url), "client_id": "edgebot",
        "client_secret_secret": "MCP_TRACKER_SECRET" } });
    let (code, server) = env.admin_send(reqwest::Method::PUT, "/api/mcp/servers/tracker", Some(settings)).await;
    assert_eq!(code, 200, "{server}");
    assert_eq!(server["tools"].as_array().unwrap().len(), 4, "listed with the token: {server}");
    let shown = env.admin_text("/api/mcp/servers").await;
    assert!(!shown.contains(ACCESS) && !shown.contains(CLIENT_SECRET), "{shown}");

    env.llm.push(Scripted::ToolCalls(vec![
        ("branch".into(), json!({ "question": "what does issue 5 say?" })),
        ("reply".into(), json!({ "content": "Checking." })),
    ]));
    env.llm.push_for("You are a branch", call("mcp_tracker_lookup", json!({ "number": 5 })));
    env.llm.push_for("You are a branch", Scripted::Text("Issue 5 is about the slow login.".into()));
    env.llm.reply("Issue 5 is about the slow login.");
    env.telegram_update(&dm_update(1, 77, "what does issue 5 say?")).await;
    wait_for("the answer", Duration::from_secs(40), || async {
        env.telegram
            .calls("sendMessage")
            .iter()
            .any(|call| call["text"] == "Issue 5 is about the slow login.")
            .then_some(())
    })
    .await;
    let branch: Vec<Value> = env
        .llm
        .requests()
        .into_iter()
        .filter(|request| crate::harness::all_message_text(request).contains("You are a branch"))
        .collect();
    let offered: Vec<&str> =
        branch[0]["tools"].as_array().unwrap().iter().filter_map(|tool| tool["function"]["name"].as_str()).collect();
    assert!(offered.contains(&"mcp_tracker_lookup"), "{offered:?}");
    assert!(!offered.contains(&"mcp_tracker_create_issue"), "a branch cannot wait for an approval: {offered:?}");
    assert_eq!(tool_results(&branch[1])[0], "Issue #5: The login page is slow (open)");
    // One token for the listing and the branch's call: kept in D1 until it expires.
    let grants = fake.token_requests();
    assert_eq!(grants.len(), 1, "{grants:?}");
    assert!(grants[0].contains("grant_type=client_credentials"));
    let call = fake.received().into_iter().find(|call| call.method == "tools/call").unwrap();
    assert_eq!(call.authorization.as_deref(), Some(format!("Bearer {ACCESS}").as_str()));
}

#[tokio::test(flavor = "multi_thread")]
async fn stopping_the_work_withdraws_its_approval_and_its_buttons() {
    let (env, fake) = start(&[]).await;
    add_tracker(&env, &fake.url()).await;
    env.llm.push(spawn("file an issue", false, "Asking for approval."));
    env.llm.push_for(WORKER, call("mcp_tracker_create_issue", json!({ "title": "Never mind" })));
    env.telegram_update(&dm_update(1, 78, "file an issue")).await;
    let (_, id) = telegram_buttons(&env).await;
    let worker = env.admin("/api/channels/telegram:78/workers").await[0]["id"].as_str().unwrap().to_string();
    env.llm.push(Scripted::ToolCalls(vec![
        ("cancel".into(), json!({ "id": worker })),
        ("reply".into(), json!({ "content": "Stopped." })),
    ]));
    env.telegram_update(&dm_update(2, 78, "never mind, stop")).await;
    wait_for("the approval withdrawn", Duration::from_secs(20), || async {
        (approval(&env, &id).await["status"] == "withdrawn").then_some(())
    })
    .await;
    let edits = env.telegram.calls("editMessageText");
    let edit = edits.iter().find(|edit| edit["text"].as_str().is_some_and(|text| text.contains("Withdrawn")));
    assert!(edit.is_some_and(|edit| edit.get("reply_markup").is_none()), "{edits:?}");
    env.telegram_update(&press(3, 78, 78, &format!("approve:{id}"))).await;
    let answer = env.telegram.calls("answerCallbackQuery").pop().unwrap();
    assert!(answer["text"].as_str().unwrap().starts_with("Already decided: withdrawn"), "{answer}");
    env.settle().await;
    assert!(fake.tool_calls().iter().all(|(tool, _)| tool != "create_issue"));
}
