//! One channel turn: compose the prompt, let the model call the channel tools
//! (at most [`MAX_MODEL_CALLS_PER_TURN`] times), and return the actions to carry out.
//!
//! The loop is generic over [`ChatModel`], so it runs natively in tests with a
//! scripted model and in the Worker with the real provider.

use serde_json::json;

use super::processes::{ProcessKind, ProcessReport, Processes};
use super::state::{Notice, ObservedMessage};
use crate::inbound::InboundEvent;
use crate::llm::{
    object, ChatMessage, ChatModel, ChatRequest, HistoryEntry, HistoryRole, LlmError, Role, ToolSpec, Usage,
};
use crate::process::envelope::MessageType;
use crate::prompt;

/// Most channel turns take one to three model calls; past this the channel is
/// trying to work instead of delegating.
pub const MAX_MODEL_CALLS_PER_TURN: u32 = 5;

/// The word a model answers with to stay silent.
pub const NO_REPLY: &str = "NO_REPLY";

/// Everything a turn's prompt is made of.
#[derive(Debug, Clone)]
pub struct TurnContext<'a> {
    pub bot_name: &'a str,
    pub platform: &'a str,
    pub now_utc: String,
    /// The cortex's memory bulletin (may be empty).
    pub bulletin: &'a str,
    /// Compaction summaries of earlier history, oldest first.
    pub summaries: &'a [String],
    pub history: &'a [HistoryEntry],
    /// What the bot watched silently since its last turn.
    pub context: &'a [ObservedMessage],
    pub current: &'a [InboundEvent],
    pub notice: Notice,
    /// Work that finished (or asks for input) since the last turn.
    pub process_events: &'a [ProcessReport],
    /// Branches and workers still running.
    pub processes: &'a Processes,
}

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

#[derive(Debug, Clone, PartialEq, Default)]
pub struct TurnOutcome {
    pub actions: Vec<Action>,
    pub usage: Usage,
    pub model_calls: u32,
}

/// The channel tools offered to the model.
pub fn channel_tools() -> Vec<ToolSpec> {
    let text = |description: &str| json!({ "type": "string", "description": description });
    vec![
        ToolSpec::new("reply", object(json!({ "content": text("The message to send.") }), &["content"])),
        ToolSpec::new("react", object(json!({ "emoji": text("One emoji, e.g. 👍") }), &["emoji"])),
        ToolSpec::new("branch", object(json!({ "question": text("What to think through.") }), &["question"])),
        ToolSpec::new(
            "spawn_worker",
            object(
                json!({
                    "task": text("The whole task: the worker sees nothing else."),
                    "interactive": { "type": "boolean", "description": "Whether it may ask for follow-ups." }
                }),
                &["task"],
            ),
        ),
        ToolSpec::new(
            "route",
            object(json!({ "id": text("The worker's id."), "message": text("The follow-up.") }), &["id", "message"]),
        ),
        ToolSpec::new("cancel", object(json!({ "id": text("The branch's or worker's id.") }), &["id"])),
        ToolSpec::new("channel_disengage", object(json!({}), &[])),
        ToolSpec::new("skip", object(json!({ "reason": text("Why no answer is needed.") }), &[])),
        ToolSpec::new(
            "schedule",
            object(
                json!({
                    "action": { "type": "string", "enum": ["create", "list", "cancel"] },
                    "prompt": text("create: what to do when it runs, written as a request to yourself."),
                    "at": text("create, one-shot: local time `YYYY-MM-DD HH:MM` in `timezone`."),
                    "in_seconds": { "type": "integer", "description": "create, one-shot: run this many seconds from now." },
                    "cron": text("create, recurring: a 5-field cron expression in `timezone`, e.g. `30 8 * * 1-5`."),
                    "every_seconds": { "type": "integer", "description": "create, recurring: a fixed interval." },
                    "timezone": text("An IANA time zone, e.g. Europe/Berlin (default: the configured one)."),
                    "active_hours": text("create, optional: local window `HH:MM-HH:MM` (may wrap midnight)."),
                    "end_at": text("create, optional: local time `YYYY-MM-DD HH:MM` after which it stops."),
                    "max_runs": { "type": "integer", "description": "create, optional: stop after this many runs." },
                    "id": text("cancel: the job's id.")
                }),
                &["action"],
            ),
        ),
    ]
}

