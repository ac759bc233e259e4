//! Reference offsets for the tests: the IANA database through `chrono-tz`
//! (a dev-dependency only; the Worker asks the runtime's `Intl` instead).

use chrono::{NaiveDate, Offset, TimeZone};
use chrono_tz::Tz;

use super::zone::ZoneRules;

/// [`ZoneRules`] answered from the full tz database.
pub struct ChronoZones;

impl ZoneRules for ChronoZones {
    fn offset_minutes(&self, zone: &str, utc_ms: i64) -> Option<i32> {
        let zone: Tz = zone.parse().ok()?;
        let instant = chrono::DateTime::from_timestamp_millis(utc_ms)?;
        Some(zone.offset_from_utc_datetime(&instant.naive_utc()).fix().local_minus_utc() / 60)
    }
}

/// `"2026-03-29 01:00"` read as UTC, in milliseconds; written with chrono so the
/// expected values do not lean on the code under test.
pub fn utc(text: &str) -> i64 {
    let parts: Vec<u32> = text.split(['-', ' ', ':']).map(|part| part.parse().expect("a number")).collect();
    let [year, month, day, hour, minute] = parts[..] else { panic!("use YYYY-MM-DD HH:MM, not {text:?}") };
    NaiveDate::from_ymd_opt(year as i32, month, day)
        .and_then(|date| date.and_hms_opt(hour, minute, 0))
        .unwrap_or_else(|| panic!("not a time: {text:?}"))
        .and_utc()
        .timestamp_millis()
}

/// The other way round, for readable failures.
pub fn show(utc_ms: i64) -> String {
    crate::time::format_utc(utc_ms)
}
