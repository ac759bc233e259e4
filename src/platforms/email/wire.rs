//! A routed mail read into what the bot needs (pure): its sender, its thread,
//! its new text and its attachments, the conversation and person it belongs
//! to, and the inbound event made of it. Whether it is answered at all is
//! [`super::rules`]; the reply's MIME is [`super::compose`].
//!
//! Keys (docs/email.md):
//! - conversation `email:{32 hex}`: the first 16 bytes of SHA-256 over the
//!   sender's address and the thread's root Message-ID, so a thread is one
//!   conversation and nobody joins another person's thread by quoting its ids;
//! - person `email:{address}`, lowercased;
//! - delivery: the Message-ID (hashed), so a mail delivered twice is one inbound.

use mail_parser::{Message, MessageParser, MimeHeaders};
use sha2::{Digest, Sha256};

use crate::inbound::{Attachment, Author, InboundEvent, ReplyAddress};
use crate::security::encode_hex;

/// The longest reply, in characters: a reply is one mail however long, so the
/// limit only stops a runaway answer (about 25 pages of text).
pub const MESSAGE_LIMIT: usize = 100_000;
/// The largest raw mail read (Email Routing's own limit is 25 MiB).
pub const MAX_MAIL_BYTES: usize = 25 << 20;
/// Attachments taken from one mail, at most (the rest are named as left out).
pub const ATTACHMENTS_PER_MAIL: usize = crate::files::rules::FILES_PER_MESSAGE;
/// The longest Message-ID, References entry or subject kept.
const MAX_ID_CHARS: usize = 250;
/// References kept on a reply (the root and the newest, as RFC 5322 suggests).
const MAX_REFERENCES: usize = 20;

/// Why a mail cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Malformed {
    #[error("the mail is larger than {MAX_MAIL_BYTES} bytes")]
    TooLarge,
    #[error("the mail could not be parsed as MIME")]
    NotMime,
    #[error("the mail has no From address")]
    NoSender,
    #[error("the mail has no Message-ID")]
    NoMessageId,
}

/// A file that came with the mail, by its place among the mail's attachments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MailFile {
    pub index: usize,
    pub name: String,
    pub content_type: String,
    pub size: usize,
}

/// What a routed mail says, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mail {
    /// The envelope sender (`MAIL FROM`), lowercased; empty for a bounce.
    pub envelope_from: String,
    /// The address it was routed to (`RCPT TO`): the bot's, and the reply's From.
    pub recipient: String,
    /// The From header's address, lowercased: the person.
    pub from: String,
    pub from_name: String,
    /// Without angle brackets.
    pub message_id: String,
    /// The References header's ids, oldest first, then In-Reply-To if not among them.
    pub references: Vec<String>,
    pub subject: String,
    /// What the person wrote, without the quoted mail below it.
    pub text: String,
    /// The whole text part, quotes included (an approval's reply names its id in the quote).
    pub full_text: String,
    pub files: Vec<MailFile>,
    /// The Date header, in milliseconds; None when absent or unreadable.
    pub date_ms: Option<i64>,
}

/// Parses the raw mail. Headers the rules read are looked up on the parsed
/// message ([`headers`]), not here.
pub fn parse(raw: &[u8]) -> Result<Message<'_>, Malformed> {
    if raw.len() > MAX_MAIL_BYTES {
        return Err(Malformed::TooLarge);
    }
    let message = MessageParser::default().parse(raw).ok_or(Malformed::NotMime)?;
    // A message with no header at all is text, not mail.
    if message.headers().is_empty() {
        return Err(Malformed::NotMime);
    }
    Ok(message)
}

/// Every header named `name` (any case), unfolded and trimmed, topmost first.
pub fn headers<'m>(message: &'m Message<'_>, name: &'m str) -> impl Iterator<Item = String> + 'm {
    message
        .headers_raw()
        .filter(move |(header, _)| header.eq_ignore_ascii_case(name))
        .map(|(_, value)| value.split(['\r', '\n']).map(str::trim).collect::<Vec<_>>().join(" ").trim().to_string())
}

