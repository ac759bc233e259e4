//! `make bench`: streamed replies, on the web chat and on each platform's fake.
//! A fake model sends its first chunk 500 ms after the request and then writes
//! for about 3 s; the figures are the time from that first chunk (and, on the
//! platforms, whose first post waits for a sentence, from the model's first
//! sentence: the goal is within 300 ms) to the first text on the chat socket or the platform
//! and from the webhook, how many drafts (web) or edits (platforms) a reply
//! took, and whether the final message is the model's text. The baseline:
//! streaming off, the same model answering whole when it would have finished
//! writing, timed from when its first chunk would have gone out.
//! Figures, not assertions.

#[allow(dead_code, unused_imports)]
#[path = "../tests/harness.rs"]
mod harness;

use std::time::Duration;

use std::time::Instant;

use harness::chat_socket::{guest_cookie, say};
use harness::chats::{Chat, DISCORD, SLACK, TELEGRAM};
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
        script(&env, &text, streamed);
        let seen = say(&env, &cookie, &format!("question {run}")).await;
        let first_chunk = first_chunk(&env, streamed);
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

/// The model's answer: streamed, or (the baseline) whole when a stream of it
/// would have ended: its first chunk, then one per CHARS of arguments.
fn script(env: &TestEnv, text: &str, streamed: bool) {
    match streamed {
        true => env.llm.reply(text),
        false => {
            let chunks = serde_json::json!({ "content": text }).to_string().chars().count().div_ceil(CHARS) as u32;
            let reply = Scripted::Reply(text.to_string());
            env.llm.push(Scripted::Delayed(FIRST + EVERY * (chunks + 1), Box::new(reply)));
        }
    }
}

/// When the model's first chunk went out (or would have, for the baseline).
fn first_chunk(env: &TestEnv, streamed: bool) -> Instant {
    match streamed {
        true => *env.llm.first_chunks().last().expect("the model streamed"),
        false => *env.llm.arrivals().last().expect("the model was asked") + FIRST,
    }
}

/// When the chunk that completes the first sentence of `text` (its full stop
/// and the space after it, so the word is settled) goes out, from the fake's
/// pace: chunk 0 (the role) at the first chunk, then the call's start, then
/// the arguments CHARS characters a chunk, one every EVERY.
fn first_sentence_sent(first_chunk: Instant, text: &str) -> Instant {
    let arguments = serde_json::json!({ "content": text }).to_string();
    let settled = arguments.find(". ").map_or(arguments.len(), |at| at + 2);
    first_chunk + EVERY * (1 + settled.div_ceil(CHARS)) as u32
}

/// (ms from the model's first chunk to the first text shown, ms from the
/// webhook, edits, final == the model's text, ms from the model's first
/// sentence) per run on a platform.
async fn platform_runs(chat: Chat, streamed: bool) -> Vec<(f64, f64, usize, bool, f64)> {
    let setting = if streamed { chat.name } else { "off" };
    let env = chat.start(&[("STREAM_REPLIES", setting), ("LLM_TIMEOUT_MS", "10000")]).await;
    env.llm.set_pace(Pace { first: FIRST, every: EVERY, chars: CHARS });
    let mut figures = Vec::new();
    for run in 0..RUNS as u64 {
        // Each run's answer its own, so one run's message never stands for the next's.
        let text = format!("{}Run {run} done.", "Here is a longer answer, written a few words at a time. ".repeat(8));
        let expected = chat.expected(&text);
        let before = chat.text_calls(&env).len();
        script(&env, &text, streamed);
        let asked = Instant::now();
        chat.ask(&env, 100 + run, &format!("question {run}")).await;
        harness::wait_for("the whole answer", Duration::from_secs(40), || async {
            let shown = chat.api(&env).shown();
            shown.last().is_some_and(|message| message.text == expected[0]).then_some(())
        })
        .await;
        env.settle().await;
        let calls = chat.text_calls(&env)[before..].to_vec();
        let shown_at = calls.first().expect("a post").at;
        let since = |at: Instant| shown_at.saturating_duration_since(at).as_secs_f64() * 1e3;
        let whole = chat.api(&env).shown().last().is_some_and(|message| message.text == expected[0]);
        let first_chunk = first_chunk(&env, streamed);
        let sentence = since(first_sentence_sent(first_chunk, &text));
        figures.push((since(first_chunk), since(asked), calls.len() - 1, whole, sentence));
    }
    figures
}

#[tokio::main]
async fn main() {
    for chat in [TELEGRAM, SLACK, DISCORD] {
        for (label, streamed) in [("streamed", true), ("not streamed (baseline)", false)] {
            let figures = platform_runs(chat, streamed).await;
            let shown = median(figures.iter().map(|figure| figure.0).collect());
            let from_webhook = median(figures.iter().map(|figure| figure.1).collect());
            let edits = median(figures.iter().map(|figure| figure.2 as f64).collect());
            let whole = figures.iter().filter(|figure| figure.3).count();
            let sentence = median(figures.iter().map(|figure| figure.4).collect());
            println!(
                "{}, {label}: first text {sentence:.0} ms after the model's first sentence (goal: 300 ms), \
                 {shown:.0} ms after its first chunk, {from_webhook:.0} ms after the webhook (median of {RUNS}), \
                 {edits:.0} edits per message, final message equal to the model's text in {whole} of {RUNS}",
                chat.name
            );
        }
    }
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
