//! What guards the edges: constant-time comparison of secrets, the browser
//! headers every answer carries, replay windows, and the small codecs
//! (hex, percent escapes) signed and addressed requests need.

use subtle::ConstantTimeEq;

/// Compares two byte strings in time that depends only on their lengths, so a
/// forger learns nothing from how long a rejection took (`subtle`).
pub fn constant_time_eq(left: &[u8], right: &[u8]) -> bool {
    left.ct_eq(right).into()
}

/// The Content-Security-Policy of every page, asset and answer: scripts,
/// styles, images and connections (fetch, WebSocket) from this origin only,
/// nothing inline, no plugins, no `<base>`, forms post only here, and no
/// page of another site may frame these.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
img-src 'self'; connect-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; \
frame-ancestors 'none'";

/// The headers every response carries: the Worker adds them to its own
/// answers (src/router.rs), and `web/static/_headers` gives them to the
/// static assets, which Cloudflare serves without running the Worker.
pub const BROWSER_HEADERS: [(&str, &str); 4] = [
    ("Content-Security-Policy", CONTENT_SECURITY_POLICY),
    ("X-Frame-Options", "DENY"),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
];

/// How far a signed request's timestamp may be from now (Slack's documented window).
pub const REPLAY_WINDOW_SECS: i64 = 5 * 60;

/// Whether a signed request's timestamp (Unix seconds, as text) is recent
/// enough to accept: an older one may be a replay.
pub fn is_fresh(timestamp: &str, now_secs: i64) -> bool {
    timestamp.trim().parse::<i64>().is_ok_and(|sent| (now_secs - sent).abs() <= REPLAY_WINDOW_SECS)
}

/// Decodes lowercase or uppercase hex; None on any other character or odd length.
pub fn decode_hex(text: &str) -> Option<Vec<u8>> {
    hex::decode(text).ok()
}

/// A tag this Worker issued, read back: lowercase hex only, the one
/// spelling [`encode_hex`] writes (plain hex decoding also takes `A` for `a`,
/// which would give a signed value several spellings).
pub fn decode_own_tag(text: &str) -> Option<Vec<u8>> {
    if text.bytes().any(|byte| byte.is_ascii_uppercase()) {
        return None;
    }
    decode_hex(text)
}

/// Lowercase hex of `bytes`, the one spelling of digests and tags.
pub fn encode_hex(bytes: impl AsRef<[u8]>) -> String {
    hex::encode(bytes)
}

/// Decodes `%XX` escapes once (a path segment: conversation keys hold `:`);
/// other bytes, and a `%` not followed by two hex digits, stay as they are.
pub fn percent_decode(segment: &str) -> String {
    percent_encoding::percent_decode_str(segment).decode_utf8_lossy().into_owned()
}

/// Checks an `Authorization: Bearer <token>` header against the configured token.
/// An unset or empty token rejects everything: the admin API fails closed.
pub fn bearer_matches(header: Option<&str>, expected_token: &str) -> bool {
    if expected_token.is_empty() {
        return false;
    }
    let Some(presented) = header.and_then(|value| value.strip_prefix("Bearer ")) else {
        return false;
    };
    constant_time_eq(presented.trim().as_bytes(), expected_token.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_strings_match_and_others_do_not() {
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(!constant_time_eq(b"secret", b"secreT"));
        assert!(!constant_time_eq(b"secret", b"secret2"));
        assert!(!constant_time_eq(b"", b"x"));
        assert!(constant_time_eq(b"", b""));
    }

    #[test]
    fn our_own_tags_have_one_spelling() {
        assert_eq!(decode_own_tag("0a"), Some(vec![10]));
        assert_eq!(decode_own_tag("0A"), None, "uppercase is another spelling of the same tag");
        assert_eq!(decode_own_tag("0g"), None);
    }

    #[test]
    fn timestamps_outside_five_minutes_are_stale() {
        assert!(is_fresh("1000", 1000 + REPLAY_WINDOW_SECS));
        assert!(is_fresh("1000", 1000 - REPLAY_WINDOW_SECS));
        assert!(!is_fresh("1000", 1001 + REPLAY_WINDOW_SECS));
        assert!(!is_fresh("soon", 1000));
    }

    #[test]
    fn hex_decodes_or_refuses() {
        assert_eq!(decode_hex("00ff7A"), Some(vec![0, 255, 122]));
        assert_eq!(decode_hex("abc"), None);
        assert_eq!(decode_hex("zz"), None);
        assert_eq!(decode_hex(""), Some(vec![]));
        assert_eq!(encode_hex([0u8, 255, 122]), "00ff7a");
        assert_eq!(decode_hex(&encode_hex(b"\x01\xab")), Some(vec![1, 0xab]));
    }

    #[test]
    fn percent_escapes_decode_once_and_stray_percents_stay() {
        assert_eq!(percent_decode("telegram%3A-100"), "telegram:-100");
        assert_eq!(percent_decode("%2541"), "%41", "once");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
        assert_eq!(percent_decode("a+b%20c"), "a+b c", "a path keeps `+`");
        assert_eq!(percent_decode("%E2%9C%93%ff"), "\u{2713}\u{fffd}", "invalid UTF-8 is replaced");
    }

    #[test]
    fn the_assets_headers_file_sends_the_browser_headers_to_every_path() {
        let file = include_str!("../web/static/_headers");
        let mut rules = file.lines().filter(|line| !line.trim_start().starts_with('#') && !line.trim().is_empty());
        assert_eq!(rules.next(), Some("/*"), "one rule for every path");
        let sent: Vec<(String, String)> = rules
            .map(|line| {
                let (name, value) = line.trim().split_once(": ").expect("`  Name: value`");
                (name.to_string(), value.to_string())
            })
            .collect();
        let expected: Vec<(String, String)> =
            BROWSER_HEADERS.iter().map(|(name, value)| (name.to_string(), value.to_string())).collect();
        assert_eq!(sent, expected);
    }

    #[test]
    fn the_policy_allows_nothing_inline_and_no_other_origin() {
        let directives: Vec<&str> = CONTENT_SECURITY_POLICY.split("; ").collect();
        for needed in ["default-src 'none'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'"] {
            assert!(directives.contains(&needed), "{needed}");
        }
        for forbidden in ["unsafe-inline", "unsafe-eval", "*", "http:", "https:", "data:", "blob:"] {
            assert!(!CONTENT_SECURITY_POLICY.contains(forbidden), "{forbidden}");
        }
    }

    #[test]
    fn bearer_requires_the_exact_token_and_a_configured_one() {
        assert!(bearer_matches(Some("Bearer abc"), "abc"));
        assert!(!bearer_matches(Some("Bearer abd"), "abc"));
        assert!(!bearer_matches(Some("abc"), "abc"));
        assert!(!bearer_matches(None, "abc"));
        assert!(!bearer_matches(Some("Bearer "), ""));
    }
}
