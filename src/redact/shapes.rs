//! Well-known key shapes, found without knowing the key: OpenAI and Anthropic
//! keys (`sk-…`, `sk-ant-…`), Slack tokens (`xoxb-…`, `xoxp-…`, `xapp-…` and
//! kin), Telegram bot tokens (`123456:` and 35 characters), Discord bot tokens
//! (three dot-separated base64url parts) and the credential after `Bearer `.
//! Hand-written matchers over bytes (every shape is ASCII), so the Worker
//! carries no regular-expression engine.

use std::borrow::Cow;

/// What a found key is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Characters of base64url tokens (Telegram, Discord, OpenAI keys).
fn is_token(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-'
}

/// Characters of a bearer credential (RFC 6750's b64token, plus `.` for JWTs).
fn is_bearer(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~' | b'+' | b'/' | b'=')
}

/// Characters of Slack tokens.
fn is_slack(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'-'
}

/// How many bytes from `start` satisfy `allowed`.
fn run(bytes: &[u8], start: usize, allowed: fn(u8) -> bool) -> usize {
    bytes.get(start..).map_or(0, |rest| rest.iter().take_while(|&&byte| allowed(byte)).count())
}

/// Whether `bytes[at..]` starts with `prefix`, ignoring ASCII case when asked.
fn starts_with(bytes: &[u8], at: usize, prefix: &str, ignore_case: bool) -> bool {
    bytes.get(at..at + prefix.len()).is_some_and(|found| match ignore_case {
        true => found.eq_ignore_ascii_case(prefix.as_bytes()),
        false => found == prefix.as_bytes(),
    })
}

/// `sk-` then at least 20 token characters (covers `sk-proj-…` and `sk-ant-api03-…`).
fn openai_or_anthropic(bytes: &[u8], at: usize) -> Option<(usize, usize)> {
    const MIN_BODY: usize = 20;
    if !starts_with(bytes, at, "sk-", false) {
        return None;
    }
    let body = run(bytes, at + 3, is_token);
    (body >= MIN_BODY).then_some((at, at + 3 + body))
}

/// `xox[abeprs]-…` or `xapp-…`, at least 10 characters after the prefix.
fn slack(bytes: &[u8], at: usize) -> Option<(usize, usize)> {
    const MIN_BODY: usize = 10;
    let is_app = starts_with(bytes, at, "xapp-", false);
    let is_xox = starts_with(bytes, at, "xox", false)
        && bytes.get(at + 3).is_some_and(|kind| b"abeprs".contains(kind))
        && bytes.get(at + 4) == Some(&b'-');
    if !(is_app || is_xox) {
        return None;
    }
    let prefix = 5;
    let body = run(bytes, at + prefix, is_slack);
    (body >= MIN_BODY).then_some((at, at + prefix + body))
}

/// Digits, `:`, then exactly 35 token characters (`\d+:[A-Za-z0-9_-]{35}`).
fn telegram(bytes: &[u8], at: usize) -> Option<(usize, usize)> {
    const SECRET_LEN: usize = 35;
    let digits = run(bytes, at, |byte| byte.is_ascii_digit());
    if digits == 0 || bytes.get(at + digits) != Some(&b':') {
        return None;
    }
    let secret = run(bytes, at + digits + 1, is_token);
    (secret == SECRET_LEN).then_some((at, at + digits + 1 + secret))
}

/// Three base64url parts: the bot's id (23-30 characters), a timestamp (5-7)
/// and an HMAC (25-45), joined by dots.
fn discord(bytes: &[u8], at: usize) -> Option<(usize, usize)> {
    const PARTS: [(usize, usize); 3] = [(23, 30), (5, 7), (25, 45)];
    let mut end = at;
    for (index, (shortest, longest)) in PARTS.into_iter().enumerate() {
        if index > 0 {
            if bytes.get(end) != Some(&b'.') {
                return None;
            }
            end += 1;
        }
        let part = run(bytes, end, is_token);
        if !(shortest..=longest).contains(&part) {
            return None;
        }
        end += part;
    }
    (bytes.get(end) != Some(&b'.')).then_some((at, end))
}

/// `Bearer` (any case), spaces, then a credential of 8 or more characters:
/// the credential is redacted, the word kept.
fn bearer(bytes: &[u8], at: usize) -> Option<(usize, usize)> {
    const MIN_CREDENTIAL: usize = 8;
    if !starts_with(bytes, at, "bearer", true) {
        return None;
    }
    let spaces = run(bytes, at + 6, |byte| byte == b' ');
    let credential = run(bytes, at + 6 + spaces, is_bearer);
    (spaces > 0 && credential >= MIN_CREDENTIAL).then_some((at + 6 + spaces, at + 6 + spaces + credential))
}

/// A matcher: the span of the key (or of its secret part) starting at a position.
type Matcher = fn(&[u8], usize) -> Option<(usize, usize)>;
/// Which byte may not come right before a match.
type NotBefore = fn(u8) -> bool;

