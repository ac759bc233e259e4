//! `make bench`: `run_code`'s overhead on the real local runtime (the Worker
//! Loader under `wrangler dev`), through the operator's route that runs a
//! module exactly as a worker's tool call does: a trivial module, cold (the
//! first run after the Worker starts) and warm, and a 10,000-row CSV kept in
//! the workspace, read and summarised. `ms` is measured by the Worker around
//! the whole call (workspace snapshot, isolate load, run, report); the round
//! trip adds the local HTTP hop.
//!
//! Figures, not assertions.

#[allow(dead_code, unused_imports)]
#[path = "../tests/harness.rs"]
mod harness;

use std::time::Instant;

use harness::TestEnv;
use reqwest::Method;
use serde_json::{json, Value};

const TRIVIAL: &str = "export default async function main() { return 1; }";
const WARM_RUNS: usize = 30;
const COLD_RUNS: usize = 5;
const CSV_RUNS: usize = 10;
const KEY: &str = "telegram:9001";

const WRITE_CSV: &str = "export default async function main({ workspace }) {
  const lines = ['region,product,units,price'];
  const regions = ['north', 'south', 'east', 'west'];
  for (let i = 0; i < 10000; i++) lines.push(`${regions[i % 4]},p${i % 37},${(i * 7) % 50 + 1},${((i * 13) % 1000) / 10}`);
  workspace.write('sales.csv', lines.join('\\n'));
  return lines.length - 1;
}";

const SUMMARISE_CSV: &str = "export default async function main({ workspace }) {
  const [header, ...rows] = workspace.read('sales.csv').split('\\n');
  const totals = {};
  for (const row of rows) {
    const [region, , units, price] = row.split(',');
    totals[region] = (totals[region] || 0) + Number(units) * Number(price);
  }
  return { rows: rows.length, totals };
}";

/// One run: (ms the Worker measured, ms the round trip took, the result).
async fn run(env: &TestEnv, code: &str) -> (f64, f64, String) {
    let started = Instant::now();
    let path = format!("/api/channels/{KEY}/run_code");
    let (status, body): (u16, Value) = env.admin_send(Method::POST, &path, Some(json!({ "code": code }))).await;
    let round_trip = started.elapsed().as_secs_f64() * 1000.0;
    assert_eq!(status, 200, "{body}");
    (body["ms"].as_f64().unwrap_or_default(), round_trip, body["result"].as_str().unwrap_or_default().to_string())
}

fn percentile(values: &[f64], fraction: f64) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[((sorted.len() - 1) as f64 * fraction).round() as usize]
}

fn show(label: &str, runs: &[(f64, f64)]) {
    let worker: Vec<f64> = runs.iter().map(|run| run.0).collect();
    let trip: Vec<f64> = runs.iter().map(|run| run.1).collect();
    println!(
        "{label:<42} median {:>6.1} ms, p90 {:>6.1} ms (round trip median {:.1} ms, p90 {:.1} ms; {} runs)",
        percentile(&worker, 0.5),
        percentile(&worker, 0.9),
        percentile(&trip, 0.5),
        percentile(&trip, 0.9),
        runs.len()
    );
}

#[tokio::main]
async fn main() {
    let mut env = TestEnv::start().await;
    let mut cold = Vec::new();
    for attempt in 0..COLD_RUNS {
        if attempt > 0 {
            env.crash_and_restart().await;
        }
        let (ms, trip, result) = run(&env, TRIVIAL).await;
        assert_eq!(result, "result:\n1");
        cold.push((ms, trip));
    }
    let mut warm = Vec::new();
    for _ in 0..WARM_RUNS {
        let (ms, trip, _) = run(&env, TRIVIAL).await;
        warm.push((ms, trip));
    }
    let (_, _, written) = run(&env, WRITE_CSV).await;
    assert!(written.contains("wrote sales.csv"), "{written}");
    let mut csv = Vec::new();
    let mut last = String::new();
    for _ in 0..CSV_RUNS {
        let (ms, trip, result) = run(&env, SUMMARISE_CSV).await;
        csv.push((ms, trip));
        last = result;
    }
    assert!(last.contains("\"rows\": 10000"), "{last}");
    println!("run_code on the local runtime (Worker Loader under wrangler dev), measured by the Worker:");
    show("run_code, trivial module, cold (first run)", &cold);
    show("run_code, trivial module, warm", &warm);
    show("run_code, 10,000-row CSV summarised", &csv);
}
