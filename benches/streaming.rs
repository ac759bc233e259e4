//! `make bench`: streamed replies, on the web chat. A fake model sends its first
//! chunk 500 ms after the request and then writes for about 3 s; the figures
//! are the time from that first chunk to the first text on the chat socket (the
//! goal: within 300 ms locally), how many drafts a reply took, and whether the
//! final message is the model's text. The baseline: streaming off, the same
//! model answering whole when it would have finished writing, timed from when
//! its first chunk would have gone out.
//! Figures, not assertions.

#[allow(dead_code, unused_imports)]
#[path = "../tests/harness.rs"]
mod harness;

use std::time::Duration;

use harness::chat_socket::{guest_cookie, say};
use harness::fake_llm::Pace;
use harness::{Scripted, TestEnv};

const INVITE: &str = "bench-streaming-invitation";
const RUNS: usize = 5;
const FIRST: Duration = Duration::from_millis(500);
const EVERY: Duration = Duration::from_millis(40);
const CHARS: usize = 8;

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// (ms from the model's first chunk to the first text shown, drafts, final == the model's text) per run.
async fn runs(streaming: &str) -> Vec<(f64, usize, bool)> {
    let env =
        TestEnv::start_with(&[("WEB_CHAT_TOKEN", INVITE), ("STREAM_REPLIES", streaming), ("LLM_TIMEOUT_MS", "10000")])
            .await;
    env.llm.set_pace(Pace { first: FIRST, every: EVERY, chars: CHARS });
    let text = "Here is a longer answer, written a few words at a time, as a model writes. ".repeat(8);
    let text = text.trim_end().to_string();
    let mut figures = Vec::new();
    for run in 0..RUNS {
        let cookie = guest_cookie(&env, INVITE).await;
        let streamed = streaming != "off";
        match streamed {
            true => env.llm.reply(&text),
            // As long as the streamed answer takes: its first chunk, then one per CHARS of arguments.
            false => {
                let chunks = serde_json::json!({ "content": text }).to_string().chars().count().div_ceil(CHARS) as u32;
                let reply = Scripted::Reply(text.clone());
                env.llm.push(Scripted::Delayed(FIRST + EVERY * (chunks + 1), Box::new(reply)));
            }
        }
        let seen = say(&env, &cookie, &format!("question {run}")).await;
        let first_chunk = match streamed {
            true => *env.llm.first_chunks().last().expect("the model streamed"),
            false => *env.llm.arrivals().last().expect("the model was asked") + FIRST,
        };
        let shown = seen
            .iter()
            .find(|(_, line)| line["type"] == "draft" || (line["type"] == "message" && line["role"] == "assistant"))
            .map(|(at, _)| at.saturating_duration_since(first_chunk).as_secs_f64() * 1e3)
            .unwrap_or(f64::NAN);
        let drafts = seen.iter().filter(|(_, line)| line["type"] == "draft").count();
        let whole = seen.iter().any(|(_, line)| line["type"] == "message" && line["text"] == text.as_str());
        figures.push((shown, drafts, whole));
    }
    figures
}

#[tokio::main]
async fn main() {
    for (label, setting) in [("streamed", "web"), ("not streamed (baseline)", "off")] {
        let figures = runs(setting).await;
        let shown = median(figures.iter().map(|figure| figure.0).collect());
        let drafts = median(figures.iter().map(|figure| figure.1 as f64).collect());
        let whole = figures.iter().filter(|figure| figure.2).count();
        println!(
            "web chat, {label}: first text {shown:.0} ms after the model's first chunk (median of {RUNS}; \
             the model writes for ~3 s), {drafts:.0} drafts per reply, final message equal to the model's text \
             in {whole} of {RUNS}"
        );
    }
}