/// The matchers, each with the bytes that may not come right before a match
/// (a match starts a word: `task-…` holds no `sk-` key).
const MATCHERS: [(Matcher, NotBefore); 5] = [
    (openai_or_anthropic, is_token),
    (slack, is_token),
    // A token is often glued to text before it, as in `/bot123:ABC…/`.
    (telegram, |byte| byte.is_ascii_digit()),
    (discord, is_token),
    (bearer, |byte| byte.is_ascii_alphanumeric()),
];

/// Where well-known key shapes stand in `text` (byte ranges, in order, apart).
pub fn shape_ranges(text: &str) -> Vec<std::ops::Range<usize>> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let matched = MATCHERS.iter().find_map(|(matcher, not_before)| {
            if at > 0 && not_before(bytes[at - 1]) {
                return None;
            }
            matcher(bytes, at)
        });
        match matched {
            // Every shape is ASCII, so both ends are character boundaries.
            Some((start, end)) => {
                found.push(start..end);
                at = end;
            }
            None => at += 1,
        }
    }
    found
}

/// The text with every well-known key shape replaced by [`REDACTED`];
/// borrowed when nothing was found.
pub fn redact_shapes(text: &str) -> Cow<'_, str> {
    super::cut(text, &shape_ranges(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TELEGRAM: &str = "123456789:AAHfiqksKZ8WmR2zSjiQ7_v4TMAKdiHm9T0";
    const DISCORD: &str = "MTA4NzU0MzIxMDk4NzY1NDMyMQ.GhJkLm.abcdefghijklmnopqrstuvwxyz0123456789AB";

    #[test]
    fn each_known_shape_is_redacted_where_it_stands() {
        let cases = [
            ("openai", "key: sk-proj-abcDEF1234567890ghijKLMN, ok", "key: [redacted], ok"),
            ("openai, legacy", "sk-abcdefghijklmnopqrstuvwxyz123456", "[redacted]"),
            ("anthropic", "use sk-ant-api03-AbC_dEf-1234567890xyzXYZ now", "use [redacted] now"),
            ("slack bot", "token=xoxb-123456789012-1234567890123-AbCdEfGhIj", "token=[redacted]"),
            ("slack user", "(xoxp-1234-5678-abcdefghij)", "([redacted])"),
            ("slack app", "xapp-1-A012ABCDEFG-1234567890-abcdef", "[redacted]"),
            ("telegram", &format!("bot token {TELEGRAM}."), "bot token [redacted]."),
            (
                "telegram in a url",
                &format!("https://api.telegram.org/bot{TELEGRAM}/getMe"),
                "https://api.telegram.org/bot[redacted]/getMe",
            ),
            ("discord", &format!("Bot {DISCORD}"), "Bot [redacted]"),
            ("bearer", "Authorization: Bearer abc.def-ghi_jkl", "Authorization: Bearer [redacted]"),
            ("bearer, lower case", "bearer   0123456789abcdef", "bearer   [redacted]"),
            ("two in one text", "sk-abcdefghijklmnopqrstuvwxyz and xoxb-abcdefghijkl", "[redacted] and [redacted]"),
            ("after a multibyte character", "é sk-abcdefghijklmnopqrstuvwxyz é", "é [redacted] é"),
        ];
        for (what, input, expected) in cases {
            assert_eq!(redact_shapes(input), expected, "{what}");
        }
    }

    #[test]
    fn look_alikes_and_ordinary_text_stay() {
        let unchanged = [
            ("plain prose", "Ask the desk-lamp shop about the task-list, it is 12:30."),
            ("a word ending in sk", "task-abcdefghijklmnopqrstuvwxyz"),
            ("a short sk- string", "sk-short"),
            ("a short slack-like string", "xoxb-123"),
            ("no dash after xox", "xoxbabcdefghijklmnop"),
            ("34 characters after the colon", "123:AAHfiqksKZ8WmR2zSjiQ7_v4TMAKdiHm9T"),
            ("36 characters after the colon", "123:AAHfiqksKZ8WmR2zSjiQ7_v4TMAKdiHm9T01"),
            ("no digits before the colon", "abc:AAHfiqksKZ8WmR2zSjiQ7_v4TMAKdiHm9T0"),
            ("a dotted version", "version 1.2.3 of example.com.au"),
            ("a JWT is not a Discord token", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abc"),
            ("bearer without a credential", "the bearer of bad news"),
            ("bearer glued to a word", "cupbearer abcdefghijkl"),
            ("empty", ""),
            ("unicode", "日本語のテキスト 🚀"),
        ];
        for (what, input) in unchanged {
            assert!(matches!(redact_shapes(input), Cow::Borrowed(_)), "{what}: {}", redact_shapes(input));
        }
    }
}
