//! Schedules: when a job runs next, as pure functions of plain data.
//!
//! A schedule is a [`plan::Plan`]: a recurrence (once, cron, or a fixed
//! interval) read in an IANA time zone, optionally limited to active hours of
//! the local day, an end instant and a number of runs. [`plan::next_run`] and
//! [`plan::catch_up`] answer what the channel object's alarm needs;
//! [`runs::claim`] says whether a job's next run may start (never while an
//! earlier run of it is unresolved). Nothing here reads a clock or storage.
//!
//! There is no tz database in this crate on purpose: offsets come through the
//! [`zone::ZoneRules`] trait, which the Worker answers from the runtime's own
//! `Intl` data and the tests from `chrono-tz`, so the bundle stays small.

pub mod civil;
pub mod cron;
pub mod limits;
pub mod plan;
pub mod runs;
pub mod zone;

#[cfg(test)]
mod test_zones;

use thiserror::Error;

pub use civil::{parse_local, LocalDateTime};
pub use cron::CronExpr;
pub use plan::{catch_up, next_run, once_at, validate, ActiveHours, CatchUp, Plan, Recurrence, MIN_INTERVAL_MS};
pub use runs::{claim, Claim, JobRuns};
pub use zone::{describe_local, is_known_zone, resolve_local, to_local, Resolved, Utc, ZoneRules};

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
