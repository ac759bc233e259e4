//! Signed, expiring links to a conversation's kept files, for the web chat:
//! `/api/files/{id}?c={conversation}&exp={ms}&sig={mac}`, where the MAC is
//! HMAC-SHA256 over the conversation, the file id and the expiry. Nothing is
//! stored per link, and a link names one file of one conversation until it
//! expires.

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::config::{Config, MIN_SECRET_CHARS};
use crate::files::rules::StoredFile;
use crate::security::{decode_own_tag, encode_hex};

/// How long a link works.
pub const LINK_LIFETIME_MS: i64 = 24 * 60 * 60 * 1000;

/// The key links are signed with, and what it may sign.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkKey {
    key: [u8; 32],
    /// Derived from the invitation, which every guest holds: it signs links
    /// to web chats only, so a guest cannot forge one to a platform's
    /// conversation (whose keys and file ids are easier to guess).
    web_only: bool,
}

impl LinkKey {
    /// Derived from `ADMIN_TOKEN` (any conversation), or else from
    /// `WEB_CHAT_TOKEN` (web chats only), each with its own label so a link
    /// key is never a session key. None when neither is set: no links.
    pub fn of(config: &Config) -> Option<LinkKey> {
        let usable = |secret: &str| secret.chars().count() >= MIN_SECRET_CHARS;
        let admin = config.admin_token.expose();
        let invitation = config.web_chat_token.expose();
        let (secret, label, web_only) = if usable(admin) {
            (admin, "edgebot file link key v1: admin token", false)
        } else if usable(invitation) {
            (invitation, "edgebot file link key v1: web chat invitation", true)
        } else {
            return None;
        };
        Some(LinkKey { key: mac(secret.as_bytes(), label.as_bytes()).finalize().into_bytes().into(), web_only })
    }

    fn covers(&self, conversation_key: &str) -> bool {
        !self.web_only || conversation_key.starts_with("web:")
    }

    fn signed(&self, conversation_key: &str, file_id: &str, expires_ms: i64) -> Hmac<Sha256> {
        mac(&self.key, format!("{conversation_key}\n{file_id}\n{expires_ms}").as_bytes())
    }

    /// The link's signature (None for a conversation this key may not sign for).
    pub fn sign(&self, conversation_key: &str, file_id: &str, expires_ms: i64) -> Option<String> {
        self.covers(conversation_key)
            .then(|| encode_hex(self.signed(conversation_key, file_id, expires_ms).finalize().into_bytes()))
    }

    /// Whether a link's signature is right (compared in constant time) and it
    /// has not expired.
    pub fn verify(&self, conversation_key: &str, file_id: &str, expires_ms: i64, signature: &str, now_ms: i64) -> bool {
        let Some(tag) = decode_own_tag(signature) else {
            return false;
        };
        self.covers(conversation_key)
            && expires_ms > now_ms
            && self.signed(conversation_key, file_id, expires_ms).verify_slice(&tag).is_ok()
    }
}

fn mac(key: &[u8], signed: &[u8]) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(signed);
    mac
}

