//! The guard in front of model-driven fetches (`http_fetch`): only http(s) to
//! public addresses. The URL is parsed once, by the WHATWG URL rules (the
//! `url` crate, as the runtime's own parser reads it), and the *parsed* host
//! is judged: loopback, private, link-local (cloud metadata), carrier-grade
//! NAT, documentation, benchmarking, multicast and reserved addresses (the
//! IANA IPv4 and IPv6 Special-Purpose Address Registries) are refused, IPv6
//! outside global unicast is refused, IPv6 forms that embed an IPv4 address
//! (mapped, translated, compatible, NAT64, 6to4) are judged by that address,
//! and names that mean this machine or a local network are refused, unless a
//! test-only allow-list names the host. The caller fetches the canonical
//! serialisation the guard returns, never the original string, so no second
//! reading of the URL can disagree with the one checked here.
//!
//! Not checked here: what a public name resolves to (DNS rebinding). A
//! deployed Worker's `fetch` does not reach private networks anyway.

use std::net::{Ipv4Addr, Ipv6Addr};

use thiserror::Error;
use url::{Host, Url};

use crate::redact::Redactor;

/// Bodies a tool hands back to a model are cut at this many bytes.
pub const TOOL_OUTPUT_CAP_BYTES: usize = 50_000;

/// The schemes that may be fetched.
const ALLOWED_SCHEMES: [&str; 2] = ["http", "https"];

/// IPv4 networks that are not the public internet, as (network, prefix
/// length): every block of the IANA IPv4 Special-Purpose Address Registry
/// (RFC 6890 and its updates; iana.org/assignments/iana-ipv4-special-registry)
/// that is not globally reachable, and multicast. The registry's few globally
/// reachable blocks inside 192.0.0.0/24 (PCP and TURN anycast) are refused
/// with the rest of it; its other globally reachable ones (AS112, AMT) stay
/// allowed.
const REFUSED_V4: [(Ipv4Addr, u8); 15] = [
    (Ipv4Addr::new(0, 0, 0, 0), 8),       // "this network", 0.0.0.0
    (Ipv4Addr::new(10, 0, 0, 0), 8),      // private
    (Ipv4Addr::new(100, 64, 0, 0), 10),   // shared address space (carrier-grade NAT)
    (Ipv4Addr::new(127, 0, 0, 0), 8),     // loopback
    (Ipv4Addr::new(169, 254, 0, 0), 16),  // link-local, cloud metadata
    (Ipv4Addr::new(172, 16, 0, 0), 12),   // private
    (Ipv4Addr::new(192, 0, 0, 0), 24),    // IETF protocol assignments (DS-Lite, NAT64 discovery…)
    (Ipv4Addr::new(192, 0, 2, 0), 24),    // documentation (TEST-NET-1)
    (Ipv4Addr::new(192, 88, 99, 0), 24),  // deprecated 6to4 relay anycast (RFC 7526)
    (Ipv4Addr::new(192, 168, 0, 0), 16),  // private
    (Ipv4Addr::new(198, 18, 0, 0), 15),   // benchmarking
    (Ipv4Addr::new(198, 51, 100, 0), 24), // documentation (TEST-NET-2)
    (Ipv4Addr::new(203, 0, 113, 0), 24),  // documentation (TEST-NET-3)
    (Ipv4Addr::new(224, 0, 0, 0), 4),     // multicast
    (Ipv4Addr::new(240, 0, 0, 0), 4),     // reserved, and 255.255.255.255 limited broadcast
];

/// Global unicast, 2000::/3: the only IPv6 space the internet routes. Every
/// other address is refused (loopback, unspecified, discard-only 100::/64,
/// the dummy prefix 100:0:0:1::/64, local-use NAT64 64:ff9b:1::/48, SRv6 SIDs
/// 5f00::/16, unique local fc00::/7, link-local fe80::/10, site-local
/// fec0::/10, multicast ff00::/8, the rest of ::/8), unless it is a form that
/// embeds an IPv4 address, which is judged by that address.
const GLOBAL_UNICAST_V6: (Ipv6Addr, u8) = (Ipv6Addr::new(0x2000, 0, 0, 0, 0, 0, 0, 0), 3);

