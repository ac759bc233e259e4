//! The task board's rules: which status changes are legal, and who may make
//! them. The board lives in D1; the edges call [`transition`] before writing, so
//! an illegal move is an error value the caller shows, never a silent overwrite.
//!
//! The flow: a task proposed by the agent waits in `pending_approval` until a
//! person (the admin) approves it into `ready` or parks it in `backlog`. The
//! cortex claims `ready` tasks for workers (`in_progress`), and settles them:
//! `done`, or back to `ready` after a failure, or to `backlog` once it has
//! failed [`MAX_TASK_ATTEMPTS`] times, so a person looks before it burns more.

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Attempts a task gets before a failure parks it in the backlog.
pub const MAX_TASK_ATTEMPTS: u32 = 3;

crate::named! {
    /// Where a task stands on the board.
    #[derive(Hash, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum TaskStatus {
        PendingApproval = "pending_approval", Backlog = "backlog", Ready = "ready",
        InProgress = "in_progress", Done = "done",
    }
}

crate::named! {
    /// How urgent a task is. Declared most urgent first, so the derived order
    /// sorts `Critical` first and the task to claim is the minimum.
    #[derive(PartialOrd, Ord, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum Priority { Critical = "critical", High = "high", Medium = "medium", Low = "low" }
}

crate::named! {
    /// Who asks for a change: the agent in a conversation (`branch`, its
    /// tools); the `cortex`, the background process that hands ready tasks to
    /// workers and settles them; a `worker` running a task (it edits its own
    /// task's subtasks and notes, not the status); a person (`admin`, through
    /// the admin API).
    #[derive(Hash, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum Actor { Branch = "branch", Cortex = "cortex", Worker = "worker", Admin = "admin" }
}

/// Why a status change was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum TransitionError {
    /// No one may make this move (`done` is final; nothing skips approval or the cortex).
    #[error("a task cannot go from {from} to {to}")]
    Illegal { from: TaskStatus, to: TaskStatus },
    /// The move exists, but belongs to someone else.
    #[error("the {actor} may not move a task from {from} to {to}")]
    NotAllowed { from: TaskStatus, to: TaskStatus, actor: Actor },
}

/// Who may make each legal move. Everything not listed is illegal.
fn movers(from: TaskStatus, to: TaskStatus) -> &'static [Actor] {
    use Actor::*;
    use TaskStatus::*;
    match (from, to) {
        // Approval is a person's call.
        (PendingApproval, Ready | Backlog) => &[Admin],
        // The agent may schedule parked work; only a person parks ready work.
        (Backlog, Ready) => &[Branch, Admin],
        (Ready, Backlog) => &[Admin],
        // Claiming and settling belong to the cortex, which runs the workers.
        (Ready, InProgress) => &[Cortex],
        (InProgress, Done | Ready | Backlog) => &[Cortex],
        _ => &[],
    }
}

/// Checks a status change. Same status is a no-op `Ok` for everyone.
pub fn transition(from: TaskStatus, to: TaskStatus, actor: Actor) -> Result<(), TransitionError> {
    if from == to {
        return Ok(());
    }
    match movers(from, to) {
        [] => Err(TransitionError::Illegal { from, to }),
        allowed if allowed.contains(&actor) => Ok(()),
        _ => Err(TransitionError::NotAllowed { from, to, actor }),
    }
}

/// Where a task goes after its worker failed, `attempts` counting this one:
/// back to `ready` to try again, or to `backlog` once it has had
/// [`MAX_TASK_ATTEMPTS`], with the error kept so a person can look.
pub fn after_failure(attempts: u32) -> TaskStatus {
    if attempts < MAX_TASK_ATTEMPTS {
        TaskStatus::Ready
    } else {
        TaskStatus::Backlog
    }
}

#[cfg(test)]
mod tests {
    use super::Actor::*;
    use super::TaskStatus::*;
    use super::*;

