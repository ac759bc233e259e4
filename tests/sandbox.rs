//! `run_code` (issue 34): a worker's JavaScript runs in a fresh Worker Loader
//! isolate in local workerd, over the conversation's workspace; what it
//! returns reaches the model, and every hostile run (an endless loop, memory
//! bombs, an output flood, a fetch, reaching for env and secrets, another
//! conversation's files, waiting forever) ends as an `error: …` tool result with the worker
//! going on to report to the person.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::{dm_update, wait_for, Scripted, TestEnv, TELEGRAM_TOKEN};
use crate::workers::{spawn, status, tool_results, worker_requests, WORKER};

const CSV: &str = "region,sales\nnorth,120\nsouth,80\neast,45\n";

fn run(code: &str) -> Scripted {
    Scripted::ToolCalls(vec![("run_code".into(), json!({ "code": code }))])
}

/// A Telegram DM carrying a document.
fn dm_with_document(update_id: i64, chat_id: i64, file_id: &str, name: &str, caption: &str) -> Value {
    let mut update = dm_update(update_id, chat_id, "");
    let message = update["message"].as_object_mut().unwrap();
    message.remove("text");
    message.insert("caption".into(), json!(caption));
    message.insert("document".into(), json!({ "file_id": file_id, "file_unique_id": file_id, "file_name": name }));
    update
}

