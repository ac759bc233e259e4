//! Browser sessions: signed, expiring cookie values and the checks around
//! them. A value reads `{kind}.{subject}.{expires_ms}.{mac}`, where the MAC is
//! HMAC-SHA256 over the first three parts, keyed by the deployment's tokens,
//! so nothing is stored per session and rotating a token signs everyone out.

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::security::{constant_time_eq, decode_hex};

/// The operator's dashboard session.
pub const ADMIN_COOKIE: &str = "edgebot_admin";
/// A web-chat session: its subject is the conversation's id.
pub const CHAT_COOKIE: &str = "edgebot_chat";
/// How long a dashboard session lasts.
pub const ADMIN_SESSION_MS: i64 = 12 * 60 * 60 * 1000;
/// How long a web-chat session lasts (the conversation outlives it in storage).
pub const CHAT_SESSION_MS: i64 = 30 * 24 * 60 * 60 * 1000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    pub kind: String,
    pub subject: String,
    pub expires_ms: i64,
}

fn mac(key: &[u8], signed: &str) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(signed.as_bytes());
    mac
}

fn is_token_char(character: char) -> bool {
    character.is_ascii_alphanumeric() || character == '-' || character == '_'
}

/// A signed session value; `kind` and `subject` must be made of
/// `[A-Za-z0-9_-]` (None otherwise, or with an empty key).
pub fn issue(key: &[u8], kind: &str, subject: &str, expires_ms: i64) -> Option<String> {
    let well_formed = |part: &str| !part.is_empty() && part.chars().all(is_token_char);
    if key.is_empty() || !well_formed(kind) || !well_formed(subject) {
        return None;
    }
    let signed = format!("{kind}.{subject}.{expires_ms}");
    let tag: String = mac(key, &signed).finalize().into_bytes().iter().map(|byte| format!("{byte:02x}")).collect();
    Some(format!("{signed}.{tag}"))
}

/// The session a value proves, if its MAC is right (compared in constant
/// time), it is of `kind`, and it has not expired.
pub fn verify(key: &[u8], kind: &str, value: &str, now_ms: i64) -> Option<Session> {
    if key.is_empty() {
        return None;
    }
    let (signed, tag) = value.rsplit_once('.')?;
    let expected = mac(key, signed).finalize().into_bytes();
    if !constant_time_eq(&decode_hex(tag)?, &expected) {
        return None;
    }
    let mut parts = signed.splitn(3, '.');
    let (found_kind, subject, expires) = (parts.next()?, parts.next()?, parts.next()?);
    let expires_ms: i64 = expires.parse().ok()?;
    (found_kind == kind && expires_ms > now_ms).then(|| Session {
        kind: found_kind.to_string(),
        subject: subject.to_string(),
        expires_ms,
    })
}

/// One cookie's value from a `Cookie` header.
pub fn cookie<'a>(header: Option<&'a str>, name: &str) -> Option<&'a str> {
    header?.split(';').filter_map(|pair| pair.trim().split_once('=')).find(|(key, _)| *key == name).map(|(_, v)| v)
}

/// A `Set-Cookie` value: HttpOnly, Secure, SameSite=Strict, for the whole
/// site, lasting `max_age_secs` (0 clears it).
pub fn set_cookie(name: &str, value: &str, max_age_secs: i64) -> String {
    format!("{name}={value}; Path=/; Max-Age={max_age_secs}; HttpOnly; Secure; SameSite=Strict")
}

/// Whether a cookie-authenticated request that changes state (or opens a
/// socket) came from this site's own pages: its `Origin` must be the
/// request's own origin. A missing Origin is refused; browsers send one on
/// every such request.
pub fn same_origin(origin_header: Option<&str>, request_origin: &str) -> bool {
    origin_header.is_some_and(|origin| constant_time_eq(origin.as_bytes(), request_origin.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &[u8] = b"admin-token";

    #[test]
    fn an_issued_value_verifies_until_it_expires() {
        let value = issue(KEY, "admin", "operator", 2_000).unwrap();
        let session = verify(KEY, "admin", &value, 1_999).unwrap();
        assert_eq!(session, Session { kind: "admin".into(), subject: "operator".into(), expires_ms: 2_000 });
        assert_eq!(verify(KEY, "admin", &value, 2_000), None, "expired at its time");
    }

    #[test]
    fn a_value_from_another_key_or_kind_is_refused() {
        let value = issue(KEY, "chat", "abc", 2_000).unwrap();
        assert_eq!(verify(b"other-token", "chat", &value, 0), None);
        assert_eq!(verify(KEY, "admin", &value, 0), None, "a chat session is not an admin one");
        assert_eq!(verify(b"", "chat", &value, 0), None, "no key, no sessions");
    }

    #[test]
    fn any_edit_breaks_the_signature() {
        let value = issue(KEY, "chat", "abc", 2_000).unwrap();
        let forged = [
            value.replace(".2000.", ".9999999999999."),
            value.replace("chat.abc", "chat.abd"),
            value.replace("chat.", "admin."),
            format!("{value}0"),
            value[..value.len() - 2].to_string(),
            value.rsplit_once('.').unwrap().0.to_string(),
            String::new(),
            "chat.abc.2000.zz".into(),
        ];
        for value in forged {
            assert_eq!(verify(KEY, "chat", &value, 0), None, "{value}");
        }
    }

    #[test]
    fn only_plain_parts_are_signed() {
        assert_eq!(issue(KEY, "chat", "a.b", 1), None, "a dot would shift the parts");
        assert_eq!(issue(KEY, "chat", "", 1), None);
        assert_eq!(issue(KEY, "ch at", "x", 1), None);
        assert_eq!(issue(b"", "chat", "x", 1), None);
    }

    #[test]
    fn cookies_are_read_by_exact_name() {
        let header = Some("a=1; edgebot_admin=v.a.l; edgebot_admin_x=2");
        assert_eq!(cookie(header, ADMIN_COOKIE), Some("v.a.l"));
        assert_eq!(cookie(header, "edgebot"), None);
        assert_eq!(cookie(None, ADMIN_COOKIE), None);
        assert!(set_cookie(ADMIN_COOKIE, "v", 60).contains("HttpOnly; Secure; SameSite=Strict"));
    }

    #[test]
    fn only_the_sites_own_origin_passes() {
        assert!(same_origin(Some("https://bot.example"), "https://bot.example"));
        assert!(!same_origin(Some("https://evil.example"), "https://bot.example"));
        assert!(!same_origin(Some("null"), "https://bot.example"));
        assert!(!same_origin(None, "https://bot.example"));
    }
}
