//! The loop guard: the model's module is rewritten so that every `while`,
//! `do … while` and classic `for` loop calls a counter in its condition
//! (`while (x)` becomes `while (TICK() && (x))`), which throws once the run has
//! spent its loop iterations. Cloudflare enforces the CPU limit (`limits.cpuMs`)
//! in production, but the local runtime (workerd) enforces none, and there an
//! endless loop in a loaded isolate stalls the whole runtime, the Worker with it.
//!
//! Hand-rolled rather than a JavaScript parser (swc, oxc) because those would
//! multiply the Worker's wasm size for one rewrite; only what a rewrite of loop
//! headers needs is read: comments, strings, template literals (whose `${…}`
//! holes are code and are rewritten too), regular expression literals, and
//! brackets. `for … in` and `for … of` loops end with what they walk and are left
//! as they are; a loop the guard misses is still held by the CPU limit in
//! production and by the host's wall time where the isolate yields.

/// One token of code: a word (identifier or keyword) or a punctuation mark,
/// with its byte offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token<'a> {
    Word(&'a str, usize),
    Mark(u8, usize),
}

/// Words after which a `/` starts a regular expression, not a division.
const BEFORE_REGEX: [&str; 12] =
    ["return", "typeof", "instanceof", "in", "of", "new", "delete", "void", "throw", "case", "do", "else"];

/// The module with each loop's condition calling `tick` first; `tick` names a
/// function that returns true or throws.
pub fn guard_loops(source: &str, tick: &str) -> String {
    let tokens = tokenize(source);
    let mut inserts: Vec<(usize, String)> = Vec::new();
    for (index, token) in tokens.iter().enumerate() {
        let Token::Word(word @ ("while" | "for"), _) = *token else { continue };
        if index > 0 && matches!(tokens[index - 1], Token::Mark(b'.', _)) {
            continue; // a property: `x.while`
        }
        let mut open = index + 1;
        if word == "for" && matches!(tokens.get(open), Some(Token::Word("await", _))) {
            open += 1;
        }
        let Some(&Token::Mark(b'(', open_at)) = tokens.get(open) else { continue };
        let Some((close_at, semicolons)) = header(&tokens[open + 1..]) else { continue };
        let inside = &source[open_at + 1..close_at];
        if inside.trim().is_empty() {
            continue; // a method named `while`, or nothing to guard
        }
        match (word, semicolons.as_slice()) {
            ("while", []) => {
                inserts.push((open_at + 1, format!("{tick}() && (")));
                inserts.push((close_at, ")".to_string()));
            }
            ("for", [first, second]) if source[first + 1..*second].trim().is_empty() => {
                inserts.push((first + 1, format!(" {tick}() ")));
            }
            ("for", [first, second]) => {
                inserts.push((first + 1, format!(" {tick}() && (")));
                inserts.push((*second, ")".to_string()));
            }
            _ => {} // for-in, for-of
        }
    }
    inserts.sort_by_key(|(at, _)| *at);
    let mut out = String::with_capacity(source.len() + inserts.len() * (tick.len() + 8));
    let mut from = 0;
    for (at, text) in inserts {
        out.push_str(&source[from..at]);
        out.push_str(&text);
        from = at;
    }
    out.push_str(&source[from..]);
    out
}

/// The offset of the `)` that closes a loop header (the tokens after its `(`),
/// and the offsets of its top-level semicolons.
fn header(tokens: &[Token]) -> Option<(usize, Vec<usize>)> {
    let mut depth = 0usize;
    let mut semicolons = Vec::new();
    for token in tokens {
        match *token {
            Token::Mark(b'(' | b'[' | b'{', _) => depth += 1,
            Token::Mark(b')', at) if depth == 0 => return Some((at, semicolons)),
            Token::Mark(b')' | b']' | b'}', _) => depth = depth.saturating_sub(1),
            Token::Mark(b';', at) if depth == 0 => semicolons.push(at),
            _ => {}
        }
    }
    None
}

/// The code's words and marks, skipping comments, strings, regular
/// expressions and the text of template literals (their holes are code).
fn tokenize(source: &str) -> Vec<Token<'_>> {
    let bytes = source.as_bytes();
    let mut tokens = Vec::new();
    // Brace depths at which a template literal's hole opened.
    let mut holes: Vec<usize> = Vec::new();
    let mut braces = 0usize;
    let mut at = 0;
    while at < bytes.len() {
        let byte = bytes[at];
        match byte {
            b'/' if bytes.get(at + 1) == Some(&b'/') => at = skip_until(bytes, at, b"\n"),
            b'/' if bytes.get(at + 1) == Some(&b'*') => at = skip_until(bytes, at + 2, b"*/"),
            b'\'' | b'"' => at = skip_string(bytes, at),
            b'`' => at = skip_template(bytes, at + 1, &mut holes, braces),
            b'}' if holes.last() == Some(&braces) => {
                holes.pop();
                at = skip_template(bytes, at + 1, &mut holes, braces);
            }
            b'/' if regex_may_start(tokens.last()) => at = skip_regex(bytes, at),
            _ if is_word_byte(byte) => {
                let start = at;
                while at < bytes.len() && is_word_byte(bytes[at]) {
                    at += 1;
                }
                tokens.push(Token::Word(&source[start..at], start));
            }
            _ if byte.is_ascii_whitespace() => at += 1,
            _ => {
                match byte {
                    b'{' => braces += 1,
                    b'}' => braces = braces.saturating_sub(1),
                    _ => {}
                }
                tokens.push(Token::Mark(byte, at));
                at += 1;
            }
        }
    }
    tokens
}

