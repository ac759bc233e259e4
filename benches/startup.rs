//! `make bench`: the first requests a fresh isolate serves. Each run starts
//! `wrangler dev` afresh (the test harness) and times the `GET /health` that finds
//! it ready, the next `GET /health` (for scale: the same route, warm), then the
//! first Telegram webhook (verify, parse, decide, store, ack).
//! Medians over RUNS starts. V8's own share (compile and instantiate the wasm) is
//! `scripts/startup.mjs`, printed beside this by `make bench`.
//!
//! Figures, not assertions: timing goals are read here, never asserted in tests.

#[allow(dead_code, unused_imports)]
#[path = "../tests/harness.rs"]
mod harness;

use std::time::{Duration, Instant};

use harness::{dm_update, TestEnv};

const RUNS: usize = 5;

fn median(mut values: Vec<Duration>) -> f64 {
    values.sort();
    values[values.len() / 2].as_secs_f64() * 1e3
}

#[tokio::main]
async fn main() {
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
    println!(
        "first requests on a fresh isolate (median of {RUNS} wrangler dev starts): GET /health {:.1} ms \
         (the next one {:.1} ms), first Telegram webhook {:.1} ms",
        median(health),
        median(warm),
        median(webhook),
    );
}