/// Waits for the person to get `text` and returns the worker's last request.
async fn outcome_reaches_the_person(env: &TestEnv, text: &str) -> Value {
    wait_for("the outcome", Duration::from_secs(90), || async {
        env.telegram.calls("sendMessage").iter().any(|call| call["text"] == text).then_some(())
    })
    .await;
    worker_requests(env).last().cloned().unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_computes_with_run_code_and_the_result_reaches_the_model_and_the_person() {
    let env = TestEnv::start_with(&[("LLM_TIMEOUT_MS", "10000")]).await;
    env.llm.push(spawn("add the squares of 1 to 100", false, "Computing."));
    env.llm.push_for(
        WORKER,
        run("export default async function main() {\n  let sum = 0;\n  for (let n = 1; n <= 100; n++) sum += n * n;\n  \
             console.log('added', 100, 'squares');\n  return { sum };\n}"),
    );
    env.llm.push_for(WORKER, status("outcome", "The sum of the squares is 338350."));
    env.llm.answer_always(Scripted::Reply("The sum of the squares of 1 to 100 is 338350.".into()));
    env.telegram_update(&dm_update(1, 301, "what is the sum of the squares of 1 to 100?")).await;
    let last = outcome_reaches_the_person(&env, "The sum of the squares of 1 to 100 is 338350.").await;
    let results = tool_results(&last);
    assert_eq!(results[0], "console:\nadded 100 squares\nresult:\n{\n  \"sum\": 338350\n}", "{results:?}");
    let ops = env.admin("/api/ops").await;
    assert!(ops["sandbox_runs"].as_u64().unwrap_or_default() >= 1, "{ops}");
    // The operator's route runs a module the same way.
    let code = json!({ "code": "export default () => [1, 2].map((n) => n * 21)" });
    let (status, body) = env.admin_send(reqwest::Method::POST, "/api/channels/telegram:301/run_code", Some(code)).await;
    assert_eq!((status, body["result"].as_str()), (200, Some("result:\n[\n  21,\n  42\n]")), "{body}");
    let anonymous = env.post("/api/channels/telegram:301/run_code", &[], b"{}".to_vec()).await;
    assert_eq!(anonymous.status(), 401);
}

/// Counts the connections a loopback server accepts.
pub(crate) async fn loopback_server() -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = accepted.clone();
    tokio::spawn(async move {
        while let Ok((_socket, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
        }
    });
    (format!("http://{address}/steal"), accepted)
}

#[tokio::test(flavor = "multi_thread")]
async fn hostile_runs_end_as_tool_errors_and_the_worker_goes_on() {
    let env = TestEnv::start_with(&[("LLM_TIMEOUT_MS", "10000"), ("SANDBOX_WALL_MS", "5000")]).await;
    let (url, accepted) = loopback_server().await;
    env.llm.push(spawn("try the sandbox's walls", false, "Trying."));
    let cases = [
        // An endless loop: the loop guard stops it.
        "export default async function main() { while (true) {} }".to_string(),
        // Memory bombs that the runtime refuses in one allocation.
        "export default async function main() { let s = 'x'; for (;;) s += s; }".to_string(),
        "export default async function main() { return new ArrayBuffer(64 * 1024 ** 3).byteLength; }".to_string(),
        // An output flood: 10 MB of console.
        "export default async function main() {\n  const line = 'z'.repeat(1000);\n  \
         for (let i = 0; i < 10000; i++) console.log(line);\n  throw new Error('flooded');\n}"
            .to_string(),
        // The network: no request may leave.
        format!("export default async function main() {{ return (await fetch({url:?})).status; }}"),
        // The parent's env, process.env, globals.
        "export default async function main() {\n  console.log(JSON.stringify({ process: typeof process === 'object' \
         ? Object.keys(process.env || {{}}) : null, globals: Object.keys(globalThis).filter((key) => /KEY|TOKEN|SECRET/i.test(key)) }));\n  \
         return env.OPENAI_API_KEY;\n}"
            .replace("{{}}", "{}"),
        // Not even a module.
        "export default async function main() { return (; }".to_string(),
        // Waiting forever: the wall time ends it.
        "export default async function main() { await new Promise((resolve) => setTimeout(resolve, 600000)); }"
            .to_string(),
    ];
    for code in &cases {
        env.llm.push_for(WORKER, run(code));
    }
    env.llm.push_for(WORKER, status("outcome", "Every attempt was stopped."));
    env.llm.answer_always(Scripted::Reply("The sandbox held: every attempt was stopped.".into()));
    env.telegram_update(&dm_update(1, 302, "try to break out of the sandbox")).await;
    let last = outcome_reaches_the_person(&env, "The sandbox held: every attempt was stopped.").await;
    let results = tool_results(&last);
    assert_eq!(results.len(), cases.len(), "one result a run");
    for (code, result) in cases.iter().zip(&results) {
        assert!(result.starts_with("error: "), "{code}\n=> {}", &result[..result.len().min(400)]);
    }
    assert!(results[0].contains("loop"), "{}", results[0]);
    assert!(results[1].contains("RangeError") && results[1].contains("string length"), "{}", results[1]);
    assert!(results[2].contains("RangeError"), "{}", results[2]);
    let flood = &results[3];
    assert!(flood.starts_with("error: the code threw Error: flooded"), "{}", &flood[..200]);
    assert!(flood.chars().count() <= 50_200, "capped: {}", flood.chars().count());
    assert!(flood.contains("[console cut: 9"), "says how much was cut");
    assert!(results[4].contains("not permitted to access the internet"), "{}", results[4]);
    assert_eq!(accepted.load(Ordering::SeqCst), 0, "no request left the sandbox");
    assert!(results[5].contains("ReferenceError: env is not defined"), "{}", results[5]);
    assert!(results[5].contains("\"process\":[]") || results[5].contains("\"process\":null"), "{}", results[5]);
    assert!(results[5].contains("\"globals\":[]"), "{}", results[5]);
    assert!(
        results[6].starts_with("error: the code could not start:") && results[6].contains("SyntaxError"),
        "{}",
        results[6]
    );
    assert_eq!(results[7], "error: the code ran past its wall-time limit of 5000 ms and was stopped");
    let everything = last.to_string();
    for secret in [crate::harness::LLM_KEY, TELEGRAM_TOKEN, crate::harness::ADMIN_TOKEN] {
        assert!(!everything.contains(secret), "a secret reached the model");
    }
}

/// The issue's scenario: a person sends a CSV on Telegram; the worker's code
/// reads it from the workspace, computes the answer and writes an SVG chart
/// (stored in the workspace: a second run reads it back), and the person gets
/// the answer and the chart as a file. Another conversation's attachment is
/// not in this workspace.
#[tokio::test(flavor = "multi_thread")]
async fn a_csv_sent_on_telegram_is_summarised_by_code_and_the_chart_comes_back_as_a_file() {
    let env = TestEnv::start_with(&[("LLM_TIMEOUT_MS", "10000"), ("STREAM_REPLIES", "off")]).await;
    env.telegram.serve_file(&format!("/file/bot{TELEGRAM_TOKEN}/files/CSV1"), CSV.as_bytes().to_vec());
    env.telegram.serve_file(&format!("/file/bot{TELEGRAM_TOKEN}/files/PLANS"), b"secret,plans\n1,2\n".to_vec());
    env.llm.reply("Got it.");
    env.telegram_update(&dm_with_document(1, 304, "PLANS", "plans.csv", "keep this")).await;
    env.wait_for_sent(1).await;

    let code = r#"export default async function main({ workspace }) {
  const rows = workspace.read("attachments/sales.csv").trim().split("\n").slice(1).map((line) => line.split(","));
  let total = 0;
  let top = rows[0];
  for (const row of rows) {
    total += Number(row[1]);
    if (Number(row[1]) > Number(top[1])) top = row;
  }
  const bars = rows.map((row, i) => `<rect x="${i * 40}" y="${200 - row[1]}" width="30" height="${row[1]}"><title>${row[0]}</title></rect>`).join("");
  workspace.write("chart.svg", `<svg xmlns="http://www.w3.org/2000/svg" width="${rows.length * 40}" height="200">${bars}</svg>`);
  return `total ${total}; top ${top[0]} with ${top[1]}`;
}"#;
    let svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"120\" height=\"200\">\
               <rect x=\"0\" y=\"80\" width=\"30\" height=\"120\"><title>north</title></rect>\
               <rect x=\"40\" y=\"120\" width=\"30\" height=\"80\"><title>south</title></rect>\
               <rect x=\"80\" y=\"155\" width=\"30\" height=\"45\"><title>east</title></rect></svg>";
    env.llm.push(spawn("summarise the sales CSV and chart it", false, "Looking at it."));
    env.llm.push_for(WORKER, run(code));
    let check = "export default async function main({ workspace }) {\n  \
                 const paths = workspace.list().map((file) => file.path + (file.readOnly ? ' (read-only)' : ''));\n  \
                 return { paths, chart: workspace.read('chart.svg').length };\n}";
    env.llm.push_for(WORKER, run(check));
    env.llm.push_for(
        WORKER,
        run("export default async function main({ workspace }) { return workspace.read('attachments/plans.csv'); }"),
    );
    // The chart the code wrote, sent from the workspace by its path.
    env.llm.push_for(WORKER, Scripted::ToolCalls(vec![("send_file".into(), json!({ "path": "chart.svg" }))]));
    env.llm.push_for(WORKER, status("outcome", "Sales total 245; north sold most (120). Chart sent."));
    env.llm.answer_always(Scripted::Reply("Sales total 245; north sold most (120). The chart is attached.".into()));
    env.telegram_update(&dm_with_document(2, 305, "CSV1", "sales.csv", "find the top region and chart it")).await;

    let last = outcome_reaches_the_person(&env, "Sales total 245; north sold most (120). The chart is attached.").await;
    let results = tool_results(&last);
    assert_eq!(
        results[0],
        format!("result:\ntotal 245; top north with 120\nwrote chart.svg ({} bytes) to the workspace", svg.len()),
        "{results:?}"
    );
    let listed: Value = serde_json::from_str(results[1].strip_prefix("result:\n").unwrap()).unwrap();
    assert_eq!(listed["paths"], json!(["attachments/sales.csv (read-only)", "chart.svg"]), "{listed}");
    assert_eq!(listed["chart"], svg.len(), "the chart was kept in the workspace between runs");
    assert!(
        results[2].starts_with("error: the code threw Error: the workspace has no file attachments/plans.csv"),
        "{}",
        results[2]
    );
    let upload = wait_for("the chart", Duration::from_secs(30), || async {
        env.telegram.requests().into_iter().find(|call| call.path.ends_with("/sendDocument"))
    })
    .await;
    let body = upload.body.as_str().unwrap_or_default();
    assert!(body.contains("filename=\"chart.svg\"") && body.contains("<title>north</title>"), "{body}");
    assert!(!last.to_string().contains("secret,plans"), "another conversation's file never reached this worker");
}

