//! Identity documents: SOUL (personality and values), IDENTITY (what the bot is,
//! can do and knows about) and USER (the principal user, for a deployment with
//! one), which an operator edits on the dashboard or through the admin API, and
//! one conversation's short override. Their names, limits and checks, and the
//! block they make in a prompt, right after the system prompt's own
//! instructions and before the memory bulletin (the seed's order).
//!
//! Who gets them: every channel turn, and every branch (a branch forks the
//! channel's context, so it thinks as the same character, override included).
//! Workers get none: see `process::worker_run::compose_messages`.

use serde::Serialize;
use serde_json::json;
use thiserror::Error;

use crate::prompt;

/// The most characters a document may hold (Unicode scalar values): about
/// 2,000 tokens each, so the three together stay under 5% of the default
/// 128k-token window. The prompt's size estimate counts them (see
/// `process::compaction`), so a long document compacts history sooner.
pub const MAX_DOCUMENT_CHARS: usize = 8_000;
/// The most characters one conversation's override may hold.
pub const MAX_OVERRIDE_CHARS: usize = 1_000;
/// Saved versions kept per document; older ones are deleted with each save.
pub const MAX_VERSIONS_KEPT: i64 = 50;
/// Conversations that may have an override at once (an operator's typo in a
/// key should not grow a table without end).
pub const MAX_CONVERSATION_OVERRIDES: i64 = 1_000;
/// The largest request body taken: a document of [`MAX_DOCUMENT_CHARS`]
/// characters, each up to 6 bytes once JSON-escaped, with room to spare.
pub const MAX_BODY_BYTES: usize = 64 << 10;
/// The row name a conversation's override has in the identity query.
pub const OVERRIDE_ROW: &str = "conversation";
/// The version number that means "the default shipped in prompts/identity/".
pub const DEFAULT_VERSION: i64 = 0;

/// One of the three documents, in the order a prompt carries them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Document {
    Soul,
    Identity,
    User,
}

impl Document {
    /// Every document, in prompt order.
    pub const ALL: [Document; 3] = [Document::Soul, Document::Identity, Document::User];

    /// The name routes and storage use.
    pub fn name(self) -> &'static str {
        match self {
            Document::Soul => "soul",
            Document::Identity => "identity",
            Document::User => "user",
        }
    }

    /// The file the default comes from (and what operators call it).
    pub fn file_name(self) -> &'static str {
        match self {
            Document::Soul => "SOUL.md",
            Document::Identity => "IDENTITY.md",
            Document::User => "USER.md",
        }
    }

    /// `soul`, `SOUL` or `SOUL.md` (any case); None for anything else.
    pub fn parse(name: &str) -> Option<Document> {
        let name = name.trim();
        let bare = name.len().checked_sub(3).filter(|&at| name[at..].eq_ignore_ascii_case(".md")).map(|at| &name[..at]);
        let bare = bare.unwrap_or(name);
        Document::ALL.into_iter().find(|document| document.name().eq_ignore_ascii_case(bare))
    }

    /// The text shipped in prompts/identity/, used until an operator saves one.
    pub fn default_text(self) -> &'static str {
        match self {
            Document::Soul => include_str!("../../prompts/identity/SOUL.md"),
            Document::Identity => include_str!("../../prompts/identity/IDENTITY.md"),
            Document::User => include_str!("../../prompts/identity/USER.md"),
        }
        .trim()
    }
}

