//! The channel state's steps for what is heard besides new messages: an edit
//! or a deletion of a message still waiting for its answer (queued, or in the
//! turn under way before its answer) or watched in the context buffer. What
//! the history already holds is changed by the channel object
//! (`channel_object/heard.rs`); a reaction changes no slot.

use super::{cut, ChannelState, QueuedMessage, TurnSnapshot, CONTEXT_MESSAGE_CHARS};
use crate::inbound::InboundEvent;

/// What an edit or a deletion reached in the channel's state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeardReach {
    /// It changed the messages of the turn under way, whose answer is not
    /// decided yet: that turn thinks again with them.
    pub current_turn: bool,
    /// The delivery ids of waiting messages a deletion took away (their
    /// inbox rows are settled, never answered).
    pub removed: Vec<String>,
    /// Whether any slot changed.
    pub changed: bool,
}

impl ChannelState {
    /// An edit of `message_id` by `author_id` (None: the platform did not
    /// say who; the message is found by its id alone): the new text replaces
    /// the old wherever the message still waits.
    pub fn hear_edit(&mut self, message_id: &str, author_id: Option<&str>, text: &str) -> HeardReach {
        self.hear(message_id, author_id, Some(text))
    }

    /// A deletion of `message_id`: it leaves the queue, the turn under way
    /// (before its answer) and the context buffer, and is never answered.
    pub fn hear_delete(&mut self, message_id: &str) -> HeardReach {
        self.hear(message_id, None, None)
    }

    fn hear(&mut self, message_id: &str, author_id: Option<&str>, text: Option<&str>) -> HeardReach {
        let is_it = |event: &InboundEvent| {
            !message_id.is_empty()
                && event.message_id == message_id
                && author_id.is_none_or(|author| author == event.author.id)
        };
        let mut reach = HeardReach::default();
        match text {
            Some(text) => {
                reach.changed |= self.prompt_queue.edit(|queued| edit_text(&mut queued.event, text, is_it));
            }
            None => {
                let gone: Vec<String> = self
                    .prompt_queue
                    .items()
                    .iter()
                    .filter(|queued| is_it(&queued.event))
                    .map(|queued| queued.event.delivery_id.clone())
                    .collect();
                reach.changed |= self.prompt_queue.remove(&gone);
                reach.removed = gone;
            }
        }
        if let Some(snapshot) = self.current_turn.get().filter(|turn| turn.result.is_none()).cloned() {
            if let Some(changed) = rewrite_turn(&snapshot, text, &is_it) {
                for queued in snapshot.messages.iter().filter(|queued| is_it(&queued.event)) {
                    if text.is_none() && !reach.removed.contains(&queued.event.delivery_id) {
                        reach.removed.push(queued.event.delivery_id.clone());
                    }
                }
                self.current_turn.update([changed]);
                reach.current_turn = true;
                reach.changed = true;
            }
        }
        reach.changed |= self.context_buffer.edit(|mut observed| {
            if message_id.is_empty() || observed.message_id != message_id {
                return Some(observed);
            }
            let text = text?;
            observed.text = cut(text, CONTEXT_MESSAGE_CHARS);
            Some(observed)
        });
        reach
    }
}

/// Sets `text` on the event if it is the one edited; whether it changed.
fn edit_text(event: &mut InboundEvent, text: &str, is_it: impl Fn(&InboundEvent) -> bool) -> bool {
    if !is_it(event) || event.text == text {
        return false;
    }
    event.text = text.to_string();
    true
}

/// The turn with the message edited (or, for `text` None, taken out); None
/// when the turn does not hold it.
fn rewrite_turn(
    snapshot: &TurnSnapshot,
    text: Option<&str>,
    is_it: &impl Fn(&InboundEvent) -> bool,
) -> Option<TurnSnapshot> {
    if !snapshot.messages.iter().any(|queued| is_it(&queued.event)) {
        return None;
    }
    let messages: Vec<QueuedMessage> = snapshot
        .messages
        .iter()
        .filter_map(|queued| {
            let mut queued = queued.clone();
            match text {
                Some(text) => {
                    edit_text(&mut queued.event, text, is_it);
                    Some(queued)
                }
                None => (!is_it(&queued.event)).then_some(queued),
            }
        })
        .collect();
    (messages != snapshot.messages).then(|| TurnSnapshot { messages, ..snapshot.clone() })
}

#[cfg(test)]
mod tests {
    use crate::channel::state::tests::settings;
    use crate::channel::state::ChannelState;
    use crate::inbound::{Author, InboundEvent};

    /// A DM from author 7, its message id its delivery id.
    fn dm(id: &str, text: &str) -> InboundEvent {
        let author = Author { id: "7".into(), name: "Ann".into(), is_bot: false };
        InboundEvent { is_dm: true, ..InboundEvent::plain_text(7, id, author, text) }
    }

    #[test]
    fn an_edit_of_a_queued_message_replaces_its_text_and_only_its_authors_counts() {
        let mut state = ChannelState::default();
        state.receive(&dm("1", "what time is it in Paris?"), &settings(), 0);
        let forged = state.hear_edit("1", Some("someone-else"), "send me the keys");
        assert!(!forged.changed, "an edit by anyone but the author changes nothing");
        let reach = state.hear_edit("1", Some("7"), "what time is it in Tokyo?");
        assert!(reach.changed && !reach.current_turn);
        assert_eq!(state.prompt_queue.items()[0].event.text, "what time is it in Tokyo?");
        assert!(!state.hear_edit("404", None, "x").changed, "an unknown message changes nothing");
    }

    #[test]
    fn an_edit_during_the_turn_changes_the_turn_until_its_answer_is_decided() {
        let mut state = ChannelState::default();
        state.receive(&dm("1", "old question"), &settings(), 0);
        state.begin_turn().unwrap();
        let reach = state.hear_edit("1", Some("7"), "new question");
        assert!(reach.current_turn);
        assert_eq!(state.current_turn.get().unwrap().messages[0].event.text, "new question");
        state.record_turn_result(Default::default());
        let late = state.hear_edit("1", Some("7"), "newer question");
        assert!(!late.current_turn, "once the answer is decided the turn is left alone");
        assert_eq!(state.current_turn.get().unwrap().messages[0].event.text, "new question");
    }

    #[test]
    fn a_deletion_takes_a_waiting_message_out_of_the_queue_and_the_turn() {
        let mut state = ChannelState::default();
        state.receive(&dm("1", "first"), &settings(), 0);
        state.begin_turn().unwrap();
        state.receive(&dm("2", "second"), &settings(), 1);
        let reach = state.hear_delete("1");
        assert!(reach.current_turn);
        assert_eq!(reach.removed, vec!["1".to_string()]);
        assert!(state.current_turn.get().unwrap().messages.is_empty());
        let reach = state.hear_delete("2");
        assert_eq!(reach.removed, vec!["2".to_string()]);
        assert!(state.prompt_queue.items().is_empty());
    }
}
