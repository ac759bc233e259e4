//! Who may speak for Teams, and where the bot's token may go: the Bot
//! Framework's JWT (`Authorization: Bearer`) checked against the published
//! signing keys, and the `serviceUrl` allow-list. Pure: the keys are fetched
//! and cached by [`crate::platforms::teams::client`].

use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use thiserror::Error;

/// The issuer of every token the Bot Framework sends a bot.
pub const ISSUER: &str = "https://api.botframework.com";
/// Clock skew allowed on `exp` and `nbf` (the Bot Framework SDKs allow five minutes).
pub const LEEWAY_SECS: i64 = 300;

/// Why a token was refused. The message is safe to show to the caller.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum TokenError {
    #[error("missing Bot Framework token")]
    Missing,
    #[error("malformed Bot Framework token")]
    Malformed,
    /// No published key has this id (the keys may have rotated: fetch them again).
    #[error("unknown signing key")]
    UnknownKey(String),
    #[error("signing key not endorsed for this channel")]
    NotEndorsed,
    #[error("invalid Bot Framework token")]
    Invalid,
    #[error("expired Bot Framework token")]
    Expired,
    #[error("token does not name this serviceUrl")]
    WrongServiceUrl,
}

/// The OpenID metadata document's one field edgebot reads.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct OpenIdMetadata {
    pub jwks_uri: String,
}

/// One published signing key (a JWK), with the channels it is endorsed for.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct SigningKey {
    #[serde(default)]
    pub kid: String,
    #[serde(default)]
    pub kty: String,
    #[serde(default)]
    pub n: String,
    #[serde(default)]
    pub e: String,
    /// The channels (`msteams`, …) the key may sign for; absent: any.
    #[serde(default)]
    pub endorsements: Option<Vec<String>>,
}

/// The JWKS document.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq, Default)]
pub struct KeySet {
    #[serde(default)]
    pub keys: Vec<SigningKey>,
}

/// What edgebot reads of a verified token.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct Claims {
    pub exp: i64,
    #[serde(default)]
    pub nbf: Option<i64>,
    /// The connector the activity came through: replies go only there.
    #[serde(default)]
    pub serviceurl: Option<String>,
}

/// The token of an `Authorization: Bearer …` header.
pub fn bearer(header: Option<&str>) -> Result<&str, TokenError> {
    let value = header.ok_or(TokenError::Missing)?.trim();
    let (scheme, token) = value.split_once(' ').ok_or(TokenError::Missing)?;
    if !scheme.eq_ignore_ascii_case("bearer") || token.trim().is_empty() {
        return Err(TokenError::Missing);
    }
    Ok(token.trim())
}

/// The id of the key a token says it was signed with.
pub fn key_id(token: &str) -> Result<String, TokenError> {
    let header = jsonwebtoken::decode_header(token).map_err(|_| TokenError::Malformed)?;
    header.kid.filter(|kid| !kid.is_empty()).ok_or(TokenError::Malformed)
}

/// Checks a token as the Bot Framework SDKs do: signed (RS256/384/512) by
/// the published key it names, that key endorsed for `channel_id` where it
/// lists endorsements, issued by [`ISSUER`] for `app_id`, within its lifetime
/// give or take [`LEEWAY_SECS`], and naming `service_url` as its `serviceurl`.
pub fn verify(
    token: &str,
    keys: &KeySet,
    app_id: &str,
    channel_id: &str,
    service_url: &str,
    now_secs: i64,
) -> Result<Claims, TokenError> {
    if app_id.is_empty() {
        return Err(TokenError::Invalid);
    }
    let kid = key_id(token)?;
    let key = keys.keys.iter().find(|key| key.kid == kid).ok_or(TokenError::UnknownKey(kid))?;
    if key.endorsements.as_ref().is_some_and(|endorsed| !endorsed.iter().any(|channel| channel == channel_id)) {
        return Err(TokenError::NotEndorsed);
    }
    if key.kty != "RSA" {
        return Err(TokenError::Invalid);
    }
    crate::platforms::teams::verifier::install();
    let decoding = DecodingKey::from_rsa_components(&key.n, &key.e).map_err(|_| TokenError::Invalid)?;
    let mut validation = Validation::new(Algorithm::RS256);
    validation.algorithms = vec![Algorithm::RS256, Algorithm::RS384, Algorithm::RS512];
    validation.set_issuer(&[ISSUER]);
    validation.set_audience(&[app_id]);
    // The lifetime is checked below against the caller's clock, so the same
    // rule runs natively in tests and in the Worker.
    validation.validate_exp = false;
    validation.validate_nbf = false;
    validation.set_required_spec_claims(&["exp", "iss", "aud"]);
    let claims = jsonwebtoken::decode::<Claims>(token, &decoding, &validation).map_err(|_| TokenError::Invalid)?.claims;
    let not_yet = claims.nbf.is_some_and(|nbf| nbf - LEEWAY_SECS > now_secs);
    if claims.exp + LEEWAY_SECS < now_secs || not_yet {
        return Err(TokenError::Expired);
    }
    let same = |claimed: &str| claimed.trim_end_matches('/') == service_url.trim_end_matches('/');
    if !claims.serviceurl.as_deref().is_some_and(same) {
        return Err(TokenError::WrongServiceUrl);
    }
    Ok(claims)
}

