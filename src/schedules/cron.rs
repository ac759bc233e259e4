//! Standard five-field cron (minute hour day-of-month month day-of-week) read
//! into bitsets, matched against wall-clock minutes, and searched forward a day
//! at a time so that a rare expression costs a few thousand steps, not millions.
//!
//! The day rule is Vixie cron's, which every common cron follows: when both day
//! fields are restricted, a day matches if EITHER matches (`0 9 1 * mon` is the
//! 1st of the month and every Monday). A field counts as unrestricted when it
//! starts with `*`, so `*/2` in day-of-month is still combined with AND.

//! Why this parser is ours (checked November 2026): `cron` (zslayton) wants a
//! seconds field and ANDs the two day fields (its search walks days of month,
//! then requires the weekday); `saffron` is Quartz-like, had one release
//! (0.1.0, 2021) and iterates in UTC; `croner` ORs the day fields but counts
//! only a literal `*` as unrestricted, so `0 9 */2 * mon` would run every
//! Monday where Vixie cron runs on odd days that are Mondays. All three search
//! through a chrono `TimeZone`, where ours needs the runtime's `Intl` offsets
//! and Vixie's rule for repeated hours. Calendar arithmetic is chrono's
//! (through [`LocalDateTime`]).

use chrono::{Datelike, Days};

use super::civil::{days_in_month, weekday_of, LocalDateTime};
use super::ScheduleError;

/// How far [`CronExpr::next_after`] looks before it gives up. Eight years, not
/// five: `0 0 29 2 *` waits seven years across a century that skips its leap day
/// (2096 → 2104), and an expression that never matches (`0 0 30 2 *`) still
/// ends after about three thousand cheap steps.
pub const MAX_SEARCH_YEARS: i64 = 8;

const MONTH_NAMES: [&str; 12] = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
const WEEKDAY_NAMES: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

/// The nicknames and the five fields each stands for.
const ALIASES: [(&str, &str); 7] = [
    ("@yearly", "0 0 1 1 *"),
    ("@annually", "0 0 1 1 *"),
    ("@monthly", "0 0 1 * *"),
    ("@weekly", "0 0 * * 0"),
    ("@daily", "0 0 * * *"),
    ("@midnight", "0 0 * * *"),
    ("@hourly", "0 * * * *"),
];

/// One of the five fields: its name for errors, its range, and its names.
struct Field {
    name: &'static str,
    min: u32,
    max: u32,
    names: &'static [&'static str],
    /// The first name stands for this number (jan = 1, sun = 0).
    first_name_value: u32,
}

const MINUTE: Field = Field { name: "minute", min: 0, max: 59, names: &[], first_name_value: 0 };
const HOUR: Field = Field { name: "hour", min: 0, max: 23, names: &[], first_name_value: 0 };
const DAY_OF_MONTH: Field = Field { name: "day of month", min: 1, max: 31, names: &[], first_name_value: 0 };
const MONTH: Field = Field { name: "month", min: 1, max: 12, names: &MONTH_NAMES, first_name_value: 1 };
/// 7 is Sunday too; it is folded onto 0 when the bits are set.
const DAY_OF_WEEK: Field = Field { name: "day of week", min: 0, max: 7, names: &WEEKDAY_NAMES, first_name_value: 0 };

/// A parsed cron expression. Bit `n` of a field is set when value `n` matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronExpr {
    minutes: u64,
    hours: u64,
    days_of_month: u64,
    months: u64,
    days_of_week: u64,
    is_day_of_month_restricted: bool,
    is_day_of_week_restricted: bool,
    has_wildcard_time: bool,
}

impl CronExpr {
    /// Reads five fields or an `@` nickname. Lists (`1,15`), ranges (`1-5`),
    /// steps (`*/15`, `10-50/20`, `5/15` = from 5 to the end), month names
    /// (`jan`) and weekday names (`mon`) in any case; 7 is Sunday as well as 0.
    pub fn parse(expression: &str) -> Result<CronExpr, ScheduleError> {
        let bad = |reason: String| ScheduleError::BadCron { expression: expression.trim().to_string(), reason };
        let trimmed = expression.trim();
        let fields_text = if trimmed.starts_with('@') {
            ALIASES
                .iter()
                .find(|(alias, _)| alias.eq_ignore_ascii_case(trimmed))
                .map(|(_, fields)| *fields)
                .ok_or_else(|| bad("unknown nickname (use @hourly, @daily, @weekly, @monthly or @yearly)".into()))?
        } else {
            trimmed
        };
        let fields: Vec<&str> = fields_text.split_whitespace().collect();
        let [minute, hour, day_of_month, month, day_of_week] = fields.as_slice() else {
            return Err(bad(format!(
                "expected 5 fields (minute hour day-of-month month day-of-week), found {}",
                fields.len()
            )));
        };
        let mut days_of_week = parse_field(day_of_week, &DAY_OF_WEEK).map_err(bad)?;
        if days_of_week & (1 << 7) != 0 {
            days_of_week = (days_of_week & !(1 << 7)) | 1;
        }
        Ok(CronExpr {
            minutes: parse_field(minute, &MINUTE).map_err(bad)?,
            hours: parse_field(hour, &HOUR).map_err(bad)?,
            days_of_month: parse_field(day_of_month, &DAY_OF_MONTH).map_err(bad)?,
            months: parse_field(month, &MONTH).map_err(bad)?,
            days_of_week,
            is_day_of_month_restricted: !day_of_month.starts_with('*'),
            is_day_of_week_restricted: !day_of_week.starts_with('*'),
            has_wildcard_time: minute.starts_with('*') || hour.starts_with('*'),
        })
    }

