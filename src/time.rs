//! Wall-clock formatting with chrono (the Worker reads the clock from the JS runtime).

use chrono::DateTime;

/// Formats milliseconds since the Unix epoch as `YYYY-MM-DD HH:MM UTC`
/// (the bare number for an instant past chrono's ±262,000 years).
pub fn format_utc(epoch_ms: i64) -> String {
    match DateTime::from_timestamp_millis(epoch_ms) {
        Some(instant) => instant.format("%Y-%m-%d %H:%M UTC").to_string(),
        None => epoch_ms.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::format_utc;

    #[test]
    fn known_instants_format_as_utc() {
        assert_eq!(format_utc(0), "1970-01-01 00:00 UTC");
        assert_eq!(format_utc(951_782_400_000), "2000-02-29 00:00 UTC");
        assert_eq!(format_utc(1_795_298_400_000), "2026-11-21 22:00 UTC");
        assert_eq!(format_utc(-1000), "1969-12-31 23:59 UTC");
        assert_eq!(format_utc(i64::MAX), i64::MAX.to_string());
    }
}
