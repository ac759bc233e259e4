//! Files people send and the bot keeps: what a file is (read from its bytes,
//! never from its name), the caps, where it lives in R2, and which hosts a
//! platform's files may be downloaded from.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::inbound::Attachment;

/// The largest file kept (Telegram's bots can download up to 20 MB).
pub const FILE_LIMIT_BYTES: u64 = 20 * 1024 * 1024;
/// What one conversation may store per UTC day, all files together.
pub const DAY_LIMIT_BYTES: u64 = 100 * 1024 * 1024;
/// Files one conversation may store per UTC day.
pub const DAY_LIMIT_FILES: u64 = 50;
/// How long a file is kept: then the cron deletes it (bytes and record).
pub const KEEP_DAYS: i64 = 30;
/// The most text of a file a tool hands a model at once.
pub const READ_LIMIT_CHARS: usize = 50_000;
/// The longest name kept (longer ones are cut, keeping the extension).
const NAME_LIMIT: usize = 100;

/// What a file is, as far as edgebot treats it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// PNG, JPEG, GIF or WebP: what vision models take.
    Image,
    /// A voice note or audio file: transcribed.
    Audio,
    /// UTF-8 text (plain, Markdown, CSV, JSON): read as it is.
    Text,
    /// PDF and office documents: converted to text where the runtime can.
    Document,
    /// Anything else: kept, not read.
    Other,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Image => "image",
            Kind::Audio => "audio",
            Kind::Text => "text",
            Kind::Document => "document",
            Kind::Other => "file",
        }
    }
}

/// What the bytes say a file is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sniffed {
    pub kind: Kind,
    pub content_type: String,
}

/// Reads what a file is from its first bytes (`infer`'s magic numbers); text
/// is any valid UTF-8 without NUL bytes, typed by its name's extension (the
/// name only ever narrows text to CSV, JSON or Markdown, never makes bytes text).
pub fn sniff(bytes: &[u8], name: &str) -> Sniffed {
    let sniffed = |kind, content_type: &str| Sniffed { kind, content_type: content_type.to_string() };
    if let Some(found) = infer::get(bytes) {
        let content_type = found.mime_type();
        let kind = match content_type {
            "image/png" | "image/jpeg" | "image/gif" | "image/webp" => Kind::Image,
            audio if audio.starts_with("audio/") => Kind::Audio,
            // A voice note in an Ogg or WebM container says so only inside.
            "video/webm" | "application/ogg" => Kind::Audio,
            "application/pdf" => Kind::Document,
            office if office.contains("officedocument") || office.contains("opendocument") => Kind::Document,
            _ => Kind::Other,
        };
        return sniffed(kind, content_type);
    }
    let is_text = std::str::from_utf8(bytes).is_ok() && !bytes.contains(&0);
    if !is_text {
        return sniffed(Kind::Other, "application/octet-stream");
    }
    let extension = name.rsplit_once('.').map(|(_, extension)| extension.to_ascii_lowercase()).unwrap_or_default();
    let content_type = match extension.as_str() {
        "csv" => "text/csv",
        "json" => "application/json",
        "md" | "markdown" => "text/markdown",
        _ => "text/plain",
    };
    sniffed(Kind::Text, content_type)
}

/// The name a file was sent with, kept as the person wrote it but for
/// control characters (no line breaks into a prompt) and its length (at most
/// [`NAME_LIMIT`] characters); storage keys and headers use [`safe_name`].
pub fn display_name(name: &str) -> String {
    let kept: String = name.chars().filter(|character| !character.is_control()).take(NAME_LIMIT).collect();
    match kept.trim() {
        "" => "file".into(),
        trimmed => trimmed.to_string(),
    }
}

