//! Time zones without a bundled tz database: the rules answer one question,
//! "what is the offset of this zone at this instant", and everything else (wall
//! clock to instant, DST gaps and repeats) is worked out here from that answer.
//!
//! The Worker answers from the runtime's `Intl` data; the tests from
//! `chrono-tz`. Keeping the database out of the bundle is the point.

use super::civil::{LocalDateTime, MINUTES_PER_DAY, MS_PER_MINUTE};

/// Offsets of IANA zones.
pub trait ZoneRules {
    /// Local time minus UTC, in minutes, in force at `utc_ms`; None for a zone
    /// the rules do not know.
    fn offset_minutes(&self, zone: &str, utc_ms: i64) -> Option<i32>;
}

impl<T: ZoneRules + ?Sized> ZoneRules for &T {
    fn offset_minutes(&self, zone: &str, utc_ms: i64) -> Option<i32> {
        (**self).offset_minutes(zone, utc_ms)
    }
}

/// Knows only UTC (under the names below, in any case): enough for plans that
/// need no zone and for a fallback when the runtime's zone data is absent.
#[derive(Debug, Clone, Copy, Default)]
pub struct Utc;

const UTC_NAMES: [&str; 4] = ["UTC", "Etc/UTC", "GMT", "Etc/GMT"];

impl ZoneRules for Utc {
    fn offset_minutes(&self, zone: &str, _utc_ms: i64) -> Option<i32> {
        UTC_NAMES.iter().any(|name| name.eq_ignore_ascii_case(zone.trim())).then_some(0)
    }
}

/// The instant(s) a wall-clock time names in a zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolved {
    Unique(i64),
    /// The clocks skipped this time (spring forward); the first instant after
    /// the skip is when a job set for it runs.
    Gap {
        next_valid_utc_ms: i64,
    },
    /// The clocks showed this time twice (fall back).
    Ambiguous {
        earlier_utc_ms: i64,
        later_utc_ms: i64,
    },
}

impl Resolved {
    /// When a job set for this wall-clock time runs: the instant itself, the end
    /// of a gap, or the first of two repeats (so it runs once, not twice).
    pub fn run_at_ms(self) -> i64 {
        match self {
            Resolved::Unique(utc_ms) => utc_ms,
            Resolved::Gap { next_valid_utc_ms } => next_valid_utc_ms,
            Resolved::Ambiguous { earlier_utc_ms, .. } => earlier_utc_ms,
        }
    }
}

pub fn is_known_zone(rules: &(impl ZoneRules + ?Sized), zone: &str) -> bool {
    rules.offset_minutes(zone, 0).is_some()
}

/// The wall clock in `zone` at `utc_ms` (seconds dropped); None for an unknown zone.
pub fn to_local(rules: &(impl ZoneRules + ?Sized), zone: &str, utc_ms: i64) -> Option<LocalDateTime> {
    let offset = rules.offset_minutes(zone, utc_ms)?;
    Some(LocalDateTime::from_minutes_since_epoch(utc_ms.div_euclid(MS_PER_MINUTE) + i64::from(offset)))
}

/// Which instant(s) `local` names in `zone`; None for an unknown zone.
///
/// The offsets in force a day before and a day after the wall time (read as if
/// UTC) bracket any transition near it; each offset gives a candidate instant,
/// and a candidate counts when the zone really has that offset then. Two that
/// count are a repeat, none is a gap.
pub fn resolve_local(rules: &(impl ZoneRules + ?Sized), zone: &str, local: LocalDateTime) -> Option<Resolved> {
    let wall = local.to_minutes_since_epoch();
    let offset_at = |utc_minutes: i64| rules.offset_minutes(zone, utc_minutes * MS_PER_MINUTE).map(i64::from);
    let mut offsets = vec![offset_at(wall - MINUTES_PER_DAY)?, offset_at(wall + MINUTES_PER_DAY)?, offset_at(wall)?];
    // A candidate instant may itself reveal an offset the probes missed (two
    // transitions within a day); one more round settles it.
    for index in 0..offsets.len() {
        if let Some(offset) = offset_at(wall - offsets[index]) {
            offsets.push(offset);
        }
    }
    offsets.sort_unstable();
    offsets.dedup();
    let mut instants: Vec<i64> = offsets
        .iter()
        .map(|offset| wall - offset)
        .filter(|instant| offset_at(*instant) == Some(wall - instant))
        .collect();
    instants.sort_unstable();
    let to_ms = |minutes: i64| minutes * MS_PER_MINUTE;
    Some(match instants.as_slice() {
        [instant] => Resolved::Unique(to_ms(*instant)),
        [earlier, .., later] => Resolved::Ambiguous { earlier_utc_ms: to_ms(*earlier), later_utc_ms: to_ms(*later) },
        [] => {
            // The wall clock jumped over `wall`: find the first minute whose wall
            // time is at or past it. It lies between the candidates of the
            // largest and the smallest offset.
            let (smallest, largest) = (offsets[0], offsets[offsets.len() - 1]);
            let is_past_wall = |instant: i64| offset_at(instant).is_some_and(|offset| instant + offset >= wall);
            let (mut before, mut after) = (wall - largest, wall - smallest);
            while after - before > 1 {
                let middle = before + (after - before) / 2;
                if is_past_wall(middle) {
                    after = middle;
                } else {
                    before = middle;
                }
            }
            Resolved::Gap { next_valid_utc_ms: to_ms(after) }
        }
    })
}

