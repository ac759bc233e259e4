//! Workers: queued jobs that carry out a task in segments, report progress to
//! the channel's status block and their outcome back to the user; `route` and
//! `cancel` steer them; `http_fetch` stays off private addresses.

use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::fake_api::BIG_PAGE_BYTES;
use crate::harness::{all_message_text, dm_update, turn_message, wait_for, Scripted, TestEnv};

/// The worker's system prompt starts with this (prompts/worker_system.md.j2).
pub(crate) const WORKER: &str = "You are a worker";

pub(crate) fn status(kind: &str, text: &str) -> Scripted {
    Scripted::ToolCalls(vec![("set_status".into(), json!({ "kind": kind, "text": text }))])
}

pub(crate) fn worker_requests(env: &TestEnv) -> Vec<Value> {
    env.llm.requests().into_iter().filter(|request| all_message_text(request).contains(WORKER)).collect()
}

fn channel_requests(env: &TestEnv) -> Vec<Value> {
    env.llm.requests().into_iter().filter(|request| !all_message_text(request).contains(WORKER)).collect()
}

/// The tool results the model was shown in a request, in order.
pub(crate) fn tool_results(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| message["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

async fn workers(env: &TestEnv, chat: i64) -> Vec<Value> {
    env.admin(&format!("/api/channels/telegram:{chat}/workers")).await.as_array().cloned().unwrap_or_default()
}

/// Waits until the conversation has a worker and returns its id.
async fn first_worker_id(env: &TestEnv, chat: i64) -> String {
    wait_for("a worker to start", Duration::from_secs(20), || async {
        workers(env, chat).await.first().and_then(|worker| worker["id"].as_str().map(str::to_string))
    })
    .await
}

pub(crate) fn spawn(task: &str, interactive: bool, reply: &str) -> Scripted {
    Scripted::ToolCalls(vec![
        ("spawn_worker".into(), json!({ "task": task, "interactive": interactive })),
        ("reply".into(), json!({ "content": reply })),
    ])
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_runs_two_segments_its_status_reaches_the_next_prompt_and_its_outcome_the_user() {
    let env = TestEnv::start_with(&[("LLM_TIMEOUT_MS", "10000")]).await;
    env.llm.push(spawn("count the stars in the catalogue", false, "I've set a worker on it."));
    env.llm.push_for(WORKER, status("progress", "looked at page 1 of 16"));
    // A slow second call: the person asks how it goes meanwhile.
    env.llm.push_for(WORKER, Scripted::Delayed(Duration::from_secs(4), Box::new(status("progress", "page 2 of 16"))));
    for page in 3..=15 {
        env.llm.push_for(WORKER, status("progress", &format!("page {page} of 16")));
    }
    // Call 16 is the second segment's first.
    env.llm.push_for(WORKER, status("outcome", "There are 42 stars in the catalogue."));
    env.llm.reply("Still counting: a page done so far.");
    env.llm.reply("Done: the catalogue has 42 stars.");

    env.telegram_update(&dm_update(1, 61, "how many stars are in the catalogue?")).await;
    env.wait_for_sent(1).await;
    wait_for("the worker's first status", Duration::from_secs(20), || async {
        let lines = env.admin_text("/api/channels/telegram:61/envelopes?type=status").await;
        (!lines.is_empty()).then_some(())
    })
    .await;
    env.telegram_update(&dm_update(2, 61, "how is it going?")).await;
    let sent = wait_for("the outcome", Duration::from_secs(60), || async {
        let sent = env.telegram.calls("sendMessage");
        (sent.len() >= 3).then_some(sent)
    })
    .await;
    assert_eq!(sent[0]["text"], "I've set a worker on it.");
    assert_eq!(sent[1]["text"], "Still counting: a page done so far.");
    assert_eq!(sent[2]["text"], "Done: the catalogue has 42 stars.");

    let channel = channel_requests(&env);
    let asked = turn_message(&channel[1]);
    assert!(asked.contains("## Status") && asked.contains("looked at page 1 of 16"), "{asked}");
    let retrigger = turn_message(&channel[2]);
    assert!(retrigger.contains("finished on \"count the stars in the catalogue\""), "{retrigger}");
    assert!(retrigger.contains("There are 42 stars in the catalogue."), "{retrigger}");

    let requests = worker_requests(&env);
    assert_eq!(requests.len(), 16, "15 calls in the first segment, one in the second");
    let first = all_message_text(&requests[0]);
    assert!(first.contains("count the stars in the catalogue"));
    assert!(!first.contains("how many stars are in the catalogue?"), "a fresh prompt with only the task");
    let resumed = requests[15]["messages"].as_array().unwrap().len();
    // The system prompt, the task, and 15 calls with their results: the state kept in D1.
    assert_eq!(resumed, 32, "the second segment goes on where the first stopped");

    let worker = &workers(&env, 61).await[0];
    assert_eq!((worker["state"].as_str(), worker["segments"].as_u64()), (Some("done"), Some(2)));
    let usage = env.admin("/api/channels/telegram:61/usage").await;
    assert_eq!(usage["worker"]["input_tokens"], 160, "16 worker calls of 10 tokens: {usage}");
    assert!(usage["channel"]["input_tokens"].as_u64().unwrap() > 0, "{usage}");
    env.settle().await;
    assert_eq!(env.telegram.calls("sendMessage").len(), 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn route_delivers_a_follow_up_to_an_interactive_worker() {
    let env = TestEnv::start().await;
    env.llm.push(spawn("book a table for two tonight", true, "Booking it."));
    env.llm.push_for(WORKER, Scripted::Text("Which city should I book in?".into()));
    env.llm.reply("Which city should I book the table in?");
    env.telegram_update(&dm_update(1, 62, "book us a table tonight")).await;
    env.wait_for_sent(2).await;
    let retrigger = turn_message(&channel_requests(&env)[1]);
    assert!(
        retrigger.contains("asks on \"book a table for two tonight\": Which city should I book in?"),
        "{retrigger}"
    );

    let id = first_worker_id(&env, 62).await;
    env.llm.push(Scripted::ToolCalls(vec![
        ("route".into(), json!({ "id": id, "message": "The person says: Oslo" })),
        ("reply".into(), json!({ "content": "Got it, Oslo." })),
    ]));
    env.llm.push_for(WORKER, status("outcome", "Booked a table for two in Oslo at 19:00."));
    env.llm.reply("Your table in Oslo is booked for 19:00.");
    env.telegram_update(&dm_update(2, 62, "Oslo")).await;
    let sent = wait_for("the booking", Duration::from_secs(30), || async {
        let sent = env.telegram.calls("sendMessage");
        (sent.len() >= 4).then_some(sent)
    })
    .await;
    assert_eq!(sent[2]["text"], "Got it, Oslo.");
    assert_eq!(sent[3]["text"], "Your table in Oslo is booked for 19:00.");
    let requests = worker_requests(&env);
    assert_eq!(requests.len(), 2);
    let follow_up = requests[1]["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        (follow_up["role"].as_str(), follow_up["content"].as_str()),
        (Some("user"), Some("The person says: Oslo"))
    );
    assert!(all_message_text(&requests[1]).contains("Which city should I book in?"), "it remembers its question");
    assert_eq!(workers(&env, 62).await[0]["state"], "done");
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_stops_a_running_worker() {
    let env = TestEnv::start().await;
    env.llm.push(spawn("watch the weather all week", false, "Watching it."));
    env.llm.push_for(WORKER, Scripted::Delayed(Duration::from_secs(3), Box::new(status("progress", "day 1"))));
    for day in 2..=15 {
        env.llm.push_for(WORKER, status("progress", &format!("day {day}")));
    }
    env.telegram_update(&dm_update(1, 63, "watch the weather for me")).await;
    env.wait_for_sent(1).await;
    let id = first_worker_id(&env, 63).await;
    env.llm.push(Scripted::ToolCalls(vec![
        ("cancel".into(), json!({ "id": id })),
        ("reply".into(), json!({ "content": "Stopped watching." })),
    ]));
    env.telegram_update(&dm_update(2, 63, "never mind, stop")).await;
    env.wait_for_sent(2).await;
    wait_for("the worker to stop", Duration::from_secs(20), || async {
        let worker = workers(&env, 63).await.first().cloned()?;
        (worker["state"] == "failed" && worker["cancelled"] == true).then_some(())
    })
    .await;
    env.settle().await;
    env.settle().await;
    let calls = worker_requests(&env).len();
    assert!(calls <= 2, "the worker stopped at its next call ({calls} calls)");
    assert_eq!(env.telegram.calls("sendMessage").len(), 2, "a cancelled worker reports nothing");
    let cancels = env.admin_text("/api/channels/telegram:63/envelopes?type=cancel").await;
    assert_eq!(cancels.lines().count(), 1, "{cancels}");
}

#[tokio::test(flavor = "multi_thread")]
async fn http_fetch_refuses_private_addresses_unless_the_host_is_allowed() {
    for allowed in [false, true] {
        let vars: &[(&str, &str)] = if allowed { &[("FETCH_ALLOW_HOSTS", "127.0.0.1")] } else { &[] };
        let env = TestEnv::start_with(vars).await;
        let local_page = format!("{}/page", env.telegram.base_url);
        let big_page = format!("{}/big-page", env.telegram.base_url);
        env.llm.push(spawn("read the pages", false, "Reading."));
        env.llm.push_for(
            WORKER,
            Scripted::ToolCalls(vec![
                ("http_fetch".into(), json!({ "url": local_page })),
                ("http_fetch".into(), json!({ "url": "http://10.0.0.1/admin" })),
                ("http_fetch".into(), json!({ "url": "http://169.254.169.254/latest/meta-data/" })),
                ("http_fetch".into(), json!({ "url": big_page })),
            ]),
        );
        env.llm.push_for(WORKER, status("outcome", "Read what I could."));
        env.llm.reply("Here is what the worker read.");
        env.telegram_update(&dm_update(1, 64, "read the pages")).await;
        env.wait_for_sent(2).await;

        let offered = worker_requests(&env)[0]["tools"].to_string();
        assert!(offered.contains("http_fetch") && !offered.contains("web_search"), "no search without a key");
        let results = tool_results(&worker_requests(&env)[1]);
        assert_eq!(results.len(), 4, "{results:?}");
        assert!(results[1].contains("refused") && results[2].contains("refused"), "{results:?}");
        let page_calls = env.telegram.requests().into_iter().filter(|call| call.path == "/page").count();
        if allowed {
            assert!(results[0].starts_with("HTTP 200") && results[0].contains("\"ok\":true"), "{results:?}");
            assert_eq!(page_calls, 1);
            assert_eq!(results[3].len(), 50_000, "a {BIG_PAGE_BYTES}-byte page is cut at the cap");
        } else {
            assert!(results[0].contains("refused") && results[0].contains("127.0.0.1"), "{results:?}");
            assert_eq!(page_calls, 0, "nothing reached the private address");
            assert!(results[3].contains("refused"));
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn spellings_that_smuggle_a_private_host_past_a_naive_parser_are_refused() {
    let env = TestEnv::start().await;
    let port = env.telegram.base_url.rsplit(':').next().unwrap().to_string();
    // Each is 127.0.0.1 to the WHATWG URL parser (the runtime's), and each
    // passed the old hand-written guard.
    let spellings = [
        format!("http://127.0.0.1:{port}\\@example.com/page"),
        format!("http://%31%32%37.0.0.1:{port}/page"),
        format!("http://１２７.０.０.１:{port}/page"),
        format!("http://127。0。0。1:{port}/page"),
        format!("http://0x7f.1:{port}/page"),
        format!("http:127.0.0.1:{port}/page"),
    ];
    env.llm.push(spawn("read the pages", false, "Reading."));
    let calls = spellings.iter().map(|url| ("http_fetch".to_string(), json!({ "url": url }))).collect();
    env.llm.push_for(WORKER, Scripted::ToolCalls(calls));
    env.llm.push_for(WORKER, status("outcome", "Nothing could be read."));
    env.llm.reply("The pages were refused.");
    env.telegram_update(&dm_update(1, 66, "read the pages")).await;
    env.wait_for_sent(2).await;

    let results = tool_results(&worker_requests(&env)[1]);
    assert_eq!(results.len(), spellings.len(), "{results:?}");
    for (url, result) in spellings.iter().zip(&results) {
        assert!(result.contains("refused") && result.contains("127.0.0.1"), "{url}: {result}");
    }
    let reached = env.telegram.requests().into_iter().filter(|call| call.path.contains("page")).count();
    assert_eq!(reached, 0, "nothing reached the private address");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_step_retried_after_a_failure_posts_nothing_twice() {
    let env = TestEnv::start_with(&[("LLM_MAX_ATTEMPTS", "1")]).await;
    env.llm.push(spawn("tidy the notes", false, "Tidying."));
    // First delivery: a progress report, then the model fails and the job throws.
    env.llm.push_for(WORKER, status("progress", "sorted the notes"));
    env.llm.push_for(WORKER, Scripted::Status(503));
    // The redelivered step runs the segment again from the stored run.
    env.llm.push_for(WORKER, status("progress", "sorted the notes"));
    env.llm.push_for(WORKER, status("outcome", "The notes are tidy."));
    env.llm.reply("Your notes are tidy.");
    env.telegram_update(&dm_update(1, 65, "tidy my notes")).await;
    env.wait_for_sent(2).await;
    env.settle().await;
    env.settle().await;

    assert_eq!(worker_requests(&env).len(), 4, "the failed step ran again");
    let sent = env.telegram.calls("sendMessage");
    assert_eq!(sent.len(), 2, "one acknowledgement, one outcome: {sent:?}");
    assert_eq!(channel_requests(&env).len(), 2, "the outcome retriggered the channel once");
    let statuses = env.admin_text("/api/channels/telegram:65/envelopes?type=status").await;
    assert_eq!(statuses.lines().count(), 1, "the repeated progress report is the same envelope: {statuses}");
    let done = env.admin_text("/api/channels/telegram:65/envelopes?type=done").await;
    assert_eq!(done.lines().count(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn web_search_is_offered_only_with_a_key_and_queries_the_search_api() {
    let search = crate::harness::FakeApi::start(crate::harness::Flavor::Slack).await;
    let env =
        TestEnv::start_with(&[("SEARCH_API_KEY", "test-search-key"), ("SEARCH_BASE_URL", &search.base_url)]).await;
    env.llm.push(spawn("find the release date", false, "Searching."));
    env.llm.push_for(WORKER, Scripted::ToolCalls(vec![("web_search".into(), json!({ "query": "edgebot release" }))]));
    env.llm.push_for(WORKER, status("outcome", "Nothing found."));
    env.llm.reply("I found nothing.");
    env.telegram_update(&dm_update(1, 66, "when is the release?")).await;
    env.wait_for_sent(2).await;

    let requests = worker_requests(&env);
    let tools: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap())
        .collect();
    assert!(tools.contains(&"web_search"), "{tools:?}");
    let calls = search.requests();
    assert_eq!(calls.len(), 1);
    assert_eq!((calls[0].method.as_str(), calls[0].path.as_str()), ("GET", "/res/v1/web/search"));
    // The fake answers without results; the model is told so.
    assert_eq!(tool_results(&requests[1]), vec!["no results".to_string()]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_lost_in_a_crash_is_given_up_and_the_person_is_told() {
    // Local queues do not survive a crash of the runtime (Cloudflare's do, and
    // redeliver): the channel's watchdog makes sure the person hears either way.
    let mut env = TestEnv::start_with(&[("LLM_TIMEOUT_MS", "10000"), ("WORKER_TIMEOUT_MS", "4000")]).await;
    env.llm.push(spawn("compile the report", false, "On it."));
    env.llm.push_for(WORKER, status("progress", "gathered the figures"));
    // The runtime dies while this call is in flight.
    env.llm.push_for(WORKER, Scripted::Delayed(Duration::from_secs(8), Box::new(status("outcome", "too late"))));
    env.telegram_update(&dm_update(1, 67, "compile the report")).await;
    env.wait_for_sent(1).await;
    env.wait_for_delivered("telegram:67", 1).await;
    wait_for("the worker mid-segment", Duration::from_secs(20), || async {
        (env.llm.in_flight() == 1 && worker_requests(&env).len() == 2).then_some(())
    })
    .await;
    env.crash_and_restart().await;

    env.llm.reply("Sorry, the report worker stopped; shall I start it again?");
    let sent = wait_for("the person to be told", Duration::from_secs(30), || async {
        let sent = env.telegram.calls("sendMessage");
        (sent.len() >= 2).then_some(sent)
    })
    .await;
    assert_eq!(sent[1]["text"], "Sorry, the report worker stopped; shall I start it again?");
    let told = turn_message(&channel_requests(&env)[1]);
    assert!(told.contains("failed on \"compile the report\"") && told.contains("stopped responding"), "{told}");
    let worker = &workers(&env, 67).await[0];
    assert_eq!((worker["state"].as_str(), worker["cancelled"].as_bool()), (Some("failed"), Some(true)));
    env.settle().await;
    assert_eq!(env.telegram.calls("sendMessage").len(), 2, "told once");
}
