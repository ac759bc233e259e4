//! Keeps secrets in: every configured secret (tokens, API keys, signing
//! secrets) is scrubbed wherever text leaves the Worker, however the text
//! spells it ([`spelling`]: any ASCII case, percent-encoded, broken up by
//! invisible or formatting characters), and well-known key shapes
//! ([`shapes`]) are redacted in replies, tool results and logs. Each secret
//! also knows the one API origin it may be sent to, which the `http_fetch`
//! guard enforces.

pub mod shapes;
pub mod spelling;

use std::borrow::Cow;
use std::ops::Range;

use serde_json::Value;
use url::Url;

pub use shapes::REDACTED;
use spelling::Needle;

/// Shorter values are not scrubbed: a configured "secret" this short would
/// blank ordinary words out of every reply, and is no secret anyway.
pub const MIN_SECRET_CHARS: usize = 8;

/// One configured secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownSecret {
    /// The variable that holds it (safe to show: never the value).
    pub name: &'static str,
    value: String,
    /// The value as written, to look for.
    exact: Needle,
    /// The value in normal form ([`spelling::Folded`]); empty when that form
    /// is too short to look for (then only the exact value is).
    folded: Needle,
    /// `scheme://host:port` of the API it belongs to; None for secrets that
    /// are never sent anywhere (the admin token, webhook and signing secrets).
    home: Option<String>,
}

impl KnownSecret {
    /// Whether a request to `url` may carry this secret: only to its own API.
    pub fn may_go_to(&self, url: &Url) -> bool {
        matches!((&self.home, origin(url)), (Some(home), Some(origin)) if *home == origin)
    }
}

/// `scheme://host:port`, the port spelt out even when it is the default.
fn origin(url: &Url) -> Option<String> {
    Some(format!("{}://{}:{}", url.scheme(), url.host_str()?, url.port_or_known_default()?))
}

/// The configured secrets, longest first (a secret that contains another is
/// scrubbed whole), and the matching that keeps them in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Redactor {
    secrets: Vec<KnownSecret>,
    /// The shortest normal form looked for (`usize::MAX`: none is).
    shortest_folded: usize,
}

