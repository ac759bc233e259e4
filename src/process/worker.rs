//! A worker's lifecycle as a checked state machine, and the budget rules of
//! its segmented run: [`TURNS_PER_SEGMENT`] model calls per queue message, at
//! most [`MAX_SEGMENTS`] messages, and up to [`MAX_NUDGES`] reminders when it
//! answers in plain text instead of reporting an outcome.

use serde::{Deserialize, Serialize};
use thiserror::Error;

pub const TURNS_PER_SEGMENT: u32 = 15;
pub const MAX_SEGMENTS: u32 = 10;
pub const MAX_NUDGES: u32 = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkerState {
    Running,
    /// An interactive worker waiting for a `route` follow-up.
    WaitingForInput,
    /// A tool call waits for a person's approval (the run rests in D1).
    WaitingForApproval,
    Done,
    Failed,
}

/// What happens to a worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerEvent {
    /// It reported `set_status(kind: "outcome")`.
    Outcome,
    /// An interactive worker finished a step and asks for more.
    AwaitInput,
    /// A follow-up arrived through `route`.
    FollowUp,
    /// A tool call needs a person's approval first.
    AwaitApproval,
    /// The approval was decided (or timed out): the call runs or is refused.
    Decided,
    Cancel,
    /// Out of budget, nudges, or retries.
    GiveUp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("a {state:?} worker cannot take {event:?}")]
pub struct InvalidTransition {
    pub state: WorkerState,
    pub event: WorkerEvent,
}

impl WorkerState {
    pub fn is_finished(self) -> bool {
        matches!(self, WorkerState::Done | WorkerState::Failed)
    }

    /// The state after `event`, or an error for a transition that must not happen.
    pub fn apply(self, event: WorkerEvent) -> Result<WorkerState, InvalidTransition> {
        use WorkerEvent::*;
        use WorkerState::*;
        match (self, event) {
            (Running, Outcome) => Ok(Done),
            (Running, AwaitInput) => Ok(WaitingForInput),
            (WaitingForInput, FollowUp) => Ok(Running),
            (WaitingForInput, Outcome) => Ok(Done),
            (Running, AwaitApproval) => Ok(WaitingForApproval),
            (WaitingForApproval, Decided) => Ok(Running),
            (Running | WaitingForInput | WaitingForApproval, Cancel | GiveUp) => Ok(Failed),
            (state, event) => Err(InvalidTransition { state, event }),
        }
    }
}

/// What the worker's runner does after a segment of model calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterSegment {
    /// Queue the next segment (state stays in D1 between them).
    NextSegment,
    /// The budget is spent: fail with what it had.
    Fail,
}

/// After segment `segment` (1-based) ended without an outcome.
pub fn after_segment(segment: u32) -> AfterSegment {
    if segment < MAX_SEGMENTS {
        AfterSegment::NextSegment
    } else {
        AfterSegment::Fail
    }
}

/// What to do when the worker answered in plain text without an outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlainAnswer {
    /// Remind it to report with `set_status(kind: "outcome")`.
    Nudge,
    Fail,
}

pub fn on_plain_answer(nudges_so_far: u32) -> PlainAnswer {
    if nudges_so_far < MAX_NUDGES {
        PlainAnswer::Nudge
    } else {
        PlainAnswer::Fail
    }
}

#[cfg(test)]
mod tests {
    use super::WorkerEvent::*;
    use super::WorkerState::*;
    use super::*;

    #[test]
    fn the_lifecycle_allows_only_checked_transitions() {
        let allowed = [
            (Running, Outcome, Done),
            (Running, AwaitInput, WaitingForInput),
            (Running, Cancel, Failed),
            (Running, GiveUp, Failed),
            (WaitingForInput, FollowUp, Running),
            (WaitingForInput, Outcome, Done),
            (WaitingForInput, Cancel, Failed),
            (Running, AwaitApproval, WaitingForApproval),
            (WaitingForApproval, Decided, Running),
            (WaitingForApproval, Cancel, Failed),
            (WaitingForApproval, GiveUp, Failed),
        ];
        for (state, event, next) in allowed {
            assert_eq!(state.apply(event), Ok(next), "{state:?} + {event:?}");
        }
        let refused = [
            (Running, FollowUp),
            (WaitingForInput, AwaitInput),
            (Done, Cancel),
            (Done, FollowUp),
            (Failed, Outcome),
            (Failed, FollowUp),
            (Running, Decided),
            (WaitingForApproval, Outcome),
            (WaitingForApproval, FollowUp),
            (WaitingForInput, AwaitApproval),
            (Done, Decided),
        ];
        for (state, event) in refused {
            assert_eq!(state.apply(event), Err(InvalidTransition { state, event }), "{state:?} + {event:?}");
        }
        assert!(Done.is_finished() && Failed.is_finished() && !Running.is_finished());
    }

    #[test]
    fn segments_and_nudges_are_bounded() {
        let segments: Vec<AfterSegment> = (1..=MAX_SEGMENTS).map(after_segment).collect();
        assert!(segments[..9].iter().all(|next| *next == AfterSegment::NextSegment));
        assert_eq!(segments[9], AfterSegment::Fail);
        assert_eq!(
            (0..=MAX_NUDGES).map(on_plain_answer).collect::<Vec<_>>(),
            vec![PlainAnswer::Nudge, PlainAnswer::Nudge, PlainAnswer::Fail]
        );
    }
}
