//! `make bench`: what one inbound message costs in Cloudflare operations, for
//! an observed group message, an engaged DM with a plain reply, a turn that
//! starts a branch, and a task a worker does with `run_code` and `browse`,
//! and the price of 1,000 of each at the Workers Paid rates.
//!
//! The first three are measured twice: SPACED (many quiet conversations, one
//! message each, every conversation's last activity more than the
//! conversation index's 5 s flush delay before: `INDEX_FLUSH_DELAY_MS` in
//! durable_objects/channel_object.rs `flush_index_soon`), which is what most
//! conversations look like at scale, and BUNCHED (one conversation, messages
//! back to back, so one index write covers many). `make simulate` reads the
//! spaced figures from `target/bench/cost.json`, which this writes.
//!
//! The Worker's own CPU per inbound (its wasm and JS, no runtime or storage)
//! comes from a V8 CPU profile of the isolate over each case's whole window,
//! follow-ups included, less what this bench's own `/api/ops` polls cost.
//!
//! The counts are the Worker's own (`GET /api/ops`, src/ops.rs): each D1 and
//! Durable Object SQL call, request, alarm, queue message and subrequest is
//! counted where the code makes it, in local workerd, where the Worker and its
//! objects share one isolate. Each figure is everything the messages caused,
//! follow-ups included (alarms, the debounced conversation index write, queue
//! jobs, the history mirror), divided by the number of messages.

#[allow(dead_code, unused_imports)]
#[path = "../tests/harness.rs"]
mod harness;
#[path = "cpu/inspector.rs"]
mod inspector;
#[allow(dead_code)]
#[path = "pricing.rs"]
mod pricing;
#[allow(dead_code)]
#[path = "cpu/profile.rs"]
mod profile;
#[allow(dead_code)]
#[path = "common/scale.rs"]
mod scale;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use harness::{dm_update, group_update, Scripted, TestEnv};
use inspector::Inspector;
use pricing::{Usage, QUEUE_OPS_PER_MESSAGE, WORKERS_PAID};
use profile::{Bucket, Profile, WorkerCode};
use serde_json::{json, Value};

const PROJECT_ROOT: &str = env!("CARGO_MANIFEST_DIR");
/// Where `make simulate` reads the figures.
const COST_FILE: &str = "target/bench/cost.json";
/// The conversation index is written this long after an inbound
/// (channel_object.rs INDEX_FLUSH_DELAY_MS): "settled" waits longer than
/// this with nothing moving, so the write is counted in its own case.
const INDEX_FLUSH: Duration = Duration::from_millis(5_000);
const QUIET: Duration = Duration::from_millis(6_500);
/// Polls while waiting for quiet.
const POLL_EVERY: Duration = Duration::from_millis(1_500);

/// What `/api/ops` lists, in its order, as printed.
const COUNTED: [(&str, &str); 25] = [
    ("worker_invocations", "Worker invocations"),
    ("do_requests", "DO requests (fetch, alarm)"),
    ("do_request_ms", "DO request wall ms"),
    ("do_websocket_messages", "DO WebSocket messages"),
    ("do_rows_read", "DO rows read"),
    ("do_rows_written", "DO rows written (alarms incl.)"),
    ("d1_queries", "D1 queries"),
    ("d1_rows_read", "D1 rows read"),
    ("d1_rows_written", "D1 rows written"),
    ("queue_sends", "Queue messages sent"),
    ("queue_deliveries", "Queue deliveries"),
    ("queue_retries", "Queue retries"),
    ("model_calls", "subrequests: model"),
    ("embedding_calls", "subrequests: embeddings"),
    ("platform_calls", "subrequests: platform API"),
    ("tool_fetches", "subrequests: tool fetches"),
    ("vectorize_calls", "Vectorize calls"),
    ("sandbox_runs", "Dynamic Workers (run_code)"),
    ("browser_ms", "browser ms (browse)"),
    ("d1_calls", "D1 round trips (a batch is one)"),
    ("d1_shard_queries", "D1 queries on a shard (D1_SHARDS=2)"),
    ("d1_snapshot_queries", "D1 queries of agent snapshots"),
    ("agent_snapshots", "agent snapshots read"),
    ("", "workerd CPU ms during the sends (upper bound)"),
    ("", "the Worker's own CPU ms (V8 profile)"),
];