    /// Whether the minute or the hour field starts with `*` (`*/15 * * * *`,
    /// `0 * * * *`). Such a job follows real time through an hour the clocks
    /// repeat, running in both showings, while a job at fixed times
    /// (`30 1 * * *`) runs once: Vixie cron's rule for the end of DST.
    pub fn has_wildcard_time(&self) -> bool {
        self.has_wildcard_time
    }

    /// Whether the expression fires at this wall-clock minute.
    pub fn matches(&self, local: &LocalDateTime) -> bool {
        has_bit(self.minutes, local.minute.into())
            && has_bit(self.hours, local.hour.into())
            && has_bit(self.months, local.month.into())
            && self.matches_day(local.day, local.weekday())
    }

    /// The first matching wall-clock minute strictly after `local`, or None when
    /// none comes within [`MAX_SEARCH_YEARS`].
    pub fn next_after(&self, local: &LocalDateTime) -> Option<LocalDateTime> {
        let start = local.plus_minutes(1);
        let mut date = start.date();
        let last_day = date.checked_add_days(Days::new(MAX_SEARCH_YEARS as u64 * 366))?;
        // Only the first day searched starts mid-day.
        let (mut from_hour, mut from_minute) = (u32::from(start.hour), u32::from(start.minute));
        while date <= last_day {
            // chrono's month is 1..=12 and day 1..=31: both fit a u8.
            let (month, day) = (date.month() as u8, date.day() as u8);
            if !has_bit(self.months, month.into()) {
                // Skip the rest of this month.
                let rest = days_in_month(date.year(), month) - day;
                date = date.checked_add_days(Days::new(u64::from(rest) + 1))?;
                (from_hour, from_minute) = (0, 0);
                continue;
            }
            if self.matches_day(day, weekday_of(date)) {
                if let Some((hour, minute)) = self.first_time_from(from_hour, from_minute) {
                    return Some(LocalDateTime::on(date, hour, minute));
                }
            }
            date = date.succ_opt()?;
            (from_hour, from_minute) = (0, 0);
        }
        None
    }

    fn matches_day(&self, day: u8, weekday: u8) -> bool {
        let by_day_of_month = has_bit(self.days_of_month, day.into());
        let by_day_of_week = has_bit(self.days_of_week, weekday.into());
        if self.is_day_of_month_restricted && self.is_day_of_week_restricted {
            by_day_of_month || by_day_of_week
        } else {
            by_day_of_month && by_day_of_week
        }
    }

    /// The first matching (hour, minute) at or after `from_hour:from_minute` on a matching day.
    fn first_time_from(&self, from_hour: u32, from_minute: u32) -> Option<(u8, u8)> {
        (from_hour..24).filter(|hour| has_bit(self.hours, *hour)).find_map(|hour| {
            let from = if hour == from_hour { from_minute } else { 0 };
            let later_minutes = self.minutes >> from;
            // Minutes are 0..60 and hours 0..24, so both fit a u8.
            (later_minutes != 0).then(|| (hour as u8, (from + later_minutes.trailing_zeros()) as u8))
        })
    }
}

fn has_bit(bits: u64, value: u32) -> bool {
    value < 64 && bits & (1 << value) != 0
}

