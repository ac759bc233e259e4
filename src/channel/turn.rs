//! One channel turn: compose the prompt, let the model call the channel tools
//! (at most [`MAX_MODEL_CALLS_PER_TURN`] times), and return the actions to carry out.
//!
//! The loop is generic over [`ChatModel`], so it runs natively in tests with a
//! scripted model and in the Worker with the real provider.

use serde_json::json;

use std::cell::RefCell;

use super::actions::{spoken, Action};
use super::processes::{ProcessReport, Processes};
use super::state::{Notice, ObservedMessage};
use super::tool_set::{HostToolSet, Reply, TurnToolSet, TurnTools};
use crate::inbound::InboundEvent;
use crate::llm::readiness::{self, ModelProblem};
use crate::llm::stream::Assembler;
use crate::llm::tool::Tool;
use crate::llm::{ChatMessage, ChatModel, ChatRequest, HistoryEntry, HistoryRole, LlmError, Role, ToolSpec, Usage};
use crate::people::rules::Profile;
use crate::process::envelope::MessageType;
use crate::prompt;

/// Most channel turns take one to three model calls; past this the channel is
/// trying to work instead of delegating.
pub const MAX_MODEL_CALLS_PER_TURN: u32 = 5;

/// Everything a turn's prompt is made of.
#[derive(Debug, Clone)]
pub struct TurnContext<'a> {
    pub bot_name: &'a str,
    pub platform: &'a str,
    pub now_utc: String,
    /// The identity block (SOUL, IDENTITY, USER and the conversation's
    /// override: [`crate::identity::rules::IdentityTexts::render`]); may be empty.
    pub identity: &'a str,
    /// The cortex's memory bulletin (may be empty).
    pub bulletin: &'a str,
    /// The agent's enabled skills, listed by name and description (may be empty).
    pub skills: &'a [crate::skills::rules::SkillSummary],
    /// Compaction summaries of earlier history, oldest first.
    pub summaries: &'a [String],
    pub history: &'a [HistoryEntry],
    /// What the bot watched silently since its last turn.
    pub context: &'a [ObservedMessage],
    pub current: &'a [InboundEvent],
    /// Per message of `current`, a line per attachment saying what became of
    /// it (`crate::files::rules::describe`); a message without lines here shows its
    /// attachments' kinds.
    pub attachments: &'a [Vec<String>],
    /// The profiles of the people writing in this turn (the authors of
    /// `current`), and of no one else: see [`crate::people::rules`].
    pub people: &'a [Profile],
    pub notice: Notice,
    /// Work that finished (or asks for input) since the last turn.
    pub process_events: &'a [ProcessReport],
    /// Branches and workers still running.
    pub processes: &'a Processes,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct TurnOutcome {
    pub actions: Vec<Action>,
    pub usage: Usage,
    pub model_calls: u32,
}

/// How a turn ends for the people in it. Every way a turn can end is one of
/// these, decided here and nowhere else: whatever failed (the model before,
/// during or after streaming, a garbled or empty answer, a timeout, the
/// turn's own storage), the person gets the model's answer, the documented
/// apology, or, when the model cannot answer until an operator acts, the
/// "not set up yet" notice; never nothing.
#[derive(Debug, Clone, PartialEq)]
pub enum Ending {
    /// The model answered: its replies, reactions and work handed on, or a
    /// silence it chose (`skip`, `NO_REPLY`).
    Answered(TurnOutcome),
    /// The model failed, or stopped without a word and without choosing
    /// silence: the person gets the apology (`prompts/model_failure`), once.
    Apology {
        /// Why, for the log (never shown to the person).
        reason: String,
        /// What the calls that did answer cost.
        usage: Usage,
    },
    /// No model can answer until an operator fixes a setting (no key, a
    /// refused key, a server that cannot be reached): the person is told so
    /// (`prompts/not_set_up`), not asked to try again.
    NotSetUp(ModelProblem),
}

