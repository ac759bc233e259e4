//! Calendar arithmetic on wall-clock minutes, without a date crate (the Worker
//! has only the JS clock, and a date crate would weigh on the bundle).
//!
//! A [`LocalDateTime`] names a minute on a wall clock, in no zone; the zone
//! module maps it to instants. Counting minutes "as if UTC" gives every wall
//! clock minute a number, which is what cron search and offsets need.

use super::ScheduleError;

pub const MINUTES_PER_DAY: i64 = 24 * 60;
pub const MS_PER_MINUTE: i64 = 60_000;

/// A wall-clock minute. Fields in this order make the derived `Ord` chronological.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LocalDateTime {
    pub year: i32,
    pub month: u8,
    pub day: u8,
    pub hour: u8,
    pub minute: u8,
}

impl LocalDateTime {
    /// A checked wall-clock minute: None for a day the month does not have, an
    /// hour past 23 or a minute past 59.
    pub fn new(year: i32, month: u8, day: u8, hour: u8, minute: u8) -> Option<LocalDateTime> {
        let is_valid =
            (1..=12).contains(&month) && day >= 1 && day <= days_in_month(year, month) && hour < 24 && minute < 60;
        is_valid.then_some(LocalDateTime { year, month, day, hour, minute })
    }

    /// Minutes since 1970-01-01 00:00 on the same wall clock, as if it were UTC.
    pub fn to_minutes_since_epoch(&self) -> i64 {
        days_from_civil(self.year, self.month, self.day) * MINUTES_PER_DAY
            + i64::from(self.hour) * 60
            + i64::from(self.minute)
    }

    /// The inverse of [`LocalDateTime::to_minutes_since_epoch`].
    pub fn from_minutes_since_epoch(minutes: i64) -> LocalDateTime {
        let (days, minute_of_day) = (minutes.div_euclid(MINUTES_PER_DAY), minutes.rem_euclid(MINUTES_PER_DAY));
        let (year, month, day) = civil_from_days(days);
        // minute_of_day < 1440, so both parts fit a u8.
        LocalDateTime { year, month, day, hour: (minute_of_day / 60) as u8, minute: (minute_of_day % 60) as u8 }
    }

    /// Days since 1970-01-01 of this date.
    pub fn days_since_epoch(&self) -> i64 {
        days_from_civil(self.year, self.month, self.day)
    }

    /// 0 = Sunday … 6 = Saturday, as cron counts.
    pub fn weekday(&self) -> u8 {
        weekday_of_days(self.days_since_epoch())
    }

    /// The minute of the day, 0..1440.
    pub fn minute_of_day(&self) -> u16 {
        u16::from(self.hour) * 60 + u16::from(self.minute)
    }

    /// This wall-clock minute plus `minutes` (may be negative).
    pub fn plus_minutes(&self, minutes: i64) -> LocalDateTime {
        LocalDateTime::from_minutes_since_epoch(self.to_minutes_since_epoch() + minutes)
    }
}

impl std::fmt::Display for LocalDateTime {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "{:04}-{:02}-{:02} {:02}:{:02}", self.year, self.month, self.day, self.hour, self.minute)
    }
}

pub fn is_leap_year(year: i32) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

/// Days in `month` (1..=12) of `year`; 0 for a month that does not exist.
pub fn days_in_month(year: i32, month: u8) -> u8 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap_year(year) => 29,
        2 => 28,
        _ => 0,
    }
}

/// Howard Hinnant's days-from-civil: (y, m, d) to days since 1970-01-01.
pub fn days_from_civil(year: i32, month: u8, day: u8) -> i64 {
    let year = i64::from(year) - i64::from(month <= 2);
    let era = year.div_euclid(400);
    let year_of_era = year.rem_euclid(400);
    let month_index = (i64::from(month) + 9) % 12; // March = 0
    let day_of_year = (153 * month_index + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// Howard Hinnant's civil-from-days: days since 1970-01-01 to (y, m, d).
pub fn civil_from_days(days: i64) -> (i32, u8, u8) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_index + 2) / 5 + 1) as u8;
    let month = if month_index < 10 { month_index + 3 } else { month_index - 9 } as u8;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year as i32, month, day)
}

/// 0 = Sunday for a count of days since 1970-01-01 (a Thursday).
pub fn weekday_of_days(days: i64) -> u8 {
    (days + 4).rem_euclid(7) as u8
}

