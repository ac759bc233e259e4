//! One run of a job at a time: whether a job's next run may be claimed now.
//!
//! A run is claimed (a row in the runs table), then resolved (delivered,
//! nothing, or failed). Its outcome decides what the job does next: the third
//! failure in a row disables it. So a job whose run is still unresolved (its
//! turn is running, retrying the model, or was cut off by a restart and will
//! resume) must not start another: that run's failure may be the one that
//! disables the job. Its next run waits, and once the run resolves, a job
//! still active runs once for everything that fell due meanwhile.

/// What a claim reads of one job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobRuns {
    /// The job is active (not paused, disabled or over).
    pub is_active: bool,
    /// When its next run is due, or None when the plan is over.
    pub next_run_at: Option<i64>,
    /// The due time of its run claimed earlier and not yet resolved, if any.
    pub unresolved_due_at: Option<i64>,
}

/// Whether a job's next run is claimed now, and why not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// Claim the run due at this time.
    Run { due_at: i64 },
    /// Paused, disabled or over: nothing runs.
    NotActive,
    /// Its next run is later (or there is none).
    NotDue,
    /// An earlier run is unresolved: wait for its outcome.
    Waiting { unresolved_due_at: i64 },
}

/// Whether `job`'s next run may be claimed at `now_ms`. The rungs, in order:
/// an inactive job never runs; a job with an unresolved run waits for it, even
/// when overdue; otherwise a due run is claimed.
pub fn claim(job: &JobRuns, now_ms: i64) -> Claim {
    if !job.is_active {
        return Claim::NotActive;
    }
    if let Some(unresolved_due_at) = job.unresolved_due_at {
        return Claim::Waiting { unresolved_due_at };
    }
    match job.next_run_at {
        Some(due_at) if due_at <= now_ms => Claim::Run { due_at },
        _ => Claim::NotDue,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_000_000;

    fn job(is_active: bool, next_run_at: Option<i64>, unresolved_due_at: Option<i64>) -> JobRuns {
        JobRuns { is_active, next_run_at, unresolved_due_at }
    }

    #[test]
    fn a_job_runs_only_when_active_due_and_free() {
        let cases = [
            ("due and free", job(true, Some(NOW - 5), None), Claim::Run { due_at: NOW - 5 }),
            ("due exactly now", job(true, Some(NOW), None), Claim::Run { due_at: NOW }),
            ("not yet due", job(true, Some(NOW + 1), None), Claim::NotDue),
            ("plan over", job(true, None, None), Claim::NotDue),
            ("paused or disabled", job(false, Some(NOW - 5), None), Claim::NotActive),
            ("disabled with a run left unresolved", job(false, Some(NOW - 5), Some(NOW - 65)), Claim::NotActive),
        ];
        for (name, job, expected) in cases {
            assert_eq!(claim(&job, NOW), expected, "{name}");
        }
    }

    #[test]
    fn an_unresolved_run_holds_back_the_next_one_however_late() {
        // The case: the third run was cut off by a three-minute
        // restart; its job is three runs overdue, and still waits.
        let cases = [
            ("overdue by one interval", job(true, Some(NOW - 60_000), Some(NOW - 120_000))),
            ("overdue by three", job(true, Some(NOW - 180_000), Some(NOW - 240_000))),
            ("not yet due", job(true, Some(NOW + 60_000), Some(NOW - 1))),
            ("plan over after the run", job(true, None, Some(NOW - 1))),
        ];
        for (name, job) in cases {
            let unresolved_due_at = job.unresolved_due_at.unwrap();
            assert_eq!(claim(&job, NOW), Claim::Waiting { unresolved_due_at }, "{name}");
        }
    }
}