/// Reads the mail's parts into a [`Mail`].
pub fn read(message: &Message<'_>, envelope_from: &str, recipient: &str) -> Result<Mail, Malformed> {
    let sender = message.from().and_then(|from| from.first());
    let from = sender.and_then(|address| address.address()).map(str::trim).unwrap_or_default().to_lowercase();
    if !is_address(&from) {
        return Err(Malformed::NoSender);
    }
    let from_name = sender.and_then(|address| address.name()).map(str::trim).unwrap_or_default().to_string();
    let message_id = message.message_id().map(clean_id).filter(|id| !id.is_empty()).ok_or(Malformed::NoMessageId)?;
    let mut references: Vec<String> =
        message.references().as_text_list().unwrap_or_default().iter().map(|id| clean_id(id)).collect();
    if let Some(parent) = message.in_reply_to().as_text_list().and_then(|ids| ids.last().map(|id| clean_id(id))) {
        if !references.contains(&parent) {
            references.push(parent);
        }
    }
    references.retain(|id| !id.is_empty());
    let full_text = message.body_text(0).map(|text| text.into_owned()).unwrap_or_default();
    let files = message
        .attachments()
        .enumerate()
        .map(|(index, part)| MailFile {
            index,
            name: part.attachment_name().unwrap_or("attachment").to_string(),
            content_type: part
                .content_type()
                .map(|kind| format!("{}/{}", kind.ctype(), kind.subtype().unwrap_or("octet-stream")))
                .unwrap_or_else(|| "application/octet-stream".into()),
            size: part.contents().len(),
        })
        .collect();
    Ok(Mail {
        envelope_from: envelope_from.trim().trim_matches(['<', '>']).to_lowercase(),
        recipient: recipient.trim().to_lowercase(),
        from,
        from_name,
        message_id,
        references,
        subject: capped(message.subject().unwrap_or_default().trim()),
        text: new_text(&full_text),
        full_text,
        files,
        date_ms: message.date().map(|date| date.to_timestamp() * 1000),
    })
}

/// An address as a person writes one: something, `@`, a domain, no spaces,
/// no control characters, no quotes and no colon (a quoted `"email:x"@y` would
/// otherwise read as the person key of `x@y`).
pub fn is_address(address: &str) -> bool {
    let Some((local, domain)) = address.rsplit_once('@') else { return false };
    !local.is_empty()
        && !domain.is_empty()
        && address.len() <= 254
        && !address.chars().any(|character| character.is_whitespace() || character.is_control())
        && !address.contains([':', '"'])
        && !domain.contains(['<', '>', '@', ','])
}

fn clean_id(id: &str) -> String {
    capped(id.trim().trim_matches(['<', '>']))
}

fn capped(text: &str) -> String {
    text.chars().filter(|character| !character.is_control()).take(MAX_ID_CHARS).collect()
}

/// The text above the quoted mail: lines starting with `>` go, and so does
/// the "On … wrote:" line that introduces them (the model has the thread in
/// its history already; the quote would only repeat it).
pub fn new_text(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut kept: Vec<&str> = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with('>') {
            continue;
        }
        let introduces_quote = trimmed.ends_with("wrote:")
            && lines[index + 1..].iter().find(|next| !next.trim().is_empty()).is_some_and(|next| next.starts_with('>'));
        if introduces_quote {
            continue;
        }
        kept.push(line);
    }
    kept.join("\n").trim().to_string()
}

impl Mail {
    /// The thread's first message: the oldest reference, or this mail itself.
    pub fn thread_root(&self) -> &str {
        self.references.first().unwrap_or(&self.message_id)
    }

    /// `email:{32 hex}` (see the module's doc).
    pub fn conversation_key(&self) -> String {
        conversation_key(&self.from, self.thread_root())
    }

    /// Where the reply goes: back to the person, in the thread.
    pub fn reply_address(&self) -> ReplyAddress {
        let mut references = self.references.clone();
        references.push(self.message_id.clone());
        // Keep the root and the newest: a long thread's header stays short.
        if references.len() > MAX_REFERENCES {
            let newest = references.split_off(references.len() - (MAX_REFERENCES - 1));
            references.truncate(1);
            references.extend(newest);
        }
        ReplyAddress::Email {
            to: self.from.clone(),
            from: self.recipient.clone(),
            subject: reply_subject(&self.subject),
            in_reply_to: self.message_id.clone(),
            references,
        }
    }

    /// The inbound event; `token(index)` names attachment `index` as it was
    /// kept, and `now_ms` stamps a mail without a readable Date.
    pub fn event(&self, token: impl Fn(usize) -> String, now_ms: i64) -> InboundEvent {
        let author = Author {
            id: self.from.clone(),
            name: if self.from_name.is_empty() { self.from.clone() } else { self.from_name.clone() },
            is_bot: false,
        };
        let text = match self.subject.is_empty() {
            true => self.text.clone(),
            false => format!("Subject: {}\n\n{}", self.subject, self.text),
        };
        let mut event = InboundEvent::new(
            self.conversation_key(),
            delivery_id(&self.message_id),
            self.message_id.clone(),
            author,
            text,
            self.reply_address(),
        );
        event.is_dm = true;
        event.conversation_title = (!self.subject.is_empty()).then(|| self.subject.clone());
        event.timestamp_ms = self.date_ms.filter(|date| *date > 0).unwrap_or(now_ms);
        event.attachments = self
            .files
            .iter()
            .take(ATTACHMENTS_PER_MAIL)
            .map(|file| Attachment {
                kind: file.content_type.clone(),
                platform_file_id: token(file.index),
                name: Some(file.name.clone()),
                size: Some(file.size as u64),
                url: None,
            })
            .collect();
        event.with_text_capped(MESSAGE_LIMIT)
    }
}

