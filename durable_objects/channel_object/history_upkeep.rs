//! Keeps the conversation's history in bounds: compacts the context when it
//! outgrows the window (its rows reach D1 with the alarm's commit, commit.rs).

use worker::Result;

use super::thinking::Thought;
use super::{history as history_store, Channel};
use crate::channel::history_mirror::kept_rows;
use crate::log_line::LogLine;
use crate::process::compaction::{plan, CompactionJob, CompactionPlan};
use crate::process::Job;
use crate::runtime::durable::MeteredStorage;
use crate::runtime::log::Emit;

/// Keeps the context inside the window: summarising is queued (the channel
/// never waits for it); only an emergency cut happens here, without an LLM.
/// `turn_id` names the compaction job, so a resumed turn queues it once.
pub(super) async fn compact(object: &Channel, conversation_key: &str, turn_id: u64, thought: &Thought) -> Result<()> {
    let ids = &thought.history_ids;
    match plan(thought.estimated_tokens, object.config.context_window_tokens, ids.len()) {
        CompactionPlan::Nothing => Ok(()),
        CompactionPlan::Truncate { oldest } => {
            history_store::drop_oldest(&object.state.storage().counted_sql(), &ids[..oldest])
        }
        CompactionPlan::Summarise { oldest } => {
            // The compactor reads the messages from D1: they must be there.
            let keep = kept_rows(object.config.history_limit);
            if let Err(error) =
                history_store::mirror(&object.state.storage().counted_sql(), &object.held, &object.env, keep).await
            {
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
