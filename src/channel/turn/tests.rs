//! The turn loop against a scripted model: the actions its tool calls become, the
//! prompt it composes, and the process tools checked against what runs.

use std::cell::RefCell;
use std::collections::VecDeque;

use super::*;
use crate::channel::processes::{ProcessKind, ProcessStatus};
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
    ProcessStatus::started(kind, "is it raining?", event("x"), interactive, 0)
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
    futures_executor(run_turn(&model, "m", messages, &busy_processes(), &EchoHost, None)).unwrap();
    assert_eq!(tool_results(&model, 1), ["scheduled: \"water plants\"", "error: there is no tool named `fly`"]);
    let offered = model.requests.borrow()[0].tools.iter().any(|tool| tool.name == "schedule");
    assert!(offered, "the schedule tool is offered to the channel");
}

/// A host that offers (and answers) one tool of its own, `wave`.
struct WaveHost;

impl ToolHost for WaveHost {
    async fn call(&self, name: &str, _arguments: &serde_json::Value) -> Option<String> {
        (name == "wave").then(|| "waved".to_string())
    }

    fn extra_specs(&self) -> Vec<ToolSpec> {
        vec![ToolSpec { name: "wave".into(), description: "Wave.".into(), parameters: json!({}) }]
    }
}

#[test]
fn two_hosts_are_one_offering_both_s_tools_and_the_first_that_has_a_tool_answers_it() {
    let calls = Completion {
        tool_calls: vec![
            ToolCall { id: "a".into(), name: "wave".into(), arguments: json!({}) },
            ToolCall { id: "b".into(), name: "schedule".into(), arguments: json!({"prompt": "tea"}) },
        ],
        ..Completion::default()
    };
    let model = ScriptedModel::new(vec![Ok(calls), Ok(call("reply", json!({"content": "done"})))]);
    let messages = vec![ChatMessage::new(Role::User, "hi")];
    futures_executor(run_turn(&model, "m", messages, &busy_processes(), &(EchoHost, WaveHost), None)).unwrap();
    assert_eq!(tool_results(&model, 1), ["waved", "scheduled: \"tea\""]);
    let offered: Vec<String> = model.requests.borrow()[0].tools.iter().map(|tool| tool.name.clone()).collect();
    assert_eq!(offered.iter().filter(|name| *name == "wave").count(), 1, "{offered:?}");
    // A host with no extra tools offers the channel's alone.
    let plain = ScriptedModel::new(vec![Ok(call("reply", json!({"content": "hi"})))]);
    futures_executor(run_turn(
        &plain,
        "m",
        vec![ChatMessage::new(Role::User, "hi")],
        &busy_processes(),
        &EchoHost,
        None,
    ))
    .unwrap();
    assert!(!plain.requests.borrow()[0].tools.iter().any(|tool| tool.name == "wave"));
}

fn run(model: &ScriptedModel) -> Result<TurnOutcome, LlmError> {
    run_with(model, &busy_processes())
}