/// `2026-11-23 09:00 Europe/Berlin (UTC+01:00)`, for listings; a zone the rules
/// do not know falls back to `2026-11-23 08:00 UTC`.
pub fn describe_local(rules: &(impl ZoneRules + ?Sized), zone: &str, utc_ms: i64) -> String {
    let (Some(offset), Some(local)) = (rules.offset_minutes(zone, utc_ms), to_local(rules, zone, utc_ms)) else {
        return crate::time::format_utc(utc_ms);
    };
    let sign = if offset < 0 { '-' } else { '+' };
    let magnitude = offset.unsigned_abs();
    format!("{local} {zone} (UTC{sign}{:02}:{:02})", magnitude / 60, magnitude % 60)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedules::civil::parse_local;
    use crate::schedules::test_zones::{show, utc, ChronoZones};

    fn local(text: &str) -> LocalDateTime {
        parse_local(text).expect("test times are valid")
    }

    enum Expect {
        Unique(&'static str),
        Gap(&'static str),
        Ambiguous(&'static str, &'static str),
    }

    #[test]
    fn wall_times_resolve_around_transitions() {
        use Expect::*;
        let cases = [
            ("Europe/Berlin", "2026-03-29 01:59", Unique("2026-03-29 00:59")),
            ("Europe/Berlin", "2026-03-29 02:00", Gap("2026-03-29 01:00")),
            ("Europe/Berlin", "2026-03-29 02:30", Gap("2026-03-29 01:00")),
            ("Europe/Berlin", "2026-03-29 02:59", Gap("2026-03-29 01:00")),
            ("Europe/Berlin", "2026-03-29 03:00", Unique("2026-03-29 01:00")),
            ("Europe/Berlin", "2026-10-25 01:59", Unique("2026-10-24 23:59")),
            ("Europe/Berlin", "2026-10-25 02:00", Ambiguous("2026-10-25 00:00", "2026-10-25 01:00")),
            ("Europe/Berlin", "2026-10-25 02:30", Ambiguous("2026-10-25 00:30", "2026-10-25 01:30")),
            ("Europe/Berlin", "2026-10-25 03:00", Unique("2026-10-25 02:00")),
            ("Europe/Berlin", "2026-07-01 12:00", Unique("2026-07-01 10:00")),
            ("America/New_York", "2026-03-08 01:59", Unique("2026-03-08 06:59")),
            ("America/New_York", "2026-03-08 02:30", Gap("2026-03-08 07:00")),
            ("America/New_York", "2026-03-08 03:00", Unique("2026-03-08 07:00")),
            ("America/New_York", "2026-11-01 00:59", Unique("2026-11-01 04:59")),
            ("America/New_York", "2026-11-01 01:00", Ambiguous("2026-11-01 05:00", "2026-11-01 06:00")),
            ("America/New_York", "2026-11-01 01:30", Ambiguous("2026-11-01 05:30", "2026-11-01 06:30")),
            ("America/New_York", "2026-11-01 02:00", Unique("2026-11-01 07:00")),
            // A half-hour shift: Lord Howe Island springs 02:00 → 02:30 and falls 02:00 → 01:30.
            ("Australia/Lord_Howe", "2026-10-04 02:15", Gap("2026-10-03 15:30")),
            ("Australia/Lord_Howe", "2026-04-05 01:45", Ambiguous("2026-04-04 14:45", "2026-04-04 15:15")),
            // Samoa skipped 2011-12-30 whole, moving across the date line.
            ("Pacific/Apia", "2011-12-30 12:00", Gap("2011-12-30 10:00")),
            ("Asia/Kolkata", "2026-01-01 05:30", Unique("2026-01-01 00:00")),
            ("UTC", "2026-03-29 02:30", Unique("2026-03-29 02:30")),
        ];
        for (zone, wall, expected) in cases {
            let expected = match expected {
                Unique(instant) => Resolved::Unique(utc(instant)),
                Gap(instant) => Resolved::Gap { next_valid_utc_ms: utc(instant) },
                Ambiguous(earlier, later) => {
                    Resolved::Ambiguous { earlier_utc_ms: utc(earlier), later_utc_ms: utc(later) }
                }
            };
            assert_eq!(resolve_local(&ChronoZones, zone, local(wall)), Some(expected), "{wall} in {zone}");
        }
    }

    #[test]
    fn instants_read_on_the_wall_clock() {
        let cases = [
            ("Europe/Berlin", "2026-03-29 00:59", "2026-03-29 01:59"),
            ("Europe/Berlin", "2026-03-29 01:00", "2026-03-29 03:00"),
            ("Europe/Berlin", "2026-10-25 00:30", "2026-10-25 02:30"),
            ("Europe/Berlin", "2026-10-25 01:30", "2026-10-25 02:30"),
            ("America/New_York", "2026-11-01 05:30", "2026-11-01 01:30"),
            ("America/New_York", "2026-11-01 06:30", "2026-11-01 01:30"),
            ("Asia/Kolkata", "2026-01-01 00:00", "2026-01-01 05:30"),
        ];
        for (zone, instant, wall) in cases {
            assert_eq!(to_local(&ChronoZones, zone, utc(instant)), Some(local(wall)), "{instant} in {zone}");
        }
        // Seconds within the minute read as that minute, before the epoch too.
        assert_eq!(to_local(&Utc, "UTC", -1), Some(local("1969-12-31 23:59")));
        assert_eq!(to_local(&Utc, "UTC", utc("2026-01-01 10:00") + 59_999), Some(local("2026-01-01 10:00")));
    }

    #[test]
    fn unknown_zones_are_none() {
        for zone in ["Mars/Olympus", "", "europe/berlin_"] {
            assert!(!is_known_zone(&ChronoZones, zone), "{zone:?}");
            assert_eq!(to_local(&ChronoZones, zone, 0), None);
            assert_eq!(resolve_local(&ChronoZones, zone, local("2026-01-01 00:00")), None);
        }
        assert!(is_known_zone(&ChronoZones, "America/New_York"));
        assert!(is_known_zone(&Utc, "UTC") && is_known_zone(&Utc, "etc/utc") && is_known_zone(&Utc, "GMT"));
        assert!(!is_known_zone(&Utc, "Europe/Berlin"));
    }

    #[test]
    fn listings_show_wall_clock_zone_and_offset() {
        let cases = [
            ("Europe/Berlin", "2026-11-23 08:00", "2026-11-23 09:00 Europe/Berlin (UTC+01:00)"),
            ("Europe/Berlin", "2026-07-01 08:00", "2026-07-01 10:00 Europe/Berlin (UTC+02:00)"),
            ("America/New_York", "2026-11-01 06:30", "2026-11-01 01:30 America/New_York (UTC-05:00)"),
            ("Asia/Kolkata", "2026-01-01 00:00", "2026-01-01 05:30 Asia/Kolkata (UTC+05:30)"),
            ("America/St_Johns", "2026-01-01 12:00", "2026-01-01 08:30 America/St_Johns (UTC-03:30)"),
            ("UTC", "2026-01-01 12:00", "2026-01-01 12:00 UTC (UTC+00:00)"),
            ("Mars/Olympus", "2026-01-01 12:00", "2026-01-01 12:00 UTC"),
        ];
        for (zone, instant, expected) in cases {
            assert_eq!(describe_local(&ChronoZones, zone, utc(instant)), expected, "{} in {zone}", show(utc(instant)));
        }
    }

    #[test]
    fn a_job_runs_at_the_end_of_a_gap_and_once_in_a_repeat() {
        assert_eq!(Resolved::Unique(5).run_at_ms(), 5);
        assert_eq!(Resolved::Gap { next_valid_utc_ms: 7 }.run_at_ms(), 7);
        assert_eq!(Resolved::Ambiguous { earlier_utc_ms: 1, later_utc_ms: 2 }.run_at_ms(), 1);
    }
}
