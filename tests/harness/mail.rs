//! Email through the local runtime: a raw mail is POSTed to wrangler's local
//! email route (`/cdn-cgi/handler/email?from=…&to=…`), which runs the
//! Worker's `email` handler; what the Worker sends through its `send_email`
//! binding, miniflare writes to a file and names in the log
//! ("send_email binding called with the following message:" then
//! "Email: /tmp/…/email/….eml"). [`Outbox`] reads those files back.

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::Instant;

use mail_parser::{MessageParser, MimeHeaders};

use super::worker::Worker;

/// The bot's routed address in tests.
pub const BOT_ADDRESS: &str = "bot@edgebot.example";

/// What the local route answered: its status and text.
#[derive(Debug)]
pub struct Posted {
    pub status: u16,
    pub text: String,
}

impl Posted {
    /// The reason the Worker rejected the mail with (`setReject`), if it did.
    pub fn rejected(&self) -> Option<String> {
        self.text.split_once("following reason: ").map(|(_, reason)| reason.trim().to_string())
    }
}

/// Hands `raw` to the Worker as Email Routing would, from `envelope_from`.
pub async fn post(client: &reqwest::Client, worker: &Worker, envelope_from: &str, raw: &str) -> Posted {
    let url = format!("{}/cdn-cgi/handler/email", worker.base_url);
    let response = client
        .post(url)
        .query(&[("from", envelope_from), ("to", BOT_ADDRESS)])
        .body(raw.to_string())
        .send()
        .await
        .expect("the local email route answers");
    Posted { status: response.status().as_u16(), text: response.text().await.unwrap_or_default() }
}

/// A mail from `from` as a mail client writes it: `extra` headers (each
/// ending in CRLF) go above the body.
pub fn mail(from: &str, message_id: &str, references: &[&str], subject: &str, extra: &str, body: &str) -> String {
    let mut threading = String::new();
    if let Some(parent) = references.last() {
        threading.push_str(&format!("In-Reply-To: <{parent}>\r\n"));
        let listed: Vec<String> = references.iter().map(|id| format!("<{id}>")).collect();
        threading.push_str(&format!("References: {}\r\n", listed.join(" ")));
    }
    format!(
        "From: {from}\r\nTo: {BOT_ADDRESS}\r\nSubject: {subject}\r\nMessage-ID: <{message_id}>\r\n\
         Date: Tue, 1 Jul 2025 10:00:00 +0000\r\n{threading}{extra}MIME-Version: 1.0\r\n\
         Content-Type: text/plain; charset=utf-8\r\n\r\n{}\r\n",
        body.replace('\n', "\r\n")
    )
}

/// One mail the Worker sent.
#[derive(Debug, Clone)]
pub struct SentMail {
    /// When the test first saw it.
    pub at: Instant,
    pub from: String,
    pub to: String,
    /// Without brackets; the local binding sets its own.
    pub message_id: String,
    pub subject: String,
    pub in_reply_to: String,
    pub references: Vec<String>,
    pub auto_submitted: String,
    pub text: String,
    /// Attachments: name and bytes.
    pub files: Vec<(String, Vec<u8>)>,
}

fn read_mail(path: &str, at: Instant) -> Option<SentMail> {
    let raw = std::fs::read(path).ok()?;
    let message = MessageParser::default().parse(&raw)?;
    let address = |value: Option<&mail_parser::Address>| {
        value.and_then(|address| address.first()).and_then(|address| address.address()).unwrap_or_default().to_string()
    };
    Some(SentMail {
        at,
        from: address(message.from()),
        to: address(message.to()),
        message_id: message.message_id().unwrap_or_default().to_string(),
        subject: message.subject().unwrap_or_default().to_string(),
        in_reply_to: message.in_reply_to().as_text().unwrap_or_default().to_string(),
        references: message
            .references()
            .as_text_list()
            .map(|ids| ids.iter().map(|id| id.to_string()).collect())
            .or_else(|| message.references().as_text().map(|id| vec![id.to_string()]))
            .unwrap_or_default(),
        auto_submitted: message.header_raw("Auto-Submitted").unwrap_or_default().trim().to_string(),
        text: message.body_text(0).unwrap_or_default().replace("\r\n", "\n").trim_end_matches('\n').to_string(),
        files: message
            .attachments()
            .map(|part| (part.attachment_name().unwrap_or_default().to_string(), part.contents().to_vec()))
            .collect(),
    })
}

/// The files the log names as sent through the binding, in order.
fn sent_paths(log: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let mut announced = false;
    for line in log.lines() {
        if line.contains("send_email binding called with the following message:") {
            announced = true;
            continue;
        }
        if announced {
            if let Some((_, path)) = line.split_once("Email: ") {
                // Strip any colour codes after the path.
                let path: String = path.chars().take_while(|character| *character != '\u{1b}').collect();
                paths.push(path.trim().to_string());
                announced = false;
            }
        }
    }
    paths
}

/// Every mail the Worker sent so far, across restarts (a restarted Worker
/// logs to a new file: [`Outbox::keep_before_restart`] reads the old one first).
#[derive(Default)]
pub struct Outbox {
    seen: Mutex<(HashSet<String>, Vec<SentMail>)>,
}

impl Outbox {
    /// Reads what `worker`'s log names and was not read yet; returns them all.
    pub fn read(&self, worker: &Worker) -> Vec<SentMail> {
        let mut seen = self.seen.lock().unwrap();
        for path in sent_paths(&worker.log()) {
            if seen.0.contains(&path) {
                continue;
            }
            // The file is written before its line is logged; a mail not yet readable is read next time.
            if let Some(mail) = read_mail(&path, Instant::now()) {
                seen.0.insert(path);
                seen.1.push(mail);
            }
        }
        seen.1.clone()
    }

    /// Reads the log of a Worker about to be killed.
    pub fn keep_before_restart(&self, worker: &Worker) {
        self.read(worker);
    }
}