fn run_with(model: &ScriptedModel, processes: &Processes) -> Result<TurnOutcome, LlmError> {
    let messages = vec![ChatMessage::new(Role::User, "hi")];
    futures_executor(run_turn(model, "m", messages, processes, &NoTools, None))
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
    let model = ScriptedModel::new(vec![Ok(call("reply", json!({}))), Ok(call("reply", json!({"content": "fixed"})))]);
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
fn every_turn_ends_in_an_answer_a_chosen_silence_the_apology_or_the_setup_notice() {
    const CHAIN: &str = "openai/gpt-4o-mini";
    let apology = |ending: &Ending| matches!(ending, Ending::Apology { .. });
    // Failures: each passing model error, and answers that did nothing.
    for error in [
        LlmError::Status(500),
        LlmError::Status(429),
        LlmError::Timeout,
        LlmError::Malformed("the stream ended before the answer did".into()),
    ] {
        let model = ScriptedModel::new(vec![Err(error.clone())]);
        assert!(apology(&Ending::of(run(&model), CHAIN)), "{error}");
    }
    // Failures only an operator can fix: the notice, naming the setting.
    for (error, setting) in [
        (LlmError::Status(401), "OPENAI_API_KEY"),
        (LlmError::Status(403), "OPENAI_API_KEY"),
        (LlmError::Network("connection refused".into()), "OPENAI_BASE_URL"),
        (LlmError::Config("no key".into()), "OPENAI_API_KEY"),
    ] {
        let model = ScriptedModel::new(vec![Err(error.clone())]);
        match Ending::of(run(&model), CHAIN) {
            Ending::NotSetUp(problem) => assert_eq!(problem.setting(), setting, "{error}"),
            other => panic!("{error}: {other:?}"),
        }
    }
    let exhausted = ScriptedModel::new((0..10).map(|_| Ok(call("unknown_tool", json!({})))).collect());
    let ending = Ending::of(run(&exhausted), CHAIN);
    assert!(apology(&ending), "five calls and no answer: {ending:?}");
    let nothing = TurnOutcome { model_calls: 2, ..TurnOutcome::default() };
    let Ending::Apology { usage, .. } = Ending::of(Ok(nothing), CHAIN) else {
        panic!("an outcome with no action is no answer");
    };
    assert_eq!(usage, Usage::default());
    assert!(apology(&Ending::failed("storage")));

    // Answers: a reply, and every silence or hand-over the model chose.
    for answer in [
        call("reply", json!({"content": "hello"})),
        call("skip", json!({"reason": "chatter"})),
        Completion { content: Some("NO_REPLY".into()), ..Completion::default() },
        call("react", json!({"emoji": "👍"})),
        call("branch", json!({"question": "is it raining?"})),
        call("spawn_worker", json!({"task": "count the rows"})),
    ] {
        let answers = vec![Ok(answer.clone()), Ok(call("skip", json!({})))];
        let ending = Ending::of(run(&ScriptedModel::new(answers)), CHAIN);
        assert!(matches!(ending, Ending::Answered(_)), "{answer:?}: {ending:?}");
    }
}

#[test]
fn a_failing_alarm_comes_back_sooner_than_the_platform_gives_up_and_never_later_than_a_minute() {
    let waits: Vec<u64> = (1..=9).map(alarm_retry_ms).collect();
    assert_eq!(waits, [1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000, 60_000]);
    assert_eq!(alarm_retry_ms(0), 1_000);
    assert_eq!(alarm_retry_ms(u32::MAX), 60_000);
    let until_apology: u64 = (1..APOLOGISE_AFTER_FAILURES).map(alarm_retry_ms).sum();
    assert!(until_apology <= 10_000, "a person hears the apology within seconds: {until_apology} ms");
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
        identity: "",
        skills: &[],
        bulletin: "",
        summaries: &[],
        history: &history,
        context: &[],
        current: &current,
        attachments: &[],
        people: &[],
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
        message_id: "1".into(),
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
            identity: "",
            skills: &[],
            bulletin: "",
            summaries: &[],
            history: &[],
            context: &watched,
            current: &current,
            attachments: &[],
            people: &[],
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
    running
        .start("w7", ProcessStatus { status: Some("read 3 of 5 pages".into()), ..process(ProcessKind::Worker, false) });
    let context = TurnContext {
        bot_name: "edgebot",
        platform: "telegram",
        now_utc: String::new(),
        identity: "",
        skills: &[],
        bulletin: "Ada's cat is called Tom.",
        summaries: &["Ada asked about cats.".to_string()],
        history: &[],
        context: &[],
        current: &[],
        attachments: &[],
        people: &[],
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
                ToolCall { id: "2".into(), name: "route".into(), arguments: json!({"id": "chat", "message": "Oslo"}) },
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

#[test]
fn the_people_writing_now_come_with_their_profiles_and_no_one_else_does() {
    use crate::people::rules::{Note, Profile};
    let current = vec![event("hi again")];
    let watched = vec![ObservedMessage {
        delivery_id: "1".into(),
        message_id: "1".into(),
        author_name: "Bo".into(),
        author_is_bot: false,
        text: "lunch?".into(),
        received_at_ms: 0,
    }];
    let note = |text: &str| Note { text: text.into(), at_ms: 0, by: "bot".into() };
    let people = vec![
        Profile {
            key: "telegram:1".into(),
            id: "p1".into(),
            name: "Dana".into(),
            seen_as: Some("dana.w".into()),
            time_zone: Some("Europe/Berlin".into()),
            language: Some("German".into()),
            is_bot: false,
            notes: vec![note("prefers short answers"), note("has a cat called Tom")],
            role: Some("Engineering lead".into()),
            bio: Some("Runs the platform team".into()),
        },
        Profile {
            key: "telegram:9".into(),
            id: "p9".into(),
            name: "helper".into(),
            seen_as: None,
            time_zone: None,
            language: None,
            is_bot: true,
            notes: vec![],
            role: None,
            bio: None,
        },
    ];
    let with = |people: &[Profile]| {
        let context = TurnContext {
            bot_name: "edgebot",
            platform: "telegram",
            now_utc: String::new(),
            identity: "",
            skills: &[],
            bulletin: "",
            summaries: &[],
            history: &[],
            context: &watched,
            current: &current,
            attachments: &[],
            people,
            notice: Notice::None,
            process_events: &[],
            processes: &Processes::default(),
        };
        compose_messages(&context).unwrap().pop().unwrap().content
    };
    let turn = with(&people);
    let block = turn.find("## People in this turn").expect("a people section");
    assert!(block < turn.find("## Current message(s)").unwrap(), "{turn}");
    assert!(
        turn.contains("- Dana (writing as dana.w) (time zone Europe/Berlin, language German) [the operator wrote this about them, not they: role: Engineering lead; bio: Runs the platform team]:\n  1. prefers short answers\n  2. has a cat called Tom"),
        "{turn}"
    );
    assert!(turn.contains("- helper (a bot): nothing noted yet"), "{turn}");
    assert!(!turn[block..].contains("Bo"), "someone only watched has no profile here: {turn}");
    assert!(!with(&[]).contains("## People in this turn"));
}

#[test]
fn the_identity_comes_after_the_instructions_and_before_the_bulletin_and_counts_toward_compaction() {
    use crate::identity::rules::{IdentityTexts, MAX_DOCUMENT_CHARS};
    use crate::process::compaction::{estimate_tokens, plan, CompactionPlan};

    let texts = IdentityTexts {
        soul: format!("SOUL-START {}", "s".repeat(MAX_DOCUMENT_CHARS - 11)),
        identity: "IDENTITY-TEXT".into(),
        user: "USER-TEXT".into(),
        conversation: Some("OVERRIDE-TEXT".into()),
    };
    let identity = texts.render().unwrap();
    let current = vec![event("hello")];
    let processes = Processes::default();
    let context = |identity| TurnContext {
        bot_name: "edgebot",
        platform: "slack",
        now_utc: String::new(),
        identity,
        bulletin: "BULLETIN-TEXT",
        skills: &[],
        summaries: &[],
        history: &[],
        context: &[],
        current: &current,
        attachments: &[],
        people: &[],
        notice: Notice::None,
        process_events: &[],
        processes: &processes,
    };
    let messages = compose_messages(&context(&identity)).unwrap();
    let system = &messages[0].content;
    let at = |needle: &str| system.find(needle).unwrap_or_else(|| panic!("{needle} in {system}"));
    assert!(at("How you work") < at("SOUL-START"), "the system prompt's own words come first");
    assert!(at("SOUL-START") < at("IDENTITY-TEXT") && at("IDENTITY-TEXT") < at("USER-TEXT"));
    assert!(at("USER-TEXT") < at("OVERRIDE-TEXT") && at("OVERRIDE-TEXT") < at("BULLETIN-TEXT"));

    // The prompt's size estimate (what the channel compacts by) counts the
    // identity: a window the bare prompt fits in is crowded by the document.
    let size = |messages: &[ChatMessage]| estimate_tokens(messages.iter().map(|message| message.content.len()).sum());
    let bare = size(&compose_messages(&context("")).unwrap());
    let full = size(&messages);
    assert!(full >= bare + (MAX_DOCUMENT_CHARS as u64) / 4, "{bare} → {full}");
    let window = bare * 2;
    assert_eq!(plan(bare, window, 10), CompactionPlan::Nothing);
    assert!(matches!(plan(full, window, 10), CompactionPlan::Truncate { .. }), "{full} of {window}");
}

/// A model that streams: each answer's calls arrive as OpenAI chunks a few
/// bytes of arguments at a time, and the watcher is told after each.
struct StreamingModel(ScriptedModel);

impl ChatModel for StreamingModel {
    async fn complete(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
        self.0.complete(request).await
    }

    async fn complete_watched(
        &self,
        request: &ChatRequest,
        watch: &dyn Fn(&crate::llm::stream::Assembler),
    ) -> Result<Completion, LlmError> {
        use crate::llm::stream::{Assembler, Wire};
        let whole = self.0.complete(request).await?;
        let mut assembler = Assembler::new(Wire::OpenAi);
        for (index, call) in whole.tool_calls.iter().enumerate() {
            let start = json!({"choices": [{"delta": {"tool_calls": [
                {"index": index, "id": call.id, "function": {"name": call.name, "arguments": ""}}]}}]});
            assembler.take(&start.to_string())?;
            let arguments = call.arguments.to_string();
            for piece in arguments.as_bytes().chunks(3) {
                let piece = String::from_utf8_lossy(piece);
                let chunk = json!({"choices": [{"delta": {"tool_calls": [
                    {"index": index, "function": {"arguments": piece}}]}}]});
                assembler.take(&chunk.to_string())?;
                watch(&assembler);
            }
        }
        assembler.take("[DONE]")?;
        assembler.finish()
    }
}

#[test]
fn a_streamed_reply_shows_as_it_grows_and_a_skip_shows_nothing() {
    let text = "Sure, here is the plan for today.";
    let seen = RefCell::new(Vec::<String>::new());
    let live = |now: &str| seen.borrow_mut().push(now.to_string());
    let model = StreamingModel(ScriptedModel::new(vec![Ok(call("reply", json!({ "content": text })))]));
    let messages = vec![ChatMessage::new(Role::User, "hi")];
    let outcome = futures_executor(run_turn(&model, "m", messages.clone(), &busy_processes(), &NoTools, Some(&live)));
    assert_eq!(outcome.unwrap().actions, [Action::Reply { text: text.into() }]);
    let seen = seen.take();
    assert!(seen.len() > 3, "the text showed in steps: {seen:?}");
    assert!(seen.windows(2).all(|pair| pair[1].starts_with(&pair[0])), "{seen:?}");
    assert_eq!(seen.last().map(String::as_str), Some(text));

    let shown = RefCell::new(0);
    let live = |_: &str| *shown.borrow_mut() += 1;
    let model = StreamingModel(ScriptedModel::new(vec![Ok(call("skip", json!({ "reason": "not for me" })))]));
    futures_executor(run_turn(&model, "m", messages, &busy_processes(), &NoTools, Some(&live))).unwrap();
    assert_eq!(shown.take(), 0, "a skip shows nothing");
}

#[test]
fn the_enabled_skills_are_listed_by_name_and_description_after_the_bulletin() {
    use crate::skills::rules::SkillSummary;

    let current = vec![event("hello")];
    let processes = Processes::default();
    let skills = vec![
        SkillSummary { name: "weekly-report".into(), description: "Writes the weekly report.".into() },
        SkillSummary { name: "haiku".into(), description: "Answers in a haiku.".into() },
    ];
    let system = |skills: &[SkillSummary]| {
        let context = TurnContext {
            bot_name: "edgebot",
            platform: "slack",
            now_utc: String::new(),
            identity: "",
            bulletin: "BULLETIN-TEXT",
            skills,
            summaries: &[],
            history: &[],
            context: &[],
            current: &current,
            attachments: &[],
            people: &[],
            notice: Notice::None,
            process_events: &[],
            processes: &processes,
        };
        compose_messages(&context).unwrap()[0].content.clone()
    };
    let listed = system(&skills);
    let skills_at = listed.find("## Skills").unwrap_or_else(|| panic!("{listed}"));
    assert!(listed.find("BULLETIN-TEXT").unwrap() < skills_at);
    assert!(listed[skills_at..].contains("`open_skill`"), "{listed}");
    assert!(listed.ends_with("- weekly-report: Writes the weekly report.\n- haiku: Answers in a haiku."), "{listed}");
    assert!(!system(&[]).contains("## Skills"));
}