/// One field's bits, or why it cannot be read.
fn parse_field(text: &str, field: &Field) -> Result<u64, String> {
    let mut bits = 0u64;
    for item in text.split(',') {
        let (base, step) = match item.split_once('/') {
            Some((base, step)) => {
                let step: u32 = step
                    .parse()
                    .ok()
                    .filter(|step| *step >= 1)
                    .ok_or_else(|| format!("{}: step `{step}` must be a whole number of at least 1", field.name))?;
                (base, Some(step))
            }
            None => (item, None),
        };
        let (low, high) = if base == "*" {
            (field.min, field.max)
        } else if let Some((low, high)) = base.split_once('-') {
            let (low, high) = (value(low, field)?, value(high, field)?);
            if low > high {
                return Err(format!("{}: range `{base}` runs backwards", field.name));
            }
            (low, high)
        } else {
            let low = value(base, field)?;
            // `5/15` means from 5 to the end of the range in steps of 15.
            (low, if step.is_some() { field.max } else { low })
        };
        for number in (low..=high).step_by(step.unwrap_or(1) as usize) {
            bits |= 1 << number;
        }
    }
    Ok(bits)
}

/// A number or a name in the field's range.
fn value(token: &str, field: &Field) -> Result<u32, String> {
    let number = if !token.is_empty() && token.bytes().all(|byte| byte.is_ascii_digit()) {
        token.parse::<u32>().ok()
    } else {
        field
            .names
            .iter()
            .position(|name| name.eq_ignore_ascii_case(token))
            .map(|index| index as u32 + field.first_name_value)
    };
    match number {
        Some(number) if (field.min..=field.max).contains(&number) => Ok(number),
        Some(_) => Err(format!("{}: `{token}` is outside {}-{}", field.name, field.min, field.max)),
        None if token.is_empty() => Err(format!("{}: empty value", field.name)),
        None => Err(format!("{}: `{token}` is not a number or a name", field.name)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedules::civil::parse_local;

    fn local(text: &str) -> LocalDateTime {
        parse_local(text).expect("test times are valid")
    }

    fn cron(expression: &str) -> CronExpr {
        CronExpr::parse(expression).unwrap_or_else(|error| panic!("{error}"))
    }

    /// Each case: expression, a starting minute, the next few matches after it.
    #[test]
    fn next_matches_follow_the_fields() {
        let cases: &[(&str, &str, &[&str])] = &[
            ("* * * * *", "2026-01-01 00:00", &["2026-01-01 00:01", "2026-01-01 00:02"]),
            ("0 * * * *", "2026-01-01 00:00", &["2026-01-01 01:00", "2026-01-01 02:00"]),
            ("@hourly", "2026-01-01 23:59", &["2026-01-02 00:00", "2026-01-02 01:00"]),
            (
                "*/15 * * * *",
                "2026-01-01 10:07",
                &["2026-01-01 10:15", "2026-01-01 10:30", "2026-01-01 10:45", "2026-01-01 11:00"],
            ),
            ("10-50/20 9 * * *", "2026-01-01 09:10", &["2026-01-01 09:30", "2026-01-01 09:50", "2026-01-02 09:10"]),
            (
                "5/20 * * * *",
                "2026-01-01 09:00",
                &["2026-01-01 09:05", "2026-01-01 09:25", "2026-01-01 09:45", "2026-01-01 10:05"],
            ),
            ("0 9,17 * * *", "2026-01-01 12:00", &["2026-01-01 17:00", "2026-01-02 09:00"]),
            ("30 8 * * mon-fri", "2026-01-02 09:00", &["2026-01-05 08:30", "2026-01-06 08:30"]), // Fri → Mon
            ("0 0 * * SAT,sun", "2026-01-01 00:00", &["2026-01-03 00:00", "2026-01-04 00:00", "2026-01-10 00:00"]),
            ("0 12 * * 7", "2026-01-01 00:00", &["2026-01-04 12:00", "2026-01-11 12:00"]), // 7 = Sunday
            (
                "0 12 * * 5-7",
                "2026-01-01 00:00",
                &["2026-01-02 12:00", "2026-01-03 12:00", "2026-01-04 12:00", "2026-01-09 12:00"],
            ),
            ("0 0 1 jan-mar/2 *", "2026-01-01 00:00", &["2026-03-01 00:00", "2027-01-01 00:00"]),
            (
                "0 0 31 * *",
                "2026-01-31 00:00",
                &["2026-03-31 00:00", "2026-05-31 00:00", "2026-07-31 00:00", "2026-08-31 00:00"],
            ),
            ("0 0 29 2 *", "2026-01-01 00:00", &["2028-02-29 00:00", "2032-02-29 00:00"]),
            ("0 0 29 2 *", "2097-01-01 00:00", &["2104-02-29 00:00"]),
            // Both day fields restricted: the 13th (a Tuesday) OR a Friday.
            (
                "0 9 13 * fri",
                "2026-01-01 00:00",
                &["2026-01-02 09:00", "2026-01-09 09:00", "2026-01-13 09:00", "2026-01-16 09:00"],
            ),
            // A star-led day-of-month keeps AND: odd days that are Mondays.
            ("0 9 */2 * mon", "2026-01-01 00:00", &["2026-01-05 09:00", "2026-01-19 09:00", "2026-02-09 09:00"]),
            ("@weekly", "2026-01-01 00:00", &["2026-01-04 00:00", "2026-01-11 00:00"]),
            ("@monthly", "2026-01-15 00:00", &["2026-02-01 00:00", "2026-03-01 00:00"]),
            ("@YEARLY", "2026-01-01 00:00", &["2027-01-01 00:00"]),
            ("@annually", "2026-06-01 00:00", &["2027-01-01 00:00"]),
            ("@daily", "2026-12-31 23:00", &["2027-01-01 00:00"]),
            ("@midnight", "2026-12-31 00:00", &["2027-01-01 00:00"]),
            ("59 23 31 dec *", "2026-12-31 23:59", &["2027-12-31 23:59"]),
            ("0 0 30 2 *", "2026-01-01 00:00", &[]),
        ];
        for (expression, start, expected) in cases {
            let parsed = cron(expression);
            let mut found = Vec::new();
            let mut at = local(start);
            while found.len() < expected.len().max(1) {
                let Some(next) = parsed.next_after(&at) else { break };
                assert!(parsed.matches(&next), "{expression}: {next} must match");
                found.push(next.to_string());
                at = next;
            }
            found.truncate(expected.len());
            assert_eq!(found, *expected, "{expression} after {start}");
        }
    }

    /// The search agrees with a minute-by-minute scan of `matches`.
    #[test]
    fn the_search_skips_only_what_cannot_match() {
        let expressions = ["7,8 */5 1-3,15 * *", "0 0 13 * 5", "*/7 3-4 * feb,mar tue", "59 23 * * *", "0 0 1 * *"];
        for expression in expressions {
            let parsed = cron(expression);
            let mut at = local("2026-01-30 22:00");
            for _ in 0..20 {
                let next = parsed.next_after(&at).expect("these expressions match within a year");
                let mut minute = at.plus_minutes(1);
                while minute < next {
                    assert!(!parsed.matches(&minute), "{expression}: {minute} was skipped but matches");
                    minute = minute.plus_minutes(1);
                }
                at = next;
            }
        }
    }

    #[test]
    fn bad_expressions_say_why() {
        let cases = [
            ("", "expected 5 fields"),
            ("* * * *", "expected 5 fields"),
            ("* * * * * *", "expected 5 fields"),
            ("60 * * * *", "minute: `60` is outside 0-59"),
            ("* 24 * * *", "hour: `24` is outside 0-23"),
            ("* * 0 * *", "day of month: `0` is outside 1-31"),
            ("* * * 13 *", "month: `13` is outside 1-12"),
            ("* * * * 8", "day of week: `8` is outside 0-7"),
            ("* * * * mon-sun", "day of week: range `mon-sun` runs backwards"),
            ("5-1 * * * *", "minute: range `5-1` runs backwards"),
            ("*/0 * * * *", "minute: step `0` must be"),
            ("*/x * * * *", "minute: step `x` must be"),
            ("1,,2 * * * *", "minute: empty value"),
            ("* * * foo *", "month: `foo` is not a number or a name"),
            ("* * * mon *", "month: `mon` is not a number or a name"),
            ("* * * * jan", "day of week: `jan` is not a number or a name"),
            ("-1 * * * *", "minute: empty value"),
            ("@reboot", "unknown nickname"),
        ];
        for (expression, reason) in cases {
            match CronExpr::parse(expression) {
                Err(ScheduleError::BadCron { reason: found, .. }) => {
                    assert!(found.starts_with(reason), "{expression:?}: {found:?} should start with {reason:?}")
                }
                other => panic!("{expression:?}: expected a bad cron error, got {other:?}"),
            }
        }
    }

    #[test]
    fn sunday_is_zero_and_seven() {
        assert_eq!(cron("0 0 * * 0"), cron("0 0 * * 7"));
        assert_eq!(cron("0 0 * * sun"), cron("0 0 * * SUN"));
        assert_eq!(cron("@daily"), cron("0 0 * * *"));
    }

    #[test]
    fn star_led_time_fields_make_a_wildcard_job() {
        let cases = [
            ("*/15 * * * *", true),
            ("0 * * * *", true),
            ("* 1 * * *", true),
            ("@hourly", true),
            ("30 1 * * *", false),
            ("0 9-17 * * *", false),
            ("0,30 */2 * * *", true),
            ("@daily", false),
        ];
        for (expression, expected) in cases {
            assert_eq!(cron(expression).has_wildcard_time(), expected, "{expression}");
        }
    }
}
