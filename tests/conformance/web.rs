//! The web chat: a guest (the invitation's cookie) over the chat WebSocket,
//! held open by a reader thread the way the page holds it (reconnecting
//! after a restart); what the guest sees is the chat's history, as a page
//! that loads now gets it.

use std::io::ErrorKind;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use edgebot::reply::markup::Flavor;
use serde_json::{json, Value};
use tungstenite::Message;

use super::kit::{
    forged, upgrade_headers, Attachment, Change, Forged, Messenger, SentFile, Settlement, Support, Update,
};
use crate::harness::chat_socket::{guest_cookie, history, open};
use crate::harness::TestEnv;

const INVITE: &str = "conformance-invitation-0123";

type Frames = Arc<Mutex<Vec<(Instant, Value)>>>;

pub struct Web {
    env: TestEnv,
    cookie: String,
    conversation: String,
    /// Every line the chat pushed to the guest's socket, as it arrived.
    frames: Frames,
    outgoing: Sender<Value>,
    /// Where the Worker is now (a restart may move it).
    base_url: Arc<Mutex<String>>,
    stop: Arc<AtomicBool>,
}

impl Drop for Web {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Keeps the guest's socket open until `stop`: sends what is queued, records
/// what comes, and reconnects when the socket breaks (as the page does).
fn hold_socket(
    base_url: Arc<Mutex<String>>,
    cookie: String,
    frames: Frames,
    outgoing: Receiver<Value>,
    stop: Arc<AtomicBool>,
) {
    while !stop.load(Ordering::SeqCst) {
        let url = base_url.lock().unwrap().clone();
        let address = url.trim_start_matches("http://").to_string();
        if std::net::TcpStream::connect(&address).is_err() {
            std::thread::sleep(Duration::from_millis(100));
            continue;
        }
        let connected = std::panic::catch_unwind(|| open(&url, &cookie));
        let Ok(mut socket) = connected else {
            std::thread::sleep(Duration::from_millis(100));
            continue;
        };
        socket.get_mut().set_read_timeout(Some(Duration::from_millis(20))).unwrap();
        while !stop.load(Ordering::SeqCst) {
            if let Ok(frame) = outgoing.try_recv() {
                if socket.send(Message::text(frame.to_string())).is_err() {
                    break;
                }
            }
            match socket.read() {
                Ok(Message::Text(text)) => {
                    let line: Value = serde_json::from_str(text.as_str()).unwrap_or_default();
                    frames.lock().unwrap().push((Instant::now(), line));
                }
                Ok(_) => {}
                Err(tungstenite::Error::Io(error))
                    if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(_) => break,
            }
        }
    }
}

impl Web {
    fn send_frame(&self, n: u64, text: &str, files: &[String]) {
        // The page's own id for the message: the channel takes each id once.
        let frame =
            json!({ "type": "send", "id": format!("message-conformance-{n:06}"), "text": text, "files": files });
        self.outgoing.send(frame).unwrap();
    }

    fn assistant_lines(&self) -> Vec<(Instant, Value)> {
        let frames = self.frames.lock().unwrap();
        frames.iter().filter(|(_, line)| line["type"] == "message" && line["role"] == "assistant").cloned().collect()
    }

    async fn socket_attempt(&self, what: &'static str, cookie: Option<&str>, origin: &str) -> Forged {
        let mut request = self.env.client.get(format!("{}/api/chat/socket", self.env.worker.base_url));
        for (name, value) in upgrade_headers() {
            request = request.header(name, value);
        }
        if let Some(cookie) = cookie {
            request = request.header("cookie", cookie);
        }
        forged(what, request.header("origin", origin).send().await.unwrap()).await
    }
}

impl Messenger for Web {
    const NAME: &'static str = "web";
    const LIMIT: usize = 16_000;
    const FLAVOR: Flavor = Flavor::Plain;

    async fn start(vars: &[(&str, &str)]) -> Self {
        let mut all = vec![("WEB_CHAT_TOKEN", INVITE)];
        all.extend_from_slice(vars);
        let env = TestEnv::start_with(&all).await;
        let cookie = guest_cookie(&env, INVITE).await;
        let url = format!("{}/api/chat/session", env.worker.base_url);
        let session: Value = env.client.get(url).header("cookie", &cookie).send().await.unwrap().json().await.unwrap();
        let conversation = session["conversation"].as_str().expect("the chat's conversation").to_string();
        let frames = Frames::default();
        let (outgoing, queued) = channel();
        let base_url = Arc::new(Mutex::new(env.worker.base_url.clone()));
        let stop = Arc::new(AtomicBool::new(false));
        let reader = (base_url.clone(), cookie.clone(), frames.clone(), stop.clone());
        std::thread::spawn(move || hold_socket(reader.0, reader.1, reader.2, queued, reader.3));
        Web { env, cookie, conversation, frames, outgoing, base_url, stop }
    }

    fn env(&self) -> &TestEnv {
        &self.env
    }

    async fn crash_and_restart(&mut self) {
        self.env.crash_and_restart().await;
        *self.base_url.lock().unwrap() = self.env.worker.base_url.clone();
    }

    fn conversation(&self) -> String {
        self.conversation.clone()
    }

    async fn say(&self, n: u64, text: &str) {
        self.send_frame(n, text, &[]);
    }

    async fn say_again(&self, n: u64, text: &str) {
        self.send_frame(n, text, &[]);
    }