/// Tools whose answers need the world outside the turn (storage, clocks):
/// the channel's edge answers them, so the turn loop stays pure.
#[allow(async_fn_in_trait)] // Workers are single-threaded; futures need not be Send.
pub trait ToolHost {
    /// The answer to a tool the turn does not handle itself, or None when
    /// the host has no such tool either.
    async fn call(&self, name: &str, arguments: &serde_json::Value) -> Option<String>;
}

/// A host with no tools of its own.
pub struct NoTools;

impl ToolHost for NoTools {
    async fn call(&self, _name: &str, _arguments: &serde_json::Value) -> Option<String> {
        None
    }
}

/// The messages of a turn's first model call.
pub fn compose_messages(context: &TurnContext<'_>) -> Result<Vec<ChatMessage>, prompt::Error> {
    let system = prompt::render(
        "channel_system",
        json!({
            "bot_name": context.bot_name,
            "platform": context.platform,
            "now_utc": context.now_utc,
            "bulletin": context.bulletin,
            "is_dm": context.current.iter().all(|event| event.is_dm),
        }),
    )?;
    let mut messages = vec![ChatMessage::new(Role::System, system)];
    if !context.summaries.is_empty() {
        let summaries = prompt::render("history_summaries", json!({ "summaries": context.summaries }))?;
        messages.push(ChatMessage::new(Role::System, summaries));
    }
    for entry in context.history {
        let message = match entry.role {
            HistoryRole::User => ChatMessage::new(
                Role::User,
                prompt::render("history_message", json!({ "author": entry.author_name, "text": entry.content }))?,
            ),
            HistoryRole::Assistant => ChatMessage::new(Role::Assistant, entry.content.clone()),
        };
        messages.push(message);
    }
    let current: Vec<_> = context
        .current
        .iter()
        .map(|event| {
            json!({
                "author": event.author.name,
                "text": event.text,
                "attachments": event.attachments.iter().map(|attachment| attachment.kind.clone()).collect::<Vec<_>>(),
            })
        })
        .collect();
    let context_lines: Vec<_> = context
        .context
        .iter()
        .map(|observed| json!({ "author": observed.author_name, "text": observed.text }))
        .collect();
    let completed: Vec<_> = context
        .process_events
        .iter()
        .map(|event| {
            json!({
                "label": event.kind.label(),
                "task": event.task,
                "body": event.envelope.body,
                "failed": event.envelope.kind == MessageType::Error,
                "waiting": event.envelope.kind == MessageType::Waiting,
                "id": event.envelope.reference,
            })
        })
        .collect();
    let running: Vec<_> = context
        .processes
        .iter()
        .map(|(id, process)| {
            json!({
                "id": id,
                "label": process.kind.label(),
                "task": process.task,
                "status": process.status,
                "waiting": process.waiting,
                "interactive": process.interactive,
            })
        })
        .collect();
    let turn = prompt::render(
        "channel_turn",
        json!({
            "current": current,
            "context": context_lines,
            "notice": context.notice,
            "completed": completed,
            "running": running,
        }),
    )?;
    messages.push(ChatMessage::new(Role::User, turn));
    Ok(messages)
}

/// Runs the model/tool loop until the model replies, skips, or runs out of
/// calls. Starting, routing to and cancelling processes is checked against
/// `processes` (the channel's table as the turn began).
pub async fn run_turn(
    model: &impl ChatModel,
    model_name: &str,
    mut messages: Vec<ChatMessage>,
    processes: &Processes,
    host: &impl ToolHost,
) -> Result<TurnOutcome, LlmError> {
    let tools = channel_tools();
    let mut outcome = TurnOutcome::default();
    // The turn's own view: what it starts, routes and cancels counts at once.
    let mut processes = processes.clone();
    while outcome.model_calls < MAX_MODEL_CALLS_PER_TURN {
        let request = ChatRequest { model: model_name.to_string(), messages: messages.clone(), tools: tools.clone() };
        let completion = model.complete(&request).await?;
        outcome.model_calls += 1;
        outcome.usage.input_tokens += completion.usage.input_tokens;
        outcome.usage.output_tokens += completion.usage.output_tokens;

        if completion.tool_calls.is_empty() {
            // A plain answer is the reply; there is no second send path.
            if let Some(text) = completion.content {
                outcome.actions.push(spoken(text));
            }
            return Ok(outcome);
        }

        let mut assistant = ChatMessage::new(Role::Assistant, completion.content.unwrap_or_default());
        assistant.tool_calls = completion.tool_calls.clone();
        messages.push(assistant);
        let mut finished = false;
        for call in &completion.tool_calls {
            let result = match channel_tool(&call.name, &call.arguments, &mut processes) {
                Ok(action) => {
                    let result = action_result(&action);
                    finished |= matches!(action, Action::Reply { .. } | Action::Skip { .. });
                    outcome.actions.push(action);
                    result
                }
                Err(ToolRefusal::Unknown(name)) => match host.call(&name, &call.arguments).await {
                    Some(result) => result,
                    None => format!("error: there is no tool named `{name}`"),
                },
                Err(ToolRefusal::Invalid(error)) => format!("error: {error}"),
            };
            messages.push(ChatMessage::tool_result(&call.id, result));
        }
        if finished {
            return Ok(outcome);
        }
    }
    Ok(outcome)
}

