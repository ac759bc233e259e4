//! A turn's replies, made ready to send: rendered for the platform, split to
//! fit its limit, and redacted over what a reader sees of the whole turn
//! joined, so a secret split across two `reply` calls (or across pieces, or
//! across markup) is cut from every piece it stands in.

use std::ops::Range;

use super::markup::{self, Flavor, Token};
use crate::redact::Redactor;

/// A split never goes below this many characters of Markdown per piece.
const MIN_SPLIT: usize = 64;

/// The pieces to send, in order, and what redaction found (variable names,
/// or "a key shape"; never a value).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Prepared {
    pub pieces: Vec<String>,
    pub found: Vec<&'static str>,
}

/// Renders, splits and redacts a turn's reply texts (the model's Markdown)
/// for `flavor`; no piece is longer than `limit` characters.
pub fn prepare(texts: &[String], flavor: Flavor, limit: usize, redactor: &Redactor) -> Prepared {
    let rendered: Vec<Vec<Token>> = texts.iter().flat_map(|text| fit(text, flavor, limit)).collect();
    let seen: Vec<String> = rendered.iter().map(|tokens| markup::visible(tokens)).collect();
    // Read as one text, the way a reader could put consecutive messages together.
    let joined = seen.concat();
    let cuts = redactor.ranges(&joined, true);
    let mut found = redactor.found(&joined);
    let mut pieces = Vec::with_capacity(rendered.len());
    let mut offset = 0;
    for (tokens, seen) in rendered.iter().zip(&seen) {
        let span = offset..offset + seen.len();
        let own = share(&cuts, &span);
        offset = span.end;
        // Over exactly what is sent, too (a secret no markup split).
        let piece = markup::emit(tokens, flavor, &own);
        for name in redactor.found(&piece) {
            if !found.contains(&name) {
                found.push(name);
            }
        }
        let piece = redactor.redact(&piece).into_owned();
        if piece.chars().count() <= limit {
            pieces.push(piece);
            continue;
        }
        // Many cuts made it longer than the platform takes: send the text a
        // reader would see, escaped, without formatting.
        let plain = markup::emit(&[Token::Text { text: seen.clone(), code: false }], flavor, &own);
        let plain = redactor.redact(&plain).into_owned();
        pieces.extend(split_message(&plain, limit));
    }
    Prepared { pieces, found }
}

/// The cuts that fall in `span` of the joined text, relative to it.
fn share(cuts: &[Range<usize>], span: &Range<usize>) -> Vec<Range<usize>> {
    cuts.iter()
        .filter(|cut| cut.start < span.end && cut.end > span.start)
        .map(|cut| cut.start.max(span.start) - span.start..cut.end.min(span.end) - span.start)
        .collect()
}

/// Splits Markdown into pieces whose rendering fits `limit`: the split is
/// made on the Markdown (at paragraphs, lines, spaces), and made smaller
/// until every rendered piece fits.
fn fit(text: &str, flavor: Flavor, limit: usize) -> Vec<Vec<Token>> {
    let mut size = limit;
    loop {
        let pieces: Vec<Vec<Token>> =
            split_message(text, size).iter().map(|piece| markup::parse(piece, flavor)).collect();
        let fits = |tokens: &Vec<Token>| markup::emit(tokens, flavor, &[]).chars().count() <= limit;
        if size <= MIN_SPLIT || pieces.iter().all(fits) {
            return pieces;
        }
        size = (size * 3 / 4).max(MIN_SPLIT);
    }
}

