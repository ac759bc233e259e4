//! The work a channel has delegated and not yet heard the end of: branches
//! thinking and workers working. The status block of every channel turn is
//! rendered from here; reports from those processes land here first.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::inbound::InboundEvent;
use crate::process::envelope::{Envelope, MessageType};

/// Branches one channel may have running at once.
pub const MAX_CONCURRENT_BRANCHES: usize = 3;
/// Workers one channel may have running at once (each is a queue job chain).
pub const MAX_CONCURRENT_WORKERS: usize = 5;
/// A branch not done this long after it started is given up on.
pub const DEFAULT_BRANCH_TIMEOUT_MS: i64 = 60_000;
/// A worker not heard from (progress or heartbeat) this long is given up on.
pub const DEFAULT_WORKER_TIMEOUT_MS: i64 = 600_000;

/// How long the channel waits on silent processes before it tells the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    pub branch_ms: i64,
    pub worker_ms: i64,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts { branch_ms: DEFAULT_BRANCH_TIMEOUT_MS, worker_ms: DEFAULT_WORKER_TIMEOUT_MS }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProcessKind {
    Branch,
    Worker,
}

impl ProcessKind {
    /// How the status block names it.
    pub fn label(self) -> &'static str {
        match self {
            ProcessKind::Branch => "Branch",
            ProcessKind::Worker => "Worker",
        }
    }
}

/// A delegated process the channel is waiting on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessStatus {
    pub kind: ProcessKind,
    /// The branch's question or the worker's task.
    pub task: String,
    pub started_at_ms: i64,
    /// The message it was started for; its answer goes there.
    pub origin: InboundEvent,
    /// The latest progress the process reported (`set_status`).
    #[serde(default)]
    pub status: Option<String>,
    /// An interactive worker takes follow-ups through `route`.
    #[serde(default)]
    pub interactive: bool,
    /// An interactive worker that finished a step and waits for a follow-up.
    #[serde(default)]
    pub waiting: bool,
    /// When the process was last heard from (start, progress, heartbeat).
    #[serde(default)]
    pub last_heard_ms: i64,
    /// The files it sent (a retried step sending one again sends nothing).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files_sent: Vec<String>,
    /// A call of this worker waits for a person's approval until then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<AwaitedApproval>,
}

/// An approval a worker waits on: the channel's alarm times it out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AwaitedApproval {
    pub id: String,
    pub until_ms: i64,
}

impl ProcessStatus {
    /// A process started at `now_ms` for `origin`, heard from then, with no
    /// progress, files or approval yet.
    pub fn started(
        kind: ProcessKind,
        task: &str,
        origin: InboundEvent,
        interactive: bool,
        now_ms: i64,
    ) -> ProcessStatus {
        ProcessStatus {
            kind,
            task: task.to_string(),
            started_at_ms: now_ms,
            origin,
            status: None,
            interactive,
            waiting: false,
            last_heard_ms: now_ms,
            files_sent: Vec::new(),
            approval: None,
        }
    }

    /// When the channel stops waiting for it; a waiting worker waits on the
    /// person, not on itself, so it has no deadline.
    fn deadline(&self, timeouts: Timeouts) -> Option<i64> {
        if let Some(approval) = &self.approval {
            return Some(approval.until_ms);
        }
        match self.kind {
            ProcessKind::Branch => Some(self.started_at_ms + timeouts.branch_ms),
            ProcessKind::Worker if self.waiting => None,
            ProcessKind::Worker => Some(self.started_at_ms.max(self.last_heard_ms) + timeouts.worker_ms),
        }
    }
}

/// A report the channel takes in and shows to its next turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessReport {
    pub envelope: Envelope,
    pub kind: ProcessKind,
    pub task: String,
    pub origin: InboundEvent,
}

/// What an incoming envelope did to the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Received {
    /// Unknown or finished process, or a type the channel does not take: dropped.
    Ignored,
    /// Progress recorded for the status block; no turn needed.
    Progress,
    /// A result the user should hear about: retrigger the channel with it.
    Report(Box<ProcessReport>),
}

/// Why a `route` or `cancel` was refused (the model sees this text).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("there is no running process with id `{0}`")]
    Unknown(String),
    #[error("`{0}` is not an interactive worker")]
    NotInteractive(String),
    #[error("worker `{0}` is still working; wait until it asks for input")]
    Busy(String),
}

/// The running processes by id.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Processes {
    running: BTreeMap<String, ProcessStatus>,
    /// Slots a turn has promised but not yet started (only in a turn's own view).
    #[serde(skip)]
    reserved: [usize; 2],
}

