//! A schedule's plan and its next run: plain data in, an instant (or the end of
//! the plan) out. The channel object stores the plan, sets its alarm to
//! [`next_run`], and on a late alarm asks [`catch_up`] what fell due meanwhile.
//!
//! Rules, in the order they apply:
//! - `Once` runs at its instant, once.
//! - `Cron` runs at wall-clock times in the plan's zone. A time the clocks skip
//!   (spring forward) runs at the first instant after the skip; a fixed time
//!   the clocks show twice (fall back: `30 1 * * *` in New York) runs once, at
//!   the first showing. A job whose minute or hour field starts with `*`
//!   (`*/15 * * * *`, `@hourly`) follows real time instead and also runs in
//!   the repeated hour, as Vixie cron does, so it does not pause for an hour.
//! - `Every` runs on a fixed UTC grid: the previous run plus the interval, so
//!   the first run is the creation time plus the interval.
//! - Active hours (local) drop occurrences outside the window; the next one
//!   inside it runs. `Once` is not filtered: a single run at a named time is
//!   meant to happen.
//! - The plan is over after `end_at_ms` (a run exactly then still happens) or
//!   after `max_runs` runs.

use serde::{Deserialize, Serialize};

use super::civil::{LocalDateTime, MINUTES_PER_DAY, MS_PER_MINUTE};
use super::cron::{CronExpr, MAX_SEARCH_YEARS};
use super::zone::{is_known_zone, resolve_local, to_local, ZoneRules};
use super::{civil, ScheduleError};

/// The shortest `Every` interval a schedule may be created with. Enforced by
/// [`validate`] only, so tests and the e2e suite can compute with shorter ones.
pub const MIN_INTERVAL_MS: i64 = 60_000;

/// How many missed runs [`catch_up`] counts at most; past it the count says
/// "at least this many", and the search stays cheap after a long outage.
pub const MAX_MISSED_COUNTED: u32 = 10_000;

/// How far ahead a search for the next run looks before calling the plan over
/// (a cron whose times all fall outside the active hours never runs).
const SEARCH_HORIZON_MS: i64 = MAX_SEARCH_YEARS * 366 * MINUTES_PER_DAY * MS_PER_MINUTE;

/// Candidates a search may try, whatever the horizon. Skipping to the window's
/// next start costs at most about two candidates a day, so this is never the
/// limit that bites on a sane plan.
const MAX_SEARCH_STEPS: u32 = 100_000;

/// When a schedule recurs. Externally tagged in JSON (`{"cron": {"expression": …}}`),
/// as every enum that crosses JSON in this crate is, to keep serde's content
/// buffering out of the Worker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Recurrence {
    Once { at_utc_ms: i64 },
    Cron { expression: String },
    Every { interval_ms: i64 },
}

/// A window of the local day in which runs may happen: `start_minute` up to,
/// not including, `end_minute`. A start after the end wraps midnight
/// (22:00-06:00); an end of 1440 is midnight at the end of the day.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActiveHours {
    pub start_minute: u16,
    pub end_minute: u16,
}

impl ActiveHours {
    /// Reads `HH:MM-HH:MM` (`09:00-17:00`, `22:00-06:00`, `18:00-24:00`).
    pub fn parse(text: &str) -> Result<ActiveHours, ScheduleError> {
        let bad = || ScheduleError::BadActiveHours(text.to_string());
        let (start, end) = text.split_once('-').ok_or_else(bad)?;
        let minute_of_day = |part: &str| -> Option<u16> {
            let (hour, minute) = part.trim().split_once(':')?;
            let is_number =
                |digits: &str| (1..=2).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit());
            if !is_number(hour) || minute.len() != 2 || !is_number(minute) {
                return None;
            }
            let (hour, minute): (u16, u16) = (hour.parse().ok()?, minute.parse().ok()?);
            let is_valid = minute < 60 && (hour < 24 || (hour == 24 && minute == 0));
            is_valid.then_some(hour * 60 + minute)
        };
        let hours = ActiveHours {
            start_minute: minute_of_day(start).ok_or_else(bad)?,
            end_minute: minute_of_day(end).ok_or_else(bad)?,
        };
        hours.check().map_err(|_| bad())?;
        Ok(hours)
    }

    /// Whether a local minute of the day (0..1440) is inside the window.
    pub fn contains(&self, minute_of_day: u16) -> bool {
        if self.start_minute < self.end_minute {
            (self.start_minute..self.end_minute).contains(&minute_of_day)
        } else {
            minute_of_day >= self.start_minute || minute_of_day < self.end_minute
        }
    }

    /// The fields are public, so a window built by hand is checked before use:
    /// the start is a minute of the day, the end at most midnight, and they
    /// differ (an empty or whole-day window says nothing clear).
    fn check(&self) -> Result<(), ScheduleError> {
        let is_valid = self.start_minute < 1440 && self.end_minute <= 1440 && self.start_minute != self.end_minute;
        if is_valid {
            Ok(())
        } else {
            Err(ScheduleError::BadActiveHours(self.to_string()))
        }
    }

    /// The next local minute the window opens, from a wall time outside it.
    fn next_start(&self, outside: LocalDateTime) -> LocalDateTime {
        let days_ahead = i64::from(outside.minute_of_day() >= self.start_minute);
        let midnight = outside.to_minutes_since_epoch().div_euclid(MINUTES_PER_DAY) * MINUTES_PER_DAY;
        LocalDateTime::from_minutes_since_epoch(midnight + days_ahead * MINUTES_PER_DAY + i64::from(self.start_minute))
    }
}

