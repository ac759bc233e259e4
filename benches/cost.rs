//! `make bench`: what one inbound message costs in Cloudflare operations, for
//! an observed group message, an engaged DM with a plain reply, a turn that
//! starts a branch, and a task a worker does with `run_code` and `browse`,
//! and the price of 1,000 of each at the Workers Paid rates.
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
#[allow(dead_code)]
#[path = "pricing.rs"]
mod pricing;

use std::collections::BTreeMap;
use std::time::Duration;

use harness::{dm_update, group_update, Scripted, TestEnv};
use pricing::{Usage, QUEUE_OPS_PER_MESSAGE, WORKERS_PAID};
use serde_json::{json, Value};

/// What `/api/ops` lists, in its order, as printed.
const COUNTED: [(&str, &str); 21] = [
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
    ("", "workerd CPU ms during the sends (upper bound)"),
];

/// One kind of message, measured.
struct Measured {
    label: &'static str,
    /// Per message: each of [`COUNTED`], workerd CPU last.
    per_message: Vec<f64>,
    /// Per message: the calls the fake Telegram API received, by method (a
    /// count independent of the Worker's own).
    telegram_calls: BTreeMap<String, f64>,
}

impl Measured {
    fn get(&self, name: &str) -> f64 {
        let index = COUNTED.iter().position(|(counted, _)| *counted == name).expect("a counted name");
        self.per_message[index]
    }

    /// The billable quantities. Storage (GB-months) is left to `make simulate`;
    /// the CPU is all of workerd's, local D1 included, so it is an upper bound.
    fn usage(&self) -> Usage {
        let deliveries = self.get("queue_deliveries");
        let queue_operations = self.get("queue_sends") + deliveries + (deliveries - self.get("queue_retries"));
        Usage {
            // Each run_code is a request into its Dynamic Worker too.
            worker_requests: self.get("worker_invocations") + self.get("sandbox_runs"),
            worker_cpu_ms: *self.per_message.last().expect("cpu"),
            do_requests: self.get("do_requests") + self.get("do_websocket_messages") / 20.0,
            do_gb_seconds: self.get("do_request_ms") / 1000.0 * pricing::DO_BILLED_GB,
            do_rows_read: self.get("do_rows_read"),
            do_rows_written: self.get("do_rows_written"),
            d1_rows_read: self.get("d1_rows_read"),
            d1_rows_written: self.get("d1_rows_written"),
            queue_operations,
            dynamic_workers: self.get("sandbox_runs"),
            browser_hours: self.get("browser_ms") / 3_600_000.0,
            ..Usage::default()
        }
    }
}

/// Counts `/api/ops` calls, which count themselves as Worker invocations.
struct Counter<'a> {
    env: &'a TestEnv,
    polls: u64,
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
        Counter { env, polls: 0, cookie: set_cookie.split(';').next().unwrap().to_string() }
    }

    async fn snapshot(&mut self) -> Value {
        self.polls += 1;
        let url = format!("{}/api/ops", self.env.worker.base_url);
        let response = self.env.client.get(url).header("cookie", &self.cookie).send().await.unwrap();
        response.json().await.expect("the operation counts")
    }

    /// Waits until nothing moves but this polling: alarms have run, the
    /// conversation index is written, queue jobs are done.
    async fn settled(&mut self) -> Value {
        let mut last = self.snapshot().await;
        loop {
            tokio::time::sleep(Duration::from_millis(2_500)).await;
            let now = self.snapshot().await;
            let moved = COUNTED.iter().filter(|(name, _)| !name.is_empty()).any(|(name, _)| {
                let expected = u64::from(*name == "worker_invocations");
                now[name].as_u64().unwrap_or(0) - last[name].as_u64().unwrap_or(0) != expected
            });
            if !moved {
                return now;
            }
            last = now;
        }
    }

    /// Runs `send` (which sends `messages` inbound messages and waits for what
    /// they should cause), then waits for the follow-ups, and divides.
    async fn measure<F, Fut>(&mut self, label: &'static str, messages: usize, send: F) -> Measured
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        let before = self.settled().await;
        let polls_before = self.polls;
        let calls_before = self.env.telegram.requests().len();
        let cpu_before = self.env.worker.workerd_cpu();
        send().await;
        let cpu = self.env.worker.workerd_cpu().saturating_sub(cpu_before);
        let after = self.settled().await;
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
        Measured { label, per_message, telegram_calls }
    }
}

const OBSERVED: usize = 60;
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

/// The group scenario is what it says: every message was observed (the first
/// ones are held until the alarm has read the member count).
async fn check_all_observed(env: &TestEnv) {
    let events = harness::wait_for("the held messages to be decided", Duration::from_secs(20), || async {
        let events = env.admin(&format!("/api/channels/telegram:{}/events", harness::GROUP_CHAT)).await;
        let held = events.as_array().is_some_and(|events| events.iter().any(|event| event["decision"] == "held"));
        (!held).then_some(events)
    })
    .await;
    let engaged = events.as_array().expect("events").iter().filter(|event| event["decision"] != "observe").count();
    assert_eq!(engaged, 0, "the group scenario must be observed messages only: {events}");
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

fn print_table(measured: &[Measured]) {
    print!("{:<44}", "per inbound message");
    measured.iter().for_each(|kind| print!("{:>16}", kind.label));
    println!();
    for (index, (_, label)) in COUNTED.iter().enumerate() {
        print!("  {label:<42}");
        measured.iter().for_each(|kind| print!("{:>16.2}", kind.per_message[index]));
        println!();
    }
    println!("price per 1,000 messages (USD, Workers Paid rates checked {}):", pricing::VERIFIED);
    let bills: Vec<_> = measured.iter().map(|kind| WORKERS_PAID.per_thousand(&kind.usage())).collect();
    for (index, (product, _)) in bills[0].lines().iter().enumerate() {
        print!("  {product:<42}");
        bills.iter().for_each(|bill| print!("{:>16.6}", bill.lines()[index].1));
        println!();
    }
    print!("  {:<42}", "total");
    bills.iter().for_each(|bill| print!("{:>16.6}", bill.total()));
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

#[tokio::main]
async fn main() {
    // The worker's page is on loopback, which the fetch guard refuses unless allowed.
    let env = TestEnv::start_with(&[("FETCH_ALLOW_HOSTS", "127.0.0.1")]).await;
    let mut counter = Counter::new(&env).await;
    let observed = counter.measure("observed group", OBSERVED, || observed_group_messages(&env)).await;
    check_all_observed(&env).await;
    let dms = counter.measure("engaged DM", DMS, || engaged_dms(&env)).await;
    let branches = counter.measure("DM + branch", BRANCHES, || branching_dms(&env)).await;
    let tasks = counter.measure("DM + code, page", TASKS, || worker_tasks(&env)).await;
    println!(
        "Operations per inbound, counted by the Worker (GET /api/ops) over {OBSERVED} observed, {DMS} engaged and \
         {BRANCHES} branching messages and {TASKS} worker tasks, follow-ups included:"
    );
    print_table(&[observed, dms, branches, tasks]);
}