impl Processes {
    pub fn get(&self, id: &str) -> Option<&ProcessStatus> {
        self.running.get(id)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &ProcessStatus)> {
        self.running.iter()
    }

    pub fn count(&self, kind: ProcessKind) -> usize {
        self.running.values().filter(|process| process.kind == kind).count()
    }

    /// Free slots for `kind` right now.
    pub fn capacity(&self, kind: ProcessKind) -> usize {
        let limit = match kind {
            ProcessKind::Branch => MAX_CONCURRENT_BRANCHES,
            ProcessKind::Worker => MAX_CONCURRENT_WORKERS,
        };
        limit.saturating_sub(self.count(kind) + self.reserved[kind as usize])
    }

    /// Takes a slot for a process about to start; false when none is free.
    pub fn reserve(&mut self, kind: ProcessKind) -> bool {
        let free = self.capacity(kind) > 0;
        if free {
            self.reserved[kind as usize] += 1;
        }
        free
    }

    /// Records a started process; false when its kind is at its limit or the
    /// id is already running (a resumed turn starting it again).
    pub fn start(&mut self, id: &str, status: ProcessStatus) -> bool {
        if self.capacity(status.kind) == 0 || self.running.contains_key(id) {
            return false;
        }
        self.running.insert(id.to_string(), status);
        true
    }

    /// Takes in an envelope from a process (its `ref` names the process).
    pub fn receive(&mut self, envelope: Envelope) -> Received {
        let Some(id) = envelope.reference.clone() else {
            return Received::Ignored;
        };
        let Some(process) = self.running.get_mut(&id) else {
            return Received::Ignored;
        };
        match envelope.kind {
            MessageType::Status => {
                process.last_heard_ms = process.last_heard_ms.max(envelope.ts);
                // An empty status is a heartbeat: the worker lives, nothing new to show.
                if !envelope.body.is_empty() {
                    process.status = Some(envelope.body.clone());
                }
                Received::Progress
            }
            MessageType::Waiting => {
                process.waiting = true;
                process.status = Some(envelope.body.clone());
                Received::Report(Box::new(report(process, envelope)))
            }
            // A file is shown to the person as it comes; the process goes on.
            MessageType::File => {
                process.last_heard_ms = process.last_heard_ms.max(envelope.ts);
                match envelope.sent_file().map(str::to_string) {
                    Some(file) if !process.files_sent.contains(&file) => {
                        process.files_sent.push(file);
                        Received::Report(Box::new(report(process, envelope)))
                    }
                    _ => Received::Progress,
                }
            }
            MessageType::Done | MessageType::Error => match self.running.remove(&id) {
                Some(process) => Received::Report(Box::new(report(&process, envelope))),
                None => Received::Ignored,
            },
            _ => Received::Ignored,
        }
    }

    /// Checks a follow-up for an interactive worker and marks it working again.
    pub fn route(&mut self, id: &str) -> Result<(), Refusal> {
        let process = self.running.get_mut(id).ok_or_else(|| Refusal::Unknown(id.to_string()))?;
        if process.kind != ProcessKind::Worker || !process.interactive {
            return Err(Refusal::NotInteractive(id.to_string()));
        }
        if !process.waiting || process.approval.is_some() {
            return Err(Refusal::Busy(id.to_string()));
        }
        process.waiting = false;
        Ok(())
    }

    /// Notes that a process is working again (a follow-up was routed to it).
    pub fn heard_from(&mut self, id: &str, now_ms: i64) {
        if let Some(process) = self.running.get_mut(id) {
            process.last_heard_ms = process.last_heard_ms.max(now_ms);
        }
    }

    /// A worker's call waits for approval `approval_id` until `until_ms`:
    /// the worker is not silent meanwhile, the approval is what may time out.
    /// False for a process that is not a running worker.
    pub fn await_approval(&mut self, id: &str, approval_id: &str, until_ms: i64) -> bool {
        match self.running.get_mut(id) {
            Some(process) if process.kind == ProcessKind::Worker => {
                process.approval = Some(AwaitedApproval { id: approval_id.to_string(), until_ms });
                true
            }
            _ => false,
        }
    }

    /// The approval was decided: the worker runs again, heard from now.
    pub fn approval_settled(&mut self, approval_id: &str, now_ms: i64) -> bool {
        let waiting =
            self.running.values_mut().find(|process| process.approval.as_ref().is_some_and(|a| a.id == approval_id));
        match waiting {
            Some(process) => {
                process.approval = None;
                process.last_heard_ms = process.last_heard_ms.max(now_ms);
                true
            }
            None => false,
        }
    }