impl std::fmt::Display for ActiveHours {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (start, end) = (self.start_minute, self.end_minute);
        write!(formatter, "{:02}:{:02}-{:02}:{:02}", start / 60, start % 60, end / 60, end % 60)
    }
}

/// A schedule's timing, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    pub recurrence: Recurrence,
    /// IANA zone the cron times and active hours are read in.
    pub zone: String,
    pub active_hours: Option<ActiveHours>,
    pub end_at_ms: Option<i64>,
    pub max_runs: Option<u32>,
}

/// What a late alarm finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CatchUp {
    /// Runs that fell due after the one that runs now, up to the moment of the
    /// alarm (at most [`MAX_MISSED_COUNTED`]).
    pub missed: u32,
    /// When to run next, or None when the plan is over.
    pub next_after_now: Option<i64>,
}

/// The product rules for creating a schedule, beyond what [`next_run`] needs:
/// a known zone, a readable cron, an interval of at least `min_interval_ms`
/// ([`MIN_INTERVAL_MS`] unless configured), a sound window, and at least one
/// run allowed. Whether the first run is still ahead is the caller's question
/// ([`next_run`] from now).
pub fn validate(plan: &Plan, rules: &(impl ZoneRules + ?Sized), min_interval_ms: i64) -> Result<(), ScheduleError> {
    Compiled::new(plan, rules)?;
    match plan.recurrence {
        Recurrence::Every { interval_ms } if interval_ms < min_interval_ms => {
            return Err(ScheduleError::IntervalTooShort { interval_ms, minimum_ms: min_interval_ms });
        }
        _ => {}
    }
    if plan.max_runs == Some(0) {
        return Err(ScheduleError::NoRunsAllowed);
    }
    Ok(())
}

/// The first run strictly after `after_utc_ms` given `runs_done`, or None when
/// the plan is over.
///
/// For `Every`, `after_utc_ms` is the grid's anchor: the creation time for the
/// first run, then the previous run's due time (not when it happened to run,
/// so a late alarm does not shift the grid).
pub fn next_run(
    plan: &Plan,
    after_utc_ms: i64,
    runs_done: u32,
    rules: &(impl ZoneRules + ?Sized),
) -> Result<Option<i64>, ScheduleError> {
    Ok(Compiled::new(plan, rules)?.next(after_utc_ms, runs_done))
}

/// After downtime: the alarm was due at `due_utc_ms` and fires at `now_utc_ms`.
/// The caller runs ONCE for everything due and says how many runs were missed.
///
/// Missed runs are occurrences in (due, now] that the plan would have had
/// (within `end_at_ms` and the active hours). They are not runs, so they do not
/// count toward `max_runs`: the next run is computed with `runs_done + 1`.
pub fn catch_up(
    plan: &Plan,
    due_utc_ms: i64,
    now_utc_ms: i64,
    runs_done: u32,
    rules: &(impl ZoneRules + ?Sized),
) -> Result<CatchUp, ScheduleError> {
    let compiled = Compiled::new(plan, rules)?;
    // An alarm a moment early is treated as on time.
    let now = now_utc_ms.max(due_utc_ms);
    let runs_after_this = runs_done.saturating_add(1);
    let (missed, anchor) = match compiled.recurrence {
        // The grid is fixed, so without a window the count is arithmetic.
        CompiledRecurrence::Every { interval_ms } => {
            let last_on_grid = due_utc_ms + (now - due_utc_ms) / interval_ms * interval_ms;
            let missed = match plan.active_hours {
                None => {
                    let until = plan.end_at_ms.map_or(now, |end| end.min(now));
                    let count = (until - due_utc_ms).max(0) / interval_ms;
                    u32::try_from(count).unwrap_or(u32::MAX).min(MAX_MISSED_COUNTED)
                }
                Some(_) => compiled.count_between(due_utc_ms, now),
            };
            (missed, last_on_grid)
        }
        CompiledRecurrence::Cron(_) => (compiled.count_between(due_utc_ms, now), now),
        CompiledRecurrence::Once { .. } => (0, now),
    };
    Ok(CatchUp { missed, next_after_now: compiled.next(anchor, runs_after_this) })
}

