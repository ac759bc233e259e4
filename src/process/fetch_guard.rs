//! The guard in front of model-driven fetches (`http_fetch`): only http(s) to
//! public addresses. Loopback, private, link-local (cloud metadata), carrier-
//! grade NAT, unique-local and unspecified addresses are refused, as are
//! names that mean this machine, unless a test-only allow-list names the host.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use thiserror::Error;

/// Bodies a tool hands back to a model are cut at this many bytes.
pub const TOOL_OUTPUT_CAP_BYTES: usize = 50_000;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FetchRefusal {
    #[error("only http and https URLs can be fetched")]
    Scheme,
    #[error("the URL has no host")]
    NoHost,
    #[error("{0} is a private or local address")]
    PrivateAddress(String),
}

/// Checks a URL before fetching it. `allowed_hosts` (from a test-only var)
/// lets listed hosts through, e.g. a fake server on 127.0.0.1.
pub fn check_url(url: &str, allowed_hosts: &[String]) -> Result<(), FetchRefusal> {
    let (scheme, rest) = url.split_once("://").ok_or(FetchRefusal::Scheme)?;
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return Err(FetchRefusal::Scheme);
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_and_port = authority.rsplit('@').next().unwrap_or_default();
    let host = if let Some(bracketed) = host_and_port.strip_prefix('[') {
        bracketed.split(']').next().unwrap_or_default()
    } else {
        host_and_port.split(':').next().unwrap_or_default()
    };
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    if host.is_empty() {
        return Err(FetchRefusal::NoHost);
    }
    if allowed_hosts.iter().any(|allowed| allowed.eq_ignore_ascii_case(&host)) {
        return Ok(());
    }
    let local_name =
        host == "localhost" || host.ends_with(".localhost") || host.ends_with(".internal") || host.ends_with(".local");
    let private_ip = match host.parse::<IpAddr>() {
        Ok(IpAddr::V4(ip)) => is_private_v4(ip),
        Ok(IpAddr::V6(ip)) => is_private_v6(ip),
        // Decimal or hex forms like http://2130706433/ are refused rather than guessed at.
        Err(_) => host.split('.').all(|label| {
            !label.is_empty() && (label.chars().all(|character| character.is_ascii_digit()) || label.starts_with("0x"))
        }),
    };
    if local_name || private_ip {
        return Err(FetchRefusal::PrivateAddress(host));
    }
    Ok(())
}

fn is_private_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_documentation()
        || (a == 100 && (64..128).contains(&b)) // carrier-grade NAT
        || a == 0
}

fn is_private_v6(ip: Ipv6Addr) -> bool {
    if let Some(mapped) = ip.to_ipv4_mapped() {
        return is_private_v4(mapped);
    }
    let first = ip.segments()[0];
    ip.is_loopback()
        || ip.is_unspecified()
        || (first & 0xfe00) == 0xfc00 // unique local
        || (first & 0xffc0) == 0xfe80 // link local
}

/// Cuts a tool's output to the cap, at a character boundary.
pub fn cap_output(mut text: String) -> String {
    if text.len() > TOOL_OUTPUT_CAP_BYTES {
        let mut end = TOOL_OUTPUT_CAP_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_local_and_metadata_addresses_are_refused() {
        for url in [
            "http://127.0.0.1/",
            "http://127.0.0.1:8787/health",
            "http://10.0.0.1/",
            "http://169.254.169.254/latest/meta-data/",
            "http://192.168.1.1/",
            "http://172.16.0.5/",
            "http://100.64.0.1/",
            "http://0.0.0.0/",
            "http://[::1]/",
            "http://[fd00::1]/",
            "http://[fe80::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://localhost:3000/",
            "http://metadata.google.internal/",
            "http://2130706433/",
            "http://0x7f.0.0.1/",
            "http://user@127.0.0.1/",
        ] {
            assert!(matches!(check_url(url, &[]), Err(FetchRefusal::PrivateAddress(_))), "{url}");
        }
    }

    #[test]
    fn public_hosts_pass_and_other_schemes_do_not() {
        assert_eq!(check_url("https://example.com/page?q=1", &[]), Ok(()));
        assert_eq!(check_url("http://93.184.216.34/", &[]), Ok(()));
        assert_eq!(check_url("https://cafe.be/", &[]), Ok(()), "a name of hex letters is still a name");
        assert_eq!(check_url("https://[2606:4700::1111]/", &[]), Ok(()));
        assert_eq!(check_url("file:///etc/passwd", &[]), Err(FetchRefusal::Scheme));
        assert_eq!(check_url("ftp://example.com/", &[]), Err(FetchRefusal::Scheme));
        assert_eq!(check_url("https:///path", &[]), Err(FetchRefusal::NoHost));
    }

    #[test]
    fn the_allow_list_lets_named_hosts_through() {
        let allowed = vec!["127.0.0.1".to_string()];
        assert_eq!(check_url("http://127.0.0.1:9000/fake", &allowed), Ok(()));
        assert!(check_url("http://10.0.0.1/", &allowed).is_err());
    }

    #[test]
    fn output_is_capped_on_a_character_boundary() {
        let capped = cap_output("é".repeat(30_000));
        assert!(capped.len() <= TOOL_OUTPUT_CAP_BYTES);
        assert!(capped.chars().all(|character| character == 'é'));
        assert_eq!(cap_output("short".into()), "short");
    }
}
