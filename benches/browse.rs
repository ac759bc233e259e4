//! `make bench`: `browse` of a local page. A worker is scripted to call one
//! tool per model call, ten times; the time from the model call that asked for
//! the tool to the next one (which carries its result) is the tool's round
//! trip inside the Worker (the scripted model answers at once). `browse`
//! renders in the local Browser Rendering simulation (Debian's chromium, a
//! fresh browser per session, as each `browse` opens one); `http_fetch` of the
//! same page is printed beside it. Figures, not assertions.

#[allow(dead_code, unused_imports)]
#[path = "../tests/harness.rs"]
mod harness;

use std::time::Duration;

use harness::fake_llm::Scripted;
use harness::pages::{Pages, SCRIPTED_TEXT};
use harness::{all_message_text, dm_update, TestEnv};
use serde_json::json;

/// Calls per tool (one worker segment holds 15 model calls).
const CALLS: usize = 10;
/// The worker's system prompt starts with this (prompts/worker_system.md.j2).
const WORKER: &str = "You are a worker";

/// Milliseconds from each worker model call to the next, for a worker that
/// calls `tool` on `url` `CALLS` times.
async fn round_trips(env: &TestEnv, chat: i64, tool: &str, url: &str) -> Vec<f64> {
    let before = env.llm.requests().len();
    let spawn = json!({ "task": format!("read {url}"), "interactive": false });
    env.llm.push(Scripted::ToolCalls(vec![
        ("spawn_worker".into(), spawn),
        ("reply".into(), json!({ "content": "Reading." })),
    ]));
    for _ in 0..CALLS {
        env.llm.push_for(WORKER, Scripted::ToolCalls(vec![(tool.into(), json!({ "url": url }))]));
    }
    let outcome = json!({ "kind": "outcome", "text": "Read." });
    env.llm.push_for(WORKER, Scripted::ToolCalls(vec![("set_status".into(), outcome)]));
    env.llm.reply("Done.");
    env.telegram_update(&dm_update(chat, chat, "read the page")).await;
    let sent = env.telegram.calls("sendMessage").len();
    env.wait_for_sent(sent + 2).await;
    tokio::time::sleep(Duration::from_millis(200)).await;

    let requests = env.llm.requests();
    let arrivals = env.llm.arrivals();
    let worker: Vec<_> = (before..requests.len())
        .filter(|&index| all_message_text(&requests[index]).contains(WORKER))
        .map(|index| (arrivals[index], &requests[index]))
        .collect();
    assert_eq!(worker.len(), CALLS + 1, "{tool}: every call made");
    if tool == "browse" {
        assert!(all_message_text(worker[CALLS].1).contains(SCRIPTED_TEXT), "the page was rendered");
    }
    worker.windows(2).map(|pair| (pair[1].0 - pair[0].0).as_secs_f64() * 1000.0).collect()
}

fn describe(mut times: Vec<f64>) -> String {
    times.sort_by(f64::total_cmp);
    let p90 = times[(times.len() * 9).div_ceil(10) - 1];
    format!("median {:.0} ms  p90 {p90:.0} ms  min {:.0} ms  ({} calls)", times[times.len() / 2], times[0], times.len())
}

#[tokio::main]
async fn main() {
    let pages = Pages::start().await;
    let env = TestEnv::start_with(&[("FETCH_ALLOW_HOSTS", "127.0.0.1"), ("LLM_TIMEOUT_MS", "10000")]).await;
    let page = format!("{}/page", pages.base_url);
    let fetched = round_trips(&env, 901, "http_fetch", &page).await;
    let browsed = round_trips(&env, 902, "browse", &page).await;
    println!("worker tool round trip, http_fetch of a local page: {}", describe(fetched));
    println!("worker tool round trip, browse of a local page (local Chrome, a session each): {}", describe(browsed));
}
