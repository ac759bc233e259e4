//! Finds a secret however a text spells it: in another ASCII letter case,
//! percent-encoded (once or more), or broken up by characters a reader never
//! sees (zero-width and other default-ignorable code points) or that a
//! platform may turn into formatting (`*`, `_`, `~`, `` ` ``, `|`, `\`).
//! The text is folded into a normal form in which every byte remembers the
//! span of the original text it came from, so what is found there can be
//! cut out of the original. HTML-like tags (`<b></b>`) are left out as well:
//! a platform that reads HTML would not show them.

use std::ops::Range;

/// How many rounds of percent-decoding are undone (`%2541` is `A` after two).
const DECODE_ROUNDS: usize = 3;

/// A text in normal form: each byte with the byte range of the original it stands for.
pub struct Folded {
    bytes: Vec<u8>,
    spans: Vec<(u32, u32)>,
}

/// Characters that may stand inside a secret without a reader (or a
/// platform's formatting) showing them: ASCII markup characters the platforms
/// read as formatting or escapes, and Unicode's default-ignorable code points
/// (zero-width spaces and joiners, bidi controls, variation selectors, tags,
/// the soft hyphen…; Unicode's DerivedCoreProperties, Default_Ignorable_Code_Point).
pub fn is_ignorable(character: char) -> bool {
    matches!(
        character,
        '*' | '_'
            | '~'
            | '`'
            | '|'
            | '\\'
            | '\u{00AD}'
            | '\u{034F}'
            | '\u{061C}'
            | '\u{115F}'..='\u{1160}'
            | '\u{17B4}'..='\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{FFF0}'..='\u{FFF8}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0000}'..='\u{E0FFF}'
    )
}

impl Folded {
    /// The normal form of `text`: ignorable characters dropped, `%XX` escapes
    /// decoded (repeatedly), ASCII letters lowered.
    pub fn new(text: &str) -> Folded {
        let mut folded = Folded { bytes: Vec::with_capacity(text.len()), spans: Vec::with_capacity(text.len()) };
        let mut skip_to = 0;
        for (start, character) in text.char_indices() {
            if start < skip_to {
                continue;
            }
            if character == '<' {
                if let Some(length) = tag_length(&text[start..]) {
                    skip_to = start + length;
                    continue;
                }
            }
            let end = (start + character.len_utf8()) as u32;
            let mut utf8 = [0; 4];
            for &byte in character.encode_utf8(&mut utf8).as_bytes() {
                folded.bytes.push(byte);
                folded.spans.push((start as u32, end));
            }
        }
        folded.drop_ignorable();
        for _ in 0..DECODE_ROUNDS {
            if !folded.percent_decode() {
                break;
            }
            folded.drop_ignorable();
        }
        folded.bytes.make_ascii_lowercase();
        folded
    }

    /// The normal form's bytes (what a secret's own normal form is searched for in).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Drops ignorable characters (decoded bytes may form them, so this
    /// works on bytes that need not be valid UTF-8 throughout).
    fn drop_ignorable(&mut self) {
        let mut at = 0;
        let mut kept = 0;
        while at < self.bytes.len() {
            let width = utf8_width(self.bytes[at]);
            let character = self
                .bytes
                .get(at..at + width)
                .and_then(|bytes| std::str::from_utf8(bytes).ok())
                .and_then(|text| text.chars().next());
            let (width, ignorable) = match character {
                Some(character) => (width, is_ignorable(character)),
                None => (1, false),
            };
            if !ignorable {
                for index in at..at + width {
                    self.bytes[kept] = self.bytes[index];
                    self.spans[kept] = self.spans[index];
                    kept += 1;
                }
            }
            at += width;
        }
        self.bytes.truncate(kept);
        self.spans.truncate(kept);
    }

    /// Decodes each `%XX`; says whether there was any. Hand-written rather than
    /// `percent-encoding`, which cannot say which original bytes each decoded
    /// byte came from (the spans a redaction needs).
    fn percent_decode(&mut self) -> bool {
        let hex = |byte: u8| (byte as char).to_digit(16).map(|digit| digit as u8);
        let mut bytes = Vec::with_capacity(self.bytes.len());
        let mut spans = Vec::with_capacity(self.bytes.len());
        let mut at = 0;
        let mut decoded_any = false;
        while at < self.bytes.len() {
            let escape = (self.bytes[at] == b'%')
                .then(|| Some(hex(*self.bytes.get(at + 1)?)? << 4 | hex(*self.bytes.get(at + 2)?)?))
                .flatten();
            match escape {
                Some(byte) => {
                    bytes.push(byte);
                    spans.push((self.spans[at].0, self.spans[at + 2].1));
                    decoded_any = true;
                    at += 3;
                }
                None => {
                    bytes.push(self.bytes[at]);
                    spans.push(self.spans[at]);
                    at += 1;
                }
            }
        }
        self.bytes = bytes;
        self.spans = spans;
        decoded_any
    }

