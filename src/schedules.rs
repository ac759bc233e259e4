//! Schedules: a person's recurring or one-off prompts. When one runs next is
//! pure functions of plain data (below); `store` keeps them in D1, `tools` is
//! the channel's `schedule` tool, `zones` reads offsets from `Intl`, `api` the
//! admin routes.
//!
//! A schedule is a [`plan::Plan`]: a recurrence (once, cron, or a fixed
//! interval) read in an IANA time zone, optionally limited to active hours of
//! the local day, an end instant and a number of runs. [`plan::next_run`] and
//! [`plan::catch_up`] answer what the channel object's alarm needs;
//! [`runs::claim`] says whether a schedule's next run may start (never while an
//! earlier run of it is unresolved). Nothing here reads a clock or storage.
//!
//! There is no tz database in this crate on purpose: offsets come through the
//! [`zone::ZoneRules`] trait, which the Worker answers from the runtime's own
//! `Intl` data and the tests from `chrono-tz`, so the bundle stays small.

pub mod arguments;
pub mod civil;
pub mod cron;
pub mod limits;
pub mod plan;
pub mod runs;
pub mod zone;

#[cfg(target_arch = "wasm32")]
pub mod api;
#[cfg(target_arch = "wasm32")]
pub mod store;
#[cfg(target_arch = "wasm32")]
pub mod tools;
#[cfg(target_arch = "wasm32")]
pub mod zones;

#[cfg(test)]
mod test_zones;

use thiserror::Error;

pub use civil::{parse_local, LocalDateTime};
pub use cron::CronExpr;
pub use plan::{catch_up, next_run, once_at, validate, ActiveHours, CatchUp, Plan, Recurrence, MIN_INTERVAL_MS};
pub use runs::{claim, Claim, JobRuns};
pub use zone::{describe_local, is_known_zone, resolve_local, to_local, Resolved, Utc, ZoneRules};

/// Characters in a job id: short enough to type, 36^6 (about 2 billion) of them.
pub const JOB_ID_CHARS: usize = 6;

/// A job id of [`JOB_ID_CHARS`] base-36 characters from random bits.
pub fn job_id(random: u128) -> String {
    let mut value = random;
    (0..JOB_ID_CHARS)
        .map(|_| {
            // value % 36 < 36, always a base-36 digit.
            let digit = char::from_digit((value % 36) as u32, 36).unwrap_or('0');
            value /= 36;
            digit
        })
        .collect()
}

/// Why a schedule cannot be read or computed. The messages are written for the
/// model and the admin API, which show them as they are.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ScheduleError {
    #[error("bad cron expression `{expression}`: {reason}")]
    BadCron { expression: String, reason: String },
    #[error("unknown time zone `{0}` (use an IANA name such as Europe/Berlin or UTC)")]
    UnknownZone(String),
    #[error("bad active hours `{0}` (use HH:MM-HH:MM, such as 09:00-17:00 or 22:00-06:00)")]
    BadActiveHours(String),
    #[error("an interval of {interval_ms} ms is too short (the minimum is {minimum_ms} ms)")]
    IntervalTooShort { interval_ms: i64, minimum_ms: i64 },
    #[error("bad local time `{0}` (use YYYY-MM-DD HH:MM)")]
    BadLocalTime(String),
    #[error("max_runs must be at least 1")]
    NoRunsAllowed,
}

#[cfg(test)]
mod tests {
    use super::job_id;

    #[test]
    fn job_ids_are_six_lowercase_base36_characters_of_the_random_bits() {
        assert_eq!(job_id(0), "000000");
        assert_eq!(job_id(35), "z00000");
        assert_eq!(job_id(36), "010000");
        assert_eq!(job_id(u128::MAX).len(), 6);
        let id = job_id(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef);
        assert!(id.chars().all(|c| c.is_ascii_digit() || c.is_ascii_lowercase()), "{id}");
        assert_ne!(job_id(1), job_id(2));
    }
}
