//! What a worker's segment owes the world when it ends, decided from the end
//! alone: the pure half of the queue consumer's worker step
//! (`src/jobs/worker_step.rs`), which stores the answer with the run and then
//! carries it out.

use crate::llm::ToolCall;
use crate::process::envelope::MessageType;
use crate::process::worker_run::{SegmentEnd, WorkerInput, WorkerJob};

/// What one segment's end owes.
#[derive(Debug, Clone, PartialEq)]
pub enum Owed {
    /// A report to the channel: its type, its envelope id's suffix, its body.
    Report { kind: MessageType, suffix: String, body: String },
    /// This call waits for a person's approval: ask for it.
    Approval(ToolCall),
    /// Another segment follows: its job.
    Next(WorkerJob),
    /// Nothing (the channel cancelled the worker).
    Nothing,
}

/// What a segment's end owes: `job` is the step that ran, `segments` how many
/// segments the run has had.
pub fn owed(job: &WorkerJob, segments: u32, end: SegmentEnd) -> Owed {
    let report = |kind, suffix: &str, body| Owed::Report { kind, suffix: suffix.to_string(), body };
    match end {
        SegmentEnd::Outcome(outcome) => report(MessageType::Done, "done", outcome),
        SegmentEnd::Waiting(question) => report(MessageType::Waiting, &format!("{}:waiting", job.step), question),
        SegmentEnd::Failed(words) => report(MessageType::Error, "failed", words),
        SegmentEnd::Approval(call) => Owed::Approval(call),
        SegmentEnd::Cancelled => Owed::Nothing,
        SegmentEnd::Continue => Owed::Next(WorkerJob {
            id: job.id.clone(),
            conversation_key: job.conversation_key.clone(),
            step: format!("s{}", segments + 1),
            input: WorkerInput::Continue,
            person: job.person.clone(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn job() -> WorkerJob {
        WorkerJob {
            id: "w1".into(),
            conversation_key: "telegram:1".into(),
            step: "s2".into(),
            input: WorkerInput::Continue,
            person: None,
        }
    }

    fn report(kind: MessageType, suffix: &str, body: &str) -> Owed {
        Owed::Report { kind, suffix: suffix.into(), body: body.into() }
    }

    #[test]
    fn each_end_owes_its_report_its_question_or_its_next_segment() {
        let call = ToolCall { id: "c1".into(), name: "planted".into(), arguments: json!({ "x": 1 }) };
        let next = WorkerJob { step: "s3".into(), ..job() };
        let table = [
            (SegmentEnd::Outcome("42".into()), report(MessageType::Done, "done", "42")),
            (SegmentEnd::Waiting("which one?".into()), report(MessageType::Waiting, "s2:waiting", "which one?")),
            (SegmentEnd::Failed("no model".into()), report(MessageType::Error, "failed", "no model")),
            (SegmentEnd::Approval(call.clone()), Owed::Approval(call)),
            (SegmentEnd::Cancelled, Owed::Nothing),
            (SegmentEnd::Continue, Owed::Next(next)),
        ];
        for (end, expected) in table {
            let shown = format!("{end:?}");
            assert_eq!(owed(&job(), 2, end), expected, "{shown}");
        }
    }

    #[test]
    fn the_next_segment_keeps_the_worker_its_conversation_and_whose_budget_it_spends() {
        let person = Some(crate::budget::rules::Person { key: "p1".into(), name: "Ada".into() });
        let Owed::Next(next) = owed(&WorkerJob { person: person.clone(), ..job() }, 7, SegmentEnd::Continue) else {
            panic!("a spent segment is followed by another");
        };
        assert_eq!((next.id.as_str(), next.conversation_key.as_str(), next.step.as_str()), ("w1", "telegram:1", "s8"));
        assert_eq!(next.person, person);
        assert_eq!(next.input, WorkerInput::Continue);
    }
}