/// Whether the bot's token may be sent to `service_url`: https to a host on
/// the allow-list (`allowed`: host names, `*.` for any subdomain, or
/// `host:port`), nothing else in the URL that could take it elsewhere
/// (credentials). Plain http only to a loopback address listed with its port
/// (the tests' fake connector).
pub fn is_allowed_service_url(service_url: &str, allowed: &[String]) -> bool {
    let Ok(url) = url::Url::parse(service_url) else {
        return false;
    };
    let Some(host) = url.host_str().map(str::to_ascii_lowercase) else {
        return false;
    };
    if !url.username().is_empty() || url.password().is_some() {
        return false;
    }
    let with_port = url.port().map(|port| format!("{host}:{port}"));
    let listed = |entry: &String| {
        let entry = entry.to_ascii_lowercase();
        match entry.strip_prefix("*.") {
            Some(parent) => url.port().is_none() && host.ends_with(&format!(".{parent}")),
            None => Some(&entry) == with_port.as_ref() || (url.port().is_none() && entry == host),
        }
    };
    match url.scheme() {
        "https" => allowed.iter().any(listed),
        "http" => {
            is_loopback(&host) && with_port.is_some() && allowed.iter().any(|entry| Some(entry) == with_port.as_ref())
        }
        _ => false,
    }
}