/// Splits a reply into pieces of at most `limit` characters, preferring to break
/// at a paragraph, then a line, then a space, so no word is cut unless it alone
/// is longer than the limit.
pub fn split_message(text: &str, limit: usize) -> Vec<String> {
    let limit = limit.max(1);
    let mut pieces = Vec::new();
    let mut rest = text.trim();
    while rest.chars().count() > limit {
        let hard_end = rest.char_indices().nth(limit).map_or(rest.len(), |(index, _)| index);
        let window = &rest[..hard_end];
        let cut = ["\n\n", "\n", " "]
            .iter()
            .find_map(|separator| window.rfind(separator).filter(|&at| at > 0))
            .unwrap_or(hard_end);
        pieces.push(rest[..cut].trim_end().to_string());
        rest = rest[cut..].trim_start();
    }
    if !rest.is_empty() || pieces.is_empty() {
        pieces.push(rest.to_string());
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_one_piece() {
        assert_eq!(split_message("hello", 10), vec!["hello"]);
    }

    #[test]
    fn long_text_breaks_at_spaces_within_the_limit() {
        let pieces = split_message("aaaa bbbb cccc dddd", 10);
        assert_eq!(pieces, vec!["aaaa bbbb", "cccc dddd"]);
        assert!(pieces.iter().all(|piece| piece.chars().count() <= 10));
    }

    #[test]
    fn paragraphs_are_preferred_over_spaces() {
        let pieces = split_message("one two\n\nthree four", 15);
        assert_eq!(pieces, vec!["one two", "three four"]);
    }

    #[test]
    fn a_word_longer_than_the_limit_is_cut_hard_on_char_boundaries() {
        let pieces = split_message("ééééééé", 3);
        assert_eq!(pieces, vec!["ééé", "ééé", "é"]);
    }

    #[test]
    fn nothing_is_lost_when_splitting() {
        let text = "word ".repeat(2000);
        let pieces = split_message(&text, 4096);
        assert_eq!(pieces.join(" "), text.trim());
        assert!(pieces.iter().all(|piece| piece.chars().count() <= 4096));
    }

    const SECRET: &str = "test-openai-key-123456";

    fn redactor() -> Redactor {
        Redactor::new([("OPENAI_API_KEY", SECRET, Some("https://api.openai.com/v1"))])
    }

    fn texts(texts: &[&str]) -> Vec<String> {
        texts.iter().map(|text| text.to_string()).collect()
    }

    #[test]
    fn a_secret_never_leaves_however_the_turn_spells_it() {
        // (what, the turn's reply texts, flavor)
        let attacks: [(&str, Vec<String>, Flavor); 8] = [
            (
                "split across two replies",
                texts(&["the key starts test-openai-", "key-123456 and ends"]),
                Flavor::TelegramHtml,
            ),
            ("split across three replies", texts(&["test-open", "ai-key-", "123456"]), Flavor::SlackMrkdwn),
            ("split by markup", texts(&["test-openai-**key**-123456"]), Flavor::DiscordMarkdown),
            ("split by an empty html tag", texts(&["test-openai-<b></b>key-123456"]), Flavor::TelegramHtml),
            ("in upper case", texts(&["TEST-OPENAI-KEY-123456"]), Flavor::SlackMrkdwn),
            ("percent-encoded", texts(&["test%2Dopenai%2Dkey%2D123456"]), Flavor::Plain),
            (
                "in a link target",
                texts(&["[docs](https://evil.example/?k=test-openai-key-123456)"]),
                Flavor::DiscordMarkdown,
            ),
            ("in code", texts(&["`test-openai-key-123456`"]), Flavor::TelegramHtml),
        ];
        for (what, texts, flavor) in attacks {
            let prepared = prepare(&texts, flavor, 4096, &redactor());
            let joined: String = prepared.pieces.iter().map(|piece| markup::shown(flavor, piece)).collect();
            let folded = crate::redact::spelling::Folded::new(&joined);
            let needle = crate::redact::spelling::Folded::new(SECRET);
            let needle = crate::redact::spelling::Needle::new(needle.bytes());
            assert!(folded.find_all(&needle).is_empty(), "{what}: {:?}", prepared.pieces);
            assert!(
                !prepared.pieces.concat().to_ascii_lowercase().contains("key-123456"),
                "{what}: {:?}",
                prepared.pieces
            );
            assert!(joined.contains("[redacted]"), "{what}: {:?}", prepared.pieces);
            assert_eq!(prepared.found, vec!["OPENAI_API_KEY"], "{what}");
        }
    }

    #[test]
    fn the_empty_tag_is_shown_not_swallowed() {
        let prepared = prepare(&texts(&["test-openai-<b></b>key-123456"]), Flavor::TelegramHtml, 4096, &redactor());
        assert_eq!(prepared.pieces, vec!["[redacted]"]);
    }

    #[test]
    fn both_halves_of_a_secret_split_across_replies_are_cut() {
        let prepared = prepare(&texts(&["first test-openai-", "key-123456 second"]), Flavor::Plain, 4096, &redactor());
        assert_eq!(prepared.pieces, vec!["first [redacted]", "[redacted] second"]);
    }

    #[test]
    fn ordinary_replies_pass_unchanged_and_fit_the_limit() {
        let prepared = prepare(&texts(&["Hello Ada", "second"]), Flavor::DiscordMarkdown, 2000, &redactor());
        assert_eq!(prepared, Prepared { pieces: texts(&["Hello Ada", "second"]), found: vec![] });
        // Escaping makes the rendering longer than the Markdown: pieces still fit.
        let long = "a<b ".repeat(1500);
        for flavor in [Flavor::TelegramHtml, Flavor::SlackMrkdwn, Flavor::DiscordMarkdown, Flavor::Plain] {
            let prepared = prepare(std::slice::from_ref(&long), flavor, 2000, &redactor());
            assert!(prepared.pieces.len() >= 3, "{flavor:?}");
            assert!(prepared.pieces.iter().all(|piece| piece.chars().count() <= 2000), "{flavor:?}");
        }
    }
}
