//! A reply while the model is still writing it: what may be shown now. The
//! text up to [`settled_len`] is prepared exactly as a finished reply
//! is ([`pieces::prepare`]: rendered, split, redacted), so what a person sees
//! during the stream is always a prefix of a text that passed the same
//! checks, and a secret never shows, not even its first characters.

use super::markup::Flavor;
use super::pieces::{self, Prepared};
use crate::redact::spelling::is_ignorable;
use crate::redact::Redactor;

/// How much of `text`, a reply the model is still writing, may be shown
/// now: up to the last whitespace outside a `<tag>`. No secret or key shape
/// holds whitespace in any spelling the redactor reads (only inside a tag,
/// which the reader never sees), so a secret still being written is always
/// in the held tail, however it is spelt, until the whole of it can be seen
/// and redacted.
pub fn settled_len(text: &str) -> usize {
    let mut end = text.len();
    loop {
        let word_end = text[..end]
            .char_indices()
            .rev()
            .find(|(_, character)| character.is_whitespace() && !is_ignorable(*character))
            .map_or(0, |(at, character)| at + character.len_utf8());
        match text[..word_end].rfind('<') {
            // That whitespace stands inside a tag not yet closed: back out of it.
            Some(open) if !text[open..word_end].contains('>') => end = open,
            _ => return word_end,
        }
    }
}

/// The pieces to show for `written` so far; once `finished`, the whole reply.
pub fn shown(written: &str, finished: bool, flavor: Flavor, limit: usize, redactor: &Redactor) -> Prepared {
    let settled = if finished { written } else { &written[..settled_len(written)] };
    pieces::prepare(&[settled.to_string()], flavor, limit, redactor)
}

/// A first post shorter than this waits for a sentence's end or more words:
/// its push notification must read as a start, not "Volcanoes form".
pub const OPENING_MIN_CHARS: usize = 80;
/// A sentence this long or longer opens a reply at once.
pub const OPENING_SENTENCE_CHARS: usize = 12;
/// Past this wait since the first words, a slow model's start is posted as it is.
pub const OPENING_WAIT_MS: u64 = 1_500;
/// Once a reply is worth opening, its first post still waits this long: an
/// answer the model finishes meanwhile (a fast model's whole answer) goes
/// out whole, once, with no edit. Well inside the 300 ms goal for the first
/// text after the model's first sentence.
pub const OPENING_GRACE_MS: u64 = 150;

/// Whether `shown`, the start of a streamed reply ready to show, is worth
/// its own message yet: it holds a first sentence (of at least
/// [`OPENING_SENTENCE_CHARS`]), or [`OPENING_MIN_CHARS`], or the model has
/// taken [`OPENING_WAIT_MS`] since its first words. Until then nothing is
/// posted, so an answer that is complete by then goes out whole, once, with
/// no edit.
pub fn worth_opening(shown: &str, waited_ms: u64) -> bool {
    let text = shown.trim();
    let sentence = text.char_indices().any(|(at, character)| {
        let ends = matches!(character, '.' | '!' | '?' | '…' | '。' | ':') || character == '\n';
        ends && text[..at].trim().chars().count() >= OPENING_SENTENCE_CHARS
    });
    sentence || text.chars().count() >= OPENING_MIN_CHARS || waited_ms >= OPENING_WAIT_MS
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redact::spelling::Folded;

    #[test]
    fn a_reply_opens_with_a_sentence_or_enough_words_never_a_fragment() {
        assert!(!worth_opening("Volcanoes form", 0), "a fragment waits");
        assert!(!worth_opening("Hi.", 0), "too short to read as a start");
        assert!(worth_opening("Volcanoes form where magma rises.", 0), "a sentence opens");
        assert!(worth_opening("Here is the plan for today:", 0));
        assert!(worth_opening("Sure thing, here it is\nfirst line", 0));
        let long = "word ".repeat(17);
        assert!(worth_opening(&long, 0), "enough words open without a full stop");
        assert!(worth_opening("Volcanoes form", OPENING_WAIT_MS), "a slow model's start shows after the wait");
        assert!(!worth_opening("Volcanoes form", OPENING_WAIT_MS - 1));
        assert!(!worth_opening("  ", OPENING_WAIT_MS - 1));
    }

    const SECRET: &str = "Zq9-live-Xw7-value";

    fn redactor() -> Redactor {
        Redactor::new([("OPENAI_API_KEY", SECRET, Some("https://api.openai.com/v1"))])
    }

    /// The secret spelt the ways the redactor knows, inside ordinary sentences.
    fn spellings() -> Vec<String> {
        let percent: String = SECRET.bytes().map(|byte| format!("%{byte:02X}")).collect();
        let zero_width: String = SECRET.chars().flat_map(|character| [character, '\u{200B}']).collect();
        let tagged = format!("{}<span class=\"x\">{}</span>{}", &SECRET[..5], &SECRET[5..11], &SECRET[11..]);
        vec![
            format!("Here it is: {SECRET} and more words after it."),
            format!("Upper {} then text", SECRET.to_uppercase()),
            format!("Encoded {percent} end"),
            format!("Hidden {zero_width} end"),
            format!("Tagged {tagged} end"),
            format!("**{SECRET}** bold"),
            SECRET.to_string(),
        ]
    }

    #[test]
    fn no_prefix_of_a_reply_shows_any_part_of_a_secret() {
        let whole = Folded::new(SECRET);
        let needle = &whole.bytes()[..4];
        for text in spellings() {
            let mut previous = String::new();
            for (cut, _) in text.char_indices().chain([(text.len(), ' ')]) {
                let written = &text[..cut];
                for finished in [false, cut == text.len()] {
                    let shown = shown(written, finished, Flavor::Plain, 4096, &redactor()).pieces.concat();
                    let folded = Folded::new(&shown);
                    assert!(
                        !folded.bytes().windows(needle.len()).any(|window| window == needle),
                        "{text:?} cut at {cut} (finished: {finished}) shows {shown:?}"
                    );
                    if !finished {
                        assert!(shown.starts_with(previous.trim_end()), "only grows: {previous:?} then {shown:?}");
                        previous = shown;
                    }
                }
            }
        }
    }

    #[test]
    fn ordinary_text_shows_word_by_word_and_whole_when_finished() {
        let redactor = redactor();
        let show =
            |written: &str, finished: bool| shown(written, finished, Flavor::Plain, 4096, &redactor).pieces.concat();
        assert_eq!(show("Hello Dana, how", false), "Hello Dana,");
        assert_eq!(show("Hello Dana, how ", false), "Hello Dana, how");
        assert_eq!(show("Hello Dana, how", true), "Hello Dana, how");
        assert_eq!(show("Hello", false), "");
        assert_eq!(show(&format!("key {SECRET} done"), true), "key [redacted] done");
    }

    #[test]
    fn key_shapes_are_held_until_their_word_ends() {
        let redactor = redactor();
        let shape = "sk-abcdefghijklmnopqrstuvwxyz012345";
        for cut in 0..shape.len() {
            let shown = shown(&format!("try {}", &shape[..cut]), false, Flavor::Plain, 4096, &redactor).pieces.concat();
            assert!(!shown.contains("sk-"), "{shown:?}");
        }
        let done = shown(&format!("try {shape} now"), false, Flavor::Plain, 4096, &redactor).pieces.concat();
        assert_eq!(done, "try [redacted]");
    }
}
