//! `make bench`: what acknowledging a webhook costs, measured on the real local
//! runtime (wrangler dev / workerd) against a plain GET in the same run, plus
//! the pure per-inbound work of the channel measured natively.
//!
//! Figures, not assertions: timing goals are read here, never asserted in tests.

#[allow(dead_code, unused_imports)]
#[path = "../tests/harness.rs"]
mod harness;
#[path = "common/pure_core.rs"]
mod pure_core;

use std::time::{Duration, Instant};

use harness::{group_update, TestEnv};

const REQUESTS: usize = 400;

struct Figures {
    label: &'static str,
    latencies: Vec<Duration>,
    workerd_cpu: Duration,
}

impl Figures {
    fn mean(&self) -> Duration {
        self.latencies.iter().sum::<Duration>() / self.latencies.len() as u32
    }

    fn percentile(&self, fraction: f64) -> Duration {
        let mut sorted = self.latencies.clone();
        sorted.sort();
        sorted[((sorted.len() - 1) as f64 * fraction) as usize]
    }

    fn print(&self, baseline: Option<&Figures>) {
        let cpu_per_request = self.workerd_cpu / self.latencies.len() as u32;
        print!(
            "{:<44} mean {:>7.3} ms  p50 {:>7.3} ms  p99 {:>7.3} ms  workerd CPU {:>6.3} ms/req",
            self.label,
            self.mean().as_secs_f64() * 1e3,
            self.percentile(0.5).as_secs_f64() * 1e3,
            self.percentile(0.99).as_secs_f64() * 1e3,
            cpu_per_request.as_secs_f64() * 1e3,
        );
        match baseline {
            Some(base) => println!("  ({:.2}x the GET)", self.mean().as_secs_f64() / base.mean().as_secs_f64()),
            None => println!(),
        }
    }
}

async fn measure<F, Fut>(env: &TestEnv, label: &'static str, mut request: F) -> Figures
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = reqwest::Response>,
{
    for index in 0..40 {
        assert!(request(usize::MAX - index).await.status().is_success(), "{label}: warm-up failed");
    }
    let cpu_before = env.worker.workerd_cpu();
    let mut latencies = Vec::with_capacity(REQUESTS);
    for index in 0..REQUESTS {
        let started = Instant::now();
        let response = request(index).await;
        latencies.push(started.elapsed());
        assert!(response.status().is_success(), "{label}: {}", response.status());
    }
    Figures { label, latencies, workerd_cpu: env.worker.workerd_cpu().saturating_sub(cpu_before) }
}

fn pure_channel_cost() {
    println!(
        "{:<44} {:>7.3} µs per inbound (native; wasm is typically 1.5-3x)",
        "channel receive + checkpoint (pure core)",
        pure_core::channel_cost_per_inbound().as_secs_f64() * 1e6
    );
}

/// Three humans take turns, so a busy room observes instead of engaging.
fn speaker(index: usize) -> (i64, &'static str, bool) {
    [(7, "Ada", false), (8, "Bo", false), (9, "Cy", false)][index % 3]
}

#[tokio::main]
async fn main() {
    pure_channel_cost();
    let env = TestEnv::start_with(&[("COALESCE_DEBOUNCE_MS", "60000")]).await;
    let env = &env;
    // Many members: group messages are observed, so each webhook is pure ingress
    // (verify, parse, decide, store durably) with no model call behind it.
    env.telegram.set_member_count(50);
    let health_url = format!("{}/health", env.worker.base_url);
    let get = measure(env, "GET /health", |_| {
        let request = env.client.get(&health_url);
        async move { request.send().await.expect("GET /health") }
    })
    .await;
    let one = measure(env, "webhook ack, one busy conversation", |index| {
        let update = group_update(1_000_000 + index as i64 % 1_000_000_000, speaker(index), "hello team", false);
        async move { env.telegram_update(&update).await }
    })
    .await;
    let many = measure(env, "webhook ack, 100 conversations", |index| {
        let mut update =
            group_update(2_000_000 + index as i64 % 1_000_000_000, speaker(index / 100), "hello team", false);
        update["message"]["chat"]["id"] = (-1_000 - (index % 100) as i64).into();
        async move { env.telegram_update(&update).await }
    })
    .await;
    println!("{REQUESTS} sequential requests each, after 40 warm-up requests:");
    get.print(None);
    one.print(Some(&get));
    many.print(Some(&get));
    let webhook_cpu = one.workerd_cpu.saturating_sub(get.workerd_cpu) / REQUESTS as u32;
    println!(
        "{:<44} {:>7.3} ms per inbound above a GET (all of workerd: runtime, DO, storage)",
        "extra workerd CPU per webhook",
        webhook_cpu.as_secs_f64() * 1e3
    );
    let wasm = std::fs::metadata("build/index_bg.wasm").map(|meta| meta.len()).unwrap_or(0);
    let gzipped = std::process::Command::new("sh")
        .args(["-c", "gzip -9 -c build/index_bg.wasm | wc -c"])
        .output()
        .ok()
        .and_then(|output| String::from_utf8(output.stdout).ok())
        .and_then(|text| text.trim().parse::<u64>().ok())
        .unwrap_or(0);
    println!("{:<44} {wasm} bytes, {gzipped} bytes gzipped", "worker bundle (build/index_bg.wasm)");
}
