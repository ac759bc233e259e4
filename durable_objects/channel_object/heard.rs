//! What the channel hears besides new messages (`crate::inbound::HeardEvent`):
//! an edit replaces the message wherever it is kept (the waiting queue, the
//! turn under way before its answer, the context buffer, the history here and
//! in D1); a deletion takes it out of all of them, with the memories learned
//! from it; a reaction to one of the
//! bot's messages becomes a line in the history the next turn reads. None
//! starts a turn. Each is taken once per delivery id, through the inbox.

use worker::Result;

use super::reply::Reply;
use super::{history, inbox, json_body, Channel};
use crate::inbound::{Heard, HeardEvent};
use crate::runtime::config::DATABASE_BINDING;
use crate::runtime::durable::MeteredStorage;
use crate::runtime::http::now_ms;

/// Takes one heard event and answers what it reached.
pub(super) async fn receive(object: &Channel, body: &str) -> Result<Reply> {
    let Ok(event) = json_body::<HeardEvent>(body) else {
        return Ok(Reply::error("malformed heard event", 400));
    };
    let sql = object.state.storage().counted_sql();
    if object.deliveries()?.contains(&event.delivery_id) {
        return Reply::json(&serde_json::json!({ "ok": true, "duplicate": true }));
    }
    let now = now_ms();
    let author_id = event.author.as_ref().map(|author| author.id.as_str());
    let outcome = match &event.heard {
        Heard::Edit { text } => {
            // D1 first: a failure there fails the delivery (the platform
            // retries) before the inbox would take it as done.
            let shard = crate::runtime::d1::shard_of(&object.env, &event.conversation_key)?;
            crate::conversations::archive::hear(
                &shard,
                &event.conversation_key,
                &event.message_id,
                author_id,
                Some(text),
            )
            .await?;
            let reach = object.step(|machine| machine.hear_edit(&event.message_id, author_id, text))?;
            let rows = history::edit(&sql, &event.message_id, author_id, text)?;
            describe(reach.current_turn, reach.changed || rows > 0)
        }
        Heard::Delete => {
            let shard = crate::runtime::d1::shard_of(&object.env, &event.conversation_key)?;
            crate::conversations::archive::hear(&shard, &event.conversation_key, &event.message_id, None, None).await?;
            let database = object.env.d1(DATABASE_BINDING)?;
            let (key, message) = (&event.conversation_key, &event.message_id);
            crate::memory::store::forget_learned_from(&object.config, &object.env, &database, key, message).await?;
            let reach = object.step(|machine| machine.hear_delete(&event.message_id))?;
            inbox::settle(&sql, &mut *object.deliveries()?, &reach.removed, "deleted", now)?;
            let rows = history::delete(&sql, &event.message_id)?;
            describe(reach.current_turn, reach.changed || rows > 0)
        }
        Heard::Reaction { emoji, added } => match (&event.author, history::bot_message(&sql, &event.message_id)?) {
            (Some(author), Some(said)) if !author.is_bot => {
                // The name the conversation knows them by (Slack sends only an id).
                let mut author = author.clone();
                if let Some(known) = object.machine.borrow().participants.get().by_id.get(&author.id) {
                    author.name = known.name.clone();
                }
                let line = crate::inbound::reaction_line(&author.name, emoji, *added, &said);
                history::note(&sql, &event, &author, &line, now)?;
                "noted for the next turn"
            }
            (Some(author), _) if author.is_bot => "ignored: a bot's reaction",
            _ => "ignored: not a message of the bot's",
        },
    };
    inbox::store_heard(&sql, &mut *object.deliveries()?, &event, outcome, now)?;
    crate::platforms::web_chat::messenger::changed(&object.state, "events");
    let reason = format!("{}: {outcome}", event.heard.label());
    Reply::json(&serde_json::json!({ "ok": true, "decision": "heard", "reason": reason }))
}

/// What an edit or a deletion reached, for the inbox and the answer.
fn describe(current_turn: bool, changed: bool) -> &'static str {
    match (current_turn, changed) {
        (true, _) => "applied to the turn under way",
        (false, true) => "applied",
        (false, false) => "ignored: nothing the bot keeps changed",
    }
}