/// A `Once` run named as a wall-clock time in a zone (`2026-11-23 09:00`): its
/// instant, by the same gap and repeat rules as cron times.
pub fn once_at(rules: &(impl ZoneRules + ?Sized), zone: &str, local_text: &str) -> Result<i64, ScheduleError> {
    let local = civil::parse_local(local_text)?;
    resolve_local(rules, zone, local)
        .map(|resolved| resolved.run_at_ms())
        .ok_or_else(|| ScheduleError::UnknownZone(zone.to_string()))
}

/// A plan checked and read once, so that searches do not re-parse it per step.
struct Compiled<'a, R: ZoneRules + ?Sized> {
    plan: &'a Plan,
    rules: &'a R,
    recurrence: CompiledRecurrence,
}

enum CompiledRecurrence {
    Once { at_utc_ms: i64 },
    Cron(CronExpr),
    Every { interval_ms: i64 },
}

impl<'a, R: ZoneRules + ?Sized> Compiled<'a, R> {
    fn new(plan: &'a Plan, rules: &'a R) -> Result<Self, ScheduleError> {
        if !is_known_zone(rules, &plan.zone) {
            return Err(ScheduleError::UnknownZone(plan.zone.clone()));
        }
        if let Some(hours) = &plan.active_hours {
            hours.check()?;
        }
        let recurrence = match &plan.recurrence {
            Recurrence::Once { at_utc_ms } => CompiledRecurrence::Once { at_utc_ms: *at_utc_ms },
            Recurrence::Cron { expression } => CompiledRecurrence::Cron(CronExpr::parse(expression)?),
            // Zero or less would never move forward.
            Recurrence::Every { interval_ms } if *interval_ms < 1 => {
                return Err(ScheduleError::IntervalTooShort { interval_ms: *interval_ms, minimum_ms: 1 });
            }
            Recurrence::Every { interval_ms } => CompiledRecurrence::Every { interval_ms: *interval_ms },
        };
        Ok(Compiled { plan, rules, recurrence })
    }

    fn next(&self, after: i64, runs_done: u32) -> Option<i64> {
        if self.plan.max_runs.is_some_and(|max_runs| runs_done >= max_runs) {
            return None;
        }
        let next = match &self.recurrence {
            CompiledRecurrence::Once { at_utc_ms } => (runs_done == 0 && *at_utc_ms > after).then_some(*at_utc_ms),
            CompiledRecurrence::Cron(cron) => self.next_cron(cron, after),
            CompiledRecurrence::Every { interval_ms } => self.next_every(*interval_ms, after),
        }?;
        self.plan.end_at_ms.is_none_or(|end| next <= end).then_some(next)
    }

    /// The last instant worth searching to: the horizon, or the plan's end.
    fn search_limit(&self, after: i64) -> i64 {
        let horizon = after.saturating_add(SEARCH_HORIZON_MS);
        self.plan.end_at_ms.map_or(horizon, |end| end.min(horizon))
    }

    /// The next cron run after `after`, then filtered by the window: a run
    /// outside it moves the search to just before the window's next opening.
    fn next_cron(&self, cron: &CronExpr, after: i64) -> Option<i64> {
        let zone = self.plan.zone.as_str();
        let limit = self.search_limit(after);
        let mut from = after;
        for _ in 0..MAX_SEARCH_STEPS {
            let run_at = if cron.has_wildcard_time() {
                self.next_cron_in_real_time(cron, from)?
            } else {
                self.next_cron_on_the_wall(cron, from)?
            };
            if run_at > limit {
                return None;
            }
            let Some(hours) = self.plan.active_hours else { return Some(run_at) };
            let run_wall = to_local(self.rules, zone, run_at)?;
            if hours.contains(run_wall.minute_of_day()) {
                return Some(run_at);
            }
            let opens_at = resolve_local(self.rules, zone, hours.next_start(run_wall))?.run_at_ms();
            from = run_at.max(opens_at - MS_PER_MINUTE);
        }
        None
    }