/// A name safe in a storage key and a header: letters, digits, `.`,
/// `-` and `_` kept, anything else `_`, at most [`NAME_LIMIT`] characters.
pub fn safe_name(name: &str) -> String {
    let cleaned: String = name
        .trim()
        .chars()
        .map(|character| match character {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '-' | '_' => character,
            _ => '_',
        })
        .collect();
    let cleaned = cleaned.trim_start_matches('.');
    if cleaned.is_empty() {
        return "file".into();
    }
    if cleaned.len() <= NAME_LIMIT {
        return cleaned.to_string();
    }
    match cleaned.rsplit_once('.') {
        Some((stem, extension)) if extension.len() < 10 => {
            format!("{}.{extension}", &stem[..NAME_LIMIT - extension.len() - 1])
        }
        _ => cleaned[..NAME_LIMIT].to_string(),
    }
}

/// Where a file lives in the bucket: under its conversation, so a listing or
/// a lifecycle rule can take a conversation's files together.
pub fn object_key(conversation_key: &str, file_id: &str, name: &str) -> String {
    format!("{conversation_key}/{file_id}/{}", safe_name(name))
}

/// A kept file's id: `f` and 16 hex digits of the hash of its conversation
/// and the platform's id for it, so the same file sent to the same
/// conversation is kept once, and an id says nothing of another conversation.
pub fn file_id(conversation_key: &str, platform_file_id: &str) -> String {
    let digest = Sha256::digest(format!("{conversation_key}\n{platform_file_id}").as_bytes());
    format!("f{}", crate::security::encode_hex(&digest[..8]))
}

/// A file kept for a conversation (a row of the `files` table).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredFile {
    pub id: String,
    pub name: String,
    pub kind: Kind,
    pub content_type: String,
    pub size: u64,
    /// A voice note's transcript, or a document's text once converted.
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub created_at: i64,
}

/// What became of one attachment of a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Received {
    Kept(StoredFile),
    Refused { name: String, why: Refusal },
}

/// How an image reaches the channel's model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sight {
    /// The image goes with the prompt.
    Shown,
    /// A vision model described it (the description is in the file's text).
    Described,
    /// Nobody can see it: the person is told.
    Blind,
}

/// One line of the turn's prompt for an attachment.
pub fn describe(received: &Received, sight: Sight) -> String {
    let file = match received {
        Received::Refused { name, why } => return format!("{name} (not kept: {why})"),
        Received::Kept(file) => file,
    };
    let size = human_size(file.size);
    let head = format!("{} ({}, {size}, id {})", file.name, file.content_type, file.id);
    match (file.kind, sight, &file.text) {
        (Kind::Image, Sight::Shown, _) => format!("{head}: the image is attached below"),
        (Kind::Image, Sight::Described, Some(text)) => format!("{head}, described: {text}"),
        (Kind::Image, _, _) => format!("{head}: this model cannot see images; say so if it matters"),
        (Kind::Audio, _, Some(_)) => format!("{head}: a voice note, its transcript is the message text"),
        (Kind::Audio, _, None) => format!("{head}: a voice note that could not be transcribed"),
        (Kind::Text | Kind::Document, _, _) => {
            format!("{head}: a branch or worker can read it with attachment_read")
        }
        (Kind::Other, _, _) => format!("{head}: kept, but not readable as text"),
    }
}

/// A size as a person reads it.
pub fn human_size(bytes: u64) -> String {
    match bytes {
        0..1_024 => format!("{bytes} B"),
        1_024..1_048_576 => format!("{} KB", bytes.div_ceil(1_024)),
        _ => format!("{:.1} MB", bytes as f64 / 1_048_576.0),
    }
}

/// A voice note's text as the message text: marked, so the model (and the
/// history) know it was heard, not typed.
pub fn transcribed(transcript: &str, typed: &str) -> String {
    let heard = format!("[voice note, transcribed] {}", transcript.trim());
    match typed.trim() {
        "" => heard,
        typed => format!("{typed}\n{heard}"),
    }
}

