//! Streamed replies (issue 24). On the web chat the reply shows over the
//! socket while the model writes it, as drafts that only grow, each a prefix
//! of the one final message; a configured secret in the model's text never
//! shows in any draft, not even its beginning; a turn that ends in `skip`
//! shows nothing, and `STREAM_REPLIES=off` sends only the final message.
//!
//! On Telegram, Slack and Discord the reply is posted once it has words and
//! edited as it grows, at the platform's pace; the last edit makes it the
//! whole answer, one message per piece (split at the platform's limit). A
//! rate limit on an edit is waited out; a crash mid-stream ends in one
//! complete message.

use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::chat_socket::{guest_cookie, say};
use crate::harness::chats::{Chat, DISCORD, SLACK, TELEGRAM};
use crate::harness::fake_api::Call;
use crate::harness::fake_llm::Pace;
use crate::harness::{wait_for, Scripted, TestEnv, LLM_KEY};

const INVITE: &str = "streaming-test-invitation-0123";
/// The test environment's `OPENAI_API_KEY`.
const SECRET: &str = LLM_KEY;

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

fn text_of(call: &Call) -> &str {
    call.body["text"].as_str().or(call.body["content"].as_str()).unwrap_or_default()
}

/// A few hundred characters written over about 3 s, a secret in the middle.
fn long_answer() -> String {
    format!(
        "Here is the whole plan for today, step by step. First we gather the notes. The key you \
         pasted, {SECRET}, stays out of this. Then we write the summary and send it around. {}Done.",
        "More words keep the stream going. ".repeat(6)
    )
}

