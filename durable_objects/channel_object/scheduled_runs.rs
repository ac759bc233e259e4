//! A conversation's scheduled runs around its turns: claiming the due ones as
//! messages to the bot, and keeping the channel's next due time.

use worker::{D1Database, Result};

use super::Channel;
use crate::channel::state::{ScheduleDue, TurnSnapshot};
use crate::schedules::store as schedules;

/// Claims the conversation's due runs and queues each as a message to the
/// bot; then re-arms for the next due run.
pub(super) async fn take_scheduled_runs(
    object: &Channel,
    database: &D1Database,
    conversation_key: &str,
    now: i64,
) -> Result<()> {
    for run in schedules::claim_due(database, conversation_key, now).await? {
        object.step(|machine| machine.enqueue_scheduled(run, now))?;
    }
    refresh_schedule_due(object, database, conversation_key).await
}

/// Reads the conversation's nearest due run from D1 into the channel state.
async fn refresh_schedule_due(object: &Channel, database: &D1Database, conversation_key: &str) -> Result<()> {
    let next = schedules::next_due(database, conversation_key).await?;
    let due = next.map(|at_ms| ScheduleDue { at_ms, conversation_key: conversation_key.to_string() });
    object.step(|machine| machine.set_schedule_due(due))
}

/// The delivery ids of the scheduled runs a turn answers.
pub(super) fn scheduled_runs(turn: &TurnSnapshot) -> impl Iterator<Item = &str> {
    turn.messages
        .iter()
        .map(|message| message.event.delivery_id.as_str())
        .filter(|id| schedules::parse_run_delivery_id(id).is_some())
}