/// A same-origin link (path and query) that downloads `file` of the
/// conversation for [`LINK_LIFETIME_MS`] from `now_ms`; None when links
/// cannot be signed (no token set, or a platform's conversation with only
/// the invitation set).
pub fn download_link(config: &Config, conversation_key: &str, file: &StoredFile, now_ms: i64) -> Option<String> {
    let expires_ms = now_ms + LINK_LIFETIME_MS;
    let signature = LinkKey::of(config)?.sign(conversation_key, &file.id, expires_ms)?;
    let query = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("c", conversation_key)
        .append_pair("exp", &expires_ms.to_string())
        .append_pair("sig", &signature)
        .finish();
    let id: String = url::form_urlencoded::byte_serialize(file.id.as_bytes()).collect();
    Some(format!("/api/files/{id}?{query}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::rules::Kind;

    fn config(admin_token: &str, web_chat_token: &str) -> Config {
        Config::of(&[("ADMIN_TOKEN", admin_token), ("WEB_CHAT_TOKEN", web_chat_token)])
    }

    const ADMIN: &str = "operator-secret-0123456789";
    const INVITE: &str = "invitation-0123456789";

    fn file(id: &str) -> StoredFile {
        StoredFile {
            id: id.into(),
            name: "sales.csv".into(),
            kind: Kind::Text,
            content_type: "text/csv".into(),
            size: 3,
            text: None,
            created_at: 0,
        }
    }

    /// The query's values of a link, decoded.
    fn query(link: &str) -> (String, String, i64, String) {
        let (path, query) = link.split_once('?').unwrap();
        let value = |name: &str| {
            url::form_urlencoded::parse(query.as_bytes()).find(|(key, _)| key == name).unwrap().1.into_owned()
        };
        let id = path.strip_prefix("/api/files/").unwrap().to_string();
        (id, value("c"), value("exp").parse().unwrap(), value("sig"))
    }

    #[test]
    fn a_link_downloads_its_file_until_it_expires() {
        let config = config(ADMIN, INVITE);
        let link = download_link(&config, "web:abc-1", &file("f00aa"), 1_000).unwrap();
        let (id, conversation, expires, signature) = query(&link);
        assert_eq!((id.as_str(), conversation.as_str(), expires), ("f00aa", "web:abc-1", 1_000 + LINK_LIFETIME_MS));
        let key = LinkKey::of(&config).unwrap();
        assert!(key.verify(&conversation, &id, expires, &signature, expires - 1));
        assert!(!key.verify(&conversation, &id, expires, &signature, expires), "expired at its time");
    }

    #[test]
    fn any_edit_breaks_a_link() {
        let key = LinkKey::of(&config(ADMIN, "")).unwrap();
        let signature = key.sign("telegram:5", "f1", 9_000).unwrap();
        assert!(key.verify("telegram:5", "f1", 9_000, &signature, 0));
        assert!(!key.verify("telegram:6", "f1", 9_000, &signature, 0), "another conversation");
        assert!(!key.verify("telegram:5", "f2", 9_000, &signature, 0), "another file");
        assert!(!key.verify("telegram:5", "f1", 99_000, &signature, 0), "a later expiry");
        assert!(!key.verify("telegram:5", "f1", 9_000, &signature[2..], 0));
        assert!(!key.verify("telegram:5", "f1", 9_000, "zz", 0));
        assert!(!key.verify("telegram:5", "f1", 9_000, "", 0));
        let other = LinkKey::of(&config("another-admin-token-42", "")).unwrap();
        assert!(!other.verify("telegram:5", "f1", 9_000, &signature, 0), "a rotated token ends every link");
    }

    #[test]
    fn the_invitation_signs_links_to_web_chats_only_and_no_token_signs_none() {
        assert_eq!(download_link(&config("", ""), "web:abc", &file("f1"), 0), None);
        let guest_only = config("", INVITE);
        assert!(download_link(&guest_only, "web:abc", &file("f1"), 0).is_some());
        assert_eq!(download_link(&guest_only, "telegram:5", &file("f1"), 0), None);
        let guest_key = LinkKey::of(&guest_only).unwrap();
        let forged = guest_key.signed("telegram:5", "f1", 9_000).finalize().into_bytes();
        assert!(!guest_key.verify("telegram:5", "f1", 9_000, &encode_hex(forged), 0));
        // With the admin token set the invitation signs nothing.
        let admin_key = LinkKey::of(&config(ADMIN, INVITE)).unwrap();
        let by_guest = guest_key.sign("web:abc", "f1", 9_000).unwrap();
        assert!(!admin_key.verify("web:abc", "f1", 9_000, &by_guest, 0));
        assert!(download_link(&config(ADMIN, ""), "slack:T1:C1", &file("f1"), 0).is_some());
    }
}