impl Ending {
    /// The rule: a setup problem is the notice, any other error is the
    /// apology, and so is an answer that did nothing. `chain` is the model
    /// chain the turn called.
    pub fn of(result: Result<TurnOutcome, LlmError>, chain: &str) -> Ending {
        match result {
            Err(error) => match readiness::problem_of(&error, chain) {
                Some(problem) => Ending::NotSetUp(problem),
                None => Ending::Apology { reason: error.to_string(), usage: Usage::default() },
            },
            Ok(outcome) if outcome.actions.is_empty() => Ending::Apology {
                reason: format!("the model stopped after {} call(s) without answering", outcome.model_calls),
                usage: outcome.usage,
            },
            Ok(outcome) => Ending::Answered(outcome),
        }
    }

    /// A turn that could not be run at all (its storage kept failing).
    pub fn failed(reason: impl Into<String>) -> Ending {
        Ending::Apology { reason: reason.into(), usage: Usage::default() }
    }
}

/// A turn whose alarm runs failed this many times in a row (its storage or a
/// binding erring, not the model: the model's failures end in [`Ending`]
/// within one run) is not run again: it ends in the apology.
pub const APOLOGISE_AFTER_FAILURES: u32 = 3;

/// How long after its `failures`-th failure in a row a channel's alarm runs
/// again: 1 s, doubling, at most a minute. The channel reschedules itself,
/// so the platform's own few retries of a failing alarm are never the last word.
pub fn alarm_retry_ms(failures: u32) -> u64 {
    (1_000u64 << failures.saturating_sub(1).min(6)).min(60_000)
}

/// The channel tools offered to the model: the turn's own, then its edge's.
pub fn channel_tools() -> Vec<ToolSpec> {
    let mut tools = TurnToolSet::specs();
    tools.extend(HostToolSet::specs());
    tools
}

/// Tools whose answers need the world outside the turn (storage, clocks):
/// the channel's edge answers them, so the turn loop stays pure.
#[allow(async_fn_in_trait)] // Workers are single-threaded; futures need not be Send.
pub trait ToolHost {
    /// The answer to a tool the turn does not handle itself (one of
    /// [`HostToolSet`]), or None when the host has no such tool either.
    async fn call(&self, name: &str, arguments: &serde_json::Value) -> Option<String>;

    /// Tools this host offers beyond [`channel_tools`] in this turn (the
    /// link tools, when the agent has links); none by default.
    fn extra_specs(&self) -> Vec<ToolSpec> {
        Vec::new()
    }

    /// Whether this host's tool `name` may be offered and called in this
    /// turn (an agent's settings narrow it: [`Permitted`]); yes by default.
    fn allows(&self, _name: &str) -> bool {
        true
    }
}

/// A host narrowed to the tools an agent may call (the one permit type,
/// shared with workers: [`crate::agents::rules::Permitted`]).
pub use crate::agents::rules::Permitted;

impl<H: ToolHost, P: Fn(&str) -> bool> ToolHost for Permitted<H, P> {
    async fn call(&self, name: &str, arguments: &serde_json::Value) -> Option<String> {
        match (self.permits)(name) {
            true => self.host.call(name, arguments).await,
            false => Some(format!("error: `{name}` is not among this agent's tools")),
        }
    }

    fn extra_specs(&self) -> Vec<ToolSpec> {
        self.host.extra_specs().into_iter().filter(|spec| (self.permits)(&spec.name)).collect()
    }

    fn allows(&self, name: &str) -> bool {
        (self.permits)(name) && self.host.allows(name)
    }
}

/// Two hosts as one: the first that has the tool answers it.
impl<A: ToolHost, B: ToolHost> ToolHost for (A, B) {
    async fn call(&self, name: &str, arguments: &serde_json::Value) -> Option<String> {
        match self.0.call(name, arguments).await {
            Some(answer) => Some(answer),
            None => self.1.call(name, arguments).await,
        }
    }

    fn extra_specs(&self) -> Vec<ToolSpec> {
        let mut specs = self.0.extra_specs();
        specs.extend(self.1.extra_specs());
        specs
    }

    fn allows(&self, name: &str) -> bool {
        self.0.allows(name) && self.1.allows(name)
    }
}