    /// Every (from, to, actor) combination, spelled out as a table: 5 × 5 × 4.
    /// Outcomes per actor, in the order Branch, Cortex, Worker, Admin: `Y`
    /// allowed, `n` not this actor's move, `X` illegal for everyone.
    #[test]
    fn every_transition_has_its_outcome() {
        let table: [(TaskStatus, TaskStatus, &str); 25] = [
            (PendingApproval, PendingApproval, "YYYY"),
            (PendingApproval, Backlog, "nnnY"),
            (PendingApproval, Ready, "nnnY"),
            (PendingApproval, InProgress, "XXXX"),
            (PendingApproval, Done, "XXXX"),
            (Backlog, PendingApproval, "XXXX"),
            (Backlog, Backlog, "YYYY"),
            (Backlog, Ready, "YnnY"),
            (Backlog, InProgress, "XXXX"),
            (Backlog, Done, "XXXX"),
            (Ready, PendingApproval, "XXXX"),
            (Ready, Backlog, "nnnY"),
            (Ready, Ready, "YYYY"),
            (Ready, InProgress, "nYnn"),
            (Ready, Done, "XXXX"),
            (InProgress, PendingApproval, "XXXX"),
            (InProgress, Backlog, "nYnn"),
            (InProgress, Ready, "nYnn"),
            (InProgress, InProgress, "YYYY"),
            (InProgress, Done, "nYnn"),
            (Done, PendingApproval, "XXXX"),
            (Done, Backlog, "XXXX"),
            (Done, Ready, "XXXX"),
            (Done, InProgress, "XXXX"),
            (Done, Done, "YYYY"),
        ];
        for (from, to, outcomes) in table {
            for (actor, outcome) in Actor::ALL.into_iter().zip(outcomes.chars()) {
                let wanted = match outcome {
                    'Y' => Ok(()),
                    'n' => Err(TransitionError::NotAllowed { from, to, actor }),
                    _ => Err(TransitionError::Illegal { from, to }),
                };
                assert_eq!(transition(from, to, actor), wanted, "{actor}: {from} → {to}");
            }
        }
        // The table covers every pair once.
        let mut pairs: Vec<_> = table.iter().map(|(from, to, _)| (from.as_str(), to.as_str())).collect();
        pairs.sort_unstable();
        pairs.dedup();
        assert_eq!(pairs.len(), TaskStatus::ALL.len() * TaskStatus::ALL.len());
    }

    #[test]
    fn workers_never_change_a_status() {
        for from in TaskStatus::ALL {
            for to in TaskStatus::ALL.into_iter().filter(|to| *to != from) {
                assert!(transition(from, to, Worker).is_err(), "{from} → {to}");
            }
        }
    }

    #[test]
    fn failures_retry_then_park_for_a_person() {
        let outcomes: Vec<TaskStatus> = (1..=MAX_TASK_ATTEMPTS + 1).map(after_failure).collect();
        assert_eq!(outcomes, vec![Ready, Ready, Backlog, Backlog]);
        // Both outcomes are moves the cortex may make from in_progress.
        for attempts in 1..=MAX_TASK_ATTEMPTS {
            assert_eq!(transition(InProgress, after_failure(attempts), Cortex), Ok(()));
        }
    }

    #[test]
    fn names_round_trip_and_priorities_sort_most_urgent_first() {
        for status in TaskStatus::ALL {
            assert_eq!(TaskStatus::read(status.as_str()), Some(status));
            assert_eq!(serde_json::to_string(&status).expect("serializes"), format!("\"{status}\""));
        }
        for priority in Priority::ALL {
            assert_eq!(Priority::read(priority.as_str()), Some(priority));
        }
        assert_eq!(TaskStatus::read(" In_Progress "), Some(InProgress));
        assert_eq!(TaskStatus::read("todo"), None);
        assert_eq!(Priority::read("urgent"), None);
        let mut priorities = vec![Priority::Low, Priority::Critical, Priority::Medium, Priority::High];
        priorities.sort();
        assert_eq!(priorities, Priority::ALL.to_vec());
        assert_eq!([Priority::Medium, Priority::High, Priority::Low].into_iter().min(), Some(Priority::High));
    }
}