/// A gradual memory bomb (many small allocations) is ended by Cloudflare's
/// per-isolate memory limit when deployed. workerd enforces none
/// (cloudflare/workerd#49): locally V8 runs out of heap and the whole runtime
/// crashes, so this runs only by hand, against a deployment or a runtime that
/// limits memory.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "workerd has no memory limit: locally a gradual memory bomb crashes the runtime (docs/sandbox.md#limits)"]
async fn a_gradual_memory_bomb_ends_as_a_tool_error() {
    let env = TestEnv::start_with(&[("LLM_TIMEOUT_MS", "10000")]).await;
    env.llm.push(spawn("fill the memory", false, "Trying."));
    env.llm.push_for(
        WORKER,
        run("export default async function main() { const all = []; for (;;) all.push(new Array(1e6).fill(1)); }"),
    );
    env.llm.push_for(WORKER, status("outcome", "Stopped."));
    env.llm.answer_always(Scripted::Reply("The run was stopped.".into()));
    env.telegram_update(&dm_update(1, 303, "fill the memory")).await;
    let last = outcome_reaches_the_person(&env, "The run was stopped.").await;
    assert!(tool_results(&last)[0].starts_with("error: "), "{:?}", tool_results(&last));
}

/// With `SANDBOX_NETWORK = "guarded"`, a run's fetch goes through the Worker
/// and its fetch guard: an allowed host answers, a private one is refused
/// before any request leaves, and a request to the Worker that carries a
/// forged run token is refused without a fetch.
#[tokio::test(flavor = "multi_thread")]
async fn guarded_fetches_go_through_the_fetch_guard_and_forged_tokens_are_refused() {
    let env = TestEnv::start_with(&[("SANDBOX_NETWORK", "guarded"), ("FETCH_ALLOW_HOSTS", "127.0.0.1")]).await;
    env.telegram.serve_file("/public/page.txt", b"hello from the page".to_vec());
    let (stolen, accepted) = loopback_server().await;
    let page = format!("{}/public/page.txt", env.telegram.base_url);
    let fetched = operator_run(&env, format!(
        "export default async function main() {{ const answer = await fetch({page:?}); return answer.status + ' ' + await answer.text(); }}"
    ))
    .await;
    assert_eq!(fetched, "result:\n200 hello from the page");
    // `localhost` is a local name, not the allowed 127.0.0.1: refused by the guard.
    let private = stolen.replace("127.0.0.1", "localhost");
    let refused = operator_run(
        &env,
        format!("export default async function main() {{ return (await fetch({private:?})).status; }}"),
    )
    .await;
    assert!(refused.starts_with("error: the code threw Error: the fetch guard refused"), "{refused}");
    assert!(refused.contains("private or local address"), "{refused}");
    let posted = operator_run(&env, format!("export default async function main() {{ return (await fetch({page:?}, {{ method: 'POST', body: 'x' }})).status; }}")).await;
    assert!(posted.starts_with("error: the code threw TypeError: the sandbox fetches with GET only"), "{posted}");
    let forged = env
        .client
        .get(format!("{}/anything?url={}", env.worker.base_url, stolen))
        .header("x-edgebot-sandbox", "run.99999999999999.00")
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 403);
    assert!(forged.headers().get("x-edgebot-refused").is_some());
    assert_eq!(accepted.load(Ordering::SeqCst), 0, "no request reached the private server");
}

