//! Wall-clock formatting without a date library (the Worker only has the JS clock).

/// Formats milliseconds since the Unix epoch as `YYYY-MM-DD HH:MM UTC`.
pub fn format_utc(epoch_ms: i64) -> String {
    let seconds = epoch_ms.div_euclid(1000);
    let (days, second_of_day) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
    let (year, month, day) = crate::schedule::civil::civil_from_days(days);
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02} UTC", second_of_day / 3600, second_of_day % 3600 / 60)
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
    }
}