    /// Approvals whose wait is over at `now_ms`: (process id, approval id).
    pub fn approvals_due(&self, now_ms: i64) -> Vec<(String, String)> {
        self.running
            .iter()
            .filter_map(|(id, process)| {
                let approval = process.approval.as_ref().filter(|approval| approval.until_ms <= now_ms)?;
                Some((id.clone(), approval.id.clone()))
            })
            .collect()
    }

    /// The earliest time a running process times out.
    pub fn next_deadline(&self, timeouts: Timeouts) -> Option<i64> {
        self.running.values().filter_map(|process| process.deadline(timeouts)).min()
    }

    /// Gives up on processes silent past their timeout: each comes back as a
    /// failure report, so the person hears the work stopped.
    pub fn expire(&mut self, now_ms: i64, timeouts: Timeouts) -> Vec<(String, ProcessReport)> {
        let expired: Vec<String> = self
            .running
            .iter()
            .filter(|(_, process)| process.approval.is_none())
            .filter(|(_, process)| process.deadline(timeouts).is_some_and(|deadline| deadline <= now_ms))
            .map(|(id, _)| id.clone())
            .collect();
        expired
            .into_iter()
            .filter_map(|id| {
                let process = self.running.remove(&id)?;
                let silent_secs = (now_ms - process.started_at_ms.max(process.last_heard_ms)) / 1000;
                let body = format!("it stopped responding (no word for {silent_secs} s) and was given up");
                let envelope = Envelope::new(
                    format!("{id}:timeout"),
                    now_ms,
                    "channel",
                    "channel",
                    MessageType::Error,
                    Some(id.clone()),
                    body,
                );
                Some((id, report(&process, envelope)))
            })
            .collect()
    }

    /// Stops tracking a process; its later reports are dropped.
    pub fn cancel(&mut self, id: &str) -> Result<ProcessStatus, Refusal> {
        self.running.remove(id).ok_or_else(|| Refusal::Unknown(id.to_string()))
    }
}