/// Why a text or a request about one was refused. Each message is safe to
/// show: it never quotes the text.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum IdentityError {
    #[error("unknown document `{0}`: use soul, identity or user")]
    UnknownDocument(String),
    #[error("{what} is {chars} characters long: at most {limit} are allowed")]
    TooLong { what: &'static str, chars: usize, limit: usize },
    #[error("{0} holds a control character: only line breaks and tabs are allowed")]
    ControlCharacter(&'static str),
    #[error("the override is empty: delete it instead")]
    EmptyOverride,
    #[error("`{0}` is not a version number")]
    BadVersion(String),
}

impl IdentityError {
    /// Whether the refusal is about size (the edge answers 413, else 400).
    pub fn is_too_long(&self) -> bool {
        matches!(self, IdentityError::TooLong { .. })
    }
}

/// Line endings made `\n` and trailing blank space dropped: the same text
/// pasted from two editors is one version, not two.
fn normalised(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\r', "\n").trim_end().to_string()
}

fn checked(text: &str, what: &'static str, limit: usize) -> Result<String, IdentityError> {
    let text = normalised(text);
    let chars = text.chars().count();
    if chars > limit {
        return Err(IdentityError::TooLong { what, chars, limit });
    }
    if text.chars().any(|character| character.is_control() && character != '\n' && character != '\t') {
        return Err(IdentityError::ControlCharacter(what));
    }
    Ok(text)
}

/// A document's text as it will be stored, or why not. An empty document is
/// allowed: its section leaves the prompt.
pub fn check_document(document: Document, text: &str) -> Result<String, IdentityError> {
    checked(text, document.file_name(), MAX_DOCUMENT_CHARS)
}

/// A conversation's override as it will be stored, or why not.
pub fn check_override(text: &str) -> Result<String, IdentityError> {
    let text = checked(text, "the override", MAX_OVERRIDE_CHARS)?;
    match text.trim().is_empty() {
        true => Err(IdentityError::EmptyOverride),
        false => Ok(text),
    }
}

/// A version number from a path: [`DEFAULT_VERSION`] (the shipped default) or a saved one.
pub fn parse_version(text: &str) -> Result<i64, IdentityError> {
    text.parse::<i64>()
        .ok()
        .filter(|version| *version >= DEFAULT_VERSION)
        .ok_or_else(|| IdentityError::BadVersion(text.chars().take(20).collect()))
}

/// What one conversation's prompts carry: the three documents as they are now
/// and the conversation's override, if it has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentityTexts {
    pub soul: String,
    pub identity: String,
    pub user: String,
    pub conversation: Option<String>,
}

impl Default for IdentityTexts {
    /// The shipped defaults, no override.
    fn default() -> Self {
        IdentityTexts {
            soul: Document::Soul.default_text().to_string(),
            identity: Document::Identity.default_text().to_string(),
            user: Document::User.default_text().to_string(),
            conversation: None,
        }
    }
}