fn is_word_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'$' || byte >= 0x80
}

fn regex_may_start(previous: Option<&Token>) -> bool {
    match previous {
        None => true,
        Some(Token::Word(word, _)) => BEFORE_REGEX.contains(word),
        Some(Token::Mark(mark, _)) => !matches!(mark, b')' | b']' | b'}'),
    }
}

/// The offset just past `end` (or the end of the source).
fn skip_until(bytes: &[u8], from: usize, end: &[u8]) -> usize {
    let mut at = from;
    while at < bytes.len() {
        if bytes[at..].starts_with(end) {
            return at + end.len();
        }
        at += 1;
    }
    bytes.len()
}

fn skip_string(bytes: &[u8], from: usize) -> usize {
    let quote = bytes[from];
    let mut at = from + 1;
    while at < bytes.len() {
        match bytes[at] {
            b'\\' => at += 2,
            byte if byte == quote || byte == b'\n' => return at + 1,
            _ => at += 1,
        }
    }
    bytes.len()
}

/// Skips a template literal's text up to its end or its next hole (`${`,
/// whose code is tokenized; its closing `}` resumes the text).
fn skip_template(bytes: &[u8], from: usize, holes: &mut Vec<usize>, braces: usize) -> usize {
    let mut at = from;
    while at < bytes.len() {
        match bytes[at] {
            b'\\' => at += 2,
            b'`' => return at + 1,
            b'$' if bytes.get(at + 1) == Some(&b'{') => {
                holes.push(braces);
                return at + 2;
            }
            _ => at += 1,
        }
    }
    bytes.len()
}

fn skip_regex(bytes: &[u8], from: usize) -> usize {
    let mut at = from + 1;
    let mut in_class = false;
    while at < bytes.len() {
        match bytes[at] {
            b'\\' => at += 2,
            b'[' => (in_class, at) = (true, at + 1),
            b']' => (in_class, at) = (false, at + 1),
            b'/' if !in_class => return at + 1,
            b'\n' => return at,
            _ => at += 1,
        }
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guarded(source: &str) -> String {
        guard_loops(source, "T")
    }

    #[test]
    fn each_kind_of_loop_calls_the_counter_in_its_condition() {
        let cases = [
            ("while (true) {}", "while (T() && (true)) {}"),
            ("while(a < b) a++;", "while(T() && (a < b)) a++;"),
            ("do { x++ } while (x < 3);", "do { x++ } while (T() && (x < 3));"),
            ("for (;;) {}", "for (; T() ;) {}"),
            ("for (let i = 0; i < n; i++) {}", "for (let i = 0; T() && ( i < n); i++) {}"),
            ("for await (const x of y) {}", "for await (const x of y) {}"),
            ("for (const k in o) {}", "for (const k in o) {}"),
            ("for (const x of xs) while (x) {}", "for (const x of xs) while (T() && (x)) {}"),
        ];
        for (source, expected) in cases {
            assert_eq!(guarded(source), expected, "{source}");
        }
    }

    #[test]
    fn loops_in_strings_comments_and_regexes_are_not_code() {
        let cases = [
            "const s = 'while (true) {}';",
            "const s = \"for (;;) {}\";",
            "// while (true) {}\nx",
            "/* for (;;) {} */ x",
            "const r = /while (true)/; x",
            "const t = `while (true) {}`;",
            "o.while(1); o.for(2);",
            "const o = { while() {} };",
        ];
        for source in cases {
            assert_eq!(guarded(source), source, "{source}");
        }
    }

    #[test]
    fn loops_in_template_holes_and_nested_headers_are_guarded() {
        assert_eq!(guarded("`a ${ (() => { while (1) {} })() } b`"), "`a ${ (() => { while (T() && (1)) {} })() } b`");
        assert_eq!(
            guarded("for (let i = f(() => { for (;;) {} }); i; ) {}"),
            "for (let i = f(() => { for (; T() ;) {} }); T() && ( i); ) {}"
        );
        assert_eq!(guarded("`${`${1}`}` ; while (x) {}"), "`${`${1}`}` ; while (T() && (x)) {}");
    }

    #[test]
    fn division_is_not_a_regex() {
        assert_eq!(guarded("const a = b / c; while (d / e) {}"), "const a = b / c; while (T() && (d / e)) {}");
        assert_eq!(guarded("x = (a) / 2 / 3; for (;;) {}"), "x = (a) / 2 / 3; for (; T() ;) {}");
    }
}