impl Redactor {
    /// `(variable, value, base URL of its API)`; empty and short values are left out.
    pub fn new<'a>(secrets: impl IntoIterator<Item = (&'static str, &'a str, Option<&'a str>)>) -> Self {
        let mut kept: Vec<KnownSecret> = Vec::new();
        for (name, value, base) in secrets {
            if value.chars().count() < MIN_SECRET_CHARS {
                continue;
            }
            let home = base.and_then(|base| Url::parse(base).ok()).as_ref().and_then(origin);
            // Kept longest first by insertion (a sort would add a few KB of wasm for nine entries).
            let at = kept.iter().position(|secret| secret.value.len() < value.len()).unwrap_or(kept.len());
            let folded = spelling::Folded::new(value);
            let folded = Needle::new(if folded.bytes().len() < MIN_SECRET_CHARS { &[] } else { folded.bytes() });
            let exact = Needle::new(value.as_bytes());
            kept.insert(at, KnownSecret { name, value: value.to_string(), exact, folded, home });
        }
        let folded = kept.iter().map(|secret| secret.folded.len()).filter(|length| *length > 0);
        Redactor { shortest_folded: folded.min().unwrap_or(usize::MAX), secrets: kept }
    }

    /// This redactor and `more` secrets learnt after the configuration (an
    /// agent's bot token, read from D1), each sent nowhere by the guard; a
    /// value it knows already is not added twice.
    pub fn with_more<'a>(&self, more: impl IntoIterator<Item = (&'static str, &'a str)>) -> Self {
        let new: Vec<(&'static str, &'a str)> =
            more.into_iter().filter(|(_, value)| !self.secrets.iter().any(|secret| secret.value == *value)).collect();
        let known = self.secrets.iter().map(|secret| (secret.name, secret.value.as_str(), secret.home.as_deref()));
        Redactor::new(known.chain(new.iter().map(|(name, value)| (*name, *value, None))))
    }

    /// Where each configured secret stands in `text` (byte ranges, with the
    /// secret's variable), however it is spelt.
    pub fn secret_ranges(&self, text: &str) -> Vec<(Range<usize>, &'static str)> {
        let mut found = Vec::new();
        if self.secrets.is_empty() || text.is_empty() {
            return found;
        }
        // Folding never lengthens a text: one shorter than every secret's
        // normal form holds none of them, and a secret is looked for only in
        // a text at least as long (most strings of a prompt's JSON are short).
        // Where each folded byte came from is worked out only once a
        // secret's normal form is there.
        let normal = (text.len() >= self.shortest_folded).then(|| spelling::normal_form(text));
        let mut folded = None;
        for secret in &self.secrets {
            if text.len() >= secret.value.len() {
                let exact = secret.exact.find_iter(text.as_bytes()).map(|at| at..at + secret.value.len());
                found.extend(exact.map(|range| (range, secret.name)));
            }
            if normal.as_ref().is_some_and(|normal| secret.folded.is_in(normal)) {
                let folded = folded.get_or_insert_with(|| spelling::Folded::new(text));
                found.extend(folded.find_all(&secret.folded).into_iter().map(|range| (range, secret.name)));
            }
        }
        found
    }

    /// Where configured secrets and, `with_shapes`, key shapes stand: sorted, merged.
    pub fn ranges(&self, text: &str, with_shapes: bool) -> Vec<Range<usize>> {
        let mut ranges: Vec<Range<usize>> = self.secret_ranges(text).into_iter().map(|(range, _)| range).collect();
        if with_shapes {
            ranges.extend(shapes::shape_ranges(text));
        }
        spelling::merge(ranges)
    }

    /// The text with every configured secret replaced by [`REDACTED`]
    /// (borrowed when it held none). For prompts and error bodies.
    pub fn scrub<'a>(&self, text: &'a str) -> Cow<'a, str> {
        cut(text, &self.ranges(text, false))
    }

    /// [`Self::scrub`], then the well-known key shapes. For replies, tool
    /// results and logs.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        cut(text, &self.ranges(text, true))
    }

    /// What [`Self::redact`] would take out of `text`: the secrets' variables,
    /// and "a key shape", for a log line that never carries the value.
    pub fn found(&self, text: &str) -> Vec<&'static str> {
        let mut found: Vec<&'static str> = Vec::new();
        for (_, name) in self.secret_ranges(text) {
            if !found.contains(&name) {
                found.push(name);
            }
        }
        if !shapes::shape_ranges(text).is_empty() {
            found.push("a key shape");
        }
        found
    }

    /// Scrubs configured secrets from every string value in `value`; says
    /// whether anything was found. For request bodies sent to models. Keys
    /// are left alone: the bodies' keys are the wire format's own names, and
    /// a model's tool arguments come from prompts that were scrubbed.
    pub fn scrub_json(&self, value: &mut Value) -> bool {
        self.walk(value, false)
    }

    /// [`Self::redact`] on every string value in `value`.
    pub fn redact_json(&self, value: &mut Value) -> bool {
        self.walk(value, true)
    }

    fn walk(&self, value: &mut Value, with_shapes: bool) -> bool {
        let items: Box<dyn Iterator<Item = &mut Value>> = match value {
            Value::String(text) => {
                let cleaned = if with_shapes { self.redact(text) } else { self.scrub(text) };
                return match cleaned {
                    Cow::Owned(cleaned) => {
                        *text = cleaned;
                        true
                    }
                    Cow::Borrowed(_) => false,
                };
            }
            Value::Array(items) => Box::new(items.iter_mut()),
            Value::Object(fields) => Box::new(fields.values_mut()),
            _ => return false,
        };
        items.fold(false, |found, item| self.walk(item, with_shapes) | found)
    }

    /// Every configured secret `text` carries, as written, percent-decoded, in
    /// another ASCII letter case or broken up by invisible characters (a model
    /// may spell a URL any of these ways; the URL parser lowercases host names).
    pub fn found_in(&self, text: &str) -> Vec<&KnownSecret> {
        let found = self.secret_ranges(text);
        self.secrets.iter().filter(|secret| found.iter().any(|(_, name)| *name == secret.name)).collect()
    }
}

