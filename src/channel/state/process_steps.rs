//! The channel state's steps for its processes: branches and workers
//! started, waiting on an approval, reporting back, routed to, expired and
//! cancelled. The table's own rules are [`super::super::processes`]'s.

use super::{ChannelSettings, ChannelState};
use crate::channel::processes::{ProcessReport, ProcessStatus, Processes, Received, Refusal};
use crate::process::envelope::Envelope;

impl ChannelState {
    /// Records a process the turn started; false when its kind is at its limit.
    pub fn start_process(&mut self, id: &str, status: ProcessStatus) -> bool {
        self.processes.apply(|processes| processes.start(id, status), |started| *started)
    }

    /// A worker's call waits for approval until `until_ms` (the alarm times it out).
    pub fn await_approval(&mut self, process_id: &str, approval_id: &str, until_ms: i64) -> bool {
        self.processes.update(|processes| processes.await_approval(process_id, approval_id, until_ms))
    }

    /// The approval was decided or timed out: its worker runs again.
    pub fn approval_settled(&mut self, approval_id: &str, now_ms: i64) -> bool {
        self.processes.update(|processes| processes.approval_settled(approval_id, now_ms))
    }

    /// Takes in a process's envelope; returns whether the channel should wake
    /// for it (a result or a question, not progress). Repeats are dropped.
    pub fn receive_process_event(&mut self, envelope: Envelope) -> bool {
        match self.processes.apply(|processes| processes.receive(envelope), |received| *received != Received::Ignored) {
            Received::Report(report) => self.process_events.update([*report]),
            Received::Progress | Received::Ignored => false,
        }
    }

    /// Marks an interactive worker as working on a follow-up.
    pub fn route_to_process(&mut self, id: &str, now_ms: i64) -> Result<(), Refusal> {
        let route = |processes: &mut Processes| {
            let outcome = processes.route(id);
            if outcome.is_ok() {
                processes.heard_from(id, now_ms);
            }
            outcome
        };
        self.processes.apply(route, Result::is_ok)
    }

    /// Gives up on processes silent past their timeout: the person hears it in
    /// the next turn. Returns the failure reports, for the edge to stop what
    /// was given up.
    pub fn expire_processes(&mut self, now_ms: i64, settings: &ChannelSettings) -> Vec<(String, ProcessReport)> {
        let expired = self
            .processes
            .apply(|processes| processes.expire(now_ms, settings.timeouts), |expired| !expired.is_empty());
        self.process_events.update(expired.iter().map(|(_, report)| report.clone()));
        expired
    }

    /// Stops tracking a process; returns what it was.
    pub fn cancel_process(&mut self, id: &str) -> Result<ProcessStatus, Refusal> {
        self.processes.apply(|processes| processes.cancel(id), Result::is_ok)
    }
}
