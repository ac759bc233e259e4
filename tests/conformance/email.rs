//! Email: a person (`ada@example.com`, on `EMAIL_ALLOW`) mails the bot
//! through wrangler's local email route; every message after the first
//! replies in the first one's thread, so all are one conversation. What the
//! person sees is the mails the Worker sent them through the `send_email`
//! binding (read from the files the local binding writes). Another person
//! (`bob@example.com`) is allowed too, for approvals.

use std::time::Duration;

use base64::Engine;
use edgebot::platforms::email::wire::{attachment_token, conversation_key};
use edgebot::reply::markup::Flavor;
use serde_json::json;

use super::kit::{Attachment, Change, Forged, Messenger, SentFile, Settlement, Support, Update};
use crate::harness::mail::{mail, post, Outbox, SentMail};
use crate::harness::{wait_for, TestEnv};

const ADA: &str = "ada@example.com";
const BOB: &str = "bob@example.com";

/// Delivery `n`'s Message-ID.
fn message_id(n: u64) -> String {
    format!("m-{n:06}@example.com")
}

pub struct Email {
    env: TestEnv,
    outbox: Outbox,
}

impl Email {
    /// Delivery `n` from `from`, in the thread of delivery 1.
    fn raw(&self, from: &str, n: u64, text: &str, extra: &str) -> String {
        let root = message_id(1);
        let references: Vec<&str> = if n == 1 { vec![] } else { vec![root.as_str()] };
        mail(from, &message_id(n), &references, "Conformance", extra, text)
    }

    async fn deliver(&self, from: &str, raw: &str) -> crate::harness::mail::Posted {
        post(&self.env.client, &self.env.worker, from, raw).await
    }

    fn sent(&self) -> Vec<SentMail> {
        self.outbox.read(&self.env.worker)
    }

    fn sent_to(&self, address: &str) -> Vec<SentMail> {
        self.sent().into_iter().filter(|mail| mail.to == address).collect()
    }

    /// A refused mail as the kit reads a refusal: the local route answers a
    /// rejection (`setReject`, an SMTP 5xx in production) with 400 and its
    /// reason, which stands here as the JSON error.
    async fn forged(&self, what: &'static str, envelope_from: &str, raw: &str) -> Forged {
        let posted = self.deliver(envelope_from, raw).await;
        let body = match posted.rejected() {
            Some(reason) => json!({ "error": reason }),
            None => json!({ "answer": posted.text }),
        };
        Forged { what, status: posted.status, body }
    }
}

impl Messenger for Email {
    const NAME: &'static str = "email";
    const LIMIT: usize = edgebot::platforms::email::wire::MESSAGE_LIMIT;
    const FLAVOR: Flavor = Flavor::Plain;

    async fn start(vars: &[(&str, &str)]) -> Self {
        let mut all = vec![("EMAIL_ALLOW", "ada@example.com,bob@example.com")];
        all.extend_from_slice(vars);
        Email { env: TestEnv::start_with(&all).await, outbox: Outbox::default() }
    }

    fn env(&self) -> &TestEnv {
        &self.env
    }

    async fn crash_and_restart(&mut self) {
        self.outbox.keep_before_restart(&self.env.worker);
        self.env.crash_and_restart().await;
    }

    fn conversation(&self) -> String {
        conversation_key(ADA, &message_id(1))
    }

    async fn say(&self, n: u64, text: &str) {
        let posted = self.deliver(ADA, &self.raw(ADA, n, text, "")).await;
        assert_eq!(posted.status, 200, "the mail was taken: {posted:?}");
    }

    async fn say_again(&self, n: u64, text: &str) {
        self.say(n, text).await;
    }

    /// A stranger's mail, the person's address on a mail that failed the
    /// routing's checks, and a mail with no sender: each rejected.
    async fn forge(&self, n: u64, text: &str) -> Vec<Forged> {
        let stranger = self.raw("eve@evil.example", n, text, "");
        let spoofed = self.raw(ADA, n, text, "Authentication-Results: mx.cloudflare.net; spf=fail; dmarc=fail\r\n");
        // (A mail with no From at all the local route itself cannot take: it answers 500.)
        let anonymous =
            self.raw(ADA, n, text, "").replace(&format!("From: {ADA}\r\n"), "From: undisclosed-recipients:;\r\n");
        vec![
            self.forged("a sender off the allow-list", "eve@evil.example", &stranger).await,
            self.forged("a forged sender (authentication failed)", ADA, &spoofed).await,
            self.forged("a mail whose From has no address", ADA, &anonymous).await,
        ]
    }

    /// In the order they were sent: the outbox's (the local binding logs
    /// each mail once its file is written, and a short one can overtake a long one).
    async fn shown(&self) -> Vec<String> {
        let mut rows = super::kit::outbox(self).await;
        rows.reverse(); // newest first
        let sent_ids: Vec<String> = rows
            .iter()
            .filter_map(|row| row["platform_message_id"].as_str())
            .map(|id| id.trim_matches(['<', '>']).to_string())
            .collect();
        let mut mails = self.sent_to(ADA);
        mails.sort_by_key(|mail| sent_ids.iter().position(|id| *id == mail.message_id).unwrap_or(usize::MAX));
        mails.into_iter().map(|mail| mail.text).collect()
    }