    /// A job at fixed times: walk its wall-clock times from the wall time at
    /// `after`. A time in a gap runs at the gap's end; a repeated time runs at
    /// its first showing, and when that is not after `after` (we are in the
    /// second showing) it is passed over, so it never runs twice.
    fn next_cron_on_the_wall(&self, cron: &CronExpr, after: i64) -> Option<i64> {
        let zone = self.plan.zone.as_str();
        let mut position = to_local(self.rules, zone, after)?;
        for _ in 0..MAX_SEARCH_STEPS {
            let wall = cron.next_after(&position)?;
            let run_at = resolve_local(self.rules, zone, wall)?.run_at_ms();
            if run_at > after {
                return Some(run_at);
            }
            position = wall;
        }
        None
    }

    /// A wildcard job (see [`CronExpr::has_wildcard_time`]): walk real time, one
    /// stretch of constant offset at a time. Within a stretch the wall clock
    /// runs with real time, so the next matching wall time is the next run; a
    /// match past the stretch's end restarts the walk at the transition, with
    /// the new offset. A match inside a gap runs at the gap's end.
    fn next_cron_in_real_time(&self, cron: &CronExpr, after: i64) -> Option<i64> {
        let zone = self.plan.zone.as_str();
        let offset_at = |minute: i64| self.rules.offset_minutes(zone, minute * MS_PER_MINUTE).map(i64::from);
        // Runs fall on whole minutes, so any minute after this one is after `after`.
        let mut from = after.div_euclid(MS_PER_MINUTE);
        let mut offset = offset_at(from)?;
        for _ in 0..MAX_SEARCH_STEPS {
            let wall = cron.next_after(&LocalDateTime::from_minutes_since_epoch(from + offset))?;
            let wall_minutes = wall.to_minutes_since_epoch();
            let candidate = wall_minutes - offset;
            if offset_at(candidate)? == offset {
                return Some(candidate * MS_PER_MINUTE);
            }
            // The offset changes in (from, candidate]: find the first minute it does.
            let (mut same, mut changed) = (from, candidate);
            while changed - same > 1 {
                let middle = same + (changed - same) / 2;
                if offset_at(middle)? == offset {
                    same = middle;
                } else {
                    changed = middle;
                }
            }
            let new_offset = offset_at(changed)?;
            if new_offset > offset && wall_minutes < changed + new_offset {
                return Some(changed * MS_PER_MINUTE);
            }
            (from, offset) = (changed - 1, new_offset);
        }
        None
    }

    /// Steps along the UTC grid; one outside the window jumps to the first grid
    /// point at or after the window's next start.
    fn next_every(&self, interval_ms: i64, after: i64) -> Option<i64> {
        let mut candidate = after.checked_add(interval_ms)?;
        let Some(hours) = self.plan.active_hours else { return Some(candidate) };
        let zone = self.plan.zone.as_str();
        let limit = self.search_limit(after);
        for _ in 0..MAX_SEARCH_STEPS {
            if candidate > limit {
                return None;
            }
            let wall = to_local(self.rules, zone, candidate)?;
            if hours.contains(wall.minute_of_day()) {
                return Some(candidate);
            }
            let opens_at = resolve_local(self.rules, zone, hours.next_start(wall))?.run_at_ms();
            let distance = opens_at.saturating_sub(candidate);
            let steps = if distance <= 0 { 1 } else { (distance - 1) / interval_ms + 1 };
            candidate = candidate.checked_add(steps.checked_mul(interval_ms)?)?;
        }
        None
    }

    /// Occurrences in (from, until], at most [`MAX_MISSED_COUNTED`]. Missed
    /// occurrences are not runs, so `max_runs` does not stop the count.
    fn count_between(&self, from: i64, until: i64) -> u32 {
        let mut count = 0;
        let mut at = from;
        while count < MAX_MISSED_COUNTED {
            match self.next(at, 0) {
                Some(next) if next <= until => {
                    count += 1;
                    at = next;
                }
                _ => break,
            }
        }
        count
    }
}

#[cfg(test)]
mod tests;