    /// The ranges of the original text where `needle` (itself in normal form)
    /// stands, without overlaps.
    pub fn find_all(&self, needle: &[u8]) -> Vec<Range<usize>> {
        let mut found = Vec::new();
        let Some(&first) = needle.first() else {
            return found;
        };
        let mut at = 0;
        while at + needle.len() <= self.bytes.len() {
            if self.bytes[at] == first && self.bytes[at..at + needle.len()] == *needle {
                let start = self.spans[at].0 as usize;
                let end = self.spans[at + needle.len() - 1].1 as usize;
                found.push(start..end);
                at += needle.len();
            } else {
                at += 1;
            }
        }
        found
    }
}

/// The length of an HTML-like tag at the start of `text` (`<b>`, `</b>`,
/// `<a href="…">`), which a platform reading HTML would not show.
fn tag_length(text: &str) -> Option<usize> {
    const MAX_TAG: usize = 256;
    let rest = text.strip_prefix('<')?;
    let name = rest.strip_prefix('/').unwrap_or(rest);
    if !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return None;
    }
    let end = text.get(..MAX_TAG.min(text.len())).unwrap_or(text).find('>')?;
    (!text[1..end].contains('<')).then_some(end + 1)
}

/// The length of the UTF-8 sequence a lead byte starts (1 for anything else).
fn utf8_width(byte: u8) -> usize {
    match byte {
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF7 => 4,
        _ => 1,
    }
}

/// Sorted, merged ranges (overlapping ones become one; touching ones stay
/// two, so two secrets side by side are two redactions).
pub fn merge(mut ranges: Vec<Range<usize>>) -> Vec<Range<usize>> {
    ranges.sort_unstable_by_key(|range| (range.start, range.end));
    let mut merged: Vec<Range<usize>> = Vec::with_capacity(ranges.len());
    for range in ranges {
        match merged.last_mut() {
            Some(last) if range.start < last.end => last.end = last.end.max(range.end),
            _ => merged.push(range),
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found<'a>(text: &'a str, secret: &str) -> Vec<&'a str> {
        let needle = Folded::new(secret);
        Folded::new(text).find_all(needle.bytes()).into_iter().map(|range| &text[range]).collect()
    }

    #[test]
    fn a_secret_is_found_in_every_spelling_and_cut_where_it_stands() {
        let secret = "test-openai-key-1";
        let cases = [
            ("as written", "k=test-openai-key-1!", "test-openai-key-1"),
            ("upper case", "k=TEST-OPENAI-KEY-1!", "TEST-OPENAI-KEY-1"),
            ("percent-encoded", "k=test%2Dopenai%2dkey%2D1!", "test%2Dopenai%2dkey%2D1"),
            ("encoded twice", "k=%2574est-openai-key-1", "%2574est-openai-key-1"),
            ("a zero-width space inside", "test-open\u{200B}ai-key-1", "test-open\u{200B}ai-key-1"),
            ("an encoded zero-width space", "test-open%E2%80%8Bai-key-1", "test-open%E2%80%8Bai-key-1"),
            ("markdown emphasis inside", "test-**openai**-key-1", "test-**openai**-key-1"),
            ("an escape inside", "test\\-openai-key-1", "test\\-openai-key-1"),
            ("an empty tag inside", "test-open<b></b>ai-key-1", "test-open<b></b>ai-key-1"),
            ("a tag with attributes inside", "test-<a href=\"x\">openai-key-1", "test-<a href=\"x\">openai-key-1"),
            ("after multibyte text", "é€ test-openai-key-1 é", "test-openai-key-1"),
        ];
        for (what, text, expected) in cases {
            assert_eq!(found(text, secret), vec![expected], "{what}");
        }
        assert!(found("test-openai-key", secret).is_empty(), "a prefix is not the secret");
        assert!(found("test openai key 1", secret).is_empty(), "spaces are seen");
        assert_eq!(found("test-openai-key-1test-openai-key-1", secret).len(), 2);
    }

    #[test]
    fn stray_percent_signs_and_broken_escapes_are_kept_as_they_are() {
        assert_eq!(found("100% sure, %zz and %", "sure, %zz"), vec!["sure, %zz"]);
    }

    #[test]
    fn ranges_merge_when_they_overlap() {
        assert_eq!(merge(vec![5..8, 0..2, 1..3, 8..9, 12..13, 12..13]), vec![0..3, 5..8, 8..9, 12..13]);
    }
}