/// Blocks of global unicast that the IANA IPv6 Special-Purpose Address
/// Registry (RFC 6890 and its updates; iana.org/assignments/iana-ipv6-special-registry)
/// lists as not globally reachable, as (network, prefix length). 2001::/23 is
/// refused whole: it holds Teredo 2001::/32 (which embeds IPv4 addresses,
/// the client's obfuscated), benchmarking 2001:2::/48 and ORCHID, and its few
/// globally reachable anycast blocks serve no web pages.
const REFUSED_V6: [(Ipv6Addr, u8); 3] = [
    (Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0), 23), // IETF protocol assignments, Teredo
    (Ipv6Addr::new(0x2001, 0x0db8, 0, 0, 0, 0, 0, 0), 32), // documentation
    (Ipv6Addr::new(0x3fff, 0, 0, 0, 0, 0, 0, 0), 20), // documentation (RFC 9637)
];

/// IPv4-translated ::ffff:0:a.b.c.d (::ffff:0:0:0/96, RFC 2765): the last 32 bits are an IPv4 address.
const TRANSLATED_PREFIX: (Ipv6Addr, u8) = (Ipv6Addr::new(0, 0, 0, 0, 0xffff, 0, 0, 0), 96);
/// NAT64 well-known prefix 64:ff9b::/96 (RFC 6052): the last 32 bits are an IPv4 address.
const NAT64_PREFIX: (Ipv6Addr, u8) = (Ipv6Addr::new(0x0064, 0xff9b, 0, 0, 0, 0, 0, 0), 96);
/// 6to4 prefix 2002::/16 (RFC 3056): bits 16..48 are an IPv4 address.
const SIX_TO_FOUR_PREFIX: (Ipv6Addr, u8) = (Ipv6Addr::new(0x2002, 0, 0, 0, 0, 0, 0, 0), 16);