impl IdentityTexts {
    /// From stored rows `(name, text)`: each document's current text (the
    /// default where none was saved) and [`OVERRIDE_ROW`]'s. Unknown names
    /// are ignored.
    pub fn from_rows<'a>(rows: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut texts = IdentityTexts::default();
        for (name, text) in rows {
            match (name, Document::parse(name)) {
                (OVERRIDE_ROW, _) => texts.conversation = Some(text.to_string()),
                (_, Some(Document::Soul)) => texts.soul = text.to_string(),
                (_, Some(Document::Identity)) => texts.identity = text.to_string(),
                (_, Some(Document::User)) => texts.user = text.to_string(),
                (_, None) => {}
            }
        }
        texts
    }

    pub fn text(&self, document: Document) -> &str {
        match document {
            Document::Soul => &self.soul,
            Document::Identity => &self.identity,
            Document::User => &self.user,
        }
    }

    /// The prompt block (prompts/identity_context.md.j2): each non-empty
    /// document under its heading, then the override. The texts are printed
    /// as written, never rendered as templates.
    pub fn render(&self) -> Result<String, prompt::Error> {
        let text = |document: Document| self.text(document).trim();
        prompt::render(
            "identity_context",
            json!({
                "soul": text(Document::Soul),
                "identity": text(Document::Identity),
                "user": text(Document::User),
                "conversation": self.conversation.as_deref().map(str::trim).unwrap_or(""),
            }),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_are_named_in_any_case_with_or_without_md() {
        let cases = [
            ("soul", Some(Document::Soul)),
            ("SOUL.md", Some(Document::Soul)),
            ("Identity", Some(Document::Identity)),
            ("user.MD", Some(Document::User)),
            ("role", None),
            ("soul.txt", None),
            ("", None),
            (".md", None),
            ("é.md", None),
        ];
        for (name, expected) in cases {
            assert_eq!(Document::parse(name), expected, "{name}");
        }
        for document in Document::ALL {
            assert_eq!(Document::parse(document.name()), Some(document));
            assert_eq!(Document::parse(document.file_name()), Some(document));
        }
    }

    #[test]
    fn the_defaults_ship_and_fit_their_limit() {
        for document in Document::ALL {
            let text = document.default_text();
            assert!(!text.is_empty(), "{document:?}");
            assert_eq!(check_document(document, text).as_deref(), Ok(text), "{document:?}");
        }
        assert_eq!(Document::User.default_text(), "No principal user is described.");
    }

    #[test]
    fn a_document_is_checked_by_characters_not_bytes() {
        let at_limit = "é".repeat(MAX_DOCUMENT_CHARS);
        assert_eq!(check_document(Document::Soul, &at_limit).map(|text| text.chars().count()), Ok(MAX_DOCUMENT_CHARS));
        let over = "a".repeat(MAX_DOCUMENT_CHARS + 1);
        let refused = check_document(Document::Soul, &over).unwrap_err();
        assert_eq!(refused, IdentityError::TooLong { what: "SOUL.md", chars: 8_001, limit: 8_000 });
        assert!(refused.is_too_long());
        assert_eq!(refused.to_string(), "SOUL.md is 8001 characters long: at most 8000 are allowed");
        // Trailing blank space is not counted (it is not stored).
        assert!(check_document(Document::User, &format!("{}\n\n   ", "a".repeat(MAX_DOCUMENT_CHARS))).is_ok());
    }

    #[test]
    fn texts_are_normalised_and_control_characters_refused() {
        assert_eq!(check_document(Document::Identity, "a\r\nb\rc\t \n\n"), Ok("a\nb\nc".to_string()));
        assert_eq!(check_document(Document::User, ""), Ok(String::new()), "an empty document leaves the prompt");
        for bad in ["a\u{0}b", "bell\u{7}", "esc\u{1b}[31m", "\u{85}next line"] {
            assert_eq!(check_document(Document::Soul, bad), Err(IdentityError::ControlCharacter("SOUL.md")), "{bad:?}");
        }
    }

    #[test]
    fn an_override_has_its_own_smaller_limit_and_is_never_empty() {
        assert_eq!(check_override("  Be formal here. \n"), Ok("  Be formal here.".to_string()));
        assert_eq!(check_override(" \n\t"), Err(IdentityError::EmptyOverride));
        assert!(check_override(&"x".repeat(MAX_OVERRIDE_CHARS)).is_ok());
        let refused = check_override(&"x".repeat(MAX_OVERRIDE_CHARS + 1)).unwrap_err();
        assert_eq!(refused, IdentityError::TooLong { what: "the override", chars: 1_001, limit: 1_000 });
    }

    #[test]
    fn versions_parse() {
        assert_eq!(parse_version("0"), Ok(DEFAULT_VERSION));
        assert_eq!(parse_version("12"), Ok(12));
        for bad in ["-1", "x", "", "1.5", "99999999999999999999999"] {
            assert!(matches!(parse_version(bad), Err(IdentityError::BadVersion(_))), "{bad}");
        }
    }

    #[test]
    fn stored_rows_replace_the_defaults_one_by_one() {
        let texts = IdentityTexts::from_rows([("soul", "S"), ("conversation", "O"), ("role", "ignored")]);
        assert_eq!(texts.soul, "S");
        assert_eq!(texts.identity, Document::Identity.default_text());
        assert_eq!(texts.user, Document::User.default_text());
        assert_eq!(texts.conversation.as_deref(), Some("O"));
        assert_eq!(IdentityTexts::from_rows([]), IdentityTexts::default());
    }

    #[test]
    fn the_block_keeps_the_seed_order_and_leaves_out_empty_documents() {
        let texts = IdentityTexts {
            soul: "SOUL-TEXT".into(),
            identity: "IDENTITY-TEXT {{ not_a_variable }}".into(),
            user: "USER-TEXT".into(),
            conversation: Some("OVERRIDE-TEXT".into()),
        };
        let block = texts.render().unwrap();
        let at = |needle: &str| block.find(needle).unwrap_or_else(|| panic!("{needle} in {block}"));
        assert!(at("SOUL-TEXT") < at("IDENTITY-TEXT") && at("IDENTITY-TEXT") < at("USER-TEXT"), "{block}");
        assert!(at("USER-TEXT") < at("OVERRIDE-TEXT"), "the override comes after the three: {block}");
        assert!(block.contains("{{ not_a_variable }}"), "texts are printed, never rendered: {block}");

        let bare = IdentityTexts { user: String::new(), conversation: None, ..texts }.render().unwrap();
        assert!(!bare.contains("## User") && !bare.contains("## In this conversation"), "{bare}");
        assert!(bare.contains("SOUL-TEXT"));
        let nothing =
            IdentityTexts { soul: " ".into(), identity: String::new(), user: String::new(), conversation: None };
        assert_eq!(nothing.render().unwrap(), "");
    }
}
