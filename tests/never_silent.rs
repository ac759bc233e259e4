//! Never silent (issue 31): every way a streamed turn can fail ends in exactly
//! one message, the answer or the documented apology; a platform's rate limit
//! holds every call to the chat, drafts included; `SEND_MAX_ATTEMPTS` bounds
//! every call a piece makes; an acknowledged message whose alarm chain broke
//! is woken by the cron's sweeper.
//!
//! Faults on the model side: a 500, a 429, a hang past `LLM_TIMEOUT_MS`, a
//! body cut in the middle, an answer with no choices, an answer that says
//! nothing, and a stream cut mid-answer (after its first words were posted).

use std::time::Duration;

use serde_json::json;

use crate::harness::chats::{Chat, DISCORD, SLACK, TELEGRAM};
use crate::harness::fake_api::{Call, Shown};
use crate::harness::fake_llm::Pace;
use crate::harness::{dm_update, wait_for, Scripted, TestEnv, FAILURE_MESSAGE_START};

/// A reply long enough that its first words are posted before the model finishes.
fn long_reply() -> String {
    "Volcanoes form where magma rises through the crust, and each eruption adds a layer. ".repeat(4)
}

/// One fault as every attempt of a turn meets it (`LLM_MAX_ATTEMPTS` is 2 here).
struct Fault {
    name: &'static str,
    answer: fn() -> Scripted,
}

