//! Wall-clock minutes, with chrono doing the calendar arithmetic (no tz
//! database: the zone module maps a wall clock to instants through the
//! runtime's `Intl` data).
//!
//! A [`LocalDateTime`] names a minute on a wall clock, in no zone. Counting
//! minutes "as if UTC" gives every wall-clock minute a number, which is what
//! cron search and offsets need.

use chrono::{Datelike, NaiveDate};

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
        let date = NaiveDate::from_ymd_opt(year, month.into(), day.into())?;
        (hour < 24 && minute < 60).then(|| LocalDateTime::on(date, hour, minute))
    }

    /// `hour:minute` on `date` (hour < 24 and minute < 60 are the caller's to keep).
    pub fn on(date: NaiveDate, hour: u8, minute: u8) -> LocalDateTime {
        // chrono's month is 1..=12 and day 1..=31: both fit a u8.
        LocalDateTime { year: date.year(), month: date.month() as u8, day: date.day() as u8, hour, minute }
    }

    /// The calendar date. Every constructor checks it; a struct literal that
    /// skipped the check reads as 1970-01-01 rather than panicking.
    pub fn date(&self) -> NaiveDate {
        NaiveDate::from_ymd_opt(self.year, self.month.into(), self.day.into()).unwrap_or_default()
    }

    /// Minutes since 1970-01-01 00:00 on the same wall clock, as if it were UTC.
    pub fn to_minutes_since_epoch(&self) -> i64 {
        self.days_since_epoch() * MINUTES_PER_DAY + i64::from(self.minute_of_day())
    }

    /// The inverse of [`LocalDateTime::to_minutes_since_epoch`] (within
    /// chrono's ±262,000 years; beyond, the epoch's date).
    pub fn from_minutes_since_epoch(minutes: i64) -> LocalDateTime {
        let (days, minute_of_day) = (minutes.div_euclid(MINUTES_PER_DAY), minutes.rem_euclid(MINUTES_PER_DAY));
        let date = i32::try_from(days).ok().and_then(NaiveDate::from_epoch_days).unwrap_or_default();
        // minute_of_day < 1440, so both parts fit a u8.
        LocalDateTime::on(date, (minute_of_day / 60) as u8, (minute_of_day % 60) as u8)
    }

    /// Days since 1970-01-01 of this date.
    pub fn days_since_epoch(&self) -> i64 {
        i64::from(self.date().to_epoch_days())
    }

    /// 0 = Sunday … 6 = Saturday, as cron counts.
    pub fn weekday(&self) -> u8 {
        weekday_of(self.date())
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

/// Days in `month` (1..=12) of `year`; 0 for a month that does not exist.
pub fn days_in_month(year: i32, month: u8) -> u8 {
    NaiveDate::from_ymd_opt(year, month.into(), 1).map_or(0, |first| first.num_days_in_month())
}

/// 0 = Sunday … 6 = Saturday, as cron counts.
pub fn weekday_of(date: NaiveDate) -> u8 {
    // num_days_from_sunday is 0..7.
    date.weekday().num_days_from_sunday() as u8
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
            let local = at(year, month, day, 0, 0);
            assert_eq!(local.days_since_epoch(), days, "{year}-{month}-{day}");
            assert_eq!(LocalDateTime::from_minutes_since_epoch(days * MINUTES_PER_DAY), local, "{days}");
            assert_eq!(local.weekday(), weekday, "{year}-{month}-{day} weekday");
        }
        // Every day for 500 years round-trips and follows the one before.
        let start = at(1900, 1, 1, 0, 0).days_since_epoch();
        for days in start..start + 500 * 366 {
            let local = LocalDateTime::from_minutes_since_epoch(days * MINUTES_PER_DAY);
            assert_eq!(local.days_since_epoch(), days);
            assert!(local.day >= 1 && local.day <= days_in_month(local.year, local.month));
        }
    }

    #[test]
    fn months_have_their_lengths() {
        let cases =
            [(2024, 2, 29), (2026, 2, 28), (2000, 2, 29), (2100, 2, 28), (2026, 4, 30), (2026, 12, 31), (2026, 13, 0)];
        for (year, month, days) in cases {
            assert_eq!(days_in_month(year, month), days, "{year}-{month}");
        }
        assert_eq!(days_in_month(2026, 0), 0);
    }

    #[test]
    fn impossible_dates_are_refused() {
        assert_eq!(LocalDateTime::new(2026, 2, 29, 9, 0), None);
        assert_eq!(LocalDateTime::new(2026, 4, 31, 9, 0), None);
        assert_eq!(LocalDateTime::new(2026, 13, 1, 9, 0), None);
        assert_eq!(LocalDateTime::new(2024, 2, 29, 23, 59), Some(at(2024, 2, 29, 23, 59)));
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