/// A host with no tools of its own.
pub struct NoTools;

impl ToolHost for NoTools {
    async fn call(&self, _name: &str, _arguments: &serde_json::Value) -> Option<String> {
        None
    }
}

/// The messages of a turn's first model call: the system prompt, the
/// history, then the turn itself.
pub fn compose_messages(context: &TurnContext<'_>) -> Result<Vec<ChatMessage>, prompt::Error> {
    let mut messages = history_messages(context)?;
    messages.push(ChatMessage::new(Role::User, turn_message(context)?));
    Ok(messages)
}

/// The system prompt, the summaries of compacted history and the history.
fn history_messages(context: &TurnContext<'_>) -> Result<Vec<ChatMessage>, prompt::Error> {
    let system = prompt::render(
        "channel_system",
        json!({
            "bot_name": context.bot_name,
            "platform": context.platform,
            "now_utc": context.now_utc,
            "identity": context.identity,
            "bulletin": context.bulletin,
            "skills": context.skills,
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
    Ok(messages)
}

/// The turn's own message: who writes, what they wrote (with attachments),
/// the observed context, and the processes finished and running.
fn turn_message(context: &TurnContext<'_>) -> Result<String, prompt::Error> {
    let current: Vec<_> = context
        .current
        .iter()
        .enumerate()
        .map(|(index, event)| {
            let described = context.attachments.get(index).filter(|lines| !lines.is_empty()).cloned();
            let kinds = || event.attachments.iter().map(|attachment| attachment.kind.clone()).collect();
            json!({
                "author": event.author.name,
                "text": event.text,
                "attachments": described.unwrap_or_else(kinds),
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
                "file": event.envelope.kind == MessageType::File,
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
    let people: Vec<_> = context.people.iter().map(crate::people::rules::for_prompt).collect();
    prompt::render(
        "channel_turn",
        json!({
            "people": people,
            "current": current,
            "context": context_lines,
            "notice": context.notice,
            "completed": completed,
            "running": running,
        }),
    )
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
    live: Option<&dyn Fn(&str)>,
) -> Result<TurnOutcome, LlmError> {
    let mut tools = channel_tools();
    tools.extend(host.extra_specs());
    // The turn's own tools are always offered; the host's as it allows.
    let own = TurnToolSet::specs();
    tools.retain(|tool| own.iter().any(|spec| spec.name == tool.name) || host.allows(&tool.name));
    let mut outcome = TurnOutcome::default();
    // The turn's own view: what it starts, routes and cancels counts at once.
    let turn_tools = TurnTools { processes: RefCell::new(processes.clone()) };
    while outcome.model_calls < MAX_MODEL_CALLS_PER_TURN {
        let request = ChatRequest { model: model_name.to_string(), messages: messages.clone(), tools: tools.clone() };
        let completion = match live {
            // The `reply` call's text as the model writes it (a plain answer is
            // not shown early: it may turn out to be NO_REPLY).
            Some(live) => {
                let watch = |answer: &Assembler| {
                    if let Some(text) = answer.partial_argument(Reply::NAME, "content") {
                        live(&text);
                    }
                };
                model.complete_watched(&request, &watch).await?
            }
            None => model.complete(&request).await?,
        };
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
            let acted = TurnToolSet::call(&turn_tools, &call.name, &call.arguments).await;
            let result = match acted.map(|result| result.and_then(|action| action)) {
                Some(Ok(action)) => {
                    let result = action_result(&action);
                    finished |= matches!(action, Action::Reply { .. } | Action::Skip { .. });
                    outcome.actions.push(action);
                    result
                }
                Some(Err(error)) => format!("error: {error}"),
                None => match host.call(&call.name, &call.arguments).await {
                    Some(result) => result,
                    None => format!("error: there is no tool named `{}`", call.name),
                },
            };
            messages.push(ChatMessage::tool_result(&call.id, result));
        }
        if finished {
            return Ok(outcome);
        }
    }
    Ok(outcome)
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

#[cfg(test)]
mod tests;