const FAULTS: [Fault; 7] = [
    Fault { name: "500", answer: || Scripted::Status(500) },
    Fault { name: "429", answer: || Scripted::Status(429) },
    // Past LLM_TIMEOUT_MS (1.5 s in the tests).
    Fault { name: "hang", answer: || Scripted::Hang(Duration::from_secs(3)) },
    Fault { name: "truncated body", answer: || Scripted::Raw(r#"{"choices":[{"message":{"content":"Volc"#.into()) },
    Fault { name: "no choices", answer: || Scripted::Raw(r#"{"id":"x","choices":[]}"#.into()) },
    Fault {
        name: "an empty message",
        answer: || Scripted::Raw(r#"{"choices":[{"message":{"role":"assistant","content":""}}]}"#.into()),
    },
    Fault { name: "a stream cut mid-answer", answer: || Scripted::CutOff(long_reply()) },
];

/// The messages the chat shows now.
fn shown(chat: Chat, env: &TestEnv) -> Vec<Shown> {
    chat.api(env).shown()
}

/// Asks once per fault, each in turn, every model attempt meeting the fault,
/// and checks the chat shows exactly one new message per question: the apology.
async fn every_fault_ends_in_one_apology(chat: Chat) {
    let env = chat.start(&[("LLM_MAX_ATTEMPTS", "2")]).await;
    // Slow enough that a cut stream has posted its first words before it breaks.
    env.llm.set_pace(Pace { first: Duration::from_millis(200), every: Duration::from_millis(30), chars: 12 });
    for (n, fault) in FAULTS.iter().enumerate() {
        let before = shown(chat, &env).len();
        let calls_before = chat.text_calls(&env).len();
        for _ in 0..2 {
            env.llm.push((fault.answer)());
        }
        chat.ask(&env, 10 + n as u64, &format!("question {n}")).await;
        let new = wait_for(fault.name, Duration::from_secs(30), || async {
            let now = shown(chat, &env);
            let done = now.get(before).is_some_and(|message| message.text.starts_with(FAILURE_MESSAGE_START));
            done.then(|| now[before..].to_vec())
        })
        .await;
        env.settle().await;
        let after = shown(chat, &env);
        assert_eq!(
            after.len(),
            before + 1,
            "{} on {}: one message, no second: {new:?} then {after:?}",
            fault.name,
            chat.name
        );
        assert!(after[before].text.starts_with(FAILURE_MESSAGE_START), "{}: {:?}", fault.name, after[before]);
        let calls: Vec<Call> = chat.text_calls(&env).split_off(calls_before);
        let posts = calls.iter().filter(|call| !is_edit(chat, call)).count();
        assert_eq!(posts, 1, "{} on {}: one post (edits allowed): {calls:?}", fault.name, chat.name);
        if fault.name == "a stream cut mid-answer" {
            assert!(calls.len() >= 2, "its first words showed, then became the apology: {calls:?}");
        }
    }
    // The same faults once, then an answer: the retry answers, one message.
    for (n, fault) in FAULTS.iter().enumerate() {
        let before = shown(chat, &env).len();
        env.llm.push((fault.answer)());
        env.llm.reply(&format!("answer {n} after a {}", fault.name));
        chat.ask(&env, 30 + n as u64, &format!("again {n}")).await;
        let expected = format!("answer {n} after a {}", fault.name);
        wait_for(fault.name, Duration::from_secs(30), || async {
            shown(chat, &env).get(before).is_some_and(|message| message.text == expected).then_some(())
        })
        .await;
        env.settle().await;
        assert_eq!(shown(chat, &env).len(), before + 1, "{} then an answer: one message", fault.name);
    }
}

/// An edit, as opposed to a post: Discord's `/ask` answer is its deferred
/// response (`@original`), which counts as its post.
fn is_edit(chat: Chat, call: &Call) -> bool {
    match chat.name {
        "discord" => call.method == "PATCH" && !call.path.ends_with("@original"),
        _ => call.path.ends_with(chat.edit),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_model_fault_on_telegram_ends_in_one_apology_or_one_answer() {
    every_fault_ends_in_one_apology(TELEGRAM).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn every_model_fault_on_slack_ends_in_one_apology_or_one_answer() {
    every_fault_ends_in_one_apology(SLACK).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn every_model_fault_on_discord_ends_in_one_apology_or_one_answer() {
    every_fault_ends_in_one_apology(DISCORD).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn with_streaming_off_every_model_fault_ends_in_one_apology() {
    let env = TestEnv::start_with(&[("LLM_MAX_ATTEMPTS", "2"), ("STREAM_REPLIES", "off")]).await;
    for (n, fault) in FAULTS.iter().enumerate() {
        for _ in 0..2 {
            env.llm.push((fault.answer)());
        }
        env.telegram_update(&dm_update(9_100 + n as i64, 900 + n as i64, "hello")).await;
        let sent = env.wait_for_sent(n + 1).await;
        let text = sent[n]["text"].as_str().unwrap_or_default();
        assert!(text.starts_with(FAILURE_MESSAGE_START), "{}: {text:?}", fault.name);
    }
    env.settle().await;
    assert_eq!(env.telegram.calls("/sendMessage").len(), FAULTS.len(), "one message per fault");
}

/// The platform's answer to a rate-limited call on `chat`.
fn rate_limited(chat: Chat, seconds: u64) -> (serde_json::Value, Option<String>) {
    match chat.name {
        "telegram" => (
            json!({"ok": false, "error_code": 429, "description": format!("Too Many Requests: retry after {seconds}"),
                   "parameters": {"retry_after": seconds}}),
            None,
        ),
        "slack" => (json!({"ok": false, "error": "ratelimited"}), Some(seconds.to_string())),
        _ => (json!({"message": "You are being rate limited.", "retry_after": seconds as f64, "global": false}), None),
    }
}

/// The path part of the call that posts a reply's first words.
fn post_path(chat: Chat) -> &'static str {
    match chat.name {
        "telegram" => "/sendMessage",
        "slack" => "/chat.postMessage",
        _ => "@original",
    }
}

/// The first post of a streamed reply is refused with a 1 s rate limit:
/// nothing reaches the chat for that second, then the reply arrives whole,
/// as one message.
async fn a_rate_limited_draft_is_waited_out(chat: Chat) {
    let env = chat.start(&[]).await;
    env.llm.set_pace(Pace { first: Duration::from_millis(200), every: Duration::from_millis(20), chars: 40 });
    let answer = long_reply();
    env.llm.reply(&answer);
    let (body, header) = rate_limited(chat, 1);
    chat.api(&env).fail_next_containing(post_path(chat), 429, body, header.as_deref());
    chat.ask(&env, 1, "how do volcanoes form?").await;
    chat.shows(&env, &chat.expected(&answer)).await;
    let calls = chat.text_calls(&env);
    assert!(calls.len() >= 2, "the refused draft, then the reply: {calls:?}");
    let gap = calls[1].at - calls[0].at;
    assert!(gap >= Duration::from_millis(1_000), "nothing went to the chat before the wait was over: {gap:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rate_limited_draft_on_telegram_is_waited_out() {
    a_rate_limited_draft_is_waited_out(TELEGRAM).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rate_limited_draft_on_slack_is_waited_out() {
    a_rate_limited_draft_is_waited_out(SLACK).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rate_limited_draft_on_discord_is_waited_out() {
    a_rate_limited_draft_is_waited_out(DISCORD).await;
}

/// A streamed edit refused for 2 s: the next call to the chat, edit or final
/// edit, comes at least 2 s after the refusal, and edits keep a second apart.
#[tokio::test(flavor = "multi_thread")]
async fn a_rate_limited_edit_holds_the_whole_chat_and_the_final_edit_keeps_the_pace() {
    let chat = TELEGRAM;
    let env = chat.start(&[]).await;
    env.llm.set_pace(Pace { first: Duration::from_millis(200), every: Duration::from_millis(40), chars: 8 });
    let answer = long_reply();
    env.llm.reply(&answer);
    chat.ask(&env, 1, "tell me about volcanoes").await;
    chat.first_post(&env).await;
    chat.rate_limit_next_edit(&env, 2);
    chat.shows(&env, &chat.expected(&answer)).await;
    let calls = chat.text_calls(&env);
    let limited = calls.iter().position(|call| call.path.ends_with(chat.edit)).expect("an edit");
    let next = calls.get(limited + 1).expect("a call after the refused edit");
    assert!(next.at - calls[limited].at >= Duration::from_secs(2), "held 2 s: {:?}", next.at - calls[limited].at);
    let closest = calls.windows(2).map(|pair| pair[1].at - pair[0].at).min().expect("several calls");
    assert!(closest >= Duration::from_millis(950), "every call keeps the edit pace, the final one too: {closest:?}");
}

/// The platform answers 500, or 429, forever: a streamed reply makes exactly
/// `SEND_MAX_ATTEMPTS` calls (the draft's post counted), 429s each waited out.
#[tokio::test(flavor = "multi_thread")]
async fn a_platform_that_always_fails_gets_exactly_send_max_attempts_calls() {
    for status in [500, 429] {
        let chat = TELEGRAM;
        let env = chat.start(&[]).await;
        env.llm.set_pace(Pace { first: Duration::from_millis(200), every: Duration::from_millis(20), chars: 40 });
        env.llm.reply(&long_reply());
        for _ in 0..10 {
            let (body, _) = match status {
                429 => rate_limited(chat, 1),
                _ => (json!({"ok": false, "error_code": 500, "description": "Internal Server Error"}), None),
            };
            env.telegram.fail_next("/sendMessage", status, body, None);
        }
        chat.ask(&env, 1, "hello").await;
        wait_for("three attempts", Duration::from_secs(30), || async {
            (env.telegram.calls("/sendMessage").len() >= 3).then_some(())
        })
        .await;
        // Longer than any backoff or wait: nothing more comes.
        tokio::time::sleep(Duration::from_secs(4)).await;
        let calls: Vec<Call> = chat.text_calls(&env);
        assert_eq!(calls.len(), 3, "{status} forever: SEND_MAX_ATTEMPTS calls in all: {calls:?}");
        if status == 429 {
            for pair in calls.windows(2) {
                assert!(pair[1].at - pair[0].at >= Duration::from_secs(1), "each wait honoured");
            }
        }
        let outbox = env.admin("/api/channels/telegram:77/outbox").await;
        let failed = outbox.as_array().into_iter().flatten().filter(|entry| entry["status"] == "failed").count();
        assert_eq!(failed, 1, "the piece is recorded as given up: {outbox}");
    }
}

/// A turn whose alarm chain broke (the alarm was taken away after the
/// acknowledgement, as a dropped alarm would leave it) is woken by the
/// cron's sweeper once the bound passed, and answered once.
#[tokio::test(flavor = "multi_thread")]
async fn the_sweeper_wakes_an_acknowledged_message_whose_alarm_was_lost() {
    let mut env = TestEnv::start_with(&[("SWEEP_AFTER_MS", "2000"), ("LLM_TIMEOUT_MS", "60000")]).await;
    // The model holds the first turn until the runtime is gone: the crash
    // takes the running alarm with it, and the restart finds it again (or not).
    let gate = std::sync::Arc::new(tokio::sync::Notify::new());
    env.llm.push(Scripted::Gated(gate.clone(), Box::new(Scripted::Reply("never seen".into()))));
    env.llm.reply("answered after the sweep");
    env.telegram_update(&dm_update(9_501, 951, "are you there?")).await;
    wait_for("the turn began", Duration::from_secs(20), || async { (!env.llm.requests().is_empty()).then_some(()) })
        .await;
    // The dashboard's index knows a message waits (written a few seconds after it came).
    wait_for("the index marks the wait", Duration::from_secs(20), || async {
        let listed = env.admin("/api/conversations").await;
        let waiting = listed.as_array().into_iter().flatten().any(|row| row["awaiting_since"].is_i64());
        waiting.then_some(())
    })
    .await;
    // A dropped alarm: the runtime dies mid-turn, and its alarm is deleted
    // from the persisted state before it starts again.
    env.crash_losing_alarms().await;
    gate.notify_one();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(env.telegram.calls("/sendMessage").is_empty(), "no alarm: nothing ran by itself");
    let swept = wait_for("the sweep's answer", Duration::from_secs(30), || async {
        env.cron_every_minute().await;
        let sent = env.telegram.calls("/sendMessage");
        (!sent.is_empty()).then_some(sent)
    })
    .await;
    env.settle().await;
    assert_eq!(env.telegram.calls("/sendMessage").len(), 1, "answered once: {swept:?}");
    assert_eq!(swept[0]["text"], "answered after the sweep");
}