/// The conversation of a thread with one person.
pub fn conversation_key(from: &str, root: &str) -> String {
    let digest = Sha256::digest(format!("{}\n{root}", from.to_lowercase()).as_bytes());
    format!("email:{}", encode_hex(&digest[..16]))
}

/// One delivery per Message-ID, however often it is delivered.
pub fn delivery_id(message_id: &str) -> String {
    encode_hex(&Sha256::digest(message_id.as_bytes())[..16])
}

/// The id an attachment is kept under: unique to the mail and its place.
pub fn attachment_token(message_id: &str, index: usize) -> String {
    format!("mail-{}-{index}", delivery_id(message_id))
}

/// `Re: {subject}`, once (`Re:`, `RE:`, `re:` already there stay as they are).
pub fn reply_subject(subject: &str) -> String {
    let subject = subject.trim();
    match subject.get(..3).is_some_and(|start| start.eq_ignore_ascii_case("re:")) {
        true => subject.to_string(),
        false if subject.is_empty() => "Re: your message".to_string(),
        false => format!("Re: {subject}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) const PLAIN: &str = "From: Ada Lovelace <Ada@Example.com>\r\n\
To: bot@edgebot.example\r\n\
Subject: Numbers\r\n\
Message-ID: <first@example.com>\r\n\
Date: Tue, 1 Jul 2025 10:00:00 +0000\r\n\
Content-Type: text/plain; charset=utf-8\r\n\
\r\n\
What is 6 times 7?\r\n";

    fn mail(raw: &str) -> Mail {
        read(&parse(raw.as_bytes()).unwrap(), "ada@example.com", "Bot@Edgebot.example").unwrap()
    }

    #[test]
    fn a_plain_mail_reads_into_its_person_thread_and_text() {
        let read = mail(PLAIN);
        assert_eq!(read.from, "ada@example.com", "lowercased");
        assert_eq!(read.from_name, "Ada Lovelace");
        assert_eq!(read.message_id, "first@example.com");
        assert_eq!(read.thread_root(), "first@example.com", "a new thread starts at the mail itself");
        assert_eq!(read.text, "What is 6 times 7?");
        assert_eq!(read.date_ms, Some(1_751_364_000_000));
        let event = read.event(|index| format!("t{index}"), 5);
        assert_eq!(event.author.id, "ada@example.com");
        assert_eq!(event.text, "Subject: Numbers\n\nWhat is 6 times 7?");
        assert!(event.is_dm);
        assert_eq!(event.timestamp_ms, 1_751_364_000_000);
        assert!(event.conversation_key.starts_with("email:") && event.conversation_key.len() == 6 + 32);
        let ReplyAddress::Email { to, from, subject, in_reply_to, references } = &event.reply_address else {
            panic!("{:?}", event.reply_address)
        };
        assert_eq!((to.as_str(), from.as_str()), ("ada@example.com", "bot@edgebot.example"));
        assert_eq!(subject, "Re: Numbers");
        assert_eq!(in_reply_to, "first@example.com");
        assert_eq!(references, &vec!["first@example.com".to_string()]);
    }

    #[test]
    fn a_reply_in_the_thread_is_the_same_conversation_and_another_sender_is_not() {
        let first = mail(PLAIN);
        let reply = PLAIN
            .replace("Message-ID: <first@example.com>", "Message-ID: <second@example.com>")
            .replace("Subject: Numbers", "Subject: Re: Numbers\r\nIn-Reply-To: <bot-1@edgebot.example>\r\nReferences: <first@example.com> <bot-1@edgebot.example>");
        let second = mail(&reply);
        assert_eq!(second.thread_root(), "first@example.com");
        assert_eq!(second.conversation_key(), first.conversation_key());
        assert_ne!(second.event(|_| String::new(), 0).delivery_id, first.event(|_| String::new(), 0).delivery_id);
        let ReplyAddress::Email { references, subject, .. } = second.reply_address() else { panic!() };
        assert_eq!(references, ["first@example.com", "bot-1@edgebot.example", "second@example.com"]);
        assert_eq!(subject, "Re: Numbers", "no second Re:");
        let other = mail(&reply.replace("Ada@Example.com", "mallory@example.net"));
        assert_ne!(other.conversation_key(), first.conversation_key(), "quoting ids does not join a thread");
    }

    #[test]
    fn the_person_is_the_lowercased_address() {
        let event = mail(PLAIN).event(|_| String::new(), 0);
        let person = crate::budget::rules::person_key(&event.conversation_key, &event.author.id);
        assert_eq!(person.as_deref(), Some("email:ada@example.com"));
    }

    #[test]
    fn the_same_message_id_is_the_same_delivery() {
        assert_eq!(
            mail(PLAIN).event(|_| String::new(), 1).delivery_id,
            mail(PLAIN).event(|_| String::new(), 2).delivery_id
        );
    }

    #[test]
    fn a_mail_without_sender_or_id_or_headers_is_malformed() {
        let no_from = PLAIN.replace("From: Ada Lovelace <Ada@Example.com>\r\n", "");
        let no_id = PLAIN.replace("Message-ID: <first@example.com>\r\n", "");
        let bad_from = PLAIN.replace("<Ada@Example.com>", "<not an address>");
        let colon = PLAIN.replace("<Ada@Example.com>", "<\"email:ada\"@example.com>");
        assert_eq!(
            read(&parse(colon.as_bytes()).unwrap(), "a@b.c", "bot@x.y").err(),
            Some(Malformed::NoSender),
            "no key lookalike"
        );
        let read_of = |raw: &str| read(&parse(raw.as_bytes())?, "a@b.c", "bot@x.y");
        assert_eq!(read_of(&no_from), Err(Malformed::NoSender));
        assert_eq!(read_of(&bad_from), Err(Malformed::NoSender));
        assert_eq!(read_of(&no_id), Err(Malformed::NoMessageId));
        assert!(parse(b"").is_err());
        assert!(read_of("just some words\r\nwith no headers at all\r\n").is_err());
        assert_eq!(parse(&vec![b'a'; MAX_MAIL_BYTES + 1]).err(), Some(Malformed::TooLarge));
    }

    #[test]
    fn the_quote_below_a_reply_is_left_out() {
        let text = "Yes, please do.\n\nOn Tue, 1 Jul 2025, edgebot wrote:\n> Shall I?\n> really\n";
        assert_eq!(new_text(text), "Yes, please do.");
        assert_eq!(new_text("no quote\nat all"), "no quote\nat all");
        assert_eq!(new_text("I wrote: this stays"), "I wrote: this stays");
    }

    #[test]
    fn attachments_are_named_and_kept_by_their_place() {
        let raw = "From: ada@example.com\r\nTo: bot@x.y\r\nMessage-ID: <m@x>\r\nSubject: data\r\n\
MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"b\"\r\n\r\n\
--b\r\nContent-Type: text/plain\r\n\r\nsummarise this\r\n\
--b\r\nContent-Type: text/csv\r\nContent-Disposition: attachment; filename=\"sales.csv\"\r\n\r\nregion,sales\r\nnorth,120\r\n\
--b--\r\n";
        let read = mail(raw);
        assert_eq!(read.text, "summarise this");
        assert_eq!(read.files.len(), 1);
        assert_eq!((read.files[0].name.as_str(), read.files[0].content_type.as_str()), ("sales.csv", "text/csv"));
        let event = read.event(|index| attachment_token("m@x", index), 0);
        assert_eq!(event.attachments[0].platform_file_id, attachment_token("m@x", 0));
        assert_eq!(event.attachments[0].name.as_deref(), Some("sales.csv"));
    }

    #[test]
    fn a_reply_subject_says_re_once() {
        assert_eq!(reply_subject("Hello"), "Re: Hello");
        assert_eq!(reply_subject("RE: Hello"), "RE: Hello");
        assert_eq!(reply_subject("  "), "Re: your message");
        assert_eq!(reply_subject("Ré"), "Re: Ré");
    }

    #[test]
    fn a_long_thread_keeps_its_root_and_newest_references() {
        let mut read = mail(PLAIN);
        read.references = (0..40).map(|n| format!("r{n}@x")).collect();
        let ReplyAddress::Email { references, .. } = read.reply_address() else { panic!() };
        assert_eq!(references.len(), MAX_REFERENCES);
        assert_eq!(references[0], "r0@x");
        assert_eq!(references.last().unwrap(), "first@example.com");
    }
}