fn report(process: &ProcessStatus, envelope: Envelope) -> ProcessReport {
    ProcessReport { envelope, kind: process.kind, task: process.task.clone(), origin: process.origin.clone() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inbound::Author;

    fn origin() -> InboundEvent {
        InboundEvent::plain_text(1, "1", Author { id: "7".into(), name: "Ada".into(), is_bot: false }, "hi")
    }

    fn process(kind: ProcessKind, interactive: bool) -> ProcessStatus {
        ProcessStatus::started(kind, "count the stars", origin(), interactive, 0)
    }

    fn envelope(id: &str, kind: MessageType, process: &str, body: &str) -> Envelope {
        Envelope::new(id, 5, format!("worker:{process}"), "channel", kind, Some(process.into()), body)
    }

    #[test]
    fn each_kind_has_its_own_limit_and_an_id_starts_once() {
        let mut processes = Processes::default();
        for index in 0..MAX_CONCURRENT_BRANCHES {
            assert!(processes.start(&format!("b{index}"), process(ProcessKind::Branch, false)));
        }
        assert!(!processes.start("b-extra", process(ProcessKind::Branch, false)));
        assert!(processes.start("w0", process(ProcessKind::Worker, false)));
        assert!(!processes.start("w0", process(ProcessKind::Worker, false)), "a resumed turn starts nothing twice");
        assert_eq!(processes.capacity(ProcessKind::Worker), MAX_CONCURRENT_WORKERS - 1);
    }

    #[test]
    fn progress_updates_the_status_and_a_result_ends_the_process_once() {
        let mut processes = Processes::default();
        processes.start("w", process(ProcessKind::Worker, false));
        assert_eq!(processes.receive(envelope("s1", MessageType::Status, "w", "halfway")), Received::Progress);
        assert_eq!(processes.get("w").and_then(|process| process.status.as_deref()), Some("halfway"));
        let sent = processes.receive(envelope("f1", MessageType::File, "w", "f0123456789abcdef a.csv"));
        assert!(matches!(sent, Received::Report(_)), "a file is shown at once");
        assert!(processes.get("w").is_some(), "and the worker goes on");
        let again = processes.receive(envelope("f1", MessageType::File, "w", "f0123456789abcdef a.csv"));
        assert_eq!(again, Received::Progress, "a file sent again (a retried step) is not sent twice");
        let Received::Report(report) = processes.receive(envelope("d", MessageType::Done, "w", "42")) else {
            panic!("a done report retriggers the channel");
        };
        assert_eq!((report.kind, report.task.as_str()), (ProcessKind::Worker, "count the stars"));
        assert!(processes.get("w").is_none());
        assert_eq!(processes.receive(envelope("d", MessageType::Done, "w", "42")), Received::Ignored);
        assert_eq!(
            processes.receive(envelope("f", MessageType::File, "w", "f0123456789abcdef a.csv")),
            Received::Ignored
        );
        assert_eq!(processes.receive(envelope("x", MessageType::Done, "other", "?")), Received::Ignored);
    }

    #[test]
    fn only_a_waiting_interactive_worker_takes_a_follow_up() {
        let mut processes = Processes::default();
        processes.start("plain", process(ProcessKind::Worker, false));
        processes.start("chat", process(ProcessKind::Worker, true));
        processes.start("b", process(ProcessKind::Branch, false));
        assert_eq!(processes.route("plain"), Err(Refusal::NotInteractive("plain".into())));
        assert_eq!(processes.route("b"), Err(Refusal::NotInteractive("b".into())));
        assert_eq!(processes.route("chat"), Err(Refusal::Busy("chat".into())));
        assert!(matches!(
            processes.receive(envelope("q", MessageType::Waiting, "chat", "which city?")),
            Received::Report(_)
        ));
        assert_eq!(processes.route("chat"), Ok(()));
        assert_eq!(processes.route("chat"), Err(Refusal::Busy("chat".into())), "one follow-up per question");
        assert_eq!(processes.route("gone"), Err(Refusal::Unknown("gone".into())));
    }

    #[test]
    fn a_cancelled_process_reports_nothing_more() {
        let mut processes = Processes::default();
        processes.start("b", process(ProcessKind::Branch, false));
        assert_eq!(processes.cancel("b").map(|process| process.kind), Ok(ProcessKind::Branch));
        assert_eq!(processes.receive(envelope("d", MessageType::Done, "b", "late")), Received::Ignored);
        assert!(processes.cancel("b").is_err());
    }

    #[test]
    fn silent_processes_time_out_as_failures_and_heartbeats_keep_workers_alive() {
        let timeouts = Timeouts { branch_ms: 60, worker_ms: 600 };
        let mut processes = Processes::default();
        processes.start("b", process(ProcessKind::Branch, false));
        processes.start("w", process(ProcessKind::Worker, false));
        processes.start("chat", ProcessStatus { waiting: true, ..process(ProcessKind::Worker, true) });
        assert_eq!(processes.next_deadline(timeouts), Some(60));
        let expired = processes.expire(60, timeouts);
        assert_eq!(expired.len(), 1);
        assert_eq!((expired[0].0.as_str(), expired[0].1.envelope.kind), ("b", MessageType::Error));
        assert!(expired[0].1.envelope.body.contains("stopped responding"));

        // A heartbeat (an empty status) moves the worker's deadline but not its status line.
        processes.receive(Envelope::new("s", 500, "worker:w", "channel", MessageType::Status, Some("w".into()), "50%"));
        processes.receive(Envelope::new("h", 550, "worker:w", "channel", MessageType::Status, Some("w".into()), ""));
        assert_eq!(processes.get("w").and_then(|process| process.status.as_deref()), Some("50%"));
        assert!(processes.expire(1_000, timeouts).is_empty());
        assert_eq!(processes.next_deadline(timeouts), Some(1_150), "the waiting worker has no deadline");
        let expired = processes.expire(1_150, timeouts);
        assert_eq!(expired.len(), 1);
        assert!(processes.get("chat").is_some(), "a worker waiting on the person does not time out");
    }

    #[test]
    fn a_worker_waiting_for_approval_is_not_silent_its_approval_times_out_instead() {
        let timeouts = Timeouts { branch_ms: 1_000, worker_ms: 5_000 };
        let mut processes = Processes::default();
        processes.start("w", process(ProcessKind::Worker, true));
        processes.start("b", process(ProcessKind::Branch, false));
        assert!(!processes.await_approval("b", "a-branch", 100), "only workers wait for approvals");
        assert!(processes.await_approval("w", "a1", 60_000));
        // Long past the worker's own silence limit: it is not given up.
        let expired = processes.expire(59_999, timeouts);
        assert_eq!(expired.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(), vec!["b"]);
        assert_eq!(processes.next_deadline(timeouts), Some(60_000), "the alarm wakes for the approval");
        assert!(processes.approvals_due(59_999).is_empty());
        assert_eq!(processes.approvals_due(60_000), vec![("w".to_string(), "a1".to_string())]);
        assert_eq!(processes.route("w"), Err(Refusal::Busy("w".into())), "no follow-up while a call waits");
        assert!(processes.approval_settled("a1", 60_500));
        assert!(!processes.approval_settled("a1", 60_600), "settled once");
        assert!(processes.approvals_due(1_000_000).is_empty());
        assert_eq!(processes.next_deadline(timeouts), Some(65_500), "the worker's own clock starts again");
    }
}
