//! `make bench`: the web face's figures. What a first load of the dashboard
//! costs in bytes (gzipped, as served), and how long a web-chat message takes
//! from Send to the reply on screen in headless Chromium, with a model that
//! answers at once. Figures, not assertions.

#[allow(dead_code, unused_imports)]
#[path = "../tests/harness.rs"]
mod harness;

use std::io::Write;
use std::time::Duration;

use harness::browser::Browser;
use harness::TestEnv;
use serde_json::json;

const SENDS: usize = 20;

fn gzipped(bytes: &[u8]) -> usize {
    let mut child = std::process::Command::new("gzip")
        .arg("-9c")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("gzip");
    child.stdin.take().expect("stdin").write_all(bytes).expect("gzip input");
    child.wait_with_output().expect("gzip output").stdout.len()
}

#[tokio::main]
async fn main() {
    let env = TestEnv::start_with(&[("WEB_CHAT_TOKEN", "bench-invitation-1")]).await;
    let client = reqwest::Client::new();

    // Everything the dashboard's sign-in page loads, fetched from the Worker.
    let mut total = 0;
    for path in ["/dashboard/", "/dashboard/app.js", "/style.css"] {
        let body = client.get(format!("{}{path}", env.worker.base_url)).send().await.unwrap().bytes().await.unwrap();
        let packed = gzipped(&body);
        println!("dashboard first load: {path:<20} {:>7} bytes, {packed:>6} gzipped", body.len());
        total += packed;
    }
    println!("dashboard first load: total {total} bytes gzipped (the mark: under 100 KB)");

    let browser = Browser::start(390, 800).await;
    browser.goto(&format!("{}/chat/", env.worker.base_url)).await;
    browser.wait_for_text("body", "Invitation", Duration::from_secs(10)).await;
    browser.type_into("#invite", "bench-invitation-1").await;
    browser.click("button[type=submit]").await;
    browser.wait_for_text("#connection", "connected", Duration::from_secs(10)).await;

    // Send, then watch the list in the page itself until the reply's line appears.
    let script = "const [text, reply, done] = arguments;
        const list = document.querySelector('#messages');
        let started = 0;
        const seen = () => [...list.querySelectorAll('li.assistant')].some(li => li.innerText.includes(reply));
        new MutationObserver((_, observer) => {
            if (seen()) { observer.disconnect(); done(performance.now() - started); }
        }).observe(list, { childList: true, subtree: true, characterData: true });
        const box = document.querySelector('#message');
        box.value = text;
        box.dispatchEvent(new Event('input', { bubbles: true }));
        // After the page has rendered the draft: then the clock starts.
        setTimeout(() => { started = performance.now(); document.querySelector('#send').click(); }, 0);";
    let mut times = Vec::new();
    for index in 0..SENDS {
        let reply = format!("instant answer {index}");
        env.llm.reply(&reply);
        let elapsed = browser.eval_async(script, json!([format!("question {index}"), reply])).await;
        times.push(elapsed.as_f64().expect("milliseconds"));
    }
    times.sort_by(f64::total_cmp);
    let mean = times.iter().sum::<f64>() / times.len() as f64;
    println!(
        "web chat send → reply on screen ({SENDS} sends, instant model): mean {mean:.1} ms  p50 {:.1} ms  max {:.1} ms",
        times[times.len() / 2],
        times[times.len() - 1]
    );
}
