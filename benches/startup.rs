//! `make bench`: the first requests a fresh isolate serves. Each run starts
//! `wrangler dev` afresh (the test harness) and times the `GET /health` that finds
//! it ready, the next `GET /health` (for scale: the same route, warm), then the
//! first Telegram webhook (verify, parse, decide, store, ack).
//! Beside it, the same first `GET /health` on a one-line JavaScript Worker
//! started the same way: the local runtime's own floor (wrangler's proxy,
//! workerd's start), so the difference is what edgebot's wasm adds.
//! Medians over RUNS starts. V8's own share (compile and instantiate the wasm) is
//! `scripts/startup.mjs`, printed beside this by `make bench`.
//!
//! Figures, not assertions: timing goals are read here, never asserted in tests.

#[allow(dead_code, unused_imports)]
#[path = "../tests/harness.rs"]
mod harness;

use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use harness::{dm_update, TestEnv};

const RUNS: usize = 5;

fn median(mut values: Vec<Duration>) -> f64 {
    values.sort();
    values[values.len() / 2].as_secs_f64() * 1e3
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|listener| listener.local_addr()).expect("free port").port()
}

/// The first `GET /health` of a one-line JavaScript Worker on a fresh `wrangler
/// dev`, asked as the test harness asks edgebot's: once wrangler says it is
/// ready on the port, then every 100 ms until it answers.
async fn baseline_first_health(dir: &Path) -> Duration {
    let port = free_port();
    let log_path = dir.join(format!("wrangler-{port}.log"));
    let log = std::fs::File::create(&log_path).expect("log file");
    let mut child = Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("node_modules/.bin/wrangler"))
        .args(["dev", "--ip", "127.0.0.1", "--port", &port.to_string()])
        .args(["--inspector-port", &free_port().to_string(), "--show-interactive-dev-session=false"])
        .current_dir(dir)
        .env("CI", "true")
        .env("WRANGLER_SEND_METRICS", "false")
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("log handle"))
        .stderr(log)
        .spawn()
        .expect("spawn wrangler dev");
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    let ready = format!("Ready on http://127.0.0.1:{port}");
    let first = loop {
        let sent = Instant::now();
        let said_ready = std::fs::read_to_string(&log_path).is_ok_and(|log| log.contains(&ready));
        if !said_ready {
            assert!(Instant::now() < deadline, "the baseline Worker did not come up");
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        }
        if let Ok(response) = client.get(format!("http://127.0.0.1:{port}/health")).send().await {
            if response.status().is_success() {
                break sent.elapsed();
            }
        }
        assert!(Instant::now() < deadline, "the baseline Worker did not come up");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let _ = child.kill();
    let _ = child.wait();
    first
}

#[tokio::main]
async fn main() {
    let baseline_dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        baseline_dir.path().join("wrangler.toml"),
        "name = \"baseline\"\nmain = \"index.js\"\ncompatibility_date = \"2026-11-01\"\n",
    )
    .expect("write the baseline's wrangler.toml");
    std::fs::write(
        baseline_dir.path().join("index.js"),
        "export default { fetch() { return Response.json({ ok: true }); } };\n",
    )
    .expect("write the baseline Worker");
    let mut baseline = Vec::new();
    for _ in 0..RUNS {
        baseline.push(baseline_first_health(baseline_dir.path()).await);
    }
    let mut health = Vec::new();
    let mut warm = Vec::new();
    let mut webhook = Vec::new();
    for run in 0..RUNS {
        let env = TestEnv::start_with(&[("COALESCE_DEBOUNCE_MS", "60000")]).await;
        health.push(env.worker.first_health);
        let sent = Instant::now();
        let response = env.client.get(format!("{}/health", env.worker.base_url)).send().await;
        warm.push(sent.elapsed());
        assert!(response.is_ok_and(|response| response.status().is_success()), "the second GET /health failed");
        let sent = Instant::now();
        let response = env.telegram_update(&dm_update(1, 4242 + run as i64, "hello")).await;
        webhook.push(sent.elapsed());
        assert!(response.status().is_success(), "the first webhook answered {}", response.status());
    }
    let (health, baseline) = (median(health), median(baseline));
    println!(
        "first requests on a fresh isolate (median of {RUNS} wrangler dev starts): GET /health {health:.1} ms \
         (the next one {:.1} ms), first Telegram webhook {:.1} ms",
        median(warm),
        median(webhook),
    );
    println!(
        "the same first GET /health on a one-line JavaScript Worker: {baseline:.1} ms (the local runtime's \
         floor); edgebot's own share of its first request: {:+.1} ms",
        health - baseline,
    );
}
