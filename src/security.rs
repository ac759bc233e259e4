//! Comparisons of secrets that take the same time whatever the input.

use std::hint::black_box;

/// Compares two byte strings in time that depends only on their lengths, so a
/// forger learns nothing from how long a rejection took.
pub fn constant_time_eq(left: &[u8], right: &[u8]) -> bool {
    let longest = left.len().max(right.len());
    let mut difference = left.len() ^ right.len();
    for index in 0..longest {
        let a = left.get(index).copied().unwrap_or(0);
        let b = right.get(index).copied().unwrap_or(0);
        difference |= black_box(usize::from(a ^ b));
    }
    difference == 0
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
    fn bearer_requires_the_exact_token_and_a_configured_one() {
        assert!(bearer_matches(Some("Bearer abc"), "abc"));
        assert!(!bearer_matches(Some("Bearer abd"), "abc"));
        assert!(!bearer_matches(Some("abc"), "abc"));
        assert!(!bearer_matches(None, "abc"));
        assert!(!bearer_matches(Some("Bearer "), ""));
    }
}
