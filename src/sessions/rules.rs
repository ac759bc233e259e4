//! Browser sessions: signed, expiring cookie values and the checks around
//! them. A value reads `{kind}.{subject}.{expires_ms}.{mac}`, where the MAC is
//! HMAC-SHA256 over the first three parts, keyed by the signing key of the
//! session's [`SessionKind`], so nothing is stored per session and rotating a
//! token signs that token's sessions out.

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::config::{Config, MIN_SECRET_CHARS};
use crate::security::{constant_time_eq, decode_own_tag, encode_hex};

/// The operator's dashboard session. `__Host-`: the browser keeps it only
/// when it is `Secure`, for `Path=/` and without a `Domain`, so no sibling
/// subdomain can set or shadow it.
pub const ADMIN_COOKIE: &str = "__Host-edgebot_admin";
/// A web-chat session: its subject is the conversation's id.
pub const CHAT_COOKIE: &str = "__Host-edgebot_chat";

/// Who a session belongs to. Each kind has its own signing key, derived from
/// its own secret alone, so holding one kind's secret (a guest's invitation)
/// derives nothing that signs another kind (an operator's session).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionKind {
    /// The dashboard and admin API: derived from `ADMIN_TOKEN`.
    Operator,
    /// An operator's web chat: derived from `ADMIN_TOKEN`.
    OperatorChat,
    /// An invitation holder's web chat: derived from `WEB_CHAT_TOKEN`.
    GuestChat,
}

impl SessionKind {
    /// The kind as the cookie value names it (it is signed too).
    pub fn name(self) -> &'static str {
        match self {
            SessionKind::Operator => "admin",
            SessionKind::OperatorChat => "chat-operator",
            SessionKind::GuestChat => "chat-guest",
        }
    }

    /// Domain separation: the same secret gives each kind a different key.
    fn label(self) -> &'static [u8] {
        match self {
            SessionKind::Operator => b"edgebot session signing key v2: operator dashboard",
            SessionKind::OperatorChat => b"edgebot session signing key v2: operator web chat",
            SessionKind::GuestChat => b"edgebot session signing key v2: guest web chat",
        }
    }

    /// The secret this kind's key is derived from.
    fn secret(self, config: &Config) -> &str {
        match self {
            SessionKind::Operator | SessionKind::OperatorChat => config.admin_token.expose(),
            SessionKind::GuestChat => config.web_chat_token.expose(),
        }
    }

    /// The kind's signing key: HMAC-SHA256 keyed by the kind's own secret over
    /// its label. None (no sessions of this kind exist) when that secret is
    /// unset or too short to be a key; nothing else is ever mixed in.
    pub fn signing_key(self, config: &Config) -> Option<[u8; 32]> {
        let secret = self.secret(config);
        if secret.chars().count() < MIN_SECRET_CHARS {
            return None;
        }
        Some(mac(secret.as_bytes(), self.label()).finalize().into_bytes().into())
    }
}
/// What starts the kind of a guest's web chat with a non-default agent
/// (`chat-agent-{agent}`): such a session is signed with a key derived from
/// that agent's own invitation (`crate::agents`), so holding `WEB_CHAT_TOKEN`
/// or one agent's invitation signs nothing for another agent, and a new
/// invitation signs the old one's guests out.
pub const AGENT_GUEST_PREFIX: &str = "chat-agent-";

/// The session kind of `agent`'s invited guests.
pub fn agent_guest_kind(agent: &str) -> String {
    format!("{AGENT_GUEST_PREFIX}{agent}")
}

/// The agent a chat cookie's value says it belongs to, unverified (the
/// caller verifies it with that agent's key): None for any other kind.
pub fn agent_guest_of(value: &str) -> Option<&str> {
    let agent = value.split('.').next()?.strip_prefix(AGENT_GUEST_PREFIX)?;
    crate::agents::rules::is_agent_id(agent).then_some(agent)
}

/// The signing key of `agent`'s guests' sessions: HMAC-SHA256 keyed by its
/// invitation over a label naming the agent. None when the invitation is too
/// short to be a key.
pub fn agent_guest_key(agent: &str, invitation: &str) -> Option<[u8; 32]> {
    if invitation.chars().count() < MIN_SECRET_CHARS {
        return None;
    }
    let label = format!("edgebot session signing key v2: agent guest web chat: {agent}");
    Some(mac(invitation.as_bytes(), label.as_bytes()).finalize().into_bytes().into())
}

/// How an operator got past the admin API's gate. A dashboard session names no
/// person (it is the admin token exchanged for a cookie), so a change records
/// the way in as its author.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OperatorAccess {
    /// `Authorization: Bearer $ADMIN_TOKEN`: a script, curl, a deploy.
    AdminToken,
    /// The dashboard's signed-in session cookie.
    Dashboard,
}

impl OperatorAccess {
    /// The author a change made this way records.
    pub fn author(self) -> &'static str {
        match self {
            OperatorAccess::AdminToken => "admin token",
            OperatorAccess::Dashboard => "operator (dashboard)",
        }
    }
}

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

fn mac(key: &[u8], signed: &[u8]) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(signed);
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
    let tag = encode_hex(mac(key, signed.as_bytes()).finalize().into_bytes());
    Some(format!("{signed}.{tag}"))
}