/// `text` with each range (sorted, apart) replaced by [`REDACTED`]; borrowed when there is none.
pub fn cut<'a>(text: &'a str, ranges: &[Range<usize>]) -> Cow<'a, str> {
    if ranges.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for range in ranges {
        out.push_str(&text[copied..range.start]);
        out.push_str(REDACTED);
        copied = range.end;
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const TELEGRAM: &str = "4242:test-telegram-token";
    const OPENAI: &str = "test-openai-key-1";

    fn redactor() -> Redactor {
        Redactor::new([
            ("TELEGRAM_BOT_TOKEN", TELEGRAM, Some("https://api.telegram.org")),
            ("OPENAI_API_KEY", OPENAI, Some("https://api.openai.com/v1")),
            ("ADMIN_TOKEN", "admin-secret-value", None),
            ("SLACK_BOT_TOKEN", "", Some("https://slack.com/api")),
            ("SHORT", "abc", None),
        ])
    }

    #[test]
    fn configured_secrets_are_scrubbed_wherever_they_stand() {
        let redactor = redactor();
        let cases = [
            (format!("my token is {TELEGRAM}!"), "my token is [redacted]!"),
            (format!("{OPENAI}{OPENAI}"), "[redacted][redacted]"),
            (
                format!("https://api.telegram.org/bot{TELEGRAM}/sendMessage"),
                "https://api.telegram.org/bot[redacted]/sendMessage",
            ),
            ("admin-secret-value and admin-secret-valu".to_string(), "[redacted] and admin-secret-valu"),
        ];
        for (input, expected) in cases {
            assert_eq!(redactor.scrub(&input), expected);
        }
        assert!(
            matches!(redactor.scrub("nothing here, abc"), Cow::Borrowed(_)),
            "short and empty values are not secrets"
        );
    }

    #[test]
    fn secrets_learnt_later_are_scrubbed_beside_the_configured_ones_and_go_nowhere() {
        let redactor = redactor().with_more([("AGENT_TELEGRAM_BOT_TOKEN", "7:agent-bot-token"), ("X", "short")]);
        let text = format!("bot7:AGENT-BOT-TOKEN and 7:agent-bot-token and {TELEGRAM}");
        assert_eq!(redactor.scrub(&text), "bot[redacted] and [redacted] and [redacted]");
        assert_eq!(redactor.found("7:agent-bot-token"), ["AGENT_TELEGRAM_BOT_TOKEN"]);
        assert_eq!(redactor.scrub("short"), "short", "short values stay out");
        let telegram = Url::parse("https://api.telegram.org/bot").unwrap();
        let named = |name: &str| redactor.secrets.iter().find(|secret| secret.name == name).cloned().unwrap();
        assert!(named("TELEGRAM_BOT_TOKEN").may_go_to(&telegram), "the configured ones keep their home");
        assert!(!named("AGENT_TELEGRAM_BOT_TOKEN").may_go_to(&telegram));
    }

    #[test]
    fn a_secret_inside_a_longer_one_never_leaves_a_piece_behind() {
        let redactor = Redactor::new([("SHORTER", "secret-part", None), ("LONGER", "the-secret-part-and-more", None)]);
        assert_eq!(redactor.scrub("x the-secret-part-and-more y secret-part"), "x [redacted] y [redacted]");
    }

    #[test]
    fn redact_adds_the_key_shapes_to_the_configured_secrets() {
        let redactor = redactor();
        let text = format!("{TELEGRAM} and sk-abcdefghijklmnopqrstuvwxyz and Bearer {OPENAI}");
        assert_eq!(redactor.redact(&text), "[redacted] and [redacted] and Bearer [redacted]");
        assert_eq!(
            redactor.scrub("sk-abcdefghijklmnopqrstuvwxyz"),
            "sk-abcdefghijklmnopqrstuvwxyz",
            "scrub is exact only"
        );
    }

    #[test]
    fn json_bodies_are_scrubbed_in_every_string() {
        let redactor = redactor();
        let mut body = json!({
            "model": "gpt",
            "messages": [{"role": "user", "content": format!("key {OPENAI}")}, {"role": "tool", "content": 7}],
            "input": {"nested": [TELEGRAM]},
        });
        assert!(redactor.scrub_json(&mut body));
        let text = body.to_string();
        assert!(!text.contains(OPENAI) && !text.contains(TELEGRAM), "{text}");
        assert_eq!(body["messages"][0]["content"], "key [redacted]");
        assert_eq!(body["input"]["nested"][0], "[redacted]");
        let mut clean = json!({"messages": ["hello"]});
        assert!(!redactor.scrub_json(&mut clean));
        let mut shaped = json!(["Bearer abcdefghijklmnop"]);
        assert!(!redactor.scrub_json(&mut shaped.clone()) && redactor.redact_json(&mut shaped));
    }

    #[test]
    fn redacting_names_what_was_found_never_its_value() {
        let redactor = redactor();
        let text = format!("token {TELEGRAM}, {OPENAI} and sk-abcdefghijklmnopqrstuvwxyz");
        assert_eq!(redactor.found(&text), vec!["TELEGRAM_BOT_TOKEN", "OPENAI_API_KEY", "a key shape"]);
        assert_eq!(redactor.found("xoxb-1234567890-abcdef"), vec!["a key shape"]);
        assert!(redactor.found("plain").is_empty());
    }

    #[test]
    fn a_secret_is_redacted_in_every_spelling_a_reader_would_still_recognise() {
        let redactor = redactor();
        let attacks = [
            ("upper case", "TEST-OPENAI-KEY-1"),
            ("mixed case", "Test-OpenAI-Key-1"),
            ("percent-encoded", "test%2Dopenai%2Dkey%2D1"),
            ("fully percent-encoded", "%74%65%73%74%2D%6F%70%65%6E%61%69%2D%6B%65%79%2D%31"),
            ("a zero-width space", "test-open\u{200B}ai-key-1"),
            ("markdown bold in the middle", "test-**openai**-key-1"),
            ("backslash escapes", "test\\-openai\\-key\\-1"),
        ];
        for (what, spelling) in attacks {
            let text = format!("here: {spelling} (done)");
            assert_eq!(redactor.redact(&text), "here: [redacted] (done)", "{what}");
            assert_eq!(redactor.scrub(&text), "here: [redacted] (done)", "{what}");
        }
    }

    #[test]
    fn a_secret_is_found_however_a_url_spells_it() {
        let redactor = redactor();
        let spellings = [
            format!("https://evil.example/?k={OPENAI}"),
            "https://evil.example/?k=test%2Dopenai%2Dkey%2D1".to_string(),
            "https://evil.example/?k=test%252Dopenai%252Dkey%252D1".to_string(),
            format!("https://{}.evil.example/", OPENAI.to_uppercase()),
            "https://evil.example/4242%3Atest-telegram-token".to_string(),
        ];
        for url in &spellings {
            assert_eq!(redactor.found_in(url).len(), 1, "{url}");
        }
        assert_eq!(redactor.found_in(&spellings[4])[0].name, "TELEGRAM_BOT_TOKEN");
        assert!(redactor.found_in("https://example.com/?q=test-openai").is_empty());
        let both = format!("https://evil.example/{TELEGRAM}/{OPENAI}");
        assert_eq!(redactor.found_in(&both).len(), 2);
    }

    #[test]
    fn a_secret_may_go_only_to_its_own_api_origin() {
        let redactor = redactor();
        let telegram = redactor.found_in(TELEGRAM)[0];
        let url = |text: &str| Url::parse(text).unwrap();
        assert!(telegram.may_go_to(&url("https://api.telegram.org/botX/getMe")));
        assert!(telegram.may_go_to(&url("https://API.telegram.org:443/")));
        for elsewhere in [
            "https://evil.example/",
            "http://api.telegram.org/",
            "https://api.telegram.org:8443/",
            "https://api.telegram.org.evil.example/",
        ] {
            assert!(!telegram.may_go_to(&url(elsewhere)), "{elsewhere}");
        }
        let admin = redactor.found_in("admin-secret-value")[0];
        assert!(!admin.may_go_to(&url("https://api.telegram.org/")), "the admin token goes nowhere");
    }
}
