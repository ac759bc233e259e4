//! Keeps the conversation's history in bounds and in D1: mirrors its rows after
//! each alarm's turns and compacts the context when it outgrows the window.

use worker::{D1Database, Result};

use super::thinking::Thought;
use super::{history as history_store, ChannelObject};
use crate::channel::history_mirror::kept_rows;
use crate::log_line::LogLine;
use crate::process::compaction::{plan, CompactionJob, CompactionPlan};
use crate::process::Job;
use crate::runtime::config::DATABASE_BINDING;
use crate::runtime::durable::MeteredStorage;
use crate::runtime::log::Emit;

/// When history rows could not be mirrored to D1 (or more wait), the object
/// comes back for them this much later if nothing else wakes it sooner.
const MIRROR_RETRY_MS: i64 = 30_000;

/// Mirrors the history rows D1 lacks. A failure keeps them for later (the
/// alarm comes back for them); replies never wait on it.
pub(super) async fn mirror_history(object: &ChannelObject) -> Result<()> {
    let sql = object.state.storage().counted_sql();
    let database = object.env.d1(DATABASE_BINDING)?;
    if let Err(error) = history_store::mirror(&sql, &database, kept_rows(object.config.history_limit)).await {
        LogLine::warn("history_not_mirrored").field("recovery", "kept for the next alarm").reason(&error).emit();
    }
    let storage = object.state.storage();
    if history_store::has_pending(&sql)? && storage.get_alarm().await?.is_none() {
        storage.set_alarm_counted(MIRROR_RETRY_MS).await?;
    }
    Ok(())
}

/// Keeps the context inside the window: summarising is queued (the channel
/// never waits for it); only an emergency cut happens here, without an LLM.
/// `turn_id` names the compaction job, so a resumed turn queues it once.
pub(super) async fn compact(
    object: &ChannelObject,
    database: &D1Database,
    conversation_key: &str,
    turn_id: u64,
    thought: &Thought,
) -> Result<()> {
    let ids = &thought.history_ids;
    match plan(thought.estimated_tokens, object.config.context_window_tokens, ids.len()) {
        CompactionPlan::Nothing => Ok(()),
        CompactionPlan::Truncate { oldest } => {
            history_store::drop_oldest(&object.state.storage().counted_sql(), &ids[..oldest])
        }
        CompactionPlan::Summarise { oldest } => {
            // The compactor reads the messages from D1: they must be there.
            let keep = kept_rows(object.config.history_limit);
            if let Err(error) = history_store::mirror(&object.state.storage().counted_sql(), database, keep).await {
                LogLine::warn("compaction_waits_for_mirror").reason(&error).emit();
                return Ok(());
            }
            let job = Job::Compaction(CompactionJob {
                id: format!("{conversation_key}:{turn_id}:compaction"),
                conversation_key: conversation_key.to_string(),
                message_ids: ids[..oldest].to_vec(),
            });
            crate::runtime::queue::enqueue(&object.env, &job).await
        }
    }
}