/// The session a value proves, if its MAC is right (compared in constant
/// time), it is of `kind`, and it has not expired.
pub fn verify(key: &[u8], kind: &str, value: &str, now_ms: i64) -> Option<Session> {
    if key.is_empty() {
        return None;
    }
    let (signed, tag) = value.rsplit_once('.')?;
    // `verify_slice` compares in constant time.
    mac(key, signed.as_bytes()).verify_slice(&decode_own_tag(tag)?).ok()?;
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
            value.to_uppercase().replace("CHAT.ABC", "chat.abc"),
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
        let header = Some("a=1; edgebot_admin=old; __Host-edgebot_admin=v.a.l; __Host-edgebot_admin_x=2");
        assert_eq!(cookie(header, ADMIN_COOKIE), Some("v.a.l"));
        assert_eq!(cookie(header, "edgebot"), None);
        assert_eq!(cookie(None, ADMIN_COOKIE), None);
    }

    #[test]
    fn cookies_keep_the_host_prefix_rules() {
        for name in [ADMIN_COOKIE, CHAT_COOKIE] {
            assert!(name.starts_with("__Host-"), "{name}");
            let set = set_cookie(name, "v", 60);
            assert!(set.contains("; Path=/;") && set.contains("; Secure;"), "{set}");
            assert!(set.contains("HttpOnly") && set.contains("SameSite=Strict"), "{set}");
            assert!(!set.to_ascii_lowercase().contains("domain"), "{set}");
        }
    }

    #[test]
    fn an_agent_guests_session_opens_only_with_its_own_agents_invitation() {
        let invitation = "inv-0123456789abcdef0123456789abcdef";
        let key = agent_guest_key("ops", invitation).unwrap();
        let value = issue(&key, &agent_guest_kind("ops"), "s1", 5_000).unwrap();
        assert_eq!(agent_guest_of(&value), Some("ops"));
        assert_eq!(verify(&key, "chat-agent-ops", &value, 1_000).map(|session| session.subject), Some("s1".into()));
        let sales = agent_guest_key("sales", invitation).unwrap();
        assert_eq!(verify(&sales, "chat-agent-ops", &value, 1_000), None, "another agent's key (same invitation)");
        let renewed = agent_guest_key("ops", "inv-another-invitation-value").unwrap();
        assert_eq!(verify(&renewed, "chat-agent-ops", &value, 1_000), None, "a new invitation signs the old out");
        let guest = SessionKind::GuestChat.signing_key(&config("", "the-web-chat-token")).unwrap();
        let forged = issue(&guest, "chat-agent-ops", "s1", 5_000).unwrap();
        assert_eq!(verify(&key, "chat-agent-ops", &forged, 1_000), None, "WEB_CHAT_TOKEN signs no agent's chat");
        assert_eq!(agent_guest_key("ops", "short"), None);
        for other in ["chat-guest.s1.5000.ab", "chat-agent-Bad.s1.5000.ab", "chat-agent-.s1.1.ab", ""] {
            assert_eq!(agent_guest_of(other), None, "{other}");
        }
    }

    fn config(admin_token: &str, web_chat_token: &str) -> Config {
        Config::of(&[("ADMIN_TOKEN", admin_token), ("WEB_CHAT_TOKEN", web_chat_token)])
    }

    const ADMIN: &str = "operator-secret-0123456789";
    const INVITE: &str = "invitation-0123456789";

    #[test]
    fn operator_sessions_do_not_exist_without_the_admin_token() {
        let config = config("", INVITE);
        assert_eq!(SessionKind::Operator.signing_key(&config), None);
        assert_eq!(SessionKind::OperatorChat.signing_key(&config), None);
        assert!(SessionKind::GuestChat.signing_key(&config).is_some());
        assert_eq!(SessionKind::GuestChat.signing_key(&self::config(ADMIN, "")), None);
        assert_eq!(SessionKind::Operator.signing_key(&self::config("short-token", INVITE)), None, "under 16");
    }

    #[test]
    fn each_kind_has_its_own_key_that_no_other_secret_gives() {
        let both = config(ADMIN, INVITE);
        let keys: Vec<_> = [SessionKind::Operator, SessionKind::OperatorChat, SessionKind::GuestChat]
            .map(|kind| kind.signing_key(&both))
            .into();
        assert!(keys.iter().all(Option::is_some));
        assert!(keys[0] != keys[1] && keys[1] != keys[2] && keys[0] != keys[2], "domain-separated");
        // The invitation alone gives the guest key, and the same guest key with any admin token.
        assert_eq!(SessionKind::GuestChat.signing_key(&config("", INVITE)), keys[2]);
        assert_eq!(SessionKind::GuestChat.signing_key(&config("another-admin-token-42", INVITE)), keys[2]);
        // The operator key moves with the admin token only.
        assert_eq!(SessionKind::Operator.signing_key(&config(ADMIN, "")), keys[0]);
        assert_ne!(SessionKind::Operator.signing_key(&config("another-admin-token-42", INVITE)), keys[0]);
        // A value signed with the guest key (or the old scheme's key) is no operator session.
        let guest_key = keys[2].unwrap();
        let operator_key = keys[0].unwrap();
        let forged = issue(&guest_key, "admin", "operator", i64::MAX).unwrap();
        assert_eq!(verify(&operator_key, "admin", &forged, 0), None);
        let old_scheme = format!("edgebot-session\n\n{INVITE}");
        let forged = issue(old_scheme.as_bytes(), "admin", "operator", i64::MAX).unwrap();
        assert_eq!(verify(&operator_key, "admin", &forged, 0), None);
    }

    #[test]
    fn only_the_sites_own_origin_passes() {
        assert!(same_origin(Some("https://bot.example"), "https://bot.example"));
        assert!(!same_origin(Some("https://evil.example"), "https://bot.example"));
        assert!(!same_origin(Some("null"), "https://bot.example"));
        assert!(!same_origin(None, "https://bot.example"));
    }
}
