//! Streamed replies (issue 24), on the web chat: the reply shows over the
//! socket while the model writes it, as drafts that only grow, each a prefix
//! of the one final message; a configured secret in the model's text never
//! shows in any draft, not even its beginning; a turn that ends in `skip`
//! shows nothing, and `STREAM_REPLIES=off` sends only the final message.

use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::chat_socket::{guest_cookie, say};
use crate::harness::fake_llm::Pace;
use crate::harness::{Scripted, TestEnv};

const INVITE: &str = "streaming-test-invitation-0123";
/// The test environment's `OPENAI_API_KEY` (tests/harness.rs).
const SECRET: &str = "test-llm-key";

fn drafts(seen: &[Value]) -> Vec<String> {
    seen.iter().filter(|line| line["type"] == "draft").map(|line| line["text"].as_str().unwrap().to_string()).collect()
}

fn final_text(seen: &[Value]) -> Option<String> {
    seen.iter()
        .find(|line| line["type"] == "message" && line["role"] == "assistant")
        .map(|line| line["text"].as_str().unwrap().to_string())
}

#[tokio::test]
async fn a_web_reply_shows_while_it_is_written_and_ends_as_one_whole_message_with_no_secret() {
    let env = TestEnv::start_with(&[("WEB_CHAT_TOKEN", INVITE)]).await;
    let cookie = guest_cookie(&env, INVITE).await;
    // First token after 500 ms, then 8 characters every 40 ms: about 3 s of writing.
    env.llm.set_pace(Pace { first: Duration::from_millis(500), every: Duration::from_millis(40), chars: 8 });
    let answer = format!(
        "Here is the whole plan for today, step by step. First we gather the notes. The key you \
         pasted, {SECRET}, stays out of this. Then we write the summary and send it around. {}Done.",
        "More words keep the stream going. ".repeat(6)
    );
    env.llm.reply(&answer);
    let seen: Vec<Value> = say(&env, &cookie, "what is the plan?").await.into_iter().map(|(_, line)| line).collect();
    let drafts = drafts(&seen);
    let whole = final_text(&seen).expect("the final message");
    assert!(drafts.len() >= 3, "the reply showed in steps before it was finished: {drafts:?}");
    assert!(drafts.windows(2).all(|pair| pair[1].starts_with(pair[0].trim_end())), "drafts only grow: {drafts:?}");
    assert!(
        drafts.iter().all(|draft| whole.starts_with(draft.trim_end())),
        "each draft begins the final {whole:?}: {drafts:?}"
    );
    let last_draft_at = seen.iter().rposition(|line| line["type"] == "draft").unwrap();
    let final_at = seen.iter().position(|line| line["type"] == "message" && line["role"] == "assistant").unwrap();
    assert!(last_draft_at < final_at, "no draft after the final message");
    assert_eq!(whole, answer.replace(SECRET, "[redacted]"), "one final message: the whole answer, redacted");
    for shown in drafts.iter().chain([&whole]) {
        assert!(!shown.contains(&SECRET[..6]), "no part of the secret shows: {shown:?}");
    }
}

#[tokio::test]
async fn a_skipped_turn_shows_nothing_and_streaming_turns_off() {
    let env = TestEnv::start_with(&[("WEB_CHAT_TOKEN", INVITE)]).await;
    let cookie = guest_cookie(&env, INVITE).await;
    env.llm.set_pace(Pace { first: Duration::from_millis(100), every: Duration::from_millis(40), chars: 4 });
    env.llm.push(Scripted::ToolCalls(vec![("skip".into(), json!({ "reason": "nothing to say to that" }))]));
    let seen: Vec<Value> = say(&env, &cookie, "ok").await.into_iter().map(|(_, line)| line).collect();
    assert!(drafts(&seen).is_empty(), "a skip shows nothing: {seen:?}");
    assert_eq!(final_text(&seen), None);

    let env = TestEnv::start_with(&[("WEB_CHAT_TOKEN", INVITE), ("STREAM_REPLIES", "off")]).await;
    let cookie = guest_cookie(&env, INVITE).await;
    env.llm.set_pace(Pace { first: Duration::from_millis(100), every: Duration::from_millis(40), chars: 4 });
    let answer = "A reply long enough to have shown in several drafts had streaming been on for the web.";
    env.llm.reply(answer);
    let seen: Vec<Value> = say(&env, &cookie, "hello").await.into_iter().map(|(_, line)| line).collect();
    assert!(drafts(&seen).is_empty(), "streaming off: {seen:?}");
    assert_eq!(final_text(&seen).as_deref(), Some(answer));
    let asked_to_stream = env.llm.requests().iter().any(|request| request["stream"] == json!(true));
    assert!(!asked_to_stream, "the model is asked for a whole answer");
}