    /// The socket is the only way in: without the chat's cookie, with a
    /// forged one, or from another site's page, it does not open.
    async fn forge(&self, _n: u64, _text: &str) -> Vec<Forged> {
        let own = self.env.worker.base_url.clone();
        let (name, value) = self.cookie.split_once('=').unwrap();
        // A different hex digit (not merely another case of the same one).
        let flipped = if value.ends_with('0') { '1' } else { '0' };
        let forged_cookie = format!("{name}={}{flipped}", &value[..value.len() - 1]);
        vec![
            self.socket_attempt("no cookie", None, &own).await,
            self.socket_attempt("a forged cookie", Some(&forged_cookie), &own).await,
            self.socket_attempt("another site's page", Some(&self.cookie), "https://evil.example").await,
        ]
    }

    async fn shown(&self) -> Vec<String> {
        let lines = history(&self.env, &self.cookie).await;
        let assistant = lines.into_iter().filter(|line| line["role"] == "assistant");
        assistant.map(|line| line["text"].as_str().unwrap_or_default().to_string()).collect()
    }

    fn updates(&self) -> Vec<Update> {
        let frames = self.frames.lock().unwrap();
        let mut seen = std::collections::HashSet::new();
        let mut updates = Vec::new();
        for (at, line) in frames.iter() {
            let change = match line["type"].as_str() {
                Some("draft") => Change::Draft,
                // The page keeps one copy per id: a line again is an edit of it.
                Some("message") if line["role"] == "assistant" => match seen.insert(line["id"].to_string()) {
                    true => Change::Post,
                    false => Change::Edit,
                },
                _ => continue,
            };
            updates.push(Update { at: *at, change, text: line["text"].as_str().unwrap_or_default().to_string() });
        }
        updates
    }

    fn rate_limit_next_send(&self, _seconds: u64) -> Support<()> {
        Support::Unsupported("a web reply is pushed over the Worker's own socket: no platform answers 429")
    }

    fn send_attempts(&self) -> Vec<Instant> {
        self.assistant_lines().into_iter().map(|(at, _)| at).collect()
    }

    fn hang_next_send(&self) -> Support<Settlement> {
        Support::Unsupported("a web reply is a push from the conversation's own object: no platform holds it")
    }

    fn lookups(&self) -> usize {
        0
    }

    fn deletes(&self) -> Support<()> {
        Support::Unsupported("web drafts are socket lines, never messages: nothing is posted to delete")
    }

    async fn shows_buttons(&self, approval: &str) -> bool {
        let lines = history(&self.env, &self.cookie).await;
        lines.iter().any(|line| line["approval"]["id"] == approval && line["approval"]["open"] == true)
    }

    /// Someone else is another guest (another chat's cookie); a refusal is
    /// the answer to their own request.
    async fn press(&self, _n: u64, by_asker: bool, choice: &str, approval: &str) -> Option<String> {
        let cookie = match by_asker {
            true => self.cookie.clone(),
            false => guest_cookie(&self.env, INVITE).await,
        };
        let url = format!("{}/api/chat/approvals/{approval}", self.env.worker.base_url);
        let request = self.env.client.post(url).header("cookie", cookie).header("origin", &self.env.worker.base_url);
        let response = request.json(&json!({ "choice": choice })).send().await.unwrap();
        let status = response.status().as_u16();
        let answer: Value = response.json().await.unwrap_or_default();
        match status {
            200 => None,
            _ => Some(answer["error"].as_str().map_or_else(|| format!("{status}"), str::to_string)),
        }
    }

    async fn attach(&self, name: &str, bytes: &[u8]) -> Attachment {
        let url = format!("{}/api/chat/files", self.env.worker.base_url);
        let request = self.env.client.post(url).header("origin", &self.env.worker.base_url);
        let request = request.header("cookie", &self.cookie).header("x-file-name", name).body(bytes.to_vec());
        let answer: Value = request.send().await.unwrap().json().await.unwrap();
        let token = answer["upload"].as_str().expect("an upload token").to_string();
        Attachment {
            id: edgebot::files::rules::file_id(&self.conversation, &token),
            name: name.into(),
            size: bytes.len(),
            handle: token,
        }
    }

    async fn say_with_file(&self, n: u64, text: &str, file: &Attachment) {
        self.send_frame(n, text, std::slice::from_ref(&file.handle));
    }

    /// A file is a message with its name and a signed link that downloads it
    /// (read from the socket: the history keeps the piece's text, not the link).
    async fn files_sent(&self) -> Vec<SentFile> {
        let mut sent = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (_, line) in self.assistant_lines() {
            if !seen.insert(line["id"].to_string()) {
                continue;
            }
            let text = line["text"].as_str().unwrap_or_default().to_string();
            let Some((name, link)) = text.split_once('\n').filter(|(_, link)| link.starts_with("/api/files/")) else {
                continue;
            };
            let response = self.env.client.get(format!("{}{link}", self.env.worker.base_url)).send().await.unwrap();
            assert_eq!(response.status(), 200, "the link downloads the file");
            sent.push(SentFile { name: name.to_string(), body: response.text().await.unwrap() });
        }
        sent
    }

    async fn edit(&self, _delivery: u64, _n: u64, _text: &str) -> Support<()> {
        Support::Unsupported("the web chat's page offers no edit (docs/heard.md)")
    }

    async fn delete_own(&self, _delivery: u64, _n: u64) -> Support<()> {
        Support::Unsupported("the web chat's page offers no deletion (docs/heard.md)")
    }

    async fn react(&self, _delivery: u64, _bot_message: &str) -> Support<()> {
        Support::Unsupported("the web chat's page offers no reactions (docs/heard.md)")
    }
}

super::conformance_tests!(Web);
