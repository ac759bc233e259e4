//! A web-chat guest over the chat socket, as the page talks to it: the
//! invitation's cookie, then a message and what comes back, each line with
//! the moment it arrived (tests and `make bench`).

use std::io::ErrorKind;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tungstenite::client::IntoClientRequest;
use tungstenite::Message;

use super::TestEnv;

/// The chat cookie a guest gets for the invitation `invite`.
pub async fn guest_cookie(env: &TestEnv, invite: &str) -> String {
    let url = format!("{}/api/chat/session", env.worker.base_url);
    let response = env.client.post(url).json(&json!({ "token": invite })).send().await.unwrap();
    assert_eq!(response.status(), 200, "the invitation opens a web chat");
    let set_cookie = response.headers().get("set-cookie").expect("a chat cookie").to_str().unwrap();
    set_cookie.split(';').next().unwrap().to_string()
}

/// Says `text` over a new chat socket and collects what comes back, until the
/// assistant's message or the end of the turn's working signal.
pub async fn say(env: &TestEnv, cookie: &str, text: &str) -> Vec<(Instant, Value)> {
    say_with_files(env, cookie, text, &[]).await
}

/// [`say`] with uploads (their tokens from `POST /api/chat/files`) named in the message.
pub async fn say_with_files(env: &TestEnv, cookie: &str, text: &str, files: &[String]) -> Vec<(Instant, Value)> {
    say_until(env, cookie, text, files, None).await
}

/// [`say_with_files`], reading until a line meets `until` (rather than until
/// the first answer).
pub async fn say_until(
    env: &TestEnv,
    cookie: &str,
    text: &str,
    files: &[String],
    until: Option<fn(&Value) -> bool>,
) -> Vec<(Instant, Value)> {
    let (base_url, cookie, text, files) =
        (env.worker.base_url.clone(), cookie.to_string(), text.to_string(), files.to_vec());
    tokio::task::spawn_blocking(move || say_blocking(&base_url, &cookie, &text, &files, until)).await.unwrap()
}

fn say_blocking(
    base_url: &str,
    cookie: &str,
    text: &str,
    files: &[String],
    until: Option<fn(&Value) -> bool>,
) -> Vec<(Instant, Value)> {
    let mut socket = open(base_url, cookie);
    // Short reads from here on, so each line's arrival is timed closely.
    socket.get_mut().set_read_timeout(Some(Duration::from_millis(20))).unwrap();
    // The page's own id for the message: 8 to 64 letters, digits and dashes.
    let id = format!(
        "message-{:016x}",
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
    );
    let send = json!({ "type": "send", "id": id, "text": text, "files": files });
    socket.send(Message::text(send.to_string())).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut seen = Vec::new();
    let mut working = false;
    loop {
        assert!(Instant::now() < deadline, "no answer came: {seen:?}");
        match socket.read() {
            Ok(Message::Text(text)) => {
                let line: Value = serde_json::from_str(text.as_str()).unwrap_or_default();
                let done = match until {
                    Some(until) => until(&line),
                    None => {
                        (line["type"] == "message" && line["role"] == "assistant")
                            || (working && line["type"] == "working" && line["on"] == false)
                    }
                };
                working |= line["type"] == "working" && line["on"] == true;
                seen.push((Instant::now(), line));
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

/// The chat so far, as a page that (re)connects gets it: the `history` lines.
pub async fn history(env: &TestEnv, cookie: &str) -> Vec<Value> {
    let (base_url, cookie) = (env.worker.base_url.clone(), cookie.to_string());
    tokio::task::spawn_blocking(move || {
        let mut socket = open(&base_url, &cookie);
        socket.send(Message::text(json!({ "type": "hello" }).to_string())).unwrap();
        loop {
            if let Message::Text(text) = socket.read().expect("the history comes") {
                let line: Value = serde_json::from_str(text.as_str()).unwrap_or_default();
                if line["type"] == "history" {
                    let _ = socket.close(None);
                    return line["messages"].as_array().cloned().unwrap_or_default();
                }
            }
        }
    })
    .await
    .unwrap()
}

/// The chat socket as the page opens it (its cookie, its origin), reads waiting up to 5 s.
pub fn open(base_url: &str, cookie: &str) -> tungstenite::WebSocket<TcpStream> {
    let address = base_url.trim_start_matches("http://");
    let stream = TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut request = format!("ws://{address}/api/chat/socket").into_client_request().unwrap();
    request.headers_mut().insert("cookie", cookie.parse().unwrap());
    request.headers_mut().insert("origin", base_url.parse().unwrap());
    let (socket, _) = tungstenite::client::client(request, stream).expect("the chat socket opens");
    socket
}
