//! The `jobs` queue's producer: every job a room hands on goes through
//! [`enqueue`], counted. The consumer is `crate::jobs`.

use worker::Env;

use crate::process::Job;
use crate::runtime::config;

/// Sends a job to the `jobs` queue (counted: one queue write).
#[allow(clippy::disallowed_methods)]
pub async fn enqueue(env: &Env, job: &Job) -> worker::Result<()> {
    crate::ops::count(crate::ops::Op::QueueSend);
    env.queue(config::JOBS_BINDING)?.send(job).await
}

/// Sends the conversation's index row to the index queue (counted: one queue
/// write); its consumer ([`crate::conversations::store::write_batch`]) writes a
/// batch of them in one D1 statement. Without the binding (an older
/// wrangler.toml), the row is written to D1 directly, as before.
#[allow(clippy::disallowed_methods)]
pub async fn send_index(env: &Env, row: &crate::conversations::store::Conversation) -> worker::Result<()> {
    let Ok(queue) = env.queue(config::INDEX_QUEUE_BINDING) else {
        let db = env.d1(config::DATABASE_BINDING)?;
        return crate::conversations::store::upsert(&db, row, crate::runtime::http::now_ms()).await;
    };
    crate::ops::count(crate::ops::Op::QueueSend);
    queue.send(row).await
}