/// Reads `YYYY-MM-DD HH:MM`, with `T` instead of the space and optional `:SS`.
/// Seconds are checked and dropped: schedules count whole minutes.
pub fn parse_local(text: &str) -> Result<LocalDateTime, ScheduleError> {
    let bad = || ScheduleError::BadLocalTime(text.to_string());
    let trimmed = text.trim();
    let (date, time) = trimmed.split_once(['T', 't', ' ']).ok_or_else(bad)?;
    let number = |part: &str, digits: usize| -> Result<u32, ScheduleError> {
        if part.len() == digits && part.bytes().all(|byte| byte.is_ascii_digit()) {
            part.parse().map_err(|_| bad())
        } else {
            Err(bad())
        }
    };
    let date_parts: Vec<&str> = date.split('-').collect();
    let time_parts: Vec<&str> = time.trim().split(':').collect();
    let ([year, month, day], [hour, minute, rest @ ..]) = (date_parts.as_slice(), time_parts.as_slice()) else {
        return Err(bad());
    };
    match rest {
        [] => {}
        [seconds] if number(seconds, 2)? < 60 => {}
        _ => return Err(bad()),
    }
    let year = number(year, 4)? as i32;
    let narrow = |value: u32| u8::try_from(value).map_err(|_| bad());
    let (month, day) = (narrow(number(month, 2)?)?, narrow(number(day, 2)?)?);
    let (hour, minute) = (narrow(number(hour, 2)?)?, narrow(number(minute, 2)?)?);
    LocalDateTime::new(year, month, day, hour, minute).ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(year: i32, month: u8, day: u8, hour: u8, minute: u8) -> LocalDateTime {
        LocalDateTime { year, month, day, hour, minute }
    }

    #[test]
    fn days_and_dates_round_trip() {
        let cases = [
            ((1970, 1, 1), 0, 4),
            ((1969, 12, 31), -1, 3),
            ((2000, 2, 29), 11_016, 2),
            ((2000, 3, 1), 11_017, 3),
            ((2026, 3, 29), 20_541, 0),
            ((2026, 11, 1), 20_758, 0),
            ((2100, 3, 1), 47_541, 1),
        ];
        for ((year, month, day), days, weekday) in cases {
            assert_eq!(days_from_civil(year, month, day), days, "{year}-{month}-{day}");
            assert_eq!(civil_from_days(days), (year, month, day), "{days}");
            assert_eq!(weekday_of_days(days), weekday, "{year}-{month}-{day} weekday");
        }
        // Every day for 500 years round-trips and follows the one before.
        let start = days_from_civil(1900, 1, 1);
        for days in start..start + 500 * 366 {
            let (year, month, day) = civil_from_days(days);
            assert_eq!(days_from_civil(year, month, day), days);
            assert!(day >= 1 && day <= days_in_month(year, month));
        }
    }

    #[test]
    fn months_have_their_lengths() {
        let cases =
            [(2024, 2, 29), (2026, 2, 28), (2000, 2, 29), (2100, 2, 28), (2026, 4, 30), (2026, 12, 31), (2026, 13, 0)];
        for (year, month, days) in cases {
            assert_eq!(days_in_month(year, month), days, "{year}-{month}");
        }
    }

    #[test]
    fn minutes_since_epoch_round_trip() {
        let cases = [(at(1970, 1, 1, 0, 0), 0), (at(1969, 12, 31, 23, 59), -1), (at(2026, 11, 23, 9, 0), 29_923_740)];
        for (local, minutes) in cases {
            assert_eq!(local.to_minutes_since_epoch(), minutes, "{local}");
            assert_eq!(LocalDateTime::from_minutes_since_epoch(minutes), local, "{minutes}");
        }
        assert_eq!(at(2024, 2, 28, 23, 30).plus_minutes(60), at(2024, 2, 29, 0, 30));
        assert_eq!(at(2026, 12, 31, 23, 59).plus_minutes(1), at(2027, 1, 1, 0, 0));
    }

    #[test]
    fn local_times_parse() {
        let cases: [(&str, Option<LocalDateTime>); 14] = [
            ("2026-11-23 09:00", Some(at(2026, 11, 23, 9, 0))),
            ("2026-11-23T09:00", Some(at(2026, 11, 23, 9, 0))),
            ("2026-11-23 09:00:59", Some(at(2026, 11, 23, 9, 0))),
            ("  2024-02-29 23:59 ", Some(at(2024, 2, 29, 23, 59))),
            ("2026-02-29 09:00", None),
            ("2026-11-23 24:00", None),
            ("2026-11-23 09:60", None),
            ("2026-11-23 09:00:60", None),
            ("2026-11-23 9:00", None),
            ("2026-11-23", None),
            ("2026-11-23 09:00Z", None),
            ("2026-11-23 09:00:00:00", None),
            ("+2026-11-23 09:00", None),
            ("", None),
        ];
        for (text, expected) in cases {
            match expected {
                Some(local) => assert_eq!(parse_local(text), Ok(local), "{text:?}"),
                None => assert_eq!(parse_local(text), Err(ScheduleError::BadLocalTime(text.into())), "{text:?}"),
            }
        }
    }
}
