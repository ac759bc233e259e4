//! The network a run may have (`SANDBOX_NETWORK = "guarded"`): the loaded
//! isolate's `globalOutbound` is this Worker itself (the `SELF` service
//! binding), so each `fetch` the code makes comes back to the Worker, which
//! fetches it through the same guard as `http_fetch` (public addresses only,
//! no configured secret to a foreign host, every redirect checked) and hands
//! the answer back. The wrapper's `fetch` marks each request with a token the
//! Worker signed for that run, so nobody else can use the Worker as a proxy:
//! HMAC-SHA256 over the run's id and expiry, keyed by a key derived from
//! `ADMIN_TOKEN` (no admin token, no network).

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::security::{decode_own_tag, encode_hex};

/// The header that carries the token on a run's requests.
pub const EGRESS_HEADER: &str = "x-edgebot-sandbox";
/// The header the Worker answers a refused fetch with (its value says why).
pub const REFUSED_HEADER: &str = "x-edgebot-refused";
/// The shortest admin token a key is derived from.
const MIN_SECRET_CHARS: usize = 16;
/// Domain separation from every other key derived from the admin token.
const LABEL: &[u8] = b"edgebot sandbox egress key v1";

/// The egress key, derived from the admin token; none when it is too short.
pub fn egress_key(admin_token: &str) -> Option<[u8; 32]> {
    if admin_token.chars().count() < MIN_SECRET_CHARS {
        return None;
    }
    Some(mac(admin_token.as_bytes(), LABEL).finalize().into_bytes().into())
}

fn mac(key: &[u8], message: &[u8]) -> Hmac<Sha256> {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(message);
    mac
}

/// The token for run `run` (hex, no dots), valid until `expires_ms`.
pub fn sign(key: &[u8; 32], run: &str, expires_ms: i64) -> String {
    let signature = mac(key, format!("{run}.{expires_ms}").as_bytes()).finalize().into_bytes();
    format!("{run}.{expires_ms}.{}", encode_hex(signature))
}

/// Whether `token` was signed with `key` and has not expired at `now_ms`.
pub fn verify(key: &[u8; 32], token: &str, now_ms: i64) -> bool {
    let mut parts = token.trim().splitn(3, '.');
    let (Some(run), Some(expires), Some(signature)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    let (Ok(expires_ms), Ok(signature)) = (expires.parse::<i64>(), decode_own_tag(signature).ok_or(())) else {
        return false;
    };
    expires_ms >= now_ms && mac(key, format!("{run}.{expires_ms}").as_bytes()).verify_slice(&signature).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_holds_for_its_run_until_it_expires() {
        let key = egress_key("an admin token long enough").unwrap();
        let token = sign(&key, "abc123", 2_000);
        assert!(verify(&key, &token, 1_999));
        assert!(verify(&key, &token, 2_000));
        assert!(!verify(&key, &token, 2_001), "expired");
        let other = egress_key("another admin token, also long").unwrap();
        assert!(!verify(&other, &token, 1_000), "another deployment's key");
        assert!(!verify(&key, &token.replace("abc123", "abc124"), 1_000), "another run");
        assert!(!verify(&key, &token.replace(".2000.", ".9000."), 1_000), "a later expiry");
        for forged in ["", "x", "abc.1.", "abc.notanumber.00", &format!("{token}00")] {
            assert!(!verify(&key, forged, 1_000), "{forged}");
        }
    }

    #[test]
    fn no_admin_token_no_key() {
        assert_eq!(egress_key(""), None);
        assert_eq!(egress_key("short"), None);
        assert_ne!(egress_key("an admin token long enough"), egress_key("an admin token long enough!"));
    }
}
