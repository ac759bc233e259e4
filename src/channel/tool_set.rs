//! The channel's own tools, as types: each call becomes an [`Action`] the
//! channel carries out after the turn, checked against the processes running
//! (the turn's own view of them). `schedule` is the channel's too, but its
//! edge answers it ([`HostToolSet`]).

use std::cell::RefCell;

use super::actions::{spoken, Action};
use super::processes::{ProcessKind, Processes};
use crate::llm::tool::{NoArguments, Run};
use crate::schedules::arguments::Schedule;
use crate::skills::arguments::OpenSkill;

crate::tool_set! {
    /// The tools the turn itself answers.
    pub TurnToolSet = [Reply, React, Branch, SpawnWorker, Route, Cancel, ChannelDisengage, Skip]
}

crate::tool_set! {
    /// The channel tools its edge answers during a turn (storage, clocks).
    pub HostToolSet = [Schedule, OpenSkill]
}

crate::tool! {
    /// `reply`: send a message to the conversation.
    pub Reply = "reply",
    /// `reply`'s arguments.
    struct ReplyArguments {
        /// The message to send.
        pub content: String,
    }
}

crate::tool! {
    /// `react`: an emoji on the message answered.
    pub React = "react",
    /// `react`'s arguments.
    struct ReactArguments {
        /// One emoji, e.g. 👍
        pub emoji: String,
    }
}

crate::tool! {
    /// `branch`: think a question through in the background.
    pub Branch = "branch",
    /// `branch`'s arguments.
    struct BranchArguments {
        /// What to think through.
        pub question: String,
    }
}

crate::tool! {
    /// `spawn_worker`: hand a task to a background worker.
    pub SpawnWorker = "spawn_worker",
    /// `spawn_worker`'s arguments.
    struct SpawnWorkerArguments {
        /// The whole task: the worker sees nothing else.
        pub task: String,
        /// Whether it may ask for follow-ups.
        pub interactive: Option<bool>,
    }
}

crate::tool! {
    /// `route`: a follow-up for a worker waiting for input.
    pub Route = "route",
    /// `route`'s arguments.
    struct RouteArguments {
        /// The worker's id.
        pub id: String,
        /// The follow-up.
        pub message: String,
    }
}

crate::tool! {
    /// `cancel`: stop a branch or a worker.
    pub Cancel = "cancel",
    /// `cancel`'s arguments.
    struct CancelArguments {
        /// The branch's or worker's id.
        pub id: String,
    }
}

crate::tool! {
    /// `channel_disengage`: step back until addressed again.
    pub ChannelDisengage = "channel_disengage", NoArguments
}

crate::tool! {
    /// `skip`: stay silent this turn.
    pub Skip = "skip",
    /// `skip`'s arguments.
    struct SkipArguments {
        /// Why no answer is needed.
        pub reason: Option<String>,
    }
}

/// The turn's tools as they act: on the turn's own view of the processes
/// (what it starts, routes and cancels counts at once).
pub struct TurnTools {
    pub processes: RefCell<Processes>,
}

/// A call's action, or why it was refused (the model is told).
type Acted = Result<Action, String>;

impl TurnTools {
    fn start(&self, kind: ProcessKind) -> Result<(), String> {
        match self.processes.borrow_mut().reserve(kind) {
            true => Ok(()),
            false => Err("too many are running already; answer directly or wait".to_string()),
        }
    }
}

/// `value`, if it says something; else the error the model reads.
fn non_empty(key: &str, value: String) -> Result<String, String> {
    match value.trim().is_empty() {
        true => Err(format!("`{key}` must be a non-empty string")),
        false => Ok(value),
    }
}

impl Run<Reply, Acted> for TurnTools {
    async fn run(&self, arguments: ReplyArguments) -> Acted {
        Ok(spoken(non_empty("content", arguments.content)?))
    }
}

impl Run<React, Acted> for TurnTools {
    async fn run(&self, arguments: ReactArguments) -> Acted {
        let emoji = non_empty("emoji", arguments.emoji)?;
        crate::reply::reaction::parse(&emoji).map_err(str::to_string)?;
        Ok(Action::React { emoji })
    }
}

impl Run<Branch, Acted> for TurnTools {
    async fn run(&self, arguments: BranchArguments) -> Acted {
        let question = non_empty("question", arguments.question)?;
        self.start(ProcessKind::Branch)?;
        Ok(Action::Branch { question })
    }
}

impl Run<SpawnWorker, Acted> for TurnTools {
    async fn run(&self, arguments: SpawnWorkerArguments) -> Acted {
        let task = non_empty("task", arguments.task)?;
        self.start(ProcessKind::Worker)?;
        Ok(Action::SpawnWorker { task, interactive: arguments.interactive.unwrap_or(false) })
    }
}

impl Run<Route, Acted> for TurnTools {
    async fn run(&self, arguments: RouteArguments) -> Acted {
        let id = non_empty("id", arguments.id)?;
        let message = non_empty("message", arguments.message)?;
        self.processes.borrow_mut().route(&id).map_err(|refusal| refusal.to_string())?;
        Ok(Action::Route { id, message })
    }
}

impl Run<Cancel, Acted> for TurnTools {
    async fn run(&self, arguments: CancelArguments) -> Acted {
        let id = non_empty("id", arguments.id)?;
        self.processes.borrow_mut().cancel(&id).map_err(|refusal| refusal.to_string())?;
        Ok(Action::Cancel { id })
    }
}

impl Run<ChannelDisengage, Acted> for TurnTools {
    async fn run(&self, _arguments: NoArguments) -> Acted {
        Ok(Action::Disengage)
    }
}

impl Run<Skip, Acted> for TurnTools {
    async fn run(&self, arguments: SkipArguments) -> Acted {
        Ok(Action::Skip { reason: arguments.reason.unwrap_or_default() })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::channel::actions::NO_REPLY;
    use crate::llm::tool::Tool;
    use std::future::Future;

    #[test]
    fn channel_arguments_parse_and_bad_ones_say_what_is_wrong() {
        let worker = SpawnWorker::parse(&json!({ "task": "read the page" })).unwrap();
        assert_eq!((worker.task.as_str(), worker.interactive), ("read the page", None));
        assert!(SpawnWorker::parse(&json!({ "task": "x", "interactive": "yes" }))
            .unwrap_err()
            .contains("invalid type"));
        assert!(Route::parse(&json!({ "id": "w1" })).unwrap_err().contains("missing field `message`"));
        assert!(Reply::parse(&json!({ "content": ["a"] })).is_err());
        assert!(Skip::parse(&json!({})).is_ok() && ChannelDisengage::parse(&json!(null)).is_ok());
    }

    #[test]
    fn an_empty_text_is_refused_with_the_name_of_its_argument() {
        let tools = TurnTools { processes: RefCell::new(Processes::default()) };
        let reply = |content: &str| {
            let call = Run::<Reply, Acted>::run(&tools, ReplyArguments { content: content.into() });
            let mut call = std::pin::pin!(call);
            match call.as_mut().poll(&mut std::task::Context::from_waker(std::task::Waker::noop())) {
                std::task::Poll::Ready(acted) => acted,
                std::task::Poll::Pending => unreachable!("the turn's tools never wait"),
            }
        };
        assert_eq!(reply("  "), Err("`content` must be a non-empty string".into()));
        assert_eq!(reply("hi"), Ok(Action::Reply { text: "hi".into() }));
        assert_eq!(reply(NO_REPLY), Ok(Action::Skip { reason: NO_REPLY.into() }));
    }
}