/// Runs a module through the operator's route; the text the model would read.
async fn operator_run(env: &TestEnv, code: String) -> String {
    let path = "/api/channels/telegram:306/run_code";
    let (status, body) = env.admin_send(reqwest::Method::POST, path, Some(json!({ "code": code }))).await;
    assert_eq!(status, 200, "{body}");
    body["result"].as_str().unwrap_or_default().to_string()
}

/// A worker's runs are capped (`RUN_CODE_PER_WORKER`): the run past the cap is
/// a tool error and the worker goes on; each run that ran is priced into the
/// day's spend (a Dynamic Worker is $0.002), which the budgets hold.
#[tokio::test(flavor = "multi_thread")]
async fn a_run_past_the_workers_cap_is_refused_and_each_run_is_priced_into_the_days_spend() {
    let env = TestEnv::start_with(&[("LLM_TIMEOUT_MS", "10000"), ("RUN_CODE_PER_WORKER", "1")]).await;
    env.llm.push(spawn("add twice", false, "Adding."));
    env.llm.push_for(WORKER, run("export default () => 1 + 1"));
    env.llm.push_for(WORKER, run("export default () => 2 + 2"));
    env.llm.push_for(WORKER, status("outcome", "2, and the second run was refused."));
    env.llm.answer_always(Scripted::Reply("Done adding.".into()));
    env.telegram_update(&dm_update(1, 307, "add twice")).await;
    let last = outcome_reaches_the_person(&env, "Done adding.").await;
    let results = tool_results(&last);
    assert_eq!(results[0], "result:\n2", "{results:?}");
    assert!(results[1].starts_with("error: this worker has used its 1 runs of `run_code`"), "{results:?}");
    let ops = env.admin("/api/ops").await;
    assert_eq!(ops["sandbox_runs"], 1, "the refused run never started: {ops}");
    let usd = |spend: &Value| {
        let conversation = spend["conversations"].as_array()?.iter().find(|row| row["subject"] == "telegram:307")?;
        conversation["usd"].as_f64()
    };
    // The channel's turns' spend reaches D1 with their commit, after the reply: waited for.
    let spend = env.spend_when("the run in the day's spend", |spend| usd(spend) >= Some(0.002)).await;
    assert!(usd(&spend) >= Some(0.002), "the run's Dynamic Worker is in the day's spend: {spend}");
}