/// One kind of message, measured.
struct Measured {
    label: &'static str,
    /// Its key in the cost file.
    key: &'static str,
    messages: usize,
    /// Per message: each of [`COUNTED`], workerd CPU and the Worker's own CPU last.
    per_message: Vec<f64>,
    /// Per message: the calls the fake Telegram API received, by method (a
    /// count independent of the Worker's own).
    telegram_calls: BTreeMap<String, f64>,
}

impl Measured {
    /// As the cost file holds it: counter names, then the two CPU figures.
    fn case(&self) -> scale::Case {
        let mut case = scale::Case::default();
        for ((name, _), value) in COUNTED.iter().zip(&self.per_message) {
            if !name.is_empty() {
                case.0.insert(name.to_string(), *value);
            }
        }
        let count = self.per_message.len();
        case.0.insert("workerd_cpu_ms".into(), self.per_message[count - 2]);
        case.0.insert("worker_cpu_ms".into(), self.per_message[count - 1]);
        case
    }

    /// The billable quantities (scale.rs, as `make simulate` prices them).
    /// Storage (GB-months) is not measured; the CPU is the Worker's own.
    fn usage(&self) -> Usage {
        self.case().usage()
    }
}

/// Counts `/api/ops` calls, which count themselves as Worker invocations.
struct Counter<'a> {
    env: &'a TestEnv,
    polls: u64,
    /// The Worker's isolate, profiled over each case.
    inspector: Inspector,
    code: WorkerCode,
    /// The Worker's own CPU one `/api/ops` poll costs (µs), taken off each case.
    poll_cpu_us: f64,
    /// An operator session's cookie: a poll with it costs one Worker
    /// invocation and nothing else (a bearer token is checked against the
    /// sign-in limiter, a Durable Object request per poll).
    cookie: String,
}