/// Why a tool call did not become an action.
enum ToolRefusal {
    /// Not one of the turn's own tools (the host may have it).
    Unknown(String),
    /// One of them, called wrongly or refused: the model is told why.
    Invalid(String),
}

impl From<String> for ToolRefusal {
    fn from(reason: String) -> Self {
        ToolRefusal::Invalid(reason)
    }
}

/// Reads one tool call into an action, checking it against the processes.
fn channel_tool(name: &str, arguments: &serde_json::Value, processes: &mut Processes) -> Result<Action, ToolRefusal> {
    let argument = |key: &str| -> Result<String, String> {
        match arguments.get(key).and_then(|value| value.as_str()) {
            Some(value) if !value.trim().is_empty() => Ok(value.to_string()),
            _ => Err(format!("`{key}` must be a non-empty string")),
        }
    };
    let start = |processes: &mut Processes, kind: ProcessKind| match processes.reserve(kind) {
        true => Ok(()),
        false => Err("too many are running already; answer directly or wait".to_string()),
    };
    match name {
        "reply" => Ok(spoken(argument("content")?)),
        "skip" => Ok(Action::Skip {
            reason: arguments.get("reason").and_then(|value| value.as_str()).unwrap_or("").to_string(),
        }),
        "react" => {
            let emoji = argument("emoji")?;
            crate::reply::reaction::parse(&emoji).map_err(str::to_string)?;
            Ok(Action::React { emoji })
        }
        "channel_disengage" => Ok(Action::Disengage),
        "branch" => {
            let question = argument("question")?;
            start(processes, ProcessKind::Branch)?;
            Ok(Action::Branch { question })
        }
        "spawn_worker" => {
            let task = argument("task")?;
            start(processes, ProcessKind::Worker)?;
            let interactive = arguments.get("interactive").and_then(|value| value.as_bool()).unwrap_or(false);
            Ok(Action::SpawnWorker { task, interactive })
        }
        "route" => {
            let id = argument("id")?;
            let message = argument("message")?;
            processes.route(&id).map_err(|refusal| refusal.to_string())?;
            Ok(Action::Route { id, message })
        }
        "cancel" => {
            let id = argument("id")?;
            processes.cancel(&id).map_err(|refusal| refusal.to_string())?;
            Ok(Action::Cancel { id })
        }
        other => Err(ToolRefusal::Unknown(other.to_string())),
    }
}

/// What the model is told a successful tool call did.
fn action_result(action: &Action) -> String {
    match action {
        Action::Reply { .. } => "sent",
        Action::Skip { .. } => "skipped",
        Action::React { .. } => "reacted",
        Action::Disengage => "disengaged: people must address you again before you answer",
        Action::Branch { .. } => "branch started: its conclusion comes back to you in a later turn",
        Action::SpawnWorker { .. } => "worker started: its progress shows in Status and its outcome comes back to you",
        Action::Route { .. } => "follow-up sent to the worker",
        Action::Cancel { .. } => "cancelled",
    }
    .to_string()
}