    fn updates(&self) -> Vec<Update> {
        let mails = self.sent_to(ADA);
        mails.into_iter().map(|mail| Update { at: mail.at, change: Change::Post, text: mail.text }).collect()
    }

    fn streams(&self) -> Support<()> {
        Support::Unsupported("a sent mail cannot be edited: the reply is one mail, sent when it is whole")
    }

    fn rate_limit_next_send(&self, _seconds: u64) -> Support<()> {
        Support::Unsupported("the send_email binding takes a mail or throws; it never asks to wait")
    }

    fn send_attempts(&self) -> Vec<std::time::Instant> {
        self.sent_to(ADA).into_iter().map(|mail| mail.at).collect()
    }

    fn hang_next_send(&self) -> Support<Settlement> {
        Support::Unsupported(
            "the local send_email binding answers at once and cannot be held; an interrupted send is resent \
             marked (Interrupted::Unsure, docs/delivery.md)",
        )
    }

    fn lookups(&self) -> usize {
        0
    }

    fn deletes(&self) -> Support<()> {
        Support::Unsupported("a sent mail cannot be taken back; email never posts drafts")
    }

    async fn shows_buttons(&self, approval: &str) -> bool {
        let marker = format!("[approval {approval}]");
        self.sent_to(ADA).iter().any(|mail| mail.text.contains(&marker) && mail.text.contains("APPROVE"))
    }

    /// A press is a reply saying the choice, quoting the approval's mail;
    /// someone else is Bob, whose refusal comes to him alone, by mail.
    async fn press(&self, n: u64, by_asker: bool, choice: &str, approval: &str) -> Option<String> {
        let from = if by_asker { ADA } else { BOB };
        let text = format!("{}\n\nOn Tue, edgebot wrote:\n> Shall I?\n> [approval {approval}]", choice.to_uppercase());
        let posted = self.deliver(from, &self.raw(from, 100 + n, &text, "")).await;
        assert_eq!(posted.status, 200, "the reply was taken: {posted:?}");
        if by_asker {
            return None;
        }
        let note = wait_for("the refusal mailed to the presser", Duration::from_secs(20), || async {
            self.sent_to(BOB).first().map(|mail| mail.text.clone())
        })
        .await;
        Some(note)
    }

    async fn attach(&self, name: &str, bytes: &[u8]) -> Attachment {
        let token = attachment_token(&message_id(1), 0);
        Attachment {
            id: edgebot::files::rules::file_id(&self.conversation(), &token),
            name: name.into(),
            size: bytes.len(),
            handle: String::from_utf8(bytes.to_vec()).expect("the kit attaches text"),
        }
    }

    async fn say_with_file(&self, n: u64, text: &str, file: &Attachment) {
        assert_eq!(n, 1, "the attachment's id is made for delivery 1");
        let boundary = "conformance-boundary";
        let body = format!(
            "--{boundary}\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{text}\r\n\
             --{boundary}\r\nContent-Type: text/csv\r\nContent-Disposition: attachment; filename=\"{}\"\r\n\
             Content-Transfer-Encoding: base64\r\n\r\n{}\r\n\
             --{boundary}--",
            file.name,
            // Base64, as mail clients send files: the bytes arrive exactly.
            base64::engine::general_purpose::STANDARD.encode(file.handle.as_bytes())
        );
        let raw = mail(ADA, &message_id(n), &[], "Conformance", "", "")
            .replace("Content-Type: text/plain; charset=utf-8\r\n\r\n\r\n", "")
            + &format!("Content-Type: multipart/mixed; boundary=\"{boundary}\"\r\n\r\n{body}\r\n");
        let posted = self.deliver(ADA, &raw).await;
        assert_eq!(posted.status, 200, "the mail was taken: {posted:?}");
    }

    async fn files_sent(&self) -> Vec<SentFile> {
        let mails = self.sent_to(ADA);
        let files = mails.into_iter().flat_map(|mail| mail.files);
        files.map(|(name, bytes)| SentFile { name, body: String::from_utf8_lossy(&bytes).into_owned() }).collect()
    }

    async fn edit(&self, _delivery: u64, _n: u64, _text: &str) -> Support<()> {
        Support::Unsupported("a mail once sent cannot be edited")
    }

    async fn delete_own(&self, _delivery: u64, _n: u64) -> Support<()> {
        Support::Unsupported("deleting a mail in one's own mailbox tells nobody")
    }

    async fn react(&self, _delivery: u64, _bot_message: &str) -> Support<()> {
        Support::Unsupported("mail has no reactions")
    }
}

super::conformance_tests!(Email);