impl<'a> Counter<'a> {
    async fn new(env: &'a TestEnv) -> Counter<'a> {
        let url = format!("{}/api/session", env.worker.base_url);
        let response = env.client.post(url).json(&json!({ "token": harness::ADMIN_TOKEN })).send().await.unwrap();
        assert!(response.status().is_success(), "the admin token signs in");
        let set_cookie = response.headers().get("set-cookie").expect("a session cookie").to_str().unwrap();
        let cookie = set_cookie.split(';').next().unwrap().to_string();
        let code =
            WorkerCode::load(&Path::new(PROJECT_ROOT).join("build/index_bg.names.wasm"), Path::new(PROJECT_ROOT));
        let mut inspector = Inspector::connect(env.worker.inspector_port).await;
        inspector.call("Profiler.enable", json!({}));
        inspector.call("Profiler.setSamplingInterval", json!({ "interval": 100 }));
        let mut counter = Counter { env, polls: 0, inspector, code, poll_cpu_us: 0.0, cookie };
        // What a poll costs the Worker, so each case's own CPU leaves it out.
        const POLLS: u64 = 60;
        for _ in 0..20 {
            counter.snapshot().await;
        }
        counter.inspector.call("Profiler.start", json!({}));
        for _ in 0..POLLS {
            counter.snapshot().await;
        }
        counter.poll_cpu_us = counter.stop_profile() / POLLS as f64;
        counter
    }

    /// Stops the profiler: the Worker's own CPU (wasm + JS) since it started, µs.
    fn stop_profile(&mut self) -> f64 {
        let mut result = self.inspector.call("Profiler.stop", json!({}));
        let profile: Profile = serde_json::from_value(result["profile"].take()).expect("a CPU profile");
        let summary = profile::summarize(&profile, &self.code);
        summary.get(Bucket::WorkerWasm) + summary.get(Bucket::WorkerJs)
    }

    async fn snapshot(&mut self) -> Value {
        self.polls += 1;
        let url = format!("{}/api/ops", self.env.worker.base_url);
        let response = self.env.client.get(url).header("cookie", &self.cookie).send().await.unwrap();
        response.json().await.expect("the operation counts")
    }

    /// Waits until nothing but this polling has moved for [`QUIET`], longer
    /// than the conversation index's flush delay: alarms have run, the index
    /// is written, queue jobs are done.
    async fn settled(&mut self) -> Value {
        const { assert!(QUIET.as_millis() > INDEX_FLUSH.as_millis()) };
        let mut last = self.snapshot().await;
        let mut quiet_since = Instant::now();
        loop {
            tokio::time::sleep(POLL_EVERY).await;
            let now = self.snapshot().await;
            let moved = COUNTED.iter().filter(|(name, _)| !name.is_empty()).any(|(name, _)| {
                let expected = u64::from(*name == "worker_invocations");
                now[name].as_u64().unwrap_or(0) - last[name].as_u64().unwrap_or(0) != expected
            });
            if moved {
                quiet_since = Instant::now();
            } else if quiet_since.elapsed() >= QUIET {
                return now;
            }
            last = now;
        }
    }

    /// Runs `send` (which sends `messages` inbound messages and waits for what
    /// they should cause), then waits for the follow-ups, and divides.
    async fn measure<F, Fut>(
        &mut self,
        (label, key): (&'static str, &'static str),
        messages: usize,
        send: F,
    ) -> Measured
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        let before = self.settled().await;
        let polls_before = self.polls;
        let calls_before = self.env.telegram.requests().len();
        let cpu_before = self.env.worker.workerd_cpu();
        self.inspector.call("Profiler.start", json!({}));
        send().await;
        let cpu = self.env.worker.workerd_cpu().saturating_sub(cpu_before);
        let after = self.settled().await;
        let own_cpu_us = self.stop_profile() - (self.polls - polls_before) as f64 * self.poll_cpu_us;
        let mut telegram_calls = BTreeMap::new();
        for call in &self.env.telegram.requests()[calls_before..] {
            let method = call.path.rsplit('/').next().unwrap_or_default().to_string();
            *telegram_calls.entry(method).or_insert(0.0) += 1.0 / messages as f64;
        }
        let own_polls = (self.polls - polls_before) as f64;
        let mut per_message: Vec<f64> = COUNTED
            .iter()
            .filter(|(name, _)| !name.is_empty())
            .map(|(name, _)| {
                let delta = (after[name].as_u64().unwrap_or(0) - before[name].as_u64().unwrap_or(0)) as f64;
                let delta = if *name == "worker_invocations" { delta - own_polls } else { delta };
                delta / messages as f64
            })
            .collect();
        per_message.push(cpu.as_secs_f64() * 1e3 / messages as f64);
        per_message.push(own_cpu_us.max(0.0) / 1e3 / messages as f64);
        Measured { label, key, messages, per_message, telegram_calls }
    }
}

const OBSERVED: usize = 60;
/// Quiet conversations for the spaced cases: one message each.
const SPACED_GROUPS: usize = 40;
const SPACED_DMS: usize = 16;
const SPACED_BRANCHES: usize = 8;
/// The spaced cases' chats: groups from here down, DMs from here up.
const FIRST_SPACED_GROUP: i64 = -30_000;
const FIRST_SPACED_DM: i64 = 60_000;
const DMS: usize = 20;
const BRANCHES: usize = 8;
const TASKS: usize = 3;
/// The worker's system prompt starts so (the fake model routes by it).
const WORKER: &str = "You are a worker";

/// A busy group (50 members, three people talking): each message is observed.
async fn observed_group_messages(env: &TestEnv) {
    env.telegram.set_member_count(50);
    let speakers = [(7, "Ada", false), (8, "Bo", false), (9, "Cy", false)];
    for index in 0..OBSERVED {
        let update = group_update(10_000 + index as i64, speakers[index % 3], "hello team, how is it going", false);
        assert!(env.telegram_update(&update).await.status().is_success());
    }
}

/// A DM, answered with one plain reply, one message at a time.
async fn engaged_dms(env: &TestEnv) {
    let sent_before = env.telegram.calls("sendMessage").len();
    for index in 0..DMS {
        env.llm.reply(&format!("Here is answer {index}."));
        let update = dm_update(20_000 + index as i64, 81, "a quick question");
        assert!(env.telegram_update(&update).await.status().is_success());
        env.wait_for_sent(sent_before + index + 1).await;
    }
}