/// Why a file was not kept, in words a person reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    TooLarge { limit_mb: u64 },
    DayFull,
    Unreachable,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::TooLarge { limit_mb } => write!(formatter, "it is larger than {limit_mb} MB"),
            Refusal::DayFull => write!(formatter, "this conversation has sent as many files as it may today"),
            Refusal::Unreachable => write!(formatter, "it could not be downloaded"),
        }
    }
}

/// Whether a file of `size` fits today's allowance, given what the
/// conversation stored today (`stored_bytes` in `stored_files`).
pub fn admit(size: u64, stored_bytes: u64, stored_files: u64) -> Result<(), Refusal> {
    if size > FILE_LIMIT_BYTES {
        return Err(Refusal::TooLarge { limit_mb: FILE_LIMIT_BYTES / (1024 * 1024) });
    }
    if stored_files >= DAY_LIMIT_FILES || stored_bytes + size > DAY_LIMIT_BYTES {
        return Err(Refusal::DayFull);
    }
    Ok(())
}

/// Files one web-chat message may carry.
pub const FILES_PER_MESSAGE: usize = 4;

/// Whether `token` is an upload token as the Worker makes them: a v4 UUID,
/// lowercase and hyphenated. Only that one spelling: the file id hashes the
/// token as written, so another spelling of the same UUID would name nothing.
pub fn is_upload_token(token: &str) -> bool {
    let bytes = token.as_bytes();
    bytes.len() == 36
        && bytes.iter().enumerate().all(|(index, byte)| match index {
            8 | 13 | 18 | 23 => *byte == b'-',
            14 => *byte == b'4',
            19 => matches!(byte, b'8' | b'9' | b'a' | b'b'),
            _ => matches!(byte, b'0'..=b'9' | b'a'..=b'f'),
        })
}

/// The attachments of a web-chat message that names its uploads by token.
/// None when it names too many or a malformed one: the page never does.
/// An upload is found by `file_id(conversation, token)`, so a token from
/// another conversation names nothing here and shows as not kept.
pub fn uploaded(tokens: &[String]) -> Option<Vec<Attachment>> {
    if tokens.len() > FILES_PER_MESSAGE || !tokens.iter().all(|token| is_upload_token(token)) {
        return None;
    }
    let attachment =
        |token: &String| Attachment { kind: "file".into(), platform_file_id: token.clone(), ..Attachment::default() };
    Some(tokens.iter().map(attachment).collect())
}

/// A web-chat message's text as the chat shows it: the files it carried are
/// counted below the text (a message may be files alone).
pub fn chat_text(text: &str, files: usize) -> String {
    let noted = match files {
        0 => return text.to_string(),
        1 => "[1 file]".to_string(),
        many => format!("[{many} files]"),
    };
    match text.trim() {
        "" => noted,
        _ => format!("{text}\n{noted}"),
    }
}

/// Whether `url` is one of the hosts a platform serves its files from (or
/// the configured API base's host, where a deployment points the platform):
/// https only, except for the configured host itself.
pub fn is_platform_file_url(url: &str, platform_hosts: &[&str], api_base: &str) -> bool {
    let Ok(url) = url::Url::parse(url) else {
        return false;
    };
    if !url.username().is_empty() || url.password().is_some() {
        return false;
    }
    let configured = url::Url::parse(api_base).ok();
    if configured.is_some_and(|base| base.origin() == url.origin()) {
        return true;
    }
    url.scheme() == "https" && url.port().is_none() && url.host_str().is_some_and(|host| platform_hosts.contains(&host))
}