fn is_loopback(host: &str) -> bool {
    host == "127.0.0.1" || host == "[::1]" || host == "localhost"
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{encode, EncodingKey, Header};
    use serde_json::json;

    const KEY: &str = include_str!("../../../tests/harness/teams_test_key.pem");
    const OTHER_KEY: &str = include_str!("../../../tests/harness/teams_other_key.pem");
    const N: &str = "kPUxLwFRrRxvJysC4mzrMvzvF75RPlGnUlwaB2DEk3W9k6SZV38p_PvTn4imE7ocF9elr4KOiiq5oSjqftm3hCIbk-nExFgeSViqTMRCXweObpo3pBh3keKKWFlvzmb154BooUXdb11qWWCMlgB9_4Y_R2bVpbXa8u9KgSWttd77uGw67mgBi4kkVkOH9i9L91fM7ktPd6ENupracrdF_Su1z-VqPoj9OXFllhL1yjyrR7mpdD0i04E_hROcHsFom_NAUezqncvVNzG2oi1aE3d0TQIrUrCfAGimcM1_jsny0-9v5BsFICZ8f5vlu7g3ds2767MfzUfb7IZ37bkVEQ";
    const APP: &str = "app-1";
    const SERVICE: &str = "https://smba.trafficmanager.net/amer/";
    const NOW: i64 = 1_795_000_000;

    fn keys(endorsements: Option<Vec<&str>>) -> KeySet {
        let endorsements = endorsements.map(|list| list.into_iter().map(str::to_string).collect());
        KeySet {
            keys: vec![SigningKey { kid: "k1".into(), kty: "RSA".into(), n: N.into(), e: "AQAB".into(), endorsements }],
        }
    }

    fn token(pem: &str, kid: &str, claims: serde_json::Value) -> String {
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some(kid.into());
        encode(&header, &claims, &EncodingKey::from_rsa_pem(pem.as_bytes()).unwrap()).unwrap()
    }

    fn claims() -> serde_json::Value {
        json!({ "iss": ISSUER, "aud": APP, "exp": NOW + 3600, "nbf": NOW - 60, "serviceurl": SERVICE })
    }

    fn with(field: &str, value: serde_json::Value) -> serde_json::Value {
        let mut claims = claims();
        claims[field] = value;
        claims
    }

    #[test]
    fn a_token_signed_by_a_published_endorsed_key_for_this_bot_and_connector_passes() {
        let good = token(KEY, "k1", claims());
        let verified = verify(&good, &keys(Some(vec!["msteams"])), APP, "msteams", SERVICE, NOW).unwrap();
        assert_eq!(verified.serviceurl.as_deref(), Some(SERVICE));
        assert!(
            verify(&good, &keys(None), APP, "msteams", SERVICE, NOW).is_ok(),
            "no endorsements listed: any channel"
        );
        let unslashed = SERVICE.trim_end_matches('/');
        assert!(verify(&good, &keys(None), APP, "msteams", unslashed, NOW).is_ok(), "a trailing slash is the same URL");
    }

    #[test]
    fn every_other_token_is_refused_with_its_reason() {
        let endorsed = keys(Some(vec!["msteams"]));
        let cases = [
            ("wrong audience", token(KEY, "k1", with("aud", json!("someone-else"))), TokenError::Invalid),
            ("wrong issuer", token(KEY, "k1", with("iss", json!("https://evil.example"))), TokenError::Invalid),
            ("another key", token(OTHER_KEY, "k1", claims()), TokenError::Invalid),
            ("an unknown key id", token(KEY, "k9", claims()), TokenError::UnknownKey("k9".into())),
            ("expired", token(KEY, "k1", with("exp", json!(NOW - LEEWAY_SECS - 1))), TokenError::Expired),
            ("not yet valid", token(KEY, "k1", with("nbf", json!(NOW + LEEWAY_SECS + 1))), TokenError::Expired),
            (
                "no expiry",
                token(KEY, "k1", json!({"iss": ISSUER, "aud": APP, "serviceurl": SERVICE})),
                TokenError::Invalid,
            ),
            (
                "another connector",
                token(KEY, "k1", with("serviceurl", json!("https://evil.example/"))),
                TokenError::WrongServiceUrl,
            ),
            ("no connector", token(KEY, "k1", with("serviceurl", json!(null))), TokenError::WrongServiceUrl),
            ("not a token", "a.b.c".to_string(), TokenError::Malformed),
        ];
        for (what, token, expected) in cases {
            assert_eq!(verify(&token, &endorsed, APP, "msteams", SERVICE, NOW), Err(expected), "{what}");
        }
        let good = token(KEY, "k1", claims());
        assert_eq!(
            verify(&good, &keys(Some(vec!["skype"])), APP, "msteams", SERVICE, NOW),
            Err(TokenError::NotEndorsed)
        );
        assert_eq!(verify(&good, &endorsed, "", "msteams", SERVICE, NOW), Err(TokenError::Invalid), "no app id set");
        let within_leeway = token(KEY, "k1", with("exp", json!(NOW - LEEWAY_SECS + 5)));
        assert!(verify(&within_leeway, &endorsed, APP, "msteams", SERVICE, NOW).is_ok());
    }

    #[test]
    fn an_hmac_token_with_the_public_key_as_secret_is_refused() {
        // The classic confusion: HS256 "signed" with the published modulus.
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some("k1".into());
        let forged = encode(&header, &claims(), &EncodingKey::from_secret(N.as_bytes())).unwrap();
        assert_eq!(verify(&forged, &keys(None), APP, "msteams", SERVICE, NOW), Err(TokenError::Invalid));
    }

    #[test]
    fn the_bearer_scheme_is_read_and_nothing_else() {
        assert_eq!(bearer(Some("Bearer abc.def.ghi")), Ok("abc.def.ghi"));
        assert_eq!(bearer(Some("bearer  x ")), Ok("x"));
        for header in [None, Some(""), Some("Basic abc"), Some("Bearer"), Some("Bearer  ")] {
            assert_eq!(bearer(header), Err(TokenError::Missing), "{header:?}");
        }
    }

    #[test]
    fn the_token_goes_only_to_listed_connectors() {
        let allowed: Vec<String> =
            ["smba.trafficmanager.net", "*.botframework.com", "127.0.0.1:8080"].iter().map(|s| s.to_string()).collect();
        let cases = [
            ("https://smba.trafficmanager.net/amer/", true),
            ("https://SMBA.trafficmanager.net/emea/", true),
            ("https://europe.botframework.com/", true),
            ("https://botframework.com.evil.example/", false),
            ("https://evilbotframework.com/", false),
            ("http://smba.trafficmanager.net/amer/", false),
            ("https://smba.trafficmanager.net:444/amer/", false),
            ("https://user:pass@smba.trafficmanager.net/", false),
            ("http://127.0.0.1:8080/", true),
            ("http://127.0.0.1:8081/", false),
            ("http://127.0.0.1/", false),
            ("https://127.0.0.1:8080/", true),
            ("ftp://smba.trafficmanager.net/", false),
            ("not a url", false),
        ];
        for (url, expected) in cases {
            assert_eq!(is_allowed_service_url(url, &allowed), expected, "{url}");
        }
    }
}