/// A DM whose turn starts a branch: the channel replies at once, the branch
/// (a queue job) thinks, and its conclusion retriggers the channel.
async fn branching_dms(env: &TestEnv) {
    let sent_before = env.telegram.calls("sendMessage").len();
    for index in 0..BRANCHES {
        env.llm.push(Scripted::ToolCalls(vec![
            ("branch".into(), json!({"question": "what is six times seven?"})),
            ("reply".into(), json!({"content": "Let me think about that."})),
        ]));
        env.llm.push(Scripted::Text("Six times seven is 42.".into()));
        env.llm.reply("It's 42.");
        let update = dm_update(30_000 + index as i64, 91, "what is 6x7? think carefully");
        assert!(env.telegram_update(&update).await.status().is_success());
        env.wait_for_sent(sent_before + 2 * (index + 1)).await;
    }
}

/// A DM that hands a task to a worker, which runs code and browses a page
/// (served on loopback) before it reports; the channel then answers.
async fn worker_tasks(env: &TestEnv) {
    env.telegram.serve_file("/public/prices.html", b"<p id=p></p><script>p.textContent='42 EUR'</script>".to_vec());
    let page = format!("{}/public/prices.html", env.telegram.base_url);
    let sent_before = env.telegram.calls("sendMessage").len();
    for index in 0..TASKS {
        let calls = |list: Vec<(&str, Value)>| {
            Scripted::ToolCalls(list.into_iter().map(|(name, arguments)| (name.to_string(), arguments)).collect())
        };
        env.llm.push(calls(vec![
            // The task names the page: a host the person gave (containment lets it through).
            ("spawn_worker", json!({ "task": format!("check the price at {page}"), "interactive": false })),
            ("reply", json!({ "content": "On it." })),
        ]));
        let code = "export default () => [3, 4].map((n) => n * n).reduce((a, b) => a + b)";
        env.llm.push_for(WORKER, calls(vec![("run_code", json!({ "code": code }))]));
        env.llm.push_for(WORKER, calls(vec![("browse", json!({ "url": page }))]));
        env.llm.push_for(WORKER, calls(vec![("set_status", json!({ "kind": "outcome", "text": "25; 42 EUR" }))]));
        env.llm.reply("It is 42 EUR.");
        let update = dm_update(40_000 + index as i64, 101, "check the price");
        assert!(env.telegram_update(&update).await.status().is_success());
        env.wait_for_sent(sent_before + 2 * (index + 1)).await;
    }
}

fn spaced_group(index: usize) -> i64 {
    FIRST_SPACED_GROUP - index as i64
}

/// One observed message in each of the spaced groups (`round` keeps update
/// ids apart): each group's member count is known, so each is observed.
async fn one_message_per_group(env: &TestEnv, round: i64) {
    env.telegram.set_member_count(50);
    for index in 0..SPACED_GROUPS {
        let mut update = group_update(round * 1_000 + index as i64, (7, "Ada", false), "hello team", false);
        update["message"]["chat"]["id"] = spaced_group(index).into();
        assert!(env.telegram_update(&update).await.status().is_success());
    }
}

/// One answered DM in each of the first `count` spaced DM chats, one after another.
async fn one_turn_per_dm(env: &TestEnv, round: i64, count: usize) {
    let sent_before = env.telegram.calls("sendMessage").len();
    for index in 0..count {
        env.llm.reply(&format!("Here is answer {index}."));
        let update = dm_update(round * 1_000 + index as i64, FIRST_SPACED_DM + index as i64, "a quick question");
        assert!(env.telegram_update(&update).await.status().is_success());
        env.wait_for_sent(sent_before + index + 1).await;
    }
}