/// A text the model meant to send; `NO_REPLY` means silence.
fn spoken(text: String) -> Action {
    if text.trim() == NO_REPLY {
        Action::Skip { reason: NO_REPLY.into() }
    } else {
        Action::Reply { text }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::collections::VecDeque;

    use super::*;
    use crate::channel::processes::ProcessStatus;
    use crate::inbound::Author;
    use crate::llm::{Completion, ToolCall};

    struct ScriptedModel {
        answers: RefCell<VecDeque<Result<Completion, LlmError>>>,
        requests: RefCell<Vec<ChatRequest>>,
    }

    impl ScriptedModel {
        fn new(answers: Vec<Result<Completion, LlmError>>) -> Self {
            ScriptedModel { answers: RefCell::new(answers.into()), requests: RefCell::new(Vec::new()) }
        }
    }

    impl ChatModel for ScriptedModel {
        async fn complete(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
            self.requests.borrow_mut().push(request.clone());
            self.answers.borrow_mut().pop_front().unwrap_or(Err(LlmError::Status(500)))
        }
    }

    fn call(name: &str, arguments: serde_json::Value) -> Completion {
        Completion {
            tool_calls: vec![ToolCall { id: format!("id-{name}"), name: name.into(), arguments }],
            ..Completion::default()
        }
    }

    /// Two branches already running: one slot is left.
    fn busy_processes() -> Processes {
        let mut processes = Processes::default();
        for id in ["b0", "b1"] {
            processes.start(id, process(ProcessKind::Branch, false));
        }
        processes
    }

    fn process(kind: ProcessKind, interactive: bool) -> ProcessStatus {
        ProcessStatus {
            kind,
            task: "is it raining?".into(),
            started_at_ms: 0,
            origin: event("x"),
            status: None,
            interactive,
            waiting: false,
            last_heard_ms: 0,
        }
    }

    /// The tool results the model was shown in its `request`-th call.
    fn tool_results(model: &ScriptedModel, request: usize) -> Vec<String> {
        let requests = model.requests.borrow();
        requests[request]
            .messages
            .iter()
            .filter(|message| message.role == Role::Tool)
            .map(|message| message.content.clone())
            .collect()
    }

    /// A host that answers `schedule` calls with a fixed text.
    struct EchoHost;

    impl ToolHost for EchoHost {
        async fn call(&self, name: &str, arguments: &serde_json::Value) -> Option<String> {
            (name == "schedule").then(|| format!("scheduled: {}", arguments["prompt"]))
        }
    }

    #[test]
    fn tools_the_turn_does_not_know_go_to_the_host_and_unknown_ones_are_refused() {
        let calls = Completion {
            tool_calls: vec![
                ToolCall { id: "a".into(), name: "schedule".into(), arguments: json!({"prompt": "water plants"}) },
                ToolCall { id: "b".into(), name: "fly".into(), arguments: json!({}) },
            ],
            ..Completion::default()
        };
        let model = ScriptedModel::new(vec![Ok(calls), Ok(call("reply", json!({"content": "done"})))]);
        let messages = vec![ChatMessage::new(Role::User, "hi")];
        futures_executor(run_turn(&model, "m", messages, &busy_processes(), &EchoHost)).unwrap();
        assert_eq!(tool_results(&model, 1), ["scheduled: \"water plants\"", "error: there is no tool named `fly`"]);
        let offered = model.requests.borrow()[0].tools.iter().any(|tool| tool.name == "schedule");
        assert!(offered, "the schedule tool is offered to the channel");
    }

    fn run(model: &ScriptedModel) -> Result<TurnOutcome, LlmError> {
        run_with(model, &busy_processes())
    }

    fn run_with(model: &ScriptedModel, processes: &Processes) -> Result<TurnOutcome, LlmError> {
        let messages = vec![ChatMessage::new(Role::User, "hi")];
        futures_executor(run_turn(model, "m", messages, processes, &NoTools))
    }

    /// The loop never actually waits, so polling once per step is enough.
    fn futures_executor<F: std::future::Future>(future: F) -> F::Output {
        use std::task::{Context, Poll, Waker};
        let mut future = std::pin::pin!(future);
        let mut context = Context::from_waker(Waker::noop());
        loop {
            if let Poll::Ready(output) = future.as_mut().poll(&mut context) {
                return output;
            }
        }
    }

    fn event(text: &str) -> InboundEvent {
        let ada = Author { id: "7".into(), name: "Ada".into(), is_bot: false };
        InboundEvent { is_dm: true, ..InboundEvent::plain_text(1, "1", ada, text) }
    }

    #[test]
    fn a_reply_tool_call_ends_the_turn_with_one_reply() {
        let model = ScriptedModel::new(vec![Ok(call("reply", json!({"content": "Hello Ada"})))]);
        let outcome = run(&model).unwrap();
        assert_eq!(outcome.actions, vec![Action::Reply { text: "Hello Ada".into() }]);
        assert_eq!(outcome.model_calls, 1);
    }

    #[test]
    fn a_bad_tool_call_is_reported_to_the_model_which_can_correct_itself() {
        let model =
            ScriptedModel::new(vec![Ok(call("reply", json!({}))), Ok(call("reply", json!({"content": "fixed"})))]);
        let outcome = run(&model).unwrap();
        assert_eq!(outcome.actions, vec![Action::Reply { text: "fixed".into() }]);
        let second = &model.requests.borrow()[1];
        let last = second.messages.last().unwrap();
        assert_eq!(last.role, Role::Tool);
        assert!(last.content.starts_with("error:"));
    }

    #[test]
    fn no_reply_and_skip_send_nothing() {
        for answer in [
            call("skip", json!({"reason": "chatter"})),
            call("reply", json!({"content": "NO_REPLY"})),
            Completion { content: Some("NO_REPLY".into()), ..Completion::default() },
        ] {
            let outcome = run(&ScriptedModel::new(vec![Ok(answer)])).unwrap();
            assert!(outcome.actions.iter().all(|action| matches!(action, Action::Skip { .. })));
            assert_eq!(outcome.actions.len(), 1);
        }
    }

    #[test]
    fn the_loop_stops_after_the_call_limit() {
        let answers = (0..10).map(|_| Ok(call("unknown_tool", json!({})))).collect();
        let model = ScriptedModel::new(answers);
        let outcome = run(&model).unwrap();
        assert_eq!(outcome.model_calls, MAX_MODEL_CALLS_PER_TURN);
        assert!(outcome.actions.is_empty());
    }

    #[test]
    fn model_errors_end_the_turn_as_errors() {
        let model = ScriptedModel::new(vec![Err(LlmError::Status(503))]);
        assert_eq!(run(&model), Err(LlmError::Status(503)));
    }

    #[test]
    fn the_prompt_holds_system_history_and_current_messages_in_order() {
        let history = vec![
            HistoryEntry { role: HistoryRole::User, author_name: "Ada".into(), content: "my cat is Tom".into() },
            HistoryEntry { role: HistoryRole::Assistant, author_name: "edgebot".into(), content: "Nice, Tom!".into() },
        ];
        let current = vec![event("what is my cat called?")];
        let context = TurnContext {
            bot_name: "edgebot",
            platform: "telegram",
            now_utc: "2026-01-01 00:00 UTC".into(),
            bulletin: "",
            summaries: &[],
            history: &history,
            context: &[],
            current: &current,
            notice: Notice::None,
            process_events: &[],
            processes: &Processes::default(),
        };
        let messages = compose_messages(&context).unwrap();
        assert_eq!(messages.len(), 4);
        assert_eq!(messages[0].role, Role::System);
        assert!(messages[0].content.contains("edgebot") && messages[0].content.contains("direct message"));
        assert_eq!(messages[1].content, "Ada: my cat is Tom");
        assert_eq!(messages[2].role, Role::Assistant);
        assert!(messages[3].content.contains("## Current message(s)"));
        assert!(messages[3].content.contains("Ada: what is my cat called?"));
        assert!(!messages[3].content.contains("Recent context"));
        assert!(!messages[3].content.contains("SYSTEM MESSAGE"));
    }

    #[test]
    fn watched_messages_and_notices_go_into_the_turn_message() {
        let current = vec![event("edgebot, thoughts?")];
        let watched = vec![ObservedMessage {
            delivery_id: "1".into(),
            author_name: "Bo".into(),
            author_is_bot: false,
            text: "the deploy failed".into(),
            received_at_ms: 0,
        }];
        for (notice, expected) in [(Notice::LoopGuard, "other bots"), (Notice::GroupNudge, "group chat")] {
            let context = TurnContext {
                bot_name: "edgebot",
                platform: "telegram",
                now_utc: String::new(),
                bulletin: "",
                summaries: &[],
                history: &[],
                context: &watched,
                current: &current,
                notice,
                process_events: &[],
                processes: &Processes::default(),
            };
            let turn = compose_messages(&context).unwrap().pop().unwrap().content;
            let recent = turn.find("## Recent context (not addressed to you").expect("recent context section");
            let watched_line = turn.find("Bo: the deploy failed").expect("watched message");
            let addressed = turn.find("## Current message(s)").expect("current section");
            assert!(recent < watched_line && watched_line < addressed);
            assert!(turn.contains("[SYSTEM MESSAGE — not from a human]"));
            assert!(turn.contains(expected), "{notice:?}");
            assert_eq!(turn.matches("SYSTEM MESSAGE").count(), 1, "one notice per turn");
        }
    }

    #[test]
    fn branches_are_actions_up_to_the_capacity() {
        let model = ScriptedModel::new(vec![
            Ok(Completion {
                tool_calls: vec![
                    ToolCall { id: "a".into(), name: "branch".into(), arguments: json!({"question": "one"}) },
                    ToolCall { id: "b".into(), name: "branch".into(), arguments: json!({"question": "two"}) },
                ],
                ..Completion::default()
            }),
            Ok(call("reply", json!({"content": "thinking about it"}))),
        ]);
        let outcome = run(&model).unwrap();
        assert_eq!(
            outcome.actions,
            vec![Action::Branch { question: "one".into() }, Action::Reply { text: "thinking about it".into() }]
        );
        let results = tool_results(&model, 1);
        assert!(results[0].starts_with("branch started") && results[1].starts_with("error: too many"));
    }

    #[test]
    fn finished_work_and_running_branches_show_in_a_status_section() {
        use crate::process::envelope::Envelope;
        let done = ProcessReport {
            envelope: Envelope::new("e", 0, "branch:b", "channel", MessageType::Done, Some("b".into()), "It is 42."),
            kind: ProcessKind::Branch,
            task: "what is the answer?".into(),
            origin: event("x"),
        };
        let mut running = Processes::default();
        running.start(
            "w7",
            ProcessStatus { status: Some("read 3 of 5 pages".into()), ..process(ProcessKind::Worker, false) },
        );
        let context = TurnContext {
            bot_name: "edgebot",
            platform: "telegram",
            now_utc: String::new(),
            bulletin: "Ada's cat is called Tom.",
            summaries: &["Ada asked about cats.".to_string()],
            history: &[],
            context: &[],
            current: &[],
            notice: Notice::None,
            process_events: std::slice::from_ref(&done),
            processes: &running,
        };
        let messages = compose_messages(&context).unwrap();
        assert!(
            messages[0].content.contains("## What you remember\n\nAda's cat is called Tom."),
            "{}",
            messages[0].content
        );
        assert!(messages[1].content.contains("Ada asked about cats."), "summaries stack at the top");
        let turn = messages.last().unwrap().content.clone();
        assert!(turn.contains("## Status"));
        assert!(turn.contains("Worker `w7` on \"is it raining?\": read 3 of 5 pages"), "{turn}");
        assert!(turn.contains("Branch `b` finished on \"what is the answer?\": It is 42."), "{turn}");
        assert!(turn.contains("No new messages"), "{turn}");
        assert!(!turn.contains("## Current message(s)"));
    }

    #[test]
    fn disengage_is_an_action_and_does_not_end_the_turn() {
        let model = ScriptedModel::new(vec![
            Ok(call("channel_disengage", json!({}))),
            Ok(call("reply", json!({"content": "ok, backing off"}))),
        ]);
        let outcome = run(&model).unwrap();
        assert_eq!(outcome.actions, vec![Action::Disengage, Action::Reply { text: "ok, backing off".into() }]);
    }

    #[test]
    fn worker_tools_are_checked_against_the_running_processes() {
        let mut processes = Processes::default();
        processes.start("chat", ProcessStatus { waiting: true, ..process(ProcessKind::Worker, true) });
        processes.start("busy", process(ProcessKind::Worker, true));
        let model = ScriptedModel::new(vec![
            Ok(Completion {
                tool_calls: vec![
                    ToolCall { id: "1".into(), name: "route".into(), arguments: json!({"id": "busy", "message": "x"}) },
                    ToolCall {
                        id: "2".into(),
                        name: "route".into(),
                        arguments: json!({"id": "chat", "message": "Oslo"}),
                    },
                    ToolCall { id: "3".into(), name: "cancel".into(), arguments: json!({"id": "nope"}) },
                    ToolCall { id: "4".into(), name: "cancel".into(), arguments: json!({"id": "busy"}) },
                    ToolCall {
                        id: "5".into(),
                        name: "spawn_worker".into(),
                        arguments: json!({"task": "find flights", "interactive": true}),
                    },
                    ToolCall { id: "6".into(), name: "react".into(), arguments: json!({"emoji": "👍"}) },
                ],
                ..Completion::default()
            }),
            Ok(call("skip", json!({}))),
        ]);
        let outcome = run_with(&model, &processes).unwrap();
        assert_eq!(
            outcome.actions[..4],
            [
                Action::Route { id: "chat".into(), message: "Oslo".into() },
                Action::Cancel { id: "busy".into() },
                Action::SpawnWorker { task: "find flights".into(), interactive: true },
                Action::React { emoji: "👍".into() },
            ]
        );
        let results = tool_results(&model, 1);
        assert!(results[0].contains("still working"), "{results:?}");
        assert!(results[2].contains("no running process"), "{results:?}");
    }
}
