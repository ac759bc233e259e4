//! The one kind of signature the Worker checks for Teams: RSASSA-PKCS1-v1_5
//! (RS256, RS384, RS512, as the Bot Framework signs), given to `jsonwebtoken`
//! as its crypto provider. Its own `rust_crypto` provider links every
//! algorithm's signer and verifier (ECDSA curves, EdDSA, HMAC, RSA signing),
//! which the Worker never uses: measured, 3,208,424 bytes of wasm with it and
//! 2,935,227 with this one, which links only RSA verification (the `rsa` crate).

use jsonwebtoken::crypto::{CryptoProvider, JwtSigner, JwtVerifier, KeyUtils};
use jsonwebtoken::errors::{Error, ErrorKind};
use jsonwebtoken::{Algorithm, DecodingKey, DecodingKeyKind, EncodingKey};
use rsa::{BigUint, Pkcs1v15Sign, RsaPublicKey};
use sha2::{Digest, Sha256, Sha384, Sha512};

/// Verifies RS256/384/512 and nothing else; signs nothing.
pub static PROVIDER: CryptoProvider =
    CryptoProvider { signer_factory: signer, verifier_factory: verifier, key_utils: KeyUtils::new_unimplemented() };

/// Makes [`PROVIDER`] the process's provider, unless one is already (in the
/// Worker nothing else installs one; native tests may have the full one).
pub fn install() {
    let _ = PROVIDER.install_default();
}

struct RsaVerifier {
    algorithm: Algorithm,
    key: RsaPublicKey,
}

impl signature::Verifier<Vec<u8>> for RsaVerifier {
    fn verify(&self, message: &[u8], signature: &Vec<u8>) -> Result<(), signature::Error> {
        let (scheme, digest) = match self.algorithm {
            Algorithm::RS256 => (Pkcs1v15Sign::new::<Sha256>(), Sha256::digest(message).to_vec()),
            Algorithm::RS384 => (Pkcs1v15Sign::new::<Sha384>(), Sha384::digest(message).to_vec()),
            _ => (Pkcs1v15Sign::new::<Sha512>(), Sha512::digest(message).to_vec()),
        };
        self.key.verify(scheme, &digest, signature).map_err(|_| signature::Error::new())
    }
}

impl JwtVerifier for RsaVerifier {
    fn algorithm(&self) -> Algorithm {
        self.algorithm
    }
}

fn verifier(algorithm: &Algorithm, key: &DecodingKey) -> Result<Box<dyn JwtVerifier>, Error> {
    if !matches!(algorithm, Algorithm::RS256 | Algorithm::RS384 | Algorithm::RS512) {
        return Err(ErrorKind::InvalidAlgorithm.into());
    }
    let DecodingKeyKind::RsaModulusExponent { n, e } = key.kind() else {
        return Err(ErrorKind::InvalidKeyFormat.into());
    };
    let key = RsaPublicKey::new(BigUint::from_bytes_be(n), BigUint::from_bytes_be(e))
        .map_err(|_| Error::from(ErrorKind::InvalidRsaKey("not an RSA public key".into())))?;
    Ok(Box::new(RsaVerifier { algorithm: *algorithm, key }))
}

#[cfg(not(test))]
fn signer(_: &Algorithm, _: &EncodingKey) -> Result<Box<dyn JwtSigner>, Error> {
    Err(ErrorKind::InvalidAlgorithm.into())
}

/// Unit tests sign their tokens in the same process: with the full provider.
#[cfg(test)]
fn signer(algorithm: &Algorithm, key: &EncodingKey) -> Result<Box<dyn JwtSigner>, Error> {
    (jsonwebtoken::crypto::rust_crypto::DEFAULT_PROVIDER.signer_factory)(algorithm, key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;
    use jsonwebtoken::{encode, Header};

    const KEY: &str = include_str!("../../../tests/harness/teams_test_key.pem");
    const OTHER_KEY: &str = include_str!("../../../tests/harness/teams_other_key.pem");
    const N: &str = "kPUxLwFRrRxvJysC4mzrMvzvF75RPlGnUlwaB2DEk3W9k6SZV38p_PvTn4imE7ocF9elr4KOiiq5oSjqftm3hCIbk-nExFgeSViqTMRCXweObpo3pBh3keKKWFlvzmb154BooUXdb11qWWCMlgB9_4Y_R2bVpbXa8u9KgSWttd77uGw67mgBi4kkVkOH9i9L91fM7ktPd6ENupracrdF_Su1z-VqPoj9OXFllhL1yjyrR7mpdD0i04E_hROcHsFom_NAUezqncvVNzG2oi1aE3d0TQIrUrCfAGimcM1_jsny0-9v5BsFICZ8f5vlu7g3ds2767MfzUfb7IZ37bkVEQ";

    /// Checks a token's signature with this provider alone (not the process's).
    fn checks(token: &str) -> bool {
        let (input, signature) = token.rsplit_once('.').unwrap();
        let signature = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(signature).unwrap();
        let header = jsonwebtoken::decode_header(token).unwrap();
        let key = DecodingKey::from_rsa_components(N, "AQAB").unwrap();
        let verifier = (PROVIDER.verifier_factory)(&header.alg, &key).unwrap();
        signature::Verifier::verify(verifier.as_ref(), input.as_bytes(), &signature).is_ok()
    }

    fn token(algorithm: Algorithm, pem: &str) -> String {
        let key = EncodingKey::from_rsa_pem(pem.as_bytes()).unwrap();
        encode(&Header::new(algorithm), &serde_json::json!({ "a": 1 }), &key).unwrap()
    }

    #[test]
    fn rsa_signatures_by_the_key_pass_and_others_fail() {
        for algorithm in [Algorithm::RS256, Algorithm::RS384, Algorithm::RS512] {
            assert!(checks(&token(algorithm, KEY)), "{algorithm:?}");
            assert!(!checks(&token(algorithm, OTHER_KEY)), "{algorithm:?} by another key");
        }
        let good = token(Algorithm::RS256, KEY);
        let tampered = good.replacen(".eyJ", ".eyK", 1);
        assert!(!checks(&tampered), "a changed payload");
    }

    #[test]
    fn other_algorithms_and_key_kinds_are_refused() {
        let key = DecodingKey::from_rsa_components(N, "AQAB").unwrap();
        for algorithm in [Algorithm::HS256, Algorithm::ES256, Algorithm::PS256, Algorithm::EdDSA] {
            assert!((PROVIDER.verifier_factory)(&algorithm, &key).is_err(), "{algorithm:?}");
        }
        let secret = DecodingKey::from_secret(b"secret");
        assert!((PROVIDER.verifier_factory)(&Algorithm::RS256, &secret).is_err());
    }
}