/// A branching turn in each of the first spaced DM chats, one after another.
async fn one_branch_per_dm(env: &TestEnv, round: i64) {
    let sent_before = env.telegram.calls("sendMessage").len();
    for index in 0..SPACED_BRANCHES {
        env.llm.push(Scripted::ToolCalls(vec![
            ("branch".into(), json!({"question": "what is six times seven?"})),
            ("reply".into(), json!({"content": "Let me think about that."})),
        ]));
        env.llm.push(Scripted::Text("Six times seven is 42.".into()));
        env.llm.reply("It's 42.");
        let update = dm_update(round * 1_000 + index as i64, FIRST_SPACED_DM + index as i64, "what is 6x7? think");
        assert!(env.telegram_update(&update).await.status().is_success());
        env.wait_for_sent(sent_before + 2 * (index + 1)).await;
    }
}

/// Every message of `chat` was observed (the held ones decided since).
async fn check_observed(env: &TestEnv, chat: i64) {
    let events = harness::wait_for("the held messages to be decided", Duration::from_secs(20), || async {
        let events = env.admin(&format!("/api/channels/telegram:{chat}/events")).await;
        let held = events.as_array().is_some_and(|events| events.iter().any(|event| event["decision"] == "held"));
        (!held).then_some(events)
    })
    .await;
    let engaged = events.as_array().expect("events").iter().filter(|event| event["decision"] != "observe").count();
    assert_eq!(engaged, 0, "the group cases must be observed messages only: {events}");
}

fn print_table(measured: &[Measured]) {
    print!("{:<44}", "per inbound message");
    measured.iter().for_each(|kind| print!("{:>14}", kind.label));
    println!();
    print!("  {:<42}", "(messages measured)");
    measured.iter().for_each(|kind| print!("{:>14}", kind.messages));
    println!();
    for (index, (_, label)) in COUNTED.iter().enumerate() {
        print!("  {label:<42}");
        measured.iter().for_each(|kind| print!("{:>14.2}", kind.per_message[index]));
        println!();
    }
    println!("price per 1,000 messages (USD, Workers Paid rates checked {}):", pricing::VERIFIED);
    let bills: Vec<_> = measured.iter().map(|kind| WORKERS_PAID.per_thousand(&kind.usage())).collect();
    for (index, (product, _)) in bills[0].lines().iter().enumerate() {
        print!("  {product:<42}");
        bills.iter().for_each(|bill| print!("{:>14.6}", bill.lines()[index].1));
        println!();
    }
    print!("  {:<42}", "total");
    bills.iter().for_each(|bill| print!("{:>14.6}", bill.total()));
    println!();
    println!("calls the fake Telegram API received, per message (to check the Worker's platform count):");
    for kind in measured {
        let calls: Vec<String> =
            kind.telegram_calls.iter().map(|(method, count)| format!("{method} {count:.2}")).collect();
        println!("  {:<42}{}", kind.label, calls.join(", "));
    }
    println!(
        "  (queue operations: write + read + delete per delivery, {QUEUE_OPS_PER_MESSAGE} for one clean delivery; \
         DO duration from request wall time at {} GB; storage and model tokens not included)",
        pricing::DO_BILLED_GB
    );
}

/// One line of a command's output, or "" when it cannot run.
fn command_line(program: &str, arguments: &[&str]) -> String {
    std::process::Command::new(program)
        .args(arguments)
        .output()
        .ok()
        .and_then(|output| String::from_utf8(output.stdout).ok())
        .map(|text| text.trim().to_string())
        .unwrap_or_default()
}

