//! Processes besides the channel: branches (and, later, workers) that run as
//! Queue jobs and report back to the channel through typed envelopes.

pub mod branch;
pub mod envelope;
