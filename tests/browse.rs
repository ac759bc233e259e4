//! `browse`: a worker reads a page as a browser renders it. Under `wrangler
//! dev` the BROWSER binding runs Debian's chromium (scripts/setup-browser.sh),
//! so the page below is rendered by a real Chrome: its text, written by a
//! script, comes back, which a plain fetch of the same page never shows.

use serde_json::json;

use crate::harness::pages::{Pages, SCRIPTED_TEXT, SLOW_TEXT};
use crate::harness::{dm_update, Scripted, TestEnv};
use crate::workers::{spawn, status, tool_results, worker_requests, WORKER};

/// The tool answer's line naming the kept screenshot.
const SCREENSHOT_LINE: &str = "Screenshot: ";

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_reads_a_rendered_page_its_links_and_keeps_a_screenshot() {
    let pages = Pages::start().await;
    let env = TestEnv::start_with(&[("FETCH_ALLOW_HOSTS", "127.0.0.1"), ("LLM_TIMEOUT_MS", "10000")]).await;
    let page = format!("{}/page", pages.base_url);
    env.llm.push(spawn("read the harbour page", false, "Reading it."));
    env.llm.push_for(
        WORKER,
        Scripted::ToolCalls(vec![
            ("http_fetch".into(), json!({ "url": page })),
            ("browse".into(), json!({ "url": page })),
            ("browse".into(), json!({ "url": page, "screenshot": true })),
        ]),
    );
    env.llm.push_for(WORKER, status("outcome", "It opens at 42 past seven."));
    env.llm.reply("The harbour opens at 42 past seven.");
    env.telegram_update(&dm_update(1, 70, "when does the harbour open?")).await;
    env.wait_for_sent(2).await;

    let offered = worker_requests(&env)[0]["tools"].to_string();
    assert!(offered.contains("\"browse\""), "the worker is offered browse");
    let results = tool_results(&worker_requests(&env)[1]);
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(results[0].starts_with("HTTP 200") && !results[0].contains(SCRIPTED_TEXT), "a fetch sees no script's text");
    let rendered = &results[1];
    assert!(rendered.contains(SCRIPTED_TEXT), "the script's text came back rendered: {rendered}");
    assert!(rendered.contains(&format!("Rendered page: {page}")), "{rendered}");
    assert!(rendered.contains("Title: Harbour notes (3 links)"), "the title the script set: {rendered}");
    assert!(rendered.contains(&format!("- {}/timetable Timetable", pages.base_url)), "links are absolute: {rendered}");
    assert!(rendered.contains("- https://example.com/ferries?from=harbour Ferries"), "{rendered}");
    assert!(rendered.contains("Links (2 of 2)") && !rendered.contains("mailto:"), "web links only: {rendered}");
    assert!(!rendered.contains(SCREENSHOT_LINE), "no screenshot unless asked: {rendered}");
    assert_eq!(pages.page_hits(), 3, "the fetch and two renders each loaded the page");

    let path = results[2]
        .lines()
        .find_map(|line| line.strip_prefix(SCREENSHOT_LINE))
        .unwrap_or_else(|| panic!("the answer names the screenshot: {}", results[2]));
    assert!(path.starts_with("screenshots/") && path.ends_with(".png"), "{path}");
    let key = format!("{}{path}", edgebot::workspace::rules::key_prefix("telegram:70"));
    let png = env.r2_object("edgebot-files", &key).unwrap_or_else(|| panic!("{key} is in the workspace"));
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 1_000, "a PNG of {} bytes", png.len());

    let ops = env.admin("/api/ops").await;
    assert_eq!(ops["browser_renders"], 2, "{ops}");
    assert!(ops["browser_ms"].as_u64().unwrap_or_default() > 0, "browser time is counted: {ops}");
}

#[tokio::test(flavor = "multi_thread")]
async fn browse_refuses_private_addresses_and_redirects_to_them_and_the_worker_goes_on() {
    let pages = Pages::start().await;
    // 6 s: a page whose load never ends is read after 4 (two thirds of it).
    let vars = [("FETCH_ALLOW_HOSTS", "127.0.0.1"), ("LLM_TIMEOUT_MS", "10000"), ("BROWSE_TIMEOUT_MS", "6000")];
    let env = TestEnv::start_with(&vars).await;
    env.llm.push(spawn("read the pages", false, "Reading."));
    env.llm.push_for(
        WORKER,
        Scripted::ToolCalls(vec![
            ("browse".into(), json!({ "url": "http://10.0.0.1/admin" })),
            ("browse".into(), json!({ "url": "http://[::1]/" })),
            ("browse".into(), json!({ "url": format!("{}/to-metadata", pages.base_url) })),
            ("browse".into(), json!({ "url": "file:///etc/passwd" })),
            ("browse".into(), json!({ "url": format!("{}/page", pages.base_url) })),
            ("browse".into(), json!({ "url": format!("{}/slow", pages.base_url) })),
        ]),
    );
    env.llm.push_for(WORKER, status("outcome", "Only the public page could be read."));
    env.llm.reply("Only one page could be read.");
    env.telegram_update(&dm_update(1, 71, "read the pages")).await;
    env.wait_for_sent(2).await;

    let results = tool_results(&worker_requests(&env)[1]);
    assert_eq!(results.len(), 6, "{results:?}");
    assert!(results[0].starts_with("error: refused") && results[0].contains("10.0.0.1"), "{}", results[0]);
    assert!(results[1].starts_with("error: refused") && results[1].contains("::1"), "{}", results[1]);
    assert!(
        results[2].starts_with("error: refused") && results[2].contains("169.254.169.254"),
        "the redirect was judged again: {}",
        results[2]
    );
    assert!(results[3].starts_with("error: refused"), "{}", results[3]);
    assert!(results[4].contains(SCRIPTED_TEXT), "the worker went on: {}", results[4]);
    assert!(results[5].contains(SLOW_TEXT), "a page still loading is read as it stands: {}", results[5]);
    let ops = env.admin("/api/ops").await;
    assert_eq!(ops["browser_renders"], 3, "only the redirect and the pages reached the browser: {ops}");
}