/// Writes the figures where `make simulate` reads them, with when, where and on what build.
/// `snapshot_statements`: the statements of one agent snapshot read, over the whole run.
fn write_cost_file(measured: &[Measured], snapshot_statements: f64) {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| info.lines().find(|line| line.starts_with("model name")).map(str::to_string))
        .and_then(|line| line.split(':').nth(1).map(|name| name.trim().to_string()))
        .unwrap_or_default();
    let machine = format!(
        "{} ({} cores, {}), {}",
        cpu,
        std::thread::available_parallelism().map_or(0, |cores| cores.get()),
        command_line("uname", &["-sr"]),
        "local workerd (wrangler dev); the Worker and its objects share one isolate"
    );
    let cases: serde_json::Map<String, Value> = measured
        .iter()
        .map(|kind| {
            let per_message: serde_json::Map<String, Value> =
                kind.case().0.into_iter().map(|(name, value)| (name, json!(value))).collect();
            (
                kind.key.to_string(),
                json!({ "label": kind.label, "messages": kind.messages, "per_message": per_message }),
            )
        })
        .collect();
    let file = json!({
        "measured_at": command_line("date", &["-u", "+%Y-%m-%dT%H:%M:%SZ"]),
        "machine": machine,
        "build": command_line("git", &["rev-parse", "--short", "HEAD"]),
        "index_flush_ms": INDEX_FLUSH.as_millis() as u64,
        "snapshot_statements": snapshot_statements,
        "cases": cases,
    });
    let path = Path::new(PROJECT_ROOT).join(COST_FILE);
    std::fs::create_dir_all(path.parent().expect("a directory")).expect("create target/bench");
    std::fs::write(&path, serde_json::to_string_pretty(&file).expect("json")).expect("write the cost file");
    println!("figures written to {COST_FILE} (read by `make simulate`)");
}

#[tokio::main]
async fn main() {
    // The worker's page is on loopback, which the fetch guard refuses unless allowed.
    // Two D1 shards, so each statement goes where it would at scale (with
    // one, the shared database also holds conversations' rows), and
    // The shared reads kept 30 s, as production sets them.
    let env = TestEnv::start_with(&[
        ("FETCH_ALLOW_HOSTS", "127.0.0.1"),
        ("D1_SHARDS", "2"),
        ("SHARED_READS_FRESH_MS", "30000"),
    ])
    .await;
    let mut counter = Counter::new(&env).await;
    // The quiet conversations' first contact (a new group's member count, a
    // new person), not measured: the spaced cases are their later messages.
    one_message_per_group(&env, 100).await;
    one_turn_per_dm(&env, 101, SPACED_DMS).await;
    let spaced_observed =
        counter.measure(("obs spaced", "observed_spaced"), SPACED_GROUPS, || one_message_per_group(&env, 102)).await;
    for index in 0..SPACED_GROUPS {
        check_observed(&env, spaced_group(index)).await;
    }
    let spaced_dms =
        counter.measure(("DM spaced", "engaged_spaced"), SPACED_DMS, || one_turn_per_dm(&env, 103, SPACED_DMS)).await;
    let spaced_branches =
        counter.measure(("branch spaced", "branch_spaced"), SPACED_BRANCHES, || one_branch_per_dm(&env, 104)).await;
    let observed =
        counter.measure(("obs bunched", "observed_bunched"), OBSERVED, || observed_group_messages(&env)).await;
    check_observed(&env, harness::GROUP_CHAT).await;
    let dms = counter.measure(("DM bunched", "engaged_bunched"), DMS, || engaged_dms(&env)).await;
    let branches = counter.measure(("branch bunch", "branch_bunched"), BRANCHES, || branching_dms(&env)).await;
    let tasks = counter.measure(("code, page", "task_bunched"), TASKS, || worker_tasks(&env)).await;
    println!(
        "Operations per inbound, counted by the Worker (GET /api/ops), follow-ups included. Spaced: {SPACED_GROUPS} \
         quiet groups, {SPACED_DMS} quiet DMs, {SPACED_BRANCHES} of them branching, one message each, every \
         conversation quiet for over the index's {} s flush before. Bunched: {OBSERVED} observed in one group, \
         {DMS} DMs and {BRANCHES} branches in one chat each, back to back; {TASKS} worker tasks.",
        INDEX_FLUSH.as_secs()
    );
    let measured = [spaced_observed, observed, spaced_dms, dms, spaced_branches, branches, tasks];
    print_table(&measured);
    let totals = counter.snapshot().await;
    let count = |name: &str| totals[name].as_f64().unwrap_or(0.0);
    let snapshot_statements = count("d1_snapshot_queries") / count("agent_snapshots").max(1.0);
    println!("An agent snapshot read (per isolate and agent, every SHARED_READS_FRESH_MS): {snapshot_statements:.1} D1 statements");
    write_cost_file(&measured, snapshot_statements);
}