async fn shows_while_written_then_one_whole_message(chat: Chat) {
    let env = chat.start(&[]).await;
    // About 4.5 s of writing: room for several one-second edits on a busy machine.
    env.llm.set_pace(Pace { first: Duration::from_millis(500), every: Duration::from_millis(60), chars: 8 });
    let answer = long_answer();
    env.llm.reply(&answer);
    chat.ask(&env, 1, "what is the plan?").await;
    let expected = chat.expected(&answer);
    assert_eq!(expected.len(), 1);
    chat.shows(&env, &expected).await;

    let finished = env.llm.last_chunks()[0];
    let calls = chat.text_calls(&env);
    let (first, edits) = calls.split_first().expect("a post");
    assert!(first.at < finished, "the first words were posted before the model finished");
    let first_text = text_of(first);
    assert!(!first_text.is_empty() && first_text.len() < expected[0].len(), "a partial draft: {first_text:?}");
    assert!(expected[0].starts_with(first_text.trim_end()), "{first_text:?} begins {:?}", expected[0]);
    assert!(edits.iter().all(|call| call.path.ends_with(chat.edit) || call.method == "PATCH"), "edits, no new post");
    let drafts: Vec<&Call> = calls.iter().filter(|call| call.at < finished).collect();
    assert!(drafts.len() >= 2, "edited while the model wrote: {} call(s) before it finished", drafts.len());
    for call in &calls {
        assert!(!text_of(call).contains(&SECRET[..6]), "no part of the secret in any post or edit: {call:?}");
    }
    let closest = drafts.windows(2).map(|pair| pair[1].at - pair[0].at).min().unwrap();
    assert!(closest >= Duration::from_millis(950), "drafts keep the platform's pace: {closest:?} apart");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_telegram_reply_shows_while_written_and_is_edited_into_the_whole_answer() {
    shows_while_written_then_one_whole_message(TELEGRAM).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slack_reply_shows_while_written_and_is_updated_into_the_whole_answer() {
    shows_while_written_then_one_whole_message(SLACK).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_discord_answer_shows_while_written_and_is_edited_into_the_whole_answer() {
    shows_while_written_then_one_whole_message(DISCORD).await;
}

/// An answer over the platform's limit, written over about 8 s (room for the
/// 2 s hold and the one-second pace on a busy machine): it streams as
/// two messages and ends as two; a rate limit on an edit is waited out.
async fn a_long_answer_splits_and_a_rate_limited_edit_waits(chat: Chat) {
    let env = chat.start(&[]).await;
    let sentence = "Every paragraph of this long answer adds a few more plain words. ";
    let answer: String = sentence.repeat(chat.limit * 3 / 2 / sentence.len());
    env.llm.set_pace(Pace {
        first: Duration::from_millis(300),
        every: Duration::from_millis(80),
        chars: answer.len() / 100,
    });
    env.llm.reply(&answer);
    chat.ask(&env, 2, "tell me everything").await;
    chat.first_post(&env).await;
    chat.rate_limit_next_edit(&env, 2);
    let expected = chat.expected(&answer);
    assert_eq!(expected.len(), 2, "over the limit: two pieces");
    chat.shows(&env, &expected).await;
    assert!(chat.api(&env).shown().iter().all(|message| message.text.chars().count() <= chat.limit));

    let calls = chat.text_calls(&env);
    let limited = calls.iter().position(|call| call.path.contains(chat.edit) && call.at > calls[0].at);
    let limited = limited.expect("an edit was rate limited");
    let next = &calls[limited + 1];
    assert!(
        next.at - calls[limited].at >= Duration::from_secs(2),
        "the wait was honoured: {:?}",
        next.at - calls[limited].at
    );
    let finished = env.llm.last_chunks()[0];
    let second_post =
        calls.iter().filter(|call| !call.path.contains(chat.edit) || call.path.ends_with("@original")).nth(1);
    assert!(second_post.is_some_and(|call| call.at < finished), "the second piece showed while the model wrote");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_long_telegram_answer_streams_as_two_messages_through_a_rate_limit() {
    a_long_answer_splits_and_a_rate_limited_edit_waits(TELEGRAM).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_long_slack_answer_streams_as_two_messages_through_a_rate_limit() {
    a_long_answer_splits_and_a_rate_limited_edit_waits(SLACK).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_long_discord_answer_streams_as_two_messages_through_a_rate_limit() {
    a_long_answer_splits_and_a_rate_limited_edit_waits(DISCORD).await;
}

/// The Worker dies while the model writes, after the first words were posted:
/// the turn runs again after the restart and edits that message into the
/// whole answer (no second message); when the second answer is `skip`, the
/// draft is taken back.
async fn a_crash_mid_stream_leaves_one_complete_message(chat: Chat, then_skip: bool) {
    let mut env = chat.start(&[]).await;
    env.llm.set_pace(Pace { first: Duration::from_millis(300), every: Duration::from_millis(60), chars: 6 });
    let answer = long_answer();
    env.llm.reply(&answer);
    match then_skip {
        true => env.llm.push(Scripted::ToolCalls(vec![("skip".into(), json!({ "reason": "said enough" }))])),
        false => env.llm.reply(&answer),
    }
    chat.ask(&env, 3, "what is the plan?").await;
    let first = chat.first_post(&env).await;
    // Past the draft's recording (the post's answer came back), still writing.
    wait_for("a draft edit", Duration::from_secs(30), || async { (chat.text_calls(&env).len() >= 2).then_some(()) })
        .await;
    env.crash_and_restart().await;
    let expected = if then_skip { Vec::new() } else { chat.expected(&answer) };
    chat.shows(&env, &expected).await;
    assert_eq!(env.llm.requests().len(), 2, "the turn ran again");
    let posts: Vec<Call> = chat.text_calls(&env).into_iter().filter(|call| !call.path.contains(chat.edit)).collect();
    assert!(posts.len() <= 1, "no second post: {posts:?}");
    assert!(posts.iter().all(|post| post.at == first.at));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_mid_stream_on_telegram_ends_in_one_complete_message_or_none_after_a_skip() {
    a_crash_mid_stream_leaves_one_complete_message(TELEGRAM, false).await;
    a_crash_mid_stream_leaves_one_complete_message(TELEGRAM, true).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_mid_stream_on_slack_ends_in_one_complete_message() {
    a_crash_mid_stream_leaves_one_complete_message(SLACK, false).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_mid_stream_on_discord_ends_in_one_complete_message() {
    a_crash_mid_stream_leaves_one_complete_message(DISCORD, false).await;
}
