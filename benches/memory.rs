//! `make bench` (second part): hybrid memory search on the local default (the
//! deterministic embedder, vectors in D1 scanned exactly, FTS5, the graph),
//! measured through the admin search API on the real local runtime with 1,000
//! and 10,000 memories, plus the pure exact scan natively.
//!
//! Figures, not assertions.

#[allow(dead_code, unused_imports)]
#[path = "../tests/harness.rs"]
mod harness;

use std::time::{Duration, Instant};

use edgebot::memory::embed::LocalEmbedder;
use edgebot::memory::vector::{encode_vector, scan};
use harness::TestEnv;
use serde_json::json;

const SEARCHES: usize = 30;
const QUERIES: [&str; 5] =
    ["which database did the team choose", "Ada's favourite tea", "deploy key rotation", "birthday in May", "cat"];
const TOPICS: [&str; 10] =
    ["database", "tea", "deploy", "birthday", "cat", "invoice", "holiday", "release", "meeting", "garden"];

/// A varied synthetic memory.
fn memory_text(index: usize) -> String {
    let topic = TOPICS[index % TOPICS.len()];
    format!(
        "Note {index}: the {topic} item number {} mentioned by person {} in week {}",
        index * 7 % 1000,
        index % 97,
        index % 52
    )
}

async fn import(env: &TestEnv, from: usize, to: usize) {
    for start in (from..to).step_by(500) {
        let batch: Vec<_> = (start..(start + 500).min(to))
            .map(|index| {
                let memory_type = ["fact", "event", "preference"][index % 3];
                json!({ "content": memory_text(index), "memory_type": memory_type })
            })
            .collect();
        let (status, body) = env.admin_send(reqwest::Method::POST, "/api/memories", Some(json!(batch))).await;
        assert_eq!(status, 200, "import failed: {body}");
    }
}

async fn search_figures(env: &TestEnv, count: usize) {
    let mut latencies = Vec::with_capacity(SEARCHES);
    for index in 0..SEARCHES + 5 {
        let query = QUERIES[index % QUERIES.len()].replace(' ', "+");
        let started = Instant::now();
        let found = env.admin(&format!("/api/memories?query={query}&limit=10")).await;
        let elapsed = started.elapsed();
        assert!(found.as_array().is_some_and(|found| !found.is_empty()), "a search found nothing");
        if index >= 5 {
            latencies.push(elapsed);
        }
    }
    latencies.sort();
    let mean = latencies.iter().sum::<Duration>() / latencies.len() as u32;
    println!(
        "hybrid search, {count:>6} memories (local default)   mean {:>8.2} ms  p50 {:>8.2} ms  p90 {:>8.2} ms",
        mean.as_secs_f64() * 1e3,
        latencies[latencies.len() / 2].as_secs_f64() * 1e3,
        latencies[latencies.len() * 9 / 10].as_secs_f64() * 1e3,
    );
}

fn pure_scan_figures(count: usize) {
    let embedder = LocalEmbedder::default();
    let stored: Vec<(String, String)> = (0..count)
        .map(|index| (format!("mem-{index}"), encode_vector(&embedder.embed_one(&memory_text(index)))))
        .collect();
    let query = embedder.embed_one(QUERIES[0]);
    let rounds = 20;
    let started = Instant::now();
    for _ in 0..rounds {
        let found = scan(&query, stored.iter().map(|(id, vector)| (id.as_str(), vector)), 20, 0.0);
        assert_eq!(found.len(), 20);
    }
    let each = started.elapsed() / rounds;
    println!("exact cosine scan, {count:>6} memories (native)       {:>8.2} ms per query", each.as_secs_f64() * 1e3);
}

#[tokio::main]
async fn main() {
    pure_scan_figures(1_000);
    pure_scan_figures(10_000);
    let env = TestEnv::start().await;
    import(&env, 0, 1_000).await;
    search_figures(&env, 1_000).await;
    import(&env, 1_000, 10_000).await;
    search_figures(&env, 10_000).await;
}
