//! The `jobs` queue's producer: every job a room hands on goes through
//! [`enqueue`], counted. The consumer is `crate::jobs`. (The conversation
//! index's queue has its own producer, `crate::conversations::store::send`.)

use worker::Env;

use crate::process::Job;
use crate::runtime::config;

/// Sends a job to the `jobs` queue (counted: one queue write).
#[allow(clippy::disallowed_methods)]
pub async fn enqueue(env: &Env, job: &Job) -> worker::Result<()> {
    crate::ops::count(crate::ops::Op::QueueSend);
    env.queue(config::JOBS_BINDING)?.send(job).await
}