/// The hosts Slack serves a file's `url_private_download` from.
pub const SLACK_FILE_HOSTS: &[&str] = &["files.slack.com"];
/// The hosts Discord serves attachments from.
pub const DISCORD_FILE_HOSTS: &[&str] = &["cdn.discordapp.com", "media.discordapp.net"];

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &[u8] = &[0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13, b'I', b'H', b'D', b'R'];
    const OGG: &[u8] = b"OggS\0\x02\0\0\0\0\0\0\0\0\x01\0\0\0\0\0\0\0\0\0\0\0\x01\x13OpusHead";

    #[test]
    fn the_bytes_decide_what_a_file_is_not_its_name() {
        assert_eq!(sniff(PNG, "notes.txt"), Sniffed { kind: Kind::Image, content_type: "image/png".into() });
        assert_eq!(sniff(b"%PDF-1.7\n%\xe2\xe3", "photo.png").kind, Kind::Document);
        assert_eq!(sniff(OGG, "voice.oga").kind, Kind::Audio);
        assert_eq!(sniff(b"name,count\nada,3\n", "data.csv").content_type, "text/csv");
        assert_eq!(sniff(b"{\"a\": 1}", "x.JSON").content_type, "application/json");
        assert_eq!(sniff(b"plain words", "image.png"), Sniffed { kind: Kind::Text, content_type: "text/plain".into() });
        assert_eq!(sniff(&[0xff, 0xfe, 0, 1, 2], "data.csv").kind, Kind::Other, "not UTF-8: not text");
        assert_eq!(sniff(b"a\0b", "a.txt").kind, Kind::Other, "NUL bytes: not text");
    }

    #[test]
    fn a_name_is_kept_as_written_but_for_control_characters_and_length() {
        assert_eq!(display_name("Q3 report (final).pdf"), "Q3 report (final).pdf");
        assert_eq!(display_name("a\nb\u{7}.txt"), "ab.txt");
        assert_eq!(display_name(" \n "), "file");
        assert_eq!(display_name(&"é".repeat(300)).chars().count(), 100);
    }

    #[test]
    fn names_are_safe_and_short_and_keep_their_extension() {
        assert_eq!(safe_name("../../etc/passwd"), "_.._etc_passwd");
        assert_eq!(safe_name("Q3 report (final).pdf"), "Q3_report__final_.pdf");
        assert_eq!(safe_name("   "), "file");
        assert_eq!(safe_name("...hidden"), "hidden");
        let long = format!("{}.csv", "a".repeat(300));
        assert_eq!(safe_name(&long).len(), 100);
        assert!(safe_name(&long).ends_with(".csv"));
        assert_eq!(object_key("telegram:5", "f_1", "a b.txt"), "telegram:5/f_1/a_b.txt");
    }

    #[test]
    fn ids_are_per_conversation_and_descriptions_say_what_to_do() {
        let id = file_id("telegram:5", "AgAD-file");
        assert_eq!(id, file_id("telegram:5", "AgAD-file"));
        assert_ne!(id, file_id("telegram:6", "AgAD-file"));
        assert!(id.starts_with('f') && id.len() == 17);
        let file = |kind, text: Option<&str>| StoredFile {
            id: "f1".into(),
            name: "a.png".into(),
            kind,
            content_type: "image/png".into(),
            size: 2048,
            text: text.map(str::to_string),
            created_at: 0,
        };
        let shown = describe(&Received::Kept(file(Kind::Image, None)), Sight::Shown);
        assert_eq!(shown, "a.png (image/png, 2 KB, id f1): the image is attached below");
        assert!(describe(&Received::Kept(file(Kind::Image, None)), Sight::Blind).contains("cannot see images"));
        let described = describe(&Received::Kept(file(Kind::Image, Some("a cat"))), Sight::Described);
        assert!(described.ends_with("described: a cat"));
        assert!(describe(&Received::Kept(file(Kind::Text, None)), Sight::Blind).contains("attachment_read"));
        let refused = Received::Refused { name: "big.pdf".into(), why: Refusal::TooLarge { limit_mb: 20 } };
        assert_eq!(describe(&refused, Sight::Blind), "big.pdf (not kept: it is larger than 20 MB)");
        assert_eq!(human_size(3 * 1_048_576 / 2), "1.5 MB");
        assert_eq!(transcribed(" see you at 5 ", ""), "[voice note, transcribed] see you at 5");
        assert_eq!(transcribed("hi", "caption"), "caption\n[voice note, transcribed] hi");
    }

    #[test]
    fn caps_hold_per_file_and_per_day() {
        assert_eq!(admit(FILE_LIMIT_BYTES, 0, 0), Ok(()));
        assert_eq!(admit(FILE_LIMIT_BYTES + 1, 0, 0), Err(Refusal::TooLarge { limit_mb: 20 }));
        assert_eq!(admit(10, DAY_LIMIT_BYTES - 10, 3), Ok(()));
        assert_eq!(admit(11, DAY_LIMIT_BYTES - 10, 3), Err(Refusal::DayFull));
        assert_eq!(admit(1, 0, DAY_LIMIT_FILES), Err(Refusal::DayFull));
        assert!(Refusal::TooLarge { limit_mb: 20 }.to_string().contains("20 MB"));
    }

    #[test]
    fn a_message_names_at_most_four_uploads_by_their_exact_tokens() {
        let token = "0f8e3c1a-5b2d-4e6f-9a7b-1c2d3e4f5a6b".to_string();
        assert!(is_upload_token(&token));
        let malformed: [String; 7] = [
            token.to_uppercase(),
            token.replace('-', ""),
            format!("{{{token}}}"),
            token.replacen("4e6f", "1e6f", 1),
            token.replacen('f', "g", 1),
            "f0123".into(),
            String::new(),
        ];
        for malformed in malformed {
            assert!(!is_upload_token(&malformed), "{malformed}");
        }
        let attachments = uploaded(std::slice::from_ref(&token)).unwrap();
        assert_eq!(attachments[0].platform_file_id, token);
        assert_eq!((attachments[0].kind.as_str(), attachments[0].url.as_deref()), ("file", None));
        assert_eq!(uploaded(&[]), Some(Vec::new()));
        let five: Vec<String> = (0..5).map(|digit| format!("{digit}{}", &token[1..])).collect();
        assert_eq!(uploaded(&five[..4]).map(|found| found.len()), Some(4));
        assert_eq!(uploaded(&five), None, "five is too many");
        assert_eq!(uploaded(&[token, "../x".into()]), None, "one malformed token refuses the lot");
        assert_eq!(chat_text("hi", 0), "hi");
        assert_eq!(chat_text("", 1), "[1 file]");
        assert_eq!(chat_text("see these", 2), "see these\n[2 files]");
    }

    #[test]
    fn downloads_go_only_to_the_platforms_own_hosts() {
        let base = "https://slack.com/api";
        assert!(is_platform_file_url("https://files.slack.com/files-pri/T1-F1/download/a.png", SLACK_FILE_HOSTS, base));
        assert!(!is_platform_file_url("http://files.slack.com/a", SLACK_FILE_HOSTS, base), "https only");
        assert!(!is_platform_file_url("https://files.slack.com.evil.example/a", SLACK_FILE_HOSTS, base));
        assert!(!is_platform_file_url("https://evil.example@files.slack.com/a", SLACK_FILE_HOSTS, base));
        assert!(!is_platform_file_url("https://169.254.169.254/latest", SLACK_FILE_HOSTS, base));
        assert!(!is_platform_file_url("not a url", SLACK_FILE_HOSTS, base));
        // A deployment (or a test) that points the platform elsewhere downloads from there.
        let local = "http://127.0.0.1:4100/api";
        assert!(is_platform_file_url("http://127.0.0.1:4100/files/a.png", SLACK_FILE_HOSTS, local));
        assert!(!is_platform_file_url("http://127.0.0.1:4999/files/a.png", SLACK_FILE_HOSTS, local));
        assert!(is_platform_file_url("https://cdn.discordapp.com/attachments/1/2/a.png", DISCORD_FILE_HOSTS, base));
    }
}
