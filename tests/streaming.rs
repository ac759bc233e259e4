//! Streamed replies (issue 24), on the web chat: the reply shows over the
//! socket while the model writes it, as drafts that only grow, each a prefix
//! of the one final message; a configured secret in the model's text never
//! shows in any draft, not even its beginning; a turn that ends in `skip`
//! shows nothing, and `STREAM_REPLIES=off` sends only the final message.

use std::io::ErrorKind;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tungstenite::client::IntoClientRequest;
use tungstenite::Message;

use crate::harness::fake_llm::Pace;
use crate::harness::{Scripted, TestEnv};

const INVITE: &str = "streaming-test-invitation-0123";
/// The test environment's `OPENAI_API_KEY` (tests/harness.rs).
const SECRET: &str = "test-llm-key";

async fn guest_cookie(env: &TestEnv) -> String {
    let url = format!("{}/api/chat/session", env.worker.base_url);
    let response = env.client.post(url).json(&json!({ "token": INVITE })).send().await.unwrap();
    assert_eq!(response.status(), 200, "the invitation opens a web chat");
    let set_cookie = response.headers().get("set-cookie").expect("a chat cookie").to_str().unwrap();
    set_cookie.split(';').next().unwrap().to_string()
}

/// Says `text` over the chat socket and collects what comes back until the
/// assistant's message (or, `quiet`, until the turn's working signal ends).
fn say(base_url: &str, cookie: &str, text: &str) -> Vec<Value> {
    let address = base_url.trim_start_matches("http://");
    let stream = TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let mut request = format!("ws://{address}/api/chat/socket").into_client_request().unwrap();
    request.headers_mut().insert("cookie", cookie.parse().unwrap());
    request.headers_mut().insert("origin", base_url.parse().unwrap());
    let (mut socket, _) = tungstenite::client::client(request, stream).expect("the chat socket opens");
    let send = json!({ "type": "send", "id": format!("message-{:08}", text.len()), "text": text });
    socket.send(Message::text(send.to_string())).unwrap();
    let deadline = Instant::now() + Duration::from_secs(40);
    let mut seen = Vec::new();
    let mut working = false;
    loop {
        assert!(Instant::now() < deadline, "no answer came: {seen:?}");
        match socket.read() {
            Ok(Message::Text(text)) => {
                let line: Value = serde_json::from_str(text.as_str()).unwrap_or_default();
                let done = (line["type"] == "message" && line["role"] == "assistant")
                    || (working && line["type"] == "working" && line["on"] == false);
                working |= line["type"] == "working" && line["on"] == true;
                seen.push(line);
                if done {
                    break;
                }
            }
            Ok(_) => {}
            Err(tungstenite::Error::Io(error))
                if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(error) => panic!("the chat socket failed: {error}"),
        }
    }
    let _ = socket.close(None);
    seen
}

async fn say_async(env: &TestEnv, cookie: &str, text: &str) -> Vec<Value> {
    let (base_url, cookie, text) = (env.worker.base_url.clone(), cookie.to_string(), text.to_string());
    tokio::task::spawn_blocking(move || say(&base_url, &cookie, &text)).await.unwrap()
}

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
    let cookie = guest_cookie(&env).await;
    // First token after 500 ms, then 8 characters every 40 ms: about 3 s of writing.
    env.llm.set_pace(Pace { first: Duration::from_millis(500), every: Duration::from_millis(40), chars: 8 });
    let answer = format!(
        "Here is the whole plan for today, step by step. First we gather the notes. The key you \
         pasted, {SECRET}, stays out of this. Then we write the summary and send it around. {}Done.",
        "More words keep the stream going. ".repeat(6)
    );
    env.llm.reply(&answer);
    let seen = say_async(&env, &cookie, "what is the plan?").await;
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
    let cookie = guest_cookie(&env).await;
    env.llm.set_pace(Pace { first: Duration::from_millis(100), every: Duration::from_millis(40), chars: 4 });
    env.llm.push(Scripted::ToolCalls(vec![("skip".into(), json!({ "reason": "nothing to say to that" }))]));
    let seen = say_async(&env, &cookie, "ok").await;
    assert!(drafts(&seen).is_empty(), "a skip shows nothing: {seen:?}");
    assert_eq!(final_text(&seen), None);

    let env = TestEnv::start_with(&[("WEB_CHAT_TOKEN", INVITE), ("STREAM_REPLIES", "off")]).await;
    let cookie = guest_cookie(&env).await;
    env.llm.set_pace(Pace { first: Duration::from_millis(100), every: Duration::from_millis(40), chars: 4 });
    let answer = "A reply long enough to have shown in several drafts had streaming been on for the web.";
    env.llm.reply(answer);
    let seen = say_async(&env, &cookie, "hello").await;
    assert!(drafts(&seen).is_empty(), "streaming off: {seen:?}");
    assert_eq!(final_text(&seen).as_deref(), Some(answer));
    let asked_to_stream = env.llm.requests().iter().any(|request| request["stream"] == json!(true));
    assert!(!asked_to_stream, "the model is asked for a whole answer");
}
