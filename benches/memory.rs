//! `make bench` (second part): the memory store on the local default (the
//! deterministic embedder, vectors in D1, FTS5, the graph) measured through the
//! admin API on the real local runtime with 1,000 and 10,000 memories: what a
//! write costs (a 500-memory import, a single save, a delete), what a hybrid
//! search costs, and where known targets rank among many distractors that share
//! their other words (recall). Plus the pure vector scan natively.
//!
//! Figures, not assertions.

#[allow(dead_code, unused_imports)]
#[path = "../tests/harness.rs"]
mod harness;

use std::time::{Duration, Instant};

use edgebot::memory::embed::LocalEmbedder;
use edgebot::memory::sketch::{coarse_rank, encode_sketch, SketchQuery};
use edgebot::memory::vector::{encode_vector, scan};
use harness::TestEnv;
use reqwest::Method;
use serde_json::{json, Value};

const SEARCHES: usize = 30;
const WRITES: usize = 10;
const IMPORT_BATCH: usize = 500;
const QUERIES: [&str; 5] =
    ["which database did the team choose", "Ada's favourite tea", "deploy key rotation", "birthday in May", "cat"];
const TOPICS: [&str; 10] =
    ["database", "tea", "deploy", "birthday", "cat", "invoice", "holiday", "release", "meeting", "garden"];

/// Memories with a known query each, imported among the distractors. Each
/// query shares its other words with many distractors and only a rare word with
/// its target. The inflected query matches no stored word exactly (full text
/// does not stem), so only the vectors' word pieces can find its target.
const TARGETS: [(&str, &str, &str); 4] = [
    ("rare word", "Bo spent his honeymoon in Zanzibar", "which item did the person mention in the week about zanzibar"),
    (
        "rare word, numbers",
        "Bo spent his honeymoon in Zanzibar",
        "which database item did person 5 mention in week 3 about zanzibar",
    ),
    (
        "rare phrase",
        "We agreed on a deploy freeze before the holiday release",
        "the deploy freeze item mentioned by person 8 in week 4",
    ),
    (
        "inflected rare word",
        "Bo spent his honeymoon in Zanzibar",
        "the honeymoons item mentioned by person 5 in week 3",
    ),
];
/// Distractors close to the first query: its common words and nothing else,
/// padded to different lengths, so both retrievers rank the same ones first.
const NEAR_DISTRACTORS: usize = 30;

fn near_distractor(index: usize) -> String {
    format!("The person mentioned the item in the week{}", " again".repeat(index))
}

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

async fn import_batch(env: &TestEnv, memories: Vec<Value>) -> Duration {
    let started = Instant::now();
    let (status, body) = env.admin_send(Method::POST, "/api/memories", Some(json!(memories))).await;
    assert_eq!(status, 200, "import failed: {body}");
    started.elapsed()
}

/// Imports the distractors `from..to` in batches of 500, printing what the
/// first batch and the last batch cost.
async fn import(env: &TestEnv, from: usize, to: usize) {
    let starts: Vec<usize> = (from..to).step_by(IMPORT_BATCH).collect();
    for (position, start) in starts.iter().enumerate() {
        let batch: Vec<Value> = (*start..(start + IMPORT_BATCH).min(to))
            .map(|index| {
                let memory_type = ["fact", "event", "preference"][index % 3];
                json!({ "content": memory_text(index), "memory_type": memory_type })
            })
            .collect();
        let size = batch.len();
        let elapsed = import_batch(env, batch).await;
        if position == 0 || position == starts.len() - 1 {
            println!(
                "{:<52} {:>8.1} ms",
                format!("import of {size} memories into a store of {start}"),
                elapsed.as_secs_f64() * 1e3
            );
        }
    }
}

/// A single save (a one-memory import) and a delete, each the mean of several.
async fn write_figures(env: &TestEnv, count: usize) {
    let mut saves = Duration::ZERO;
    let mut deletes = Duration::ZERO;
    for round in 0..WRITES {
        let content = format!("Single save {round} at {count}: the tea item of person {round}");
        saves += import_batch(env, vec![json!({ "content": content, "memory_type": "fact" })]).await;
        let found = env.admin("/api/memories?mode=recent&limit=1").await;
        let id = found[0]["id"].as_str().expect("the saved memory").to_string();
        let started = Instant::now();
        let (status, _) = env.admin_send(Method::DELETE, &format!("/api/memories/{id}"), None).await;
        assert_eq!(status, 200);
        deletes += started.elapsed();
    }
    let mean = |total: Duration| total.as_secs_f64() * 1e3 / WRITES as f64;
    println!("{:<52} {:>8.1} ms", format!("single save (one-memory import), {count} memories"), mean(saves));
    println!("{:<52} {:>8.1} ms", format!("delete, {count} memories"), mean(deletes));
}

