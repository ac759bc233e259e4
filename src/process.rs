//! Processes besides the channel: branches, workers and compactions that run as
//! Queue jobs and report back to the channel through typed envelopes.

pub mod branch;
pub mod compaction;
pub mod containment;
pub mod envelope;
pub mod tool_sets;
pub mod worker;
pub mod worker_run;
pub mod worker_step;

use serde::{Deserialize, Serialize};

/// Every job the `jobs` queue carries. Enums that cross JSON here are
/// externally tagged (serde's default): internally tagged ones would pull
/// serde's content buffering into the Worker (about 70 KB of wasm).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Job {
    Branch(Box<branch::BranchJob>),
    Compaction(compaction::CompactionJob),
    Worker(worker_run::WorkerJob),
}
