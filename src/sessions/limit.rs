//! Limits on guessing tokens: how many failed token checks (a dashboard
//! sign-in, a web-chat invitation, an admin API bearer token) one client and
//! all clients together may make in a window, and what a client over a limit
//! is told.
//!
//! The decision is made before the presented token's result is revealed: a
//! client over a limit gets 429 whether or not its token was right, so being
//! refused tells it nothing. (Checking a correct token first would hand a
//! blocked guesser a fast oracle.) The operator is not locked out by others:
//! each client has its own budget, and a client that presented the admin
//! token within [`TRUST_MS`] is not held by the overall one.

/// How long a client that presented the admin token stays exempt from the
/// overall limit (its own limit still holds).
pub const TRUST_MS: i64 = 30 * 24 * 60 * 60 * 1000;

/// The limits (set by `SIGN_IN_CLIENT_LIMIT`, `SIGN_IN_LIMIT`, `SIGN_IN_WINDOW_SECS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Failures one client may make per window.
    pub per_client: u32,
    /// Failures all clients together may make per window.
    pub overall: u32,
    pub window_ms: i64,
}

/// The failures recorded within the window, as the limiter's storage has them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Recorded {
    pub client_failures: u32,
    /// When the client's oldest failure in the window happened.
    pub client_oldest_ms: Option<i64>,
    pub overall_failures: u32,
    pub overall_oldest_ms: Option<i64>,
    /// The client presented the admin token within [`TRUST_MS`].
    pub client_trusted: bool,
}

/// Which limit refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Held {
    Client,
    Overall,
}

/// What to do with a token check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Check the token (and record how it went).
    Check,
    /// Answer 429 without looking at the token; `retry_after_secs` is when the
    /// limit that held will have room again.
    Refuse { held: Held, retry_after_secs: u64 },
}

/// How a checked token turned out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// No configured token matched: a failure, counted.
    Failed,
    /// The web-chat invitation matched: nothing counted, no trust given.
    Guest,
    /// The admin token matched: the client's failures are forgotten and it is trusted.
    Operator,
}

impl Outcome {
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Failed => "failed",
            Outcome::Guest => "guest",
            Outcome::Operator => "operator",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        [Outcome::Failed, Outcome::Guest, Outcome::Operator].into_iter().find(|outcome| outcome.name() == name)
    }
}

/// Seconds until the oldest failure leaves the window (at least 1).
fn seconds_until_room(oldest_ms: Option<i64>, window_ms: i64, now_ms: i64) -> u64 {
    let free_at = oldest_ms.unwrap_or(now_ms) + window_ms;
    let wait_ms = (free_at - now_ms).max(0) as u64;
    wait_ms.div_ceil(1000).max(1)
}

/// Whether a token check may go ahead, given the failures in the window.
pub fn decide(limits: &Limits, recorded: &Recorded, now_ms: i64) -> Verdict {
    if recorded.client_failures >= limits.per_client {
        let retry_after_secs = seconds_until_room(recorded.client_oldest_ms, limits.window_ms, now_ms);
        return Verdict::Refuse { held: Held::Client, retry_after_secs };
    }
    if recorded.overall_failures >= limits.overall && !recorded.client_trusted {
        let retry_after_secs = seconds_until_room(recorded.overall_oldest_ms, limits.window_ms, now_ms);
        return Verdict::Refuse { held: Held::Overall, retry_after_secs };
    }
    Verdict::Check
}

/// The client a request counts against: its `CF-Connecting-IP`, an IPv6
/// address by its /64 (one subscriber's usual allocation, which would
/// otherwise give a guesser 2^64 budgets). Without the header (never on
/// Cloudflare, which always sets it; a local `wrangler dev` sets it too)
/// every such request shares one budget.
pub fn client_key(connecting_ip: Option<&str>) -> String {
    let Some(address) = connecting_ip.map(str::trim).filter(|address| !address.is_empty()) else {
        return "unknown".into();
    };
    match address.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V6(v6)) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let segments = v6.segments();
                format!("{:x}:{:x}:{:x}:{:x}::/64", segments[0], segments[1], segments[2], segments[3])
            }
        },
        Ok(std::net::IpAddr::V4(v4)) => v4.to_string(),
        // Not an address: kept short, so a forged header cannot bloat storage.
        Err(_) => format!("other:{}", address.chars().take(64).collect::<String>()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits { per_client: 3, overall: 10, window_ms: 60_000 };

    #[test]
    fn the_ladder_of_limits() {
        let now = 1_000_000;
        let client_full = Recorded { client_failures: 3, client_oldest_ms: Some(now - 45_500), ..Recorded::default() };
        let overall_full =
            Recorded { overall_failures: 10, overall_oldest_ms: Some(now - 1_000), ..Recorded::default() };
        let cases = [
            ("nothing recorded", Recorded::default(), Verdict::Check),
            ("under both", Recorded { client_failures: 2, overall_failures: 9, ..Recorded::default() }, Verdict::Check),
            ("the client's own limit", client_full, Verdict::Refuse { held: Held::Client, retry_after_secs: 15 }),
            (
                "trust does not lift the client's own limit",
                Recorded { client_trusted: true, ..client_full },
                Verdict::Refuse { held: Held::Client, retry_after_secs: 15 },
            ),
            ("the overall limit", overall_full, Verdict::Refuse { held: Held::Overall, retry_after_secs: 59 }),
            (
                "a trusted client passes the overall limit",
                Recorded { client_trusted: true, ..overall_full },
                Verdict::Check,
            ),
            (
                "a failure at the window's edge still waits a second",
                Recorded { client_failures: 3, client_oldest_ms: Some(now - 60_000), ..Recorded::default() },
                Verdict::Refuse { held: Held::Client, retry_after_secs: 1 },
            ),
        ];
        for (name, recorded, expected) in cases {
            assert_eq!(decide(&LIMITS, &recorded, now), expected, "{name}");
        }
    }

    #[test]
    fn clients_are_addresses_and_ipv6_counts_by_its_64() {
        assert_eq!(client_key(Some("203.0.113.7")), "203.0.113.7");
        assert_eq!(client_key(Some("2001:db8:1:2:aaaa::1")), "2001:db8:1:2::/64");
        assert_eq!(client_key(Some("2001:db8:1:2:ffff::9")), client_key(Some("2001:db8:1:2::1")));
        assert_ne!(client_key(Some("2001:db8:1:3::1")), client_key(Some("2001:db8:1:2::1")));
        assert_eq!(client_key(Some("::ffff:203.0.113.7")), "203.0.113.7", "a mapped IPv4 is that IPv4");
        assert_eq!(client_key(None), "unknown");
        assert_eq!(client_key(Some(" ")), "unknown");
        assert_eq!(client_key(Some(&"x".repeat(500))).len(), "other:".len() + 64);
    }

    #[test]
    fn outcomes_round_trip_by_name() {
        for outcome in [Outcome::Failed, Outcome::Guest, Outcome::Operator] {
            assert_eq!(Outcome::parse(outcome.name()), Some(outcome));
        }
        assert_eq!(Outcome::parse("admin"), None);
    }
}
