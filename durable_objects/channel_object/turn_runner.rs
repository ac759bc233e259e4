//! Runs the channel's pending turns from the alarm: think once per turn (the
//! model's answer goes to the outbox), then send what the outbox holds.

use worker::{D1Database, Env, Result, SqlStorage, State};

use super::{inbox, outbox};
use crate::channel::turn::{compose_messages, run_turn, Action, TurnContext};
use crate::config::Config;
use crate::edge::config::{load, DATABASE_BINDING};
use crate::edge::history::{self, StoredMessage};
use crate::edge::http::{now_ms, sleep_ms};
use crate::edge::model::HttpModel;
use crate::edge::telegram;
use crate::inbound::InboundEvent;
use crate::platforms::{split_message, telegram::MESSAGE_LIMIT};
use crate::prompt;
use crate::time::format_utc;

/// Turns one alarm runs before it hands over to a fresh alarm.
const MAX_TURNS_PER_ALARM: usize = 8;
/// Wait between attempts at one platform send.
const SEND_BACKOFF_MS: u64 = 500;

pub async fn run_pending(state: &State, env: &Env) -> Result<()> {
    let config = load(env);
    let database = env.d1(DATABASE_BINDING)?;
    let sql = state.storage().sql();
    for _ in 0..MAX_TURNS_PER_ALARM {
        let Some(turn) = inbox::next_turn(&sql)? else {
            return Ok(());
        };
        run_one(&config, &sql, &database, &turn).await?;
    }
    // More turns are waiting: continue in a new alarm rather than run long.
    state.storage().set_alarm(0).await
}

async fn run_one(config: &Config, sql: &SqlStorage, database: &D1Database, turn: &inbox::Turn) -> Result<()> {
    let Some((last_event, _)) = turn.events.last() else {
        return inbox::finish(sql, turn.id, now_ms());
    };
    if !outbox::has_turn(sql, turn.id)? {
        let texts = think(config, database, turn).await?;
        let pieces: Vec<String> = texts.iter().flat_map(|text| split_message(text, MESSAGE_LIMIT)).collect();
        // In a group, quote the message being answered; a DM needs no quote.
        let reply_to = (!last_event.is_dm).then_some(last_event.message_id.as_str());
        outbox::enqueue(sql, turn.id, &pieces, reply_to, now_ms())?;
    }
    let sent = deliver(config, sql, last_event, turn.id).await?;
    history::record(database, &sent).await?;
    inbox::finish(sql, turn.id, now_ms())
}

/// Asks the model; returns the texts to send. A model that keeps failing
/// yields the friendly failure message instead, never silence.
async fn think(config: &Config, database: &D1Database, turn: &inbox::Turn) -> Result<Vec<String>> {
    let stored: Vec<StoredMessage> =
        turn.events.iter().map(|(event, received_at)| StoredMessage::inbound(event, *received_at)).collect();
    let conversation_key = &turn.events[0].0.conversation_key;
    let earlier = history::load_and_record(database, conversation_key, &stored, config.history_limit as usize).await?;
    let current: Vec<InboundEvent> = turn.events.iter().map(|(event, _)| event.clone()).collect();
    let context = TurnContext {
        bot_name: &config.bot_name,
        platform: "Telegram",
        now_utc: format_utc(now_ms()),
        history: &earlier,
        current: &current,
    };
    let outcome = async {
        let messages = compose_messages(&context).map_err(|error| error.to_string())?;
        let model = HttpModel::new(config, &config.channel_model).map_err(|error| error.to_string())?;
        run_turn(&model, model.model_name(), messages).await.map_err(|error| error.to_string())
    }
    .await;
    Ok(match outcome {
        Ok(outcome) => outcome
            .actions
            .into_iter()
            .filter_map(|action| match action {
                Action::Reply { text } => Some(text),
                Action::Skip { .. } => None,
            })
            .collect(),
        Err(error) => {
            worker::console_error!("channel turn {} failed: {error}", turn.id);
            vec![prompt::text("model_failure")]
        }
    })
}

/// Sends the turn's unsent pieces; returns every piece sent so far, as history.
async fn deliver(config: &Config, sql: &SqlStorage, event: &InboundEvent, turn: i64) -> Result<Vec<StoredMessage>> {
    let mut sent = Vec::new();
    for entry in outbox::entries(sql, turn)? {
        let platform_message_id = match entry.status.as_str() {
            "sent" => entry.platform_message_id.clone(),
            "pending" => send_with_retries(config, sql, event, &entry).await?,
            _ => None,
        };
        if let Some(platform_message_id) = platform_message_id {
            sent.push(StoredMessage {
                id: format!("{}:out:{}", event.conversation_key, entry.id),
                conversation_key: event.conversation_key.clone(),
                role: crate::channel::turn::HistoryRole::Assistant,
                author_id: "bot".into(),
                author_name: config.bot_name.clone(),
                content: entry.text.clone(),
                platform_message_id: Some(platform_message_id),
                created_at: now_ms(),
            });
        }
    }
    Ok(sent)
}

async fn send_with_retries(
    config: &Config,
    sql: &SqlStorage,
    event: &InboundEvent,
    entry: &outbox::Entry,
) -> Result<Option<String>> {
    let mut attempts = entry.attempts.max(0) as u32;
    loop {
        match telegram::send_text(config, &event.reply_address, &entry.text, entry.reply_to.as_deref()).await {
            Ok(message_id) => {
                outbox::mark_sent(sql, &entry.id, &message_id)?;
                return Ok(Some(message_id));
            }
            Err(failure) => {
                attempts += 1;
                let give_up = !failure.retryable || attempts >= config.send_max_attempts;
                worker::console_warn!("send of {} failed (attempt {attempts}): {}", entry.id, failure.message);
                outbox::mark_attempt_failed(sql, &entry.id, &failure.message, give_up)?;
                if give_up {
                    return Ok(None);
                }
                sleep_ms(SEND_BACKOFF_MS).await;
            }
        }
    }
}
