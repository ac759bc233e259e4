//! The model's calls in a turn, folded into what the turn does: the texts to
//! send, the reactions, whether the conversation is let go, and the work to
//! hand on (branches, workers, follow-ups, cancellations). The channel object
//! carries these out.

/// The word a model answers with to stay silent.
pub const NO_REPLY: &str = "NO_REPLY";

/// What the turn decided to do; the channel object carries these out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Reply {
        text: String,
    },
    Skip {
        reason: String,
    },
    /// Clear every sticky credit of this conversation.
    Disengage,
    /// Think a question through in a background branch.
    Branch {
        question: String,
    },
    /// Hand a task to a background worker.
    SpawnWorker {
        task: String,
        interactive: bool,
    },
    /// A follow-up for an interactive worker that waits for input.
    Route {
        id: String,
        message: String,
    },
    /// Stop a branch or a worker.
    Cancel {
        id: String,
    },
    /// React to the message being answered with an emoji.
    React {
        emoji: String,
    },
}

/// What a turn's actions come to, in the order the model called them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Acts {
    /// The replies to send.
    pub texts: Vec<String>,
    /// Emoji to react with on the message answered.
    pub reactions: Vec<String>,
    /// The model let the conversation go (its sticky credits are cleared).
    pub disengaged: bool,
    /// Branches and workers to start, follow-ups to route, processes to cancel.
    pub delegations: Vec<Action>,
}

/// Sorts the model's actions into what the turn does; a skip does nothing.
pub fn fold(actions: Vec<Action>) -> Acts {
    let mut acts = Acts::default();
    for action in actions {
        match action {
            Action::Reply { text } => acts.texts.push(text),
            Action::Disengage => acts.disengaged = true,
            Action::React { emoji } => acts.reactions.push(emoji),
            Action::Skip { .. } => {}
            delegation => acts.delegations.push(delegation),
        }
    }
    acts
}

/// A text the model meant to send; `NO_REPLY` means silence.
pub fn spoken(text: String) -> Action {
    if text.trim() == NO_REPLY {
        Action::Skip { reason: NO_REPLY.into() }
    } else {
        Action::Reply { text }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(text: &str) -> Action {
        Action::Reply { text: text.into() }
    }

    #[test]
    fn each_action_lands_where_the_turn_carries_it_out() {
        let branch = Action::Branch { question: "why?".into() };
        let worker = Action::SpawnWorker { task: "dig".into(), interactive: false };
        let route = Action::Route { id: "w1".into(), message: "yes".into() };
        let cancel = Action::Cancel { id: "b1".into() };
        let react = Action::React { emoji: "👍".into() };
        let skip = Action::Skip { reason: "not for me".into() };
        let table: [(&str, Vec<Action>, Acts); 6] = [
            ("nothing", vec![], Acts::default()),
            ("a skip does nothing", vec![skip.clone()], Acts::default()),
            (
                "replies in order",
                vec![reply("one"), skip, reply("two")],
                Acts { texts: vec!["one".into(), "two".into()], ..Acts::default() },
            ),
            (
                "a reaction and letting go",
                vec![react, Action::Disengage],
                Acts { reactions: vec!["👍".into()], disengaged: true, ..Acts::default() },
            ),
            (
                "work handed on, in order",
                vec![branch.clone(), worker.clone(), route.clone(), cancel.clone()],
                Acts { delegations: vec![branch.clone(), worker.clone(), route, cancel], ..Acts::default() },
            ),
            (
                "a reply beside work",
                vec![worker.clone(), reply("on it")],
                Acts { texts: vec!["on it".into()], delegations: vec![worker], ..Acts::default() },
            ),
        ];
        for (case, actions, expected) in table {
            assert_eq!(fold(actions), expected, "{case}");
        }
    }
}
