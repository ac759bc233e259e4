//! The messengers: each platform is a folder that turns the platform's
//! payloads into [`crate::inbound::InboundEvent`]s and replies into the
//! platform's API calls, behind one interface ([`messenger::Messenger`]).
//! [`Platform`] names them; [`outbound`] picks the one that answers at a reply
//! address, and [`webhooks`] the one that reads a webhook.

pub mod discord;
pub mod email;
pub mod link;
pub mod plain_webhook;
pub mod platform;
pub mod settings;
pub mod slack;
pub mod teams;
pub mod telegram;
pub mod web_chat;
pub mod whatsapp;

pub use platform::Platform;

#[cfg(target_arch = "wasm32")]
pub mod messenger;
#[cfg(target_arch = "wasm32")]
pub mod outbound;
#[cfg(target_arch = "wasm32")]
pub mod webhooks;

/// A `Retry-After` header's seconds, read as `str::parse::<f64>` reads it (an
/// optional sign, digits with an optional fraction and exponent, `inf`, `nan`),
/// through serde_json's number parser: the standard one would add its own
/// ~15 KB of code and tables to the Worker's bundle.
pub fn parse_retry_after(value: &str) -> Option<f64> {
    let value = value.trim();
    let (negative, unsigned) = match value.as_bytes().first() {
        Some(b'-') => (true, &value[1..]),
        Some(b'+') => (false, &value[1..]),
        _ => (false, value),
    };
    let sign = if negative { -1.0 } else { 1.0 };
    match unsigned.to_ascii_lowercase().as_str() {
        "inf" | "infinity" => return Some(sign * f64::INFINITY),
        "nan" => return Some(f64::NAN),
        _ => {}
    }
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (&unsigned[..at], Some(&unsigned[at + 1..])),
        None => (unsigned, None),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = |text: &str| text.bytes().all(|byte| byte.is_ascii_digit());
    if whole.len() + fraction.len() == 0 || !digits(whole) || !digits(fraction) {
        return None;
    }
    // serde_json's grammar: no leading zeros, no empty whole part or fraction.
    let mut normal = String::from(if negative { "-" } else { "" });
    let whole = whole.trim_start_matches('0');
    normal.push_str(if whole.is_empty() { "0" } else { whole });
    if !fraction.is_empty() {
        normal.push('.');
        normal.push_str(fraction);
    }
    let mut exponent_is_positive = true;
    if let Some(exponent) = exponent {
        let unsigned_exponent = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
        if unsigned_exponent.is_empty() || !digits(unsigned_exponent) {
            return None;
        }
        exponent_is_positive = !exponent.starts_with('-');
        normal.push('e');
        normal.push_str(exponent);
    }
    match serde_json::from_str::<f64>(&normal) {
        Ok(seconds) => Some(seconds),
        // Out of range: an overflow is infinite, as the standard parser reads it.
        Err(_) if exponent_is_positive => Some(sign * f64::INFINITY),
        Err(_) => Some(sign * 0.0),
    }
}

#[cfg(test)]
mod tests {
    use super::parse_retry_after;

    #[test]
    fn retry_after_reads_as_the_standard_float_parser_reads_it() {
        for value in [
            "0",
            "1",
            "30",
            " 2 ",
            "007",
            "1.5",
            "0.001",
            ".5",
            "5.",
            "+3",
            "-3",
            "-0",
            "1e3",
            "2.5E-2",
            "1e+2",
            "1e400",
            "-1e400",
            "1e-400",
            "0e999999999999999999",
            "123456789012345678901234567890",
            "0.1000000000000000055511151231257827",
            "inf",
            "-Infinity",
            "NaN",
            "",
            ".",
            "-",
            "e5",
            "1e",
            "1e+",
            "1.2.3",
            "12a",
            "0x10",
            "1_000",
            "١",
            "Wed, 21 Oct 2015 07:28:00 GMT",
        ] {
            let expected = value.trim().parse::<f64>().ok();
            let ours = parse_retry_after(value);
            let same = match (expected, ours) {
                (Some(a), Some(b)) => a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
                (None, None) => true,
                _ => false,
            };
            assert!(same, "{value:?}: std {expected:?}, ours {ours:?}");
        }
    }
}
