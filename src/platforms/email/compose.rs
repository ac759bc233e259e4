//! A reply's MIME (pure), written with `mail-builder`: from the address the
//! mail was routed to, back to the person, in the thread (`In-Reply-To`,
//! `References`, `Re:` subject), marked `Auto-Submitted: auto-replied` so other
//! robots do not answer it, plain text, a file as an attachment.

use mail_builder::headers::date::Date;
use mail_builder::headers::raw::Raw;
use mail_builder::MessageBuilder;
use sha2::{Digest, Sha256};

use crate::security::encode_hex;

/// One mail of a reply.
pub struct Outgoing<'a> {
    pub from: &'a str,
    pub bot_name: &'a str,
    pub to: &'a str,
    pub subject: &'a str,
    pub in_reply_to: &'a str,
    pub references: &'a [String],
    pub text: &'a str,
    /// Without angle brackets ([`message_id`]).
    pub message_id: &'a str,
    pub now_ms: i64,
    /// A file: its name, content type and bytes.
    pub file: Option<(&'a str, &'a str, &'a [u8])>,
}

/// The Message-ID of a piece's mail: the same piece and text give the same
/// id (a mail client shows one of two copies with one id), a resend marked
/// as such gets its own. On the sending address's domain, as RFC 5322 asks.
pub fn message_id(piece_id: &str, text: &str, from: &str) -> String {
    let domain = from.rsplit_once('@').map_or("edgebot.invalid", |(_, domain)| domain);
    let digest = Sha256::digest(format!("{piece_id}\n{text}").as_bytes());
    format!("edgebot-{}@{domain}", encode_hex(&digest[..16]))
}

/// The raw mail.
pub fn compose(mail: &Outgoing<'_>) -> Vec<u8> {
    let references: Vec<&str> = mail.references.iter().map(String::as_str).collect();
    let mut builder = MessageBuilder::new()
        .from((mail.bot_name, mail.from))
        .to(mail.to)
        .subject(mail.subject)
        .message_id(mail.message_id)
        .date(Date::new(mail.now_ms.div_euclid(1000)))
        .header("Auto-Submitted", Raw::new("auto-replied"))
        // Exchange and Outlook: send no out-of-office or read receipt back.
        .header("X-Auto-Response-Suppress", Raw::new("All"))
        .text_body(mail.text);
    if !mail.in_reply_to.is_empty() {
        builder = builder.in_reply_to(mail.in_reply_to);
    }
    if !references.is_empty() {
        builder = builder.references(references);
    }
    if let Some((name, content_type, bytes)) = mail.file {
        builder = builder.attachment(content_type, name, bytes);
    }
    // Writing to a Vec cannot fail.
    builder.write_to_vec().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use mail_parser::MessageParser;

    fn outgoing<'a>(references: &'a [String], file: Option<(&'a str, &'a str, &'a [u8])>) -> Outgoing<'a> {
        Outgoing {
            from: "bot@edgebot.example",
            bot_name: "edgebot",
            to: "ada@example.com",
            subject: "Re: Numbers",
            in_reply_to: "second@example.com",
            references,
            text: "It is 42.\n\nSee you — Ada's bot ✓",
            message_id: "edgebot-1@edgebot.example",
            now_ms: 1_751_364_000_000,
            file,
        }
    }

    #[test]
    fn a_reply_is_in_the_thread_and_marked_automatic() {
        let references = vec!["first@example.com".to_string(), "second@example.com".to_string()];
        let raw = compose(&outgoing(&references, None));
        let parsed = MessageParser::default().parse(&raw).unwrap();
        assert_eq!(parsed.from().unwrap().first().unwrap().address(), Some("bot@edgebot.example"));
        assert_eq!(parsed.to().unwrap().first().unwrap().address(), Some("ada@example.com"));
        assert_eq!(parsed.subject(), Some("Re: Numbers"));
        assert_eq!(parsed.message_id(), Some("edgebot-1@edgebot.example"));
        assert_eq!(parsed.in_reply_to().as_text(), Some("second@example.com"));
        let listed: Vec<String> = parsed.references().as_text_list().unwrap().iter().map(|id| id.to_string()).collect();
        assert_eq!(listed, references);
        assert_eq!(parsed.header_raw("Auto-Submitted").map(str::trim), Some("auto-replied"));
        assert_eq!(parsed.body_text(0).unwrap().trim_end(), "It is 42.\n\nSee you — Ada's bot ✓");
        assert_eq!(parsed.date().unwrap().to_timestamp(), 1_751_364_000);
    }

    #[test]
    fn a_file_goes_as_an_attachment_with_its_bytes() {
        let bytes = b"region,total\nnorth,120\n";
        let raw = compose(&outgoing(&[], Some(("summary.csv", "text/csv", bytes))));
        let parsed = MessageParser::default().parse(&raw).unwrap();
        let attachment = parsed.attachments().next().expect("an attachment");
        use mail_parser::MimeHeaders;
        assert_eq!(attachment.attachment_name(), Some("summary.csv"));
        assert_eq!(attachment.contents(), bytes);
    }

    #[test]
    fn a_message_id_is_stable_for_a_piece_and_differs_for_its_marked_resend() {
        let first = message_id("c:1:0", "hello", "bot@edgebot.example");
        assert_eq!(first, message_id("c:1:0", "hello", "bot@edgebot.example"));
        assert!(first.ends_with("@edgebot.example"));
        assert_ne!(first, message_id("c:1:0", "↻ Sent again after an interruption\n\nhello", "bot@edgebot.example"));
        assert_ne!(first, message_id("c:1:1", "hello", "bot@edgebot.example"));
    }
}