/// Names that mean this machine.
const LOCAL_NAMES: [&str; 2] = ["localhost", "localhost.localdomain"];
/// Suffixes of names that mean this machine or a local network.
const LOCAL_SUFFIXES: [&str; 4] = [".localhost", ".local", ".internal", ".home.arpa"];

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FetchRefusal {
    #[error("the URL cannot be parsed: {0}")]
    Unparseable(#[from] url::ParseError),
    #[error("only http and https URLs can be fetched")]
    Scheme,
    #[error("the URL has no host")]
    NoHost,
    #[error("{0} is a private or local address")]
    PrivateAddress(String),
    /// A name of only numbers: WHATWG parsing turns every IPv4 number form
    /// into an address, so this cannot come out of it; refused all the same.
    #[error("{0} looks like a numeric address but is not one")]
    NumericName(String),
    /// The runtime's own URL parser reads another host than the one judged.
    #[error("the runtime reads the host of the URL differently from {0}")]
    HostMismatch(String),
    /// The request carries a configured secret to a host that is not its API.
    #[error("the request carries the configured secret {name}, which may be sent only to its own API, not to {host}")]
    Secret { name: &'static str, host: String },
}

/// Parses `url` by the WHATWG rules and checks its host, giving back the
/// parsed URL: fetch exactly its serialisation (`as_str()`), never `url`.
/// `allowed_hosts` (from a test-only var) lets listed hosts through, e.g. a
/// fake server on 127.0.0.1; an entry is compared with the parsed host's
/// serialisation (`127.0.0.1`, `[::1]` or `::1`, a name in any case).
pub fn check_url(url: &str, allowed_hosts: &[String]) -> Result<Url, FetchRefusal> {
    let parsed = Url::parse(url)?;
    if !ALLOWED_SCHEMES.contains(&parsed.scheme()) {
        return Err(FetchRefusal::Scheme);
    }
    let (host, judged) = match (parsed.host(), parsed.host_str()) {
        (Some(host), Some(judged)) => (host, judged),
        _ => return Err(FetchRefusal::NoHost),
    };
    let bare = judged.trim_start_matches('[').trim_end_matches(']');
    if allowed_hosts.iter().any(|allowed| allowed.eq_ignore_ascii_case(judged) || allowed.eq_ignore_ascii_case(bare)) {
        return Ok(parsed);
    }
    let refused = match host {
        Host::Ipv4(ip) => is_refused_v4(ip),
        Host::Ipv6(ip) => is_refused_v6(ip),
        Host::Domain(name) if looks_numeric(name) => return Err(FetchRefusal::NumericName(name.to_string())),
        Host::Domain(name) => is_local_name(name),
    };
    if refused {
        return Err(FetchRefusal::PrivateAddress(judged.to_string()));
    }
    Ok(parsed)
}

/// Refuses a request to `url` that carries a configured secret anywhere in
/// `carried` (the URL as the model wrote it, its canonical form, headers,
/// body), unless `url` is that secret's own API (same scheme, host and port).
pub fn check_secrets(carried: &[&str], url: &Url, redactor: &Redactor) -> Result<(), FetchRefusal> {
    let leaked = carried.iter().flat_map(|text| redactor.found_in(text)).find(|secret| !secret.may_go_to(url));
    match leaked {
        Some(secret) => {
            Err(FetchRefusal::Secret { name: secret.name, host: url.host_str().unwrap_or_default().to_string() })
        }
        None => Ok(()),
    }
}

fn is_refused_v4(ip: Ipv4Addr) -> bool {
    REFUSED_V4.iter().any(|&(network, length)| u32::from(ip) >> (32 - length) == u32::from(network) >> (32 - length))
}

fn is_refused_v6(ip: Ipv6Addr) -> bool {
    if let Some(embedded) = embedded_v4(ip) {
        return is_refused_v4(embedded);
    }
    !in_v6(ip, GLOBAL_UNICAST_V6.0, GLOBAL_UNICAST_V6.1)
        || REFUSED_V6.iter().any(|&(network, length)| in_v6(ip, network, length))
}

/// The IPv4 address inside an IPv6 form that carries one: mapped
/// (::ffff:a.b.c.d), compatible (::a.b.c.d, which covers :: and ::1 as
/// 0.0.0.0 and 0.0.0.1), translated (::ffff:0:a.b.c.d), NAT64
/// (64:ff9b::a.b.c.d) and 6to4 (2002:AABB:CCDD::). Teredo is refused whole
/// (see [`REFUSED_V6`]).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let bits = u128::from(ip);
    if let Some(v4) = ip.to_ipv4() {
        Some(v4)
    } else if in_v6(ip, TRANSLATED_PREFIX.0, TRANSLATED_PREFIX.1) || in_v6(ip, NAT64_PREFIX.0, NAT64_PREFIX.1) {
        Some(Ipv4Addr::from(bits as u32))
    } else if in_v6(ip, SIX_TO_FOUR_PREFIX.0, SIX_TO_FOUR_PREFIX.1) {
        Some(Ipv4Addr::from((bits >> 80) as u32))
    } else {
        None
    }
}

/// Whether `ip` lies in `network`/`length` (a length of 1..=128).
fn in_v6(ip: Ipv6Addr, network: Ipv6Addr, length: u8) -> bool {
    u128::from(ip) >> (128 - length) == u128::from(network) >> (128 - length)
}

/// Names for this machine or a local network (a trailing dot changes nothing).
fn is_local_name(name: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    LOCAL_NAMES.contains(&name.as_str()) || LOCAL_SUFFIXES.iter().any(|suffix| name.ends_with(suffix))
}

/// A name whose every label is decimal digits or 0x-hex, which some resolver
/// might still read as an address.
fn looks_numeric(name: &str) -> bool {
    name.trim_end_matches('.').split('.').all(|label| {
        let label = label.to_ascii_lowercase();
        let hex = label.strip_prefix("0x").map(|digits| digits.chars().all(|digit| digit.is_ascii_hexdigit()));
        !label.is_empty() && (label.chars().all(|digit| digit.is_ascii_digit()) || hex == Some(true))
    })
}

/// Cuts a tool's output to the cap, at a character boundary.
pub fn cap_output(mut text: String) -> String {
    text.truncate(text.floor_char_boundary(TOOL_OUTPUT_CAP_BYTES));
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use url::ParseError::{self, EmptyHost, IdnaError, InvalidIpv4Address, InvalidIpv6Address, RelativeUrlWithoutBase};

    /// What the guard must answer for one URL.
    #[derive(Debug)]
    enum Expect {
        /// Allowed, and this is the serialisation to fetch.
        Allowed(&'static str),
        /// Refused as private or local; the host as the guard read it.
        Private(&'static str),
        Scheme,
        Unparseable(ParseError),
    }
    use Expect::*;

    /// One row: the rule of the URL standard (host parsing) or the address
    /// range it exercises, the input, and the exact outcome.
    type Row = (&'static str, &'static str, Expect);

    fn outcome_matches(result: &Result<Url, FetchRefusal>, expect: &Expect) -> bool {
        match (result, expect) {
            (Ok(url), Allowed(serialised)) => url.as_str() == *serialised,
            (Err(FetchRefusal::PrivateAddress(host)), Private(expected)) => host == expected,
            (Err(FetchRefusal::Scheme), Scheme) => true,
            (Err(FetchRefusal::Unparseable(error)), Unparseable(expected)) => error == expected,
            _ => false,
        }
    }

    fn check_table(rows: &[Row], allowed_hosts: &[String]) {
        let failures: Vec<String> = rows
            .iter()
            .filter_map(|(rule, input, expect)| {
                let result = check_url(input, allowed_hosts);
                (!outcome_matches(&result, expect))
                    .then(|| format!("{rule}: {input:?} gave {result:?}, expected {expect:?}"))
            })
            .collect();
        assert!(failures.is_empty(), "{} of {} rows failed:\n{}", failures.len(), rows.len(), failures.join("\n"));
    }

    #[test]
    fn the_url_standard_host_rules_cannot_smuggle_a_private_host() {
        check_table(
            &[
                // Percent-encoded bytes in a special URL's host are decoded before anything else.
                ("host: percent-decode, whole address", "http://%31%32%37.0.0.1/", Private("127.0.0.1")),
                ("host: percent-decode, one digit", "http://127.0.0.%31/", Private("127.0.0.1")),
                ("host: percent-decode, a name", "http://%6c%6f%63%61%6c%68%6f%73%74/", Private("localhost")),
                ("host: percent-decode, NUL is forbidden", "http://127.0.0.1%00/", Unparseable(IdnaError)),
                // The IPv4 parser: 1 to 4 parts, each decimal, 0x-hex or 0-octal, the last filling the rest.
                ("ipv4: one decimal number", "http://2130706433/", Private("127.0.0.1")),
                ("ipv4: one hex number", "http://0x7f000001/", Private("127.0.0.1")),
                ("ipv4: one octal number", "http://017700000001/", Private("127.0.0.1")),
                ("ipv4: octal part", "http://0177.0.0.1/", Private("127.0.0.1")),
                ("ipv4: two parts, hex", "http://0x7f.1/", Private("127.0.0.1")),
                ("ipv4: two parts", "http://127.1/", Private("127.0.0.1")),
                ("ipv4: three parts", "http://127.0.1/", Private("127.0.0.1")),
                ("ipv4: an empty last part is dropped", "http://127.0.0.1./", Private("127.0.0.1")),
                ("ipv4: zero", "http://0/", Private("0.0.0.0")),
                ("ipv4: hex zero", "http://0x0/", Private("0.0.0.0")),
                ("ipv4: mixed radixes", "http://0x7f.0.0.0x1/", Private("127.0.0.1")),
                ("ipv4: five parts fail", "http://1.2.3.4.5/", Unparseable(InvalidIpv4Address)),
                ("ipv4: a part too large", "http://256.0.0.1/", Unparseable(InvalidIpv4Address)),
                // The IPv6 parser, and the IPv4 address some forms carry.
                ("ipv6: compressed loopback", "http://[::1]/", Private("[::1]")),
                ("ipv6: full loopback", "http://[0:0:0:0:0:0:0:1]/", Private("[::1]")),
                ("ipv6: unspecified", "http://[::]/", Private("[::]")),
                ("ipv6: mapped, dotted", "http://[::ffff:127.0.0.1]/", Private("[::ffff:7f00:1]")),
                ("ipv6: mapped, hex", "http://[::ffff:7f00:1]/", Private("[::ffff:7f00:1]")),
                ("ipv6: mapped metadata", "http://[::ffff:169.254.169.254]/", Private("[::ffff:a9fe:a9fe]")),
                ("ipv6: compatible", "http://[::127.0.0.1]/", Private("[::7f00:1]")),
                ("ipv6: NAT64 of 10.0.0.1", "http://[64:ff9b::a00:1]/", Private("[64:ff9b::a00:1]")),
                ("ipv6: local-use NAT64", "http://[64:ff9b:1::5db8:d822]/", Private("[64:ff9b:1::5db8:d822]")),
                ("ipv6: 6to4 of 127.0.0.1", "http://[2002:7f00:1::]/", Private("[2002:7f00:1::]")),
                ("ipv6: 6to4 of 192.168.1.1", "http://[2002:c0a8:101::1]/", Private("[2002:c0a8:101::1]")),
                // Every IPv6 form that embeds an IPv4 address, carrying private ones.
                ("ipv6: translated (RFC 2765), hex", "http://[::ffff:0:7f00:1]/", Private("[::ffff:0:7f00:1]")),
                ("ipv6: translated, dotted", "http://[::ffff:0:127.0.0.1]/", Private("[::ffff:0:7f00:1]")),
                ("ipv6: translated metadata", "http://[::ffff:0:169.254.169.254]/", Private("[::ffff:0:a9fe:a9fe]")),
                ("ipv6: translated 10/8", "http://[0:0:0:0:ffff:0:a00:1]/", Private("[::ffff:0:a00:1]")),
                ("ipv6: mapped 192.168/16", "http://[::ffff:192.168.0.1]/", Private("[::ffff:c0a8:1]")),
                ("ipv6: compatible 10/8", "http://[::10.1.2.3]/", Private("[::a01:203]")),
                ("ipv6: NAT64 of 127.0.0.1", "http://[64:ff9b::127.0.0.1]/", Private("[64:ff9b::7f00:1]")),
                ("ipv6: NAT64 of metadata", "http://[64:ff9b::a9fe:a9fe]/", Private("[64:ff9b::a9fe:a9fe]")),
                ("ipv6: local-use NAT64 of 10.0.0.1", "http://[64:ff9b:1::a00:1]/", Private("[64:ff9b:1::a00:1]")),
                ("ipv6: 6to4 of 169.254.169.254", "http://[2002:a9fe:a9fe::]/", Private("[2002:a9fe:a9fe::]")),
                (
                    "ipv6: Teredo, client 127.0.0.1",
                    "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/",
                    Private("[2001:0:4136:e378:8000:63bf:80ff:fffe]"),
                ),
                ("ipv6: Teredo, server 10.0.0.1", "http://[2001:0:a00:1::1]/", Private("[2001:0:a00:1::1]")),
                ("ipv6: SRv6 SIDs 5f00::/16", "http://[5f00::1]/", Private("[5f00::1]")),
                ("ipv6: documentation 3fff::/20", "http://[3fff::1]/", Private("[3fff::1]")),
                ("ipv6: benchmarking 2001:2::/48", "http://[2001:2::1]/", Private("[2001:2::1]")),
                ("ipv6: reserved ::/8", "http://[::1:0:0:1]/", Private("[::1:0:0:1]")),
                ("ipv6: no zone ids", "http://[fe80::1%25eth0]/", Unparseable(InvalidIpv6Address)),
                ("ipv6: unique local fc00::/7", "http://[fc00::1]/", Private("[fc00::1]")),
                ("ipv6: unique local fd", "http://[fd12:3456::1]/", Private("[fd12:3456::1]")),
                ("ipv6: link-local", "http://[fe80::1]/", Private("[fe80::1]")),
                ("ipv6: link-local, top of fe80::/10", "http://[febf::1]/", Private("[febf::1]")),
                ("ipv6: site-local", "http://[fec0::1]/", Private("[fec0::1]")),
                ("ipv6: multicast", "http://[ff02::1]/", Private("[ff02::1]")),
                ("ipv6: documentation", "http://[2001:db8::1]/", Private("[2001:db8::1]")),
                ("ipv6: discard", "http://[100::1]/", Private("[100::1]")),
                ("ipv6: an unclosed bracket", "http://[::1/", Unparseable(InvalidIpv6Address)),
                // Domain to ASCII (UTS 46 mapping), then the IPv4 parser if it ends in a number.
                ("idna: full-width digits and stops", "http://１２７.０.０.１/", Private("127.0.0.1")),
                ("idna: ideographic full stop U+3002", "http://127。0。0。1/", Private("127.0.0.1")),
                ("idna: full-width full stop U+FF0E", "http://127．0．0．1/", Private("127.0.0.1")),
                ("idna: halfwidth ideographic full stop U+FF61", "http://127｡0｡0｡1/", Private("127.0.0.1")),
                ("idna: full-width letters", "http://ｌｏｃａｌｈｏｓｔ/", Private("localhost")),
                ("idna: upper case", "http://LOCALHOST/", Private("localhost")),
                ("idna: soft hyphen is mapped to nothing", "http://local\u{AD}host/", Private("localhost")),
                ("idna: circled letters", "http://ⓛⓞⓒⓐⓛⓗⓞⓢⓣ/", Private("localhost")),
                ("idna: full-width hex number", "http://０ｘ７ｆ．１/", Private("127.0.0.1")),
                ("domain: trailing dot", "http://localhost./", Private("localhost.")),
                ("domain: a subdomain of localhost", "http://api.localhost/", Private("api.localhost")),
                ("domain: localhost.localdomain", "http://localhost.localdomain/", Private("localhost.localdomain")),
                ("domain: mDNS .local", "http://printer.local/", Private("printer.local")),
                ("domain: .internal", "http://metadata.google.internal/", Private("metadata.google.internal")),
                ("domain: .home.arpa", "http://router.home.arpa/", Private("router.home.arpa")),
                // The authority: userinfo ends at the last @; for special schemes \ is a path separator.
                ("authority: user and password", "http://user:pass@127.0.0.1/", Private("127.0.0.1")),
                ("authority: a name as userinfo", "http://evil.com@127.0.0.1/", Private("127.0.0.1")),
                ("authority: backslash ends the host", r"http://127.0.0.1\@evil.com/", Private("127.0.0.1")),
                ("authority: a name and port as userinfo", "http://evil.com:80@127.0.0.1/", Private("127.0.0.1")),
                ("authority: empty userinfo", "http://@127.0.0.1/", Private("127.0.0.1")),
                ("authority: port", "http://127.0.0.1:80/", Private("127.0.0.1")),
                ("authority: IPv6 and port", "http://[::1]:8080/", Private("[::1]")),
                ("authority: an empty host", "http:///", Unparseable(EmptyHost)),
                // Special authority slashes: any number of / and \, or none, before the host.
                ("slashes: none", "http:127.0.0.1/", Private("127.0.0.1")),
                ("slashes: one", "http:/127.0.0.1/", Private("127.0.0.1")),
                ("slashes: backslashes", r"http:\\127.0.0.1/", Private("127.0.0.1")),
                ("slashes: backslash and slash", r"http:\/127.0.0.1/", Private("127.0.0.1")),
                ("slashes: three", "http:///127.0.0.1/", Private("127.0.0.1")),
                // Before parsing: tab and newline are removed anywhere, C0 controls and spaces trimmed.
                ("input: tab inside the host", "http://127.0.\t0.1/", Private("127.0.0.1")),
                ("input: newline inside the host", "http://loc\nal\rhost/", Private("localhost")),
                ("input: leading and trailing spaces", "  http://127.0.0.1/  ", Private("127.0.0.1")),
                ("input: leading and trailing C0 controls", "\u{0}\u{1f}http://127.0.0.1/\u{7}", Private("127.0.0.1")),
                ("scheme: upper case", "HTTP://127.0.0.1/", Private("127.0.0.1")),
            ],
            &[],
        );
    }

    #[test]
    fn every_refused_range_is_refused_and_its_neighbours_are_not() {
        check_table(
            &[
                ("0.0.0.0/8", "http://0.1.2.3/", Private("0.1.2.3")),
                ("10.0.0.0/8", "http://10.255.255.255/", Private("10.255.255.255")),
                ("above 10/8", "http://11.0.0.1/", Allowed("http://11.0.0.1/")),
                ("100.64.0.0/10 low", "http://100.64.0.1/", Private("100.64.0.1")),
                ("100.64.0.0/10 high", "http://100.127.255.255/", Private("100.127.255.255")),
                ("below 100.64/10", "http://100.63.255.255/", Allowed("http://100.63.255.255/")),
                ("above 100.64/10", "http://100.128.0.1/", Allowed("http://100.128.0.1/")),
                ("127.0.0.0/8", "http://127.255.0.1/", Private("127.255.0.1")),
                ("169.254.0.0/16 metadata", "http://169.254.169.254/latest/meta-data/", Private("169.254.169.254")),
                ("172.16.0.0/12 low", "http://172.16.0.5/", Private("172.16.0.5")),
                ("172.16.0.0/12 high", "http://172.31.255.255/", Private("172.31.255.255")),
                ("above 172.16/12", "http://172.32.0.1/", Allowed("http://172.32.0.1/")),
                ("192.0.0.0/24", "http://192.0.0.8/", Private("192.0.0.8")),
                ("192.0.2.0/24", "http://192.0.2.1/", Private("192.0.2.1")),
                ("192.168.0.0/16", "http://192.168.1.1/", Private("192.168.1.1")),
                ("198.18.0.0/15 high", "http://198.19.255.255/", Private("198.19.255.255")),
                ("above 198.18/15", "http://198.20.0.1/", Allowed("http://198.20.0.1/")),
                ("198.51.100.0/24", "http://198.51.100.7/", Private("198.51.100.7")),
                ("203.0.113.0/24", "http://203.0.113.7/", Private("203.0.113.7")),
                ("224.0.0.0/4 multicast", "http://239.255.255.250/", Private("239.255.255.250")),
                ("240.0.0.0/4 reserved", "http://240.0.0.1/", Private("240.0.0.1")),
                ("broadcast", "http://255.255.255.255/", Private("255.255.255.255")),
                ("below multicast", "http://223.255.255.255/", Allowed("http://223.255.255.255/")),
                ("ipv6: mapped public", "http://[::ffff:93.184.216.34]/", Allowed("http://[::ffff:5db8:d822]/")),
                ("ipv6: NAT64, public", "http://[64:ff9b::5db8:d822]/", Allowed("http://[64:ff9b::5db8:d822]/")),
                ("ipv6: 6to4, public", "http://[2002:5db8:d822::1]/", Allowed("http://[2002:5db8:d822::1]/")),
                ("ipv6: fe00::/9, reserved", "http://[fe00::1]/", Private("[fe00::1]")),
                ("ipv6: beside 2001:db8::/32", "http://[2001:db9::1]/", Allowed("http://[2001:db9::1]/")),
                ("ipv6: dummy prefix 100:0:0:1::/64", "http://[100:0:0:1::1]/", Private("[100:0:0:1::1]")),
                ("192.88.99.0/24 6to4 relay", "http://192.88.99.1/", Private("192.88.99.1")),
                ("AS112 is globally reachable", "http://192.31.196.1/", Allowed("http://192.31.196.1/")),
                (
                    "ipv6: AS112 is globally reachable",
                    "http://[2620:4f:8000::1]/",
                    Allowed("http://[2620:4f:8000::1]/"),
                ),
                ("ipv6: beside 2001::/23", "http://[2001:200::1]/", Allowed("http://[2001:200::1]/")),
                ("ipv6: below 3fff::/20", "http://[3ffe:ffff::1]/", Allowed("http://[3ffe:ffff::1]/")),
                ("ipv6: above 2000::/3", "http://[4000::1]/", Private("[4000::1]")),
            ],
            &[],
        );
    }

    #[test]
    fn public_hosts_pass_in_their_canonical_form() {
        check_table(
            &[
                ("domain", "https://example.com/page?q=1", Allowed("https://example.com/page?q=1")),
                ("domain, upper case and default port", "HTTPS://Example.COM:443/a", Allowed("https://example.com/a")),
                ("domain, other port", "http://example.com:8080", Allowed("http://example.com:8080/")),
                ("ipv4", "http://93.184.216.34/", Allowed("http://93.184.216.34/")),
                ("ipv6", "https://[2606:4700::1111]/", Allowed("https://[2606:4700::1111]/")),
                ("a name of hex letters is a name", "https://cafe.be/", Allowed("https://cafe.be/")),
                ("idna: to punycode", "https://münchen.de/", Allowed("https://xn--mnchen-3ya.de/")),
                ("ends in a name: a domain", "http://0x7f.example.com/", Allowed("http://0x7f.example.com/")),
                ("userinfo, public host", "http://127.0.0.1@example.com/", Allowed("http://127.0.0.1@example.com/")),
                ("slashes: extra ones ignored", "https:///path", Allowed("https://path/")),
                ("path dot segments are resolved", "http://example.com/a/../b/./c", Allowed("http://example.com/b/c")),
            ],
            &[],
        );
    }

    #[test]
    fn only_http_and_https_are_fetched() {
        check_table(
            &[
                ("file", "file:///etc/passwd", Scheme),
                ("ftp", "ftp://example.com/", Scheme),
                ("data", "data:text/plain,hello", Scheme),
                ("javascript", "javascript:alert(1)", Scheme),
                ("gopher", "gopher://example.com/", Scheme),
                ("ws", "ws://example.com/", Scheme),
                ("wss", "wss://example.com/", Scheme),
                ("blob", "blob:https://example.com/uuid", Scheme),
                ("no scheme at all", "example.com/page", Unparseable(RelativeUrlWithoutBase)),
                ("empty", "", Unparseable(RelativeUrlWithoutBase)),
            ],
            &[],
        );
    }

    #[test]
    fn the_allow_list_matches_the_parsed_host_and_the_canonical_form_is_returned() {
        let allowed = ["127.0.0.1".to_string(), "::1".to_string(), "Fake.Test".to_string()];
        check_table(
            &[
                ("allowed address and port", "http://127.0.0.1:9000/fake", Allowed("http://127.0.0.1:9000/fake")),
                ("full-width spelling of an allowed address", "http://１２７.０.０.１/", Allowed("http://127.0.0.1/")),
                ("ideographic stops", "http://127。0。0。1/x", Allowed("http://127.0.0.1/x")),
                ("percent-encoded", "http://%31%32%37.0.0.1/", Allowed("http://127.0.0.1/")),
                ("one number", "http://2130706433/", Allowed("http://127.0.0.1/")),
                ("backslash ends the host", r"http://127.0.0.1\@evil.com/", Allowed("http://127.0.0.1/@evil.com/")),
                ("ipv6 listed without brackets", "http://[0:0::1]:8080/", Allowed("http://[::1]:8080/")),
                ("a name in another case", "http://FAKE.test/", Allowed("http://fake.test/")),
                ("a private address not listed", "http://10.0.0.1/", Private("10.0.0.1")),
                ("another loopback address is not listed", "http://127.0.0.2/", Private("127.0.0.2")),
            ],
            &allowed,
        );
        let bracketed = ["[::1]".to_string()];
        check_table(&[("ipv6 listed with brackets", "http://[::1]/", Allowed("http://[::1]/"))], &bracketed);
    }

    #[test]
    fn a_name_of_only_numbers_is_never_taken_for_a_name() {
        for numeric in ["2130706433", "127.0.0.1.", "0x7f.0X1", "0x", "1.2.3.4.5"] {
            assert!(looks_numeric(numeric), "{numeric}");
        }
        for name in ["cafe.be", "0x7f.example.com", "0xg1", "1.2.3.4a", "a..1"] {
            assert!(!looks_numeric(name), "{name}");
        }
    }

    #[test]
    fn a_secret_goes_only_to_its_own_api() {
        let redactor = Redactor::new([
            ("TELEGRAM_BOT_TOKEN", "4242:test-telegram-token", Some("https://api.telegram.org")),
            ("OPENAI_API_KEY", "test-openai-key-1", Some("https://api.openai.com/v1")),
            ("ADMIN_TOKEN", "test-admin-token", None),
        ]);
        let check = |input: &str| {
            let url = check_url(input, &[])?;
            check_secrets(&[input, url.as_str()], &url, &redactor)
        };
        let refused = |input: &str| match check(input) {
            Err(FetchRefusal::Secret { name, host }) => format!("{name} to {host}"),
            other => panic!("{input}: {other:?}"),
        };
        assert!(check("https://api.telegram.org/bot4242:test-telegram-token/getMe").is_ok(), "its own API");
        assert!(check("https://example.com/?q=nothing-secret").is_ok());
        let cases = [
            ("https://evil.example/?k=4242:test-telegram-token", "TELEGRAM_BOT_TOKEN to evil.example"),
            ("https://evil.example/?k=test%2Dopenai%2Dkey%2D1", "OPENAI_API_KEY to evil.example"),
            ("https://TEST-OPENAI-KEY-1.evil.example/", "OPENAI_API_KEY to test-openai-key-1.evil.example"),
            ("https://api.openai.com/v1/?k=4242:test-telegram-token", "TELEGRAM_BOT_TOKEN to api.openai.com"),
            ("http://api.telegram.org/bot4242:test-telegram-token/getMe", "TELEGRAM_BOT_TOKEN to api.telegram.org"),
            ("https://api.telegram.org/?admin=test-admin-token", "ADMIN_TOKEN to api.telegram.org"),
            (
                "https://api.telegram.org/bot4242:test-telegram-token/x?k=test-openai-key-1",
                "OPENAI_API_KEY to api.telegram.org",
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(refused(input), expected, "{input}");
        }
        let message = check("https://evil.example/?k=test-admin-token").unwrap_err().to_string();
        assert!(message.contains("ADMIN_TOKEN") && !message.contains("test-admin-token"), "{message}");
    }

    #[test]
    fn output_is_capped_on_a_character_boundary() {
        let capped = cap_output("é".repeat(30_000));
        assert!(capped.len() <= TOOL_OUTPUT_CAP_BYTES);
        assert!(capped.chars().all(|character| character == 'é'));
        assert_eq!(cap_output("short".into()), "short");
    }
}
