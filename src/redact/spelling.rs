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
pub struct Folded(Form<Vec<(u32, u32)>>);

/// The normal form of `text` alone: [`Folded::bytes`] without the ranges,
/// which only a found needle needs (most texts hold none).
pub fn normal_form(text: &str) -> Vec<u8> {
    Form::<()>::of(text).bytes
}

/// Characters that may stand inside a secret without a reader (or a
/// platform's formatting) showing them: ASCII markup characters the platforms
/// read as formatting or escapes, and Unicode's default-ignorable code points
/// (zero-width spaces and joiners, bidi controls, variation selectors, tags,
/// the soft hyphen…; Unicode's DerivedCoreProperties, Default_Ignorable_Code_Point).
pub fn is_ignorable(character: char) -> bool {
    if character.is_ascii() {
        return is_ignorable_ascii(character as u8);
    }
    matches!(
        character,
        '\u{00AD}'
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

/// [`is_ignorable`] for an ASCII character: the platforms' markup characters.
const fn is_ignorable_ascii(byte: u8) -> bool {
    matches!(byte, b'*' | b'_' | b'~' | b'`' | b'|' | b'\\')
}

/// The bytes a normal form keeps as they are: ASCII that is neither
/// ignorable nor a tag's start (a table: this runs over every prompt).
const PLAIN: [bool; 256] = {
    let mut plain = [false; 256];
    let mut byte = 0;
    while byte < 128 {
        plain[byte] = byte as u8 != b'<' && !is_ignorable_ascii(byte as u8);
        byte += 1;
    }
    plain
};

impl Folded {
    /// The normal form of `text`: ignorable characters dropped, `%XX` escapes
    /// decoded (repeatedly), ASCII letters lowered.
    pub fn new(text: &str) -> Folded {
        Folded(Form::of(text))
    }

    /// The normal form's bytes (what a secret's own normal form is searched for in).
    pub fn bytes(&self) -> &[u8] {
        &self.0.bytes
    }

    /// The ranges of the original text where `needle` (itself in normal form)
    /// stands, without overlaps.
    pub fn find_all(&self, needle: &Needle) -> Vec<Range<usize>> {
        if needle.is_empty() {
            return Vec::new();
        }
        let Form { bytes, spans } = &self.0;
        needle.find_iter(bytes).map(|at| spans[at].0 as usize..spans[at + needle.len() - 1].1 as usize).collect()
    }
}

/// Where each byte of a normal form came from: a range of the original per
/// byte, or nothing (`()`, for [`normal_form`]).
trait Spans {
    fn with_capacity(capacity: usize) -> Self;
    fn push(&mut self, span: (u32, u32));
    /// Each of `length` bytes from `start` on stands for itself.
    fn push_run(&mut self, start: usize, length: usize);
    fn get(&self, index: usize) -> (u32, u32);
    fn set(&mut self, index: usize, span: (u32, u32));
    fn truncate(&mut self, length: usize);
}

impl Spans for Vec<(u32, u32)> {
    fn with_capacity(capacity: usize) -> Self {
        Vec::with_capacity(capacity)
    }
    fn push(&mut self, span: (u32, u32)) {
        Vec::push(self, span)
    }
    fn push_run(&mut self, start: usize, length: usize) {
        self.extend((start as u32..(start + length) as u32).map(|at| (at, at + 1)))
    }
    fn get(&self, index: usize) -> (u32, u32) {
        self[index]
    }
    fn set(&mut self, index: usize, span: (u32, u32)) {
        self[index] = span
    }
    fn truncate(&mut self, length: usize) {
        Vec::truncate(self, length)
    }
}

impl Spans for () {
    fn with_capacity(_: usize) -> Self {}
    fn push(&mut self, _: (u32, u32)) {}
    fn push_run(&mut self, _: usize, _: usize) {}
    fn get(&self, _: usize) -> (u32, u32) {
        (0, 0)
    }
    fn set(&mut self, _: usize, _: (u32, u32)) {}
    fn truncate(&mut self, _: usize) {}
}

/// A normal form in the making.
struct Form<S> {
    bytes: Vec<u8>,
    spans: S,
}

impl<S: Spans> Form<S> {
    fn of(text: &str) -> Self {
        let mut form = Form { bytes: Vec::with_capacity(text.len()), spans: S::with_capacity(text.len()) };
        // Ignorable characters are dropped as they are met (what
        // `drop_ignorable` does to decoded bytes); plain ASCII goes in runs.
        let bytes = text.as_bytes();
        let mut at = 0;
        while at < bytes.len() {
            // A run of ASCII that stays as it is, copied whole.
            let run = bytes[at..].iter().position(|byte| !PLAIN[*byte as usize]).unwrap_or(bytes.len() - at);
            form.bytes.extend_from_slice(&bytes[at..at + run]);
            form.spans.push_run(at, run);
            at += run;
            let Some(&byte) = bytes.get(at) else { break };
            if byte == b'<' {
                if let Some(length) = tag_length(&text[at..]) {
                    at += length;
                    continue;
                }
            }
            if byte.is_ascii() {
                if !is_ignorable_ascii(byte) {
                    form.bytes.push(byte);
                    form.spans.push((at as u32, at as u32 + 1));
                }
                at += 1;
                continue;
            }
            let Some(character) = text[at..].chars().next() else { break };
            let width = character.len_utf8();
            if !is_ignorable(character) {
                form.bytes.extend_from_slice(&bytes[at..at + width]);
                for _ in 0..width {
                    form.spans.push((at as u32, (at + width) as u32));
                }
            }
            at += width;
        }
        for _ in 0..DECODE_ROUNDS {
            if !form.percent_decode() {
                break;
            }
            form.drop_ignorable();
        }
        form.bytes.make_ascii_lowercase();
        form
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
                    self.spans.set(kept, self.spans.get(index));
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
        if !self.bytes.contains(&b'%') {
            return false;
        }
        let hex = |byte: u8| (byte as char).to_digit(16).map(|digit| digit as u8);
        let mut bytes = Vec::with_capacity(self.bytes.len());
        let mut spans = S::with_capacity(self.bytes.len());
        let mut at = 0;
        let mut decoded_any = false;
        while at < self.bytes.len() {
            let escape = (self.bytes[at] == b'%')
                .then(|| Some(hex(*self.bytes.get(at + 1)?)? << 4 | hex(*self.bytes.get(at + 2)?)?))
                .flatten();
            match escape {
                Some(byte) => {
                    bytes.push(byte);
                    spans.push((self.spans.get(at).0, self.spans.get(at + 2).1));
                    decoded_any = true;
                    at += 3;
                }
                None => {
                    bytes.push(self.bytes[at]);
                    spans.push(self.spans.get(at));
                    at += 1;
                }
            }
        }
        self.bytes = bytes;
        self.spans = spans;
        decoded_any
    }
}

/// Bytes to look for, with their searcher made once: a prompt's JSON has
/// hundreds of strings, and a searcher made per string and secret was most
/// of a turn's redaction time.
#[derive(Debug, Clone)]
pub struct Needle(memchr::memmem::Finder<'static>);

impl Needle {
    pub fn new(bytes: &[u8]) -> Needle {
        Needle(memchr::memmem::Finder::new(bytes).into_owned())
    }

    pub fn len(&self) -> usize {
        self.0.needle().len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.needle().is_empty()
    }

    /// Whether `haystack` holds the needle (an empty one: never).
    pub fn is_in(&self, haystack: &[u8]) -> bool {
        !self.is_empty() && self.0.find(haystack).is_some()
    }

    /// Where the needle starts in `haystack`, without overlaps.
    pub fn find_iter<'h>(&'h self, haystack: &'h [u8]) -> impl Iterator<Item = usize> + 'h {
        self.0.find_iter(haystack)
    }
}

impl PartialEq for Needle {
    fn eq(&self, other: &Needle) -> bool {
        self.0.needle() == other.0.needle()
    }
}

impl Eq for Needle {}

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
        let needle = Needle::new(Folded::new(secret).bytes());
        Folded::new(text).find_all(&needle).into_iter().map(|range| &text[range]).collect()
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
    fn the_normal_form_alone_is_the_folded_bytes() {
        let texts = [
            "plain ascii, with *markdown* and `code` and a_b|c\\d",
            "k=test%2Dopenai%2dkey%2D1! and %2574est, 100% sure, %zz and %",
            "test-open\u{200B}ai-key-1 é€ <b>bold</b> <a href=\"x\">link</a> < not a tag",
            "%E2%80%8B encoded zero-width, \u{E0041} a tag character, \u{FEFF}",
            "",
        ];
        for text in texts {
            assert_eq!(normal_form(text), Folded::new(text).bytes(), "{text:?}");
        }
        assert_eq!(normal_form("A*B%2541<i>c</i>\u{200B}D"), b"abacd");
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
