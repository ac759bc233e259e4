//! A circuit breaker for the cortex's routines (bulletin, maintenance): a
//! routine that keeps failing is paused for one interval instead of burning
//! model calls and D1 time on every cron tick.

use serde::{Deserialize, Serialize};

/// Consecutive failures that open the circuit.
pub const CIRCUIT_OPEN_THRESHOLD: u32 = 3;

/// One routine's failure record, stored between runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoutineHealth {
    /// Failures since the last success.
    pub consecutive_failures: u32,
    /// While set and in the future, the routine is skipped (milliseconds since the epoch).
    pub paused_until_ms: Option<i64>,
}

impl RoutineHealth {
    /// Whether the routine may run at `now_ms`: not paused, or the pause is over.
    /// A run after a pause is a trial: one more failure pauses it again.
    pub fn should_run(&self, now_ms: i64) -> bool {
        self.paused_until_ms.is_none_or(|until| now_ms >= until)
    }

    /// A run succeeded: the count and any pause are cleared.
    pub fn record_success(&mut self) {
        *self = RoutineHealth::default();
    }

    /// A run failed at `now_ms`; from the [`CIRCUIT_OPEN_THRESHOLD`]th
    /// consecutive failure on, the routine pauses until `now_ms + interval_ms`
    /// (its next interval). Returns whether this failure paused it.
    pub fn record_failure(&mut self, now_ms: i64, interval_ms: i64) -> bool {
        self.consecutive_failures = self.consecutive_failures.saturating_add(1);
        let opens = self.consecutive_failures >= CIRCUIT_OPEN_THRESHOLD;
        if opens {
            self.paused_until_ms = Some(now_ms.saturating_add(interval_ms.max(0)));
        }
        opens
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: i64 = 3_600_000;

    #[test]
    fn three_failures_in_a_row_pause_for_one_interval() {
        let mut health = RoutineHealth::default();
        assert!(!health.record_failure(0, HOUR));
        assert!(!health.record_failure(HOUR, HOUR));
        assert!(health.should_run(2 * HOUR));
        assert!(health.record_failure(2 * HOUR, HOUR));
        assert_eq!(health.paused_until_ms, Some(3 * HOUR));
        assert!(!health.should_run(3 * HOUR - 1));
        assert!(health.should_run(3 * HOUR));
    }

    #[test]
    fn a_failed_trial_pauses_again_and_a_success_closes_the_circuit() {
        let mut health = RoutineHealth { consecutive_failures: 3, paused_until_ms: Some(HOUR) };
        assert!(health.record_failure(HOUR, HOUR));
        assert_eq!(health, RoutineHealth { consecutive_failures: 4, paused_until_ms: Some(2 * HOUR) });
        health.record_success();
        assert_eq!(health, RoutineHealth::default());
        assert!(health.should_run(0));
        assert!(!health.record_failure(3 * HOUR, HOUR));
    }

    #[test]
    fn a_success_between_failures_resets_the_count() {
        let mut health = RoutineHealth::default();
        health.record_failure(0, HOUR);
        health.record_failure(1, HOUR);
        health.record_success();
        health.record_failure(2, HOUR);
        health.record_failure(3, HOUR);
        assert!(health.should_run(4));
        assert_eq!(health.paused_until_ms, None);
    }

    #[test]
    fn health_survives_a_round_trip_through_storage() {
        let health = RoutineHealth { consecutive_failures: 3, paused_until_ms: Some(42) };
        let json = serde_json::to_value(health).unwrap();
        assert_eq!(json, serde_json::json!({"consecutive_failures": 3, "paused_until_ms": 42}));
        assert_eq!(serde_json::from_value::<RoutineHealth>(json).unwrap(), health);
        let stored_before_any_failure: RoutineHealth =
            serde_json::from_value(serde_json::json!({"consecutive_failures": 0, "paused_until_ms": null})).unwrap();
        assert!(stored_before_any_failure.should_run(0));
    }
}