async fn search_figures(env: &TestEnv, count: usize) {
    let mut latencies = Vec::with_capacity(SEARCHES);
    let mut cpu = Duration::ZERO;
    for index in 0..SEARCHES + 5 {
        let query = QUERIES[index % QUERIES.len()].replace(' ', "+");
        let cpu_before = env.worker.workerd_cpu();
        let started = Instant::now();
        let found = env.admin(&format!("/api/memories?query={query}&limit=10")).await;
        let elapsed = started.elapsed();
        assert!(found.as_array().is_some_and(|found| !found.is_empty()), "a search found nothing");
        if index >= 5 {
            latencies.push(elapsed);
            cpu += env.worker.workerd_cpu().saturating_sub(cpu_before);
        }
    }
    latencies.sort();
    let mean = latencies.iter().sum::<Duration>() / latencies.len() as u32;
    println!(
        "hybrid search, {count:>6} memories (local default)   mean {:>8.2} ms  p50 {:>8.2} ms  p90 {:>8.2} ms  \
         workerd CPU {:>6.1} ms per search",
        mean.as_secs_f64() * 1e3,
        latencies[latencies.len() / 2].as_secs_f64() * 1e3,
        latencies[latencies.len() * 9 / 10].as_secs_f64() * 1e3,
        cpu.as_secs_f64() * 1e3 / SEARCHES as f64,
    );
}

/// Imports the targets (once) and prints where each ranks in a hybrid search
/// for its query, of the first 10 results.
async fn recall_figures(env: &TestEnv, count: usize, imported: &mut bool) {
    if !*imported {
        let mut contents: Vec<&str> = TARGETS.iter().map(|(_, content, _)| *content).collect();
        contents.dedup();
        let targets = contents
            .iter()
            .map(|content| content.to_string())
            .chain((0..NEAR_DISTRACTORS).map(near_distractor))
            .map(|content| json!({ "content": content, "memory_type": "fact" }))
            .collect();
        import_batch(env, targets).await;
        *imported = true;
    }
    let mut ranks = Vec::new();
    for (label, content, query) in TARGETS {
        let found = env.admin(&format!("/api/memories?query={}&limit=10", query.replace(' ', "+"))).await;
        let rank = found
            .as_array()
            .and_then(|found| found.iter().position(|memory| memory["content"] == content))
            .map_or("not in top 10".to_string(), |position| (position + 1).to_string());
        ranks.push(format!("{label}: {rank}"));
    }
    println!(
        "{:<52} {}",
        format!("recall, target's rank among {count}+{NEAR_DISTRACTORS} distractors"),
        ranks.join(", ")
    );
}

/// The pure vector search natively: the exact scan over every stored vector
/// (what the local default did before sketches), and the sketch pass over
/// packed records as D1 returns them plus the exact re-rank of its short list.
fn pure_scan_figures(count: usize) {
    let embedder = LocalEmbedder::default();
    let texts: Vec<String> = (0..count).map(memory_text).collect();
    let stored: Vec<(String, String)> = texts
        .iter()
        .enumerate()
        .map(|(index, text)| (index.to_string(), encode_vector(&embedder.embed_one(text))))
        .collect();
    let packed: Vec<String> = texts
        .chunks(2048)
        .enumerate()
        .map(|(chunk, texts)| {
            let records = texts.iter().enumerate().map(|(offset, text)| {
                format!("{}:{}", chunk * 2048 + offset, encode_sketch(&embedder.embed_one(text)))
            });
            records.collect::<Vec<_>>().join(",")
        })
        .collect();
    let query = embedder.embed_one(QUERIES[0]);
    let rounds = 20;
    let started = Instant::now();
    for _ in 0..rounds {
        let found = scan(&query, stored.iter().map(|(id, vector)| (id.as_str(), vector)), 20, 0.0);
        assert_eq!(found.len(), 20);
    }
    let exact = started.elapsed() / rounds;
    let started = Instant::now();
    for _ in 0..rounds {
        let short_list = coarse_rank(&SketchQuery::new(&query), packed.iter().map(String::as_str), 60);
        let candidates = short_list.iter().map(|seq| (stored[*seq as usize].0.as_str(), &stored[*seq as usize].1));
        assert_eq!(scan(&query, candidates, 20, 0.0).len(), 20);
    }
    let sketched = started.elapsed() / rounds;
    println!(
        "vector search, {count:>6} memories (native)   exact scan {:>6.2} ms   sketches + re-rank {:>6.2} ms per query",
        exact.as_secs_f64() * 1e3,
        sketched.as_secs_f64() * 1e3
    );
}

#[tokio::main]
async fn main() {
    pure_scan_figures(1_000);
    pure_scan_figures(10_000);
    let env = TestEnv::start().await;
    let mut targets_imported = false;
    import(&env, 0, 1_000).await;
    recall_figures(&env, 1_000, &mut targets_imported).await;
    write_figures(&env, 1_000).await;
    search_figures(&env, 1_000).await;
    import(&env, 1_000, 10_000).await;
    write_figures(&env, 10_000).await;
    search_figures(&env, 10_000).await;
    recall_figures(&env, 10_000, &mut targets_imported).await;
}
