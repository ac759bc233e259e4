//! Runs one step of a worker from its queue message. The run rests in D1
//! between steps; the side effects a step decides (its report to the channel,
//! the next segment's job) are stored with the run before they are carried
//! out, so a redelivered job finishes them instead of repeating the segment.

use std::cell::Cell;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use wasm_bindgen::JsValue;
use worker::{D1Database, Env};

use crate::agents::rules::Permitted;
use crate::approvals::rules::{shown_arguments, Kind};
use crate::approvals::store as approvals;
use crate::approvals::store::Approval;
use crate::budget::metered::MeteredTool;
use crate::budget::rules::Spend;
use crate::budget::{tool_runs, usage};
use crate::config::Config;
use crate::files::arguments::{AttachmentRead, AttachmentReadArguments, AttachmentRecall, SendFile, SendFileArguments};
use crate::files::tools as files;
use crate::jobs::deliver;
use crate::llm::client::HttpModel;
use crate::llm::tool::{answer, NoArguments, Run};
use crate::llm::{ChatMessage, Role, ToolSpec};
use crate::log_line::LogLine;
use crate::mcp::toolbox::Toolbox;
use crate::process::containment::Containment;
use crate::process::envelope::{Envelope, MessageType};
use crate::process::worker::WorkerState;
use crate::process::worker_run::{
    run_segment, SegmentEnd, WorkerInput, WorkerJob, WorkerRun, WorkerToolSet, WorkerTools,
};
use crate::process::worker_step::{owed, Owed};
use crate::process::Job;
use crate::runtime::config::DATABASE_BINDING;
use crate::runtime::d1::Metered;
use crate::runtime::http::now_ms;
use crate::runtime::log::Emit;
use crate::sandbox::arguments::{RunCode, RunCodeArguments};
use crate::tasks::arguments::{TaskUpdate, TaskUpdateArguments};
use crate::tasks::store as tasks;
use crate::web_tools::arguments::{
    Browse, BrowseArguments, HttpFetch, HttpFetchArguments, WebSearch, WebSearchArguments,
};
use crate::web_tools::tools as web;
use crate::workspace::arguments::{
    FileEdit, FileEditArguments, FileList, FileRead, FileReadArguments, FileWrite, FileWriteArguments,
};
use crate::workspace::tools as workspace;

/// A worker tells the channel it is alive at most this often (the channel gives
/// up on a worker silent for `WORKER_TIMEOUT_MS`).
const HEARTBEAT_INTERVAL_MS: i64 = 60_000;

/// Side effects a finished step owes, stored with the run until carried out.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Pending {
    report: Option<Envelope>,
    next: Option<WorkerJob>,
    /// A call waits for this approval: ask for it in the conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ask: Option<Approval>,
}

#[derive(Deserialize)]
struct Row {
    /// Also set by the channel (cancel) and the dead-letter consumer, outside `run`.
    state: String,
    run: Option<String>,
    pending: Option<String>,
    cancelled: i64,
}

pub async fn run_step(config: &Config, env: &Env, job: &WorkerJob) -> Result<(), String> {
    let db = env.d1(DATABASE_BINDING).map_err(text)?;
    if let WorkerInput::Start { task, interactive } = &job.input {
        let hosts = conversation_hosts(&db, &job.conversation_key).await.map_err(text)?;
        let run = WorkerRun::start(task, *interactive, &config.bot_name, &hosts).map_err(text)?;
        create(&db, job, &run).await.map_err(text)?;
    }
    let Some(row) = load(&db, &job.id).await.map_err(text)? else {
        return Ok(()); // a step for a worker that never started: nothing to do
    };
    if let Some(pending) = row.pending.as_deref().and_then(|pending| serde_json::from_str(pending).ok()) {
        carry_out(env, job, &pending).await?;
        clear_pending(&db, &job.id).await.map_err(text)?;
    }
    let Some(mut run) = row.run.as_deref().and_then(|run| serde_json::from_str::<WorkerRun>(run).ok()) else {
        return Ok(());
    };
    let given_up = matches!(row.state.as_str(), "done" | "failed");
    if row.cancelled != 0
        || given_up
        || run.steps.contains(&job.step)
        || run.state.is_finished()
        || !run.accept(&job.input)
    {
        return Ok(()); // cancelled, already done, or not for this state: a repeat does nothing
    }
    let model = HttpModel::new(config, env, &config.worker_model).map_err(text)?;
    let agent = crate::agents::snapshot::of(env, &db, &job.conversation_key).await.map_err(text)?;
    let mut mcp = match agent.mcp_servers {
        true => Toolbox::open(config, env, &db, false, |server| agent.settings.permits_server(server)).await,
        false => Toolbox::none(),
    };
    // A question an earlier attempt of this step left waiting has no call behind it any more.
    if job.person.is_some() && !mcp.specs().is_empty() {
        crate::mcp::elicit::withdraw_interrupted(env, &db, &job.id).await;
    }
    mcp.ask(crate::mcp::elicit::Asker {
        conversation_key: job.conversation_key.clone(),
        process_id: job.id.clone(),
        person: job.person.clone(),
    });
    for note in &mcp.notes {
        // Said once, and never between a call and its result.
        if run.queued.is_empty() && !run.messages.iter().any(|message| &message.content == note) {
            run.messages.push(ChatMessage::new(Role::User, note.clone()));
        }
    }
    // The agent's `tools` narrow the worker's own tools, as they narrow a turn's.
    let tools = Permitted {
        host: EdgeTools::new(config, env, &db, job, mcp),
        permits: |name: &str| agent.settings.permits_tool(name),
    };
    let usage_before = run.usage;
    let hosts_before = run.containment.known_hosts.clone();
    let started = now_ms();
    let end = segment(&tools, &model, &mut run).await?;
    run.steps.push(job.step.clone());
    let pending = decide(config, job, &run, end);
    let spent = crate::llm::Usage {
        input_tokens: run.usage.input_tokens - usage_before.input_tokens,
        output_tokens: run.usage.output_tokens - usage_before.output_tokens,
    };
    let learned: Vec<&String> =
        run.containment.known_hosts.iter().filter(|host| !hosts_before.contains(host)).collect();
    let mut spent_here = model.spent();
    spent_here.add(Spend { micro_usd: tools.host.metered_micro_usd.get(), ..Spend::default() });
    save(env, &db, job, &run, &pending, spent_here, &learned).await.map_err(text)?;
    LogLine::info("worker_step_finished")
        .conversation(&job.conversation_key)
        .id(&job.id)
        .field("step", job.step.as_str())
        .field("state", state_name(run.state))
        .duration_ms(now_ms() - started)
        .tokens(spent)
        .emit();
    carry_out(env, job, &pending).await?;
    clear_pending(&db, &job.id).await.map_err(text)
}

/// Runs a segment of model calls, unless today's budget is spent (a worker
/// outlives the turn that started it: each segment asks again). An error is
/// a step the queue runs again from the stored run.
async fn segment(
    tools: &Permitted<EdgeTools<'_>, impl Fn(&str) -> bool>,
    model: &HttpModel<'_>,
    run: &mut WorkerRun,
) -> Result<SegmentEnd, String> {
    let edge = &tools.host;
    let (env, spender) = (edge.env, edge.spender());
    let limits = crate::agents::snapshot::limits(env, &spender).await;
    if let Some(scope) = crate::budget::store::over_budget(env, &edge.config.budgets, &spender, limits).await {
        run.give_up();
        return Ok(SegmentEnd::Failed(format!("the worker stopped: today's {} budget is spent", scope.name())));
    }
    match run_segment(model, model.model_name(), tools, run).await {
        Ok(end) => Ok(end),
        Err(error) if error.is_retryable() => Err(error.to_string()),
        Err(error) => {
            run.give_up();
            Ok(SegmentEnd::Failed(format!("the worker could not reach its model: {error}")))
        }
    }
}

/// Out of retries: the worker is failed and the channel told, once.
pub async fn give_up(env: &Env, job: &WorkerJob) -> Result<(), String> {
    let db = env.d1(DATABASE_BINDING).map_err(text)?;
    let envelope = report(job, MessageType::Error, "failed", "the worker failed after several attempts".into());
    let pending = Pending { report: Some(envelope), next: None, ask: None };
    db.prepare("UPDATE workers SET state = 'failed', pending = ?1, updated_at = ?2 WHERE id = ?3")
        .bind(&[serde_json::to_string(&pending).map_err(text)?.into(), now(), job.id.as_str().into()])
        .map_err(text)?
        .run_counted()
        .await
        .map_err(text)?;
    // A question its last attempt left waiting will never be read: its buttons go.
    crate::mcp::elicit::withdraw_interrupted(env, &db, &job.id).await;
    carry_out(env, job, &pending).await?;
    clear_pending(&db, &job.id).await.map_err(text)
}

/// What a segment's end owes the world ([`owed`]), made ready to store: the
/// report an envelope, the approval asked for with its deadline.
fn decide(config: &Config, job: &WorkerJob, run: &WorkerRun, end: SegmentEnd) -> Pending {
    match owed(job, run.segments, end) {
        Owed::Report { kind, suffix, body } => {
            Pending { report: Some(report(job, kind, &suffix, body)), ..Pending::default() }
        }
        Owed::Approval(call) => {
            let mut approval = Approval::new(
                &job.conversation_key,
                Kind::Tool,
                &job.id,
                Some(&call.id),
                (&call.name, &shown_arguments(&call.arguments)),
                job.person.as_ref(),
                Some(now_ms() + config.approval_timeout_ms),
            );
            approval.why = run.needs_yes(&call);
            Pending { ask: Some(approval), ..Pending::default() }
        }
        Owed::Next(next) => Pending { next: Some(next), ..Pending::default() },
        Owed::Nothing => Pending::default(),
    }
}

fn report(job: &WorkerJob, kind: MessageType, suffix: &str, body: String) -> Envelope {
    Envelope::report("worker", &job.id, suffix, now_ms(), kind, body)
}

async fn carry_out(env: &Env, job: &WorkerJob, pending: &Pending) -> Result<(), String> {
    if let Some(approval) = &pending.ask {
        approvals::ask(env, approval, &job.id).await.map_err(text)?;
    }
    if let Some(envelope) = &pending.report {
        deliver(env, &job.conversation_key, envelope).await.map_err(text)?;
        // A worker the ready-task loop started settles its task.
        let outcome = match envelope.kind {
            MessageType::Done => Some(Ok(envelope.body.as_str())),
            MessageType::Error => Some(Err(envelope.body.as_str())),
            _ => None,
        };
        if let Some(outcome) = outcome {
            let db = env.d1(DATABASE_BINDING).map_err(text)?;
            if tasks::settle_worker(&db, &job.id, outcome).await.map_err(text)? {
                tasks::run_ready_loop(env).await.map_err(text)?;
            }
        }
    }
    if let Some(next) = &pending.next {
        crate::runtime::queue::enqueue(env, &Job::Worker(next.clone())).await.map_err(text)?;
    }
    Ok(())
}

/// The worker's tools as they act on the world.
struct EdgeTools<'a> {
    config: &'a Config,
    env: &'a Env,
    db: &'a D1Database,
    job: &'a WorkerJob,
    /// Progress lines and heartbeats sent in this step (their envelope ids count up).
    progress_reports: Cell<u32>,
    /// When the last heartbeat went out (0: none yet in this step).
    last_heartbeat_ms: Cell<i64>,
    /// Tools from MCP servers.
    mcp: Toolbox<'a>,
    /// Whether code the worker runs may have the network now (containment).
    network_allowed: Cell<bool>,
    /// What the step's metered tool runs cost, in millionths of a dollar.
    metered_micro_usd: Cell<u64>,
}

impl WorkerTools for EdgeTools<'_> {
    fn has_search(&self) -> bool {
        self.config.search_api_key.is_set()
    }

    fn extra_tools(&self) -> Vec<ToolSpec> {
        self.mcp.specs()
    }

    fn needs_approval(&self, name: &str) -> bool {
        self.mcp.needs_approval(name)
    }

    fn contain(&self, containment: &Containment) {
        self.network_allowed.set(containment.network_allowed());
    }

    async fn call(&self, name: &str, arguments: &Value) -> String {
        match WorkerToolSet::call(self, name, arguments).await {
            Some(result) => answer(result),
            None => self.mcp.call_or_refuse(name, arguments).await,
        }
    }

    async fn report_progress(&self, text: &str) {
        let count = self.progress_reports.get() + 1;
        self.progress_reports.set(count);
        let envelope =
            report(self.job, MessageType::Status, &format!("{}:status:{count}", self.job.step), text.to_string());
        // Progress is best effort: the outcome is what must arrive.
        if let Err(error) = deliver(self.env, &self.job.conversation_key, &envelope).await {
            let line = LogLine::warn("worker_progress_lost").conversation(&self.job.conversation_key);
            line.id(&self.job.id).reason(&error).emit();
        }
    }

    async fn heartbeat(&self) {
        let now = now_ms();
        let last = self.last_heartbeat_ms.get();
        if last != 0 && now - last < HEARTBEAT_INTERVAL_MS {
            return;
        }
        self.last_heartbeat_ms.set(now);
        let count = self.progress_reports.get() + 1;
        self.progress_reports.set(count);
        let envelope =
            report(self.job, MessageType::Status, &format!("{}:heartbeat:{count}", self.job.step), String::new());
        if let Err(error) = deliver(self.env, &self.job.conversation_key, &envelope).await {
            let line = LogLine::warn("worker_heartbeat_lost").conversation(&self.job.conversation_key);
            line.id(&self.job.id).reason(&error).emit();
        }
    }

    async fn is_cancelled(&self) -> bool {
        load(self.db, &self.job.id).await.ok().flatten().is_some_and(|row| row.cancelled != 0)
    }
}

impl Run<HttpFetch> for EdgeTools<'_> {
    async fn run(&self, arguments: HttpFetchArguments) -> String {
        web::http_fetch(self.config, arguments.url.trim()).await
    }
}

impl Run<Browse> for EdgeTools<'_> {
    async fn run(&self, arguments: BrowseArguments) -> String {
        let (shot, key) = (arguments.screenshot.unwrap_or(false), &self.job.conversation_key);
        let page = crate::web_tools::browse::browse(self.config, self.env, key, arguments.url.trim(), shot);
        self.metered(MeteredTool::Browse, page).await
    }
}

impl Run<WebSearch> for EdgeTools<'_> {
    async fn run(&self, arguments: WebSearchArguments) -> String {
        web::web_search(self.config, arguments.query.trim()).await
    }
}

impl Run<AttachmentRead> for EdgeTools<'_> {
    async fn run(&self, arguments: AttachmentReadArguments) -> String {
        files::read(self.env, self.db, &self.job.conversation_key, arguments.id.trim()).await
    }
}

impl Run<AttachmentRecall> for EdgeTools<'_> {
    async fn run(&self, _arguments: NoArguments) -> String {
        files::recall(self.db, &self.job.conversation_key).await
    }
}

impl Run<SendFile> for EdgeTools<'_> {
    async fn run(&self, arguments: SendFileArguments) -> String {
        let (key, process) = (&self.job.conversation_key, ("worker", self.job.id.as_str()));
        crate::jobs::send_file(self.config, self.env, self.db, key, process, &arguments).await
    }
}

impl Run<FileList> for EdgeTools<'_> {
    async fn run(&self, _arguments: NoArguments) -> String {
        answer(workspace::list(self.env, &self.job.conversation_key).await)
    }
}

impl Run<FileRead> for EdgeTools<'_> {
    async fn run(&self, arguments: FileReadArguments) -> String {
        answer(workspace::read(self.env, &self.job.conversation_key, &arguments).await)
    }
}

impl Run<FileWrite> for EdgeTools<'_> {
    async fn run(&self, arguments: FileWriteArguments) -> String {
        answer(workspace::write(self.env, &self.job.conversation_key, &arguments).await)
    }
}

impl Run<FileEdit> for EdgeTools<'_> {
    async fn run(&self, arguments: FileEditArguments) -> String {
        answer(workspace::edit(self.env, &self.job.conversation_key, &arguments).await)
    }
}

impl Run<RunCode> for EdgeTools<'_> {
    async fn run(&self, arguments: RunCodeArguments) -> String {
        let (config, env, key) = (self.config, self.env, &self.job.conversation_key);
        let network = self.network_allowed.get();
        self.metered(MeteredTool::RunCode, crate::sandbox::tools::run_code(config, env, key, &arguments, network)).await
    }
}

impl<'a> EdgeTools<'a> {
    fn new(config: &'a Config, env: &'a Env, db: &'a D1Database, job: &'a WorkerJob, mcp: Toolbox<'a>) -> Self {
        let (progress_reports, last_heartbeat_ms) = (Cell::new(0), Cell::new(0));
        let (network_allowed, metered_micro_usd) = (Cell::new(false), Cell::new(0));
        EdgeTools { config, env, db, job, mcp, progress_reports, last_heartbeat_ms, network_allowed, metered_micro_usd }
    }

    /// Whom the worker's spend is charged to.
    fn spender(&self) -> usage::Spender {
        usage::Spender { conversation_key: self.job.conversation_key.clone(), person: self.job.person.clone() }
    }

    /// Runs a metered tool: within its caps, counted, and priced into the
    /// step's spend (the day's budgets hold it like model calls).
    async fn metered(&self, tool: MeteredTool, run: impl std::future::Future<Output = String>) -> String {
        let who = (self.job.conversation_key.as_str(), self.job.id.as_str());
        match tool_runs::refused(self.db, who, tool, self.config.caps(tool), now_ms()).await {
            Ok(None) => {}
            Ok(Some(refusal)) => return refusal,
            Err(error) => return format!("error: `{tool}` cannot be counted now: {error}"),
        }
        let spender =
            usage::Spender { conversation_key: self.job.conversation_key.clone(), person: self.job.person.clone() };
        let limits = crate::agents::snapshot::limits(self.env, &spender).await;
        if let Some(scope) = crate::budget::store::over_budget(self.env, &self.config.budgets, &spender, limits).await {
            return format!("error: today's {} budget is spent; `{tool}` does not run", scope.name());
        }
        let started = now_ms();
        let output = run.await;
        let price = tool.price(u64::try_from(now_ms() - started).unwrap_or(0));
        self.metered_micro_usd.set(self.metered_micro_usd.get() + price.micro_usd);
        if let Err(error) = tool_runs::count(self.db, who, tool, now_ms()).await {
            LogLine::warn("tool_run_not_counted").conversation(who.0).id(&who.1).reason(&error).emit();
        }
        output
    }
}

impl Run<TaskUpdate> for EdgeTools<'_> {
    async fn run(&self, arguments: TaskUpdateArguments) -> String {
        let key = Some(self.job.conversation_key.as_str());
        tasks::update(self.db, key, Some(&self.job.id), &arguments)
            .await
            .unwrap_or_else(|error| format!("error: {error}"))
    }
}

fn text(error: impl std::fmt::Display) -> String {
    error.to_string()
}

fn now() -> JsValue {
    JsValue::from_f64(now_ms() as f64)
}

fn state_name(state: WorkerState) -> String {
    serde_json::to_value(state).ok().and_then(|value| value.as_str().map(str::to_string)).unwrap_or_default()
}

async fn create(db: &D1Database, job: &WorkerJob, run: &WorkerRun) -> worker::Result<()> {
    db.prepare(
        "INSERT INTO workers (id, conversation_key, state, run, updated_at) VALUES (?1, ?2, 'running', ?3, ?4) \
         ON CONFLICT (id) DO UPDATE SET run = excluded.run WHERE workers.run IS NULL",
    )
    .bind(&[job.id.as_str().into(), job.conversation_key.as_str().into(), serde_json::to_string(run)?.into(), now()])?
    .run_counted()
    .await?;
    Ok(())
}

async fn load(db: &D1Database, id: &str) -> worker::Result<Option<Row>> {
    db.prepare("SELECT state, run, pending, cancelled FROM workers WHERE id = ?1")
        .bind(&[id.into()])?
        .first_counted()
        .await
}

async fn save(
    env: &Env,
    db: &D1Database,
    job: &WorkerJob,
    run: &WorkerRun,
    pending: &Pending,
    spent: crate::budget::rules::Spend,
    learned_hosts: &[&String],
) -> worker::Result<()> {
    let update =
        db.prepare("UPDATE workers SET state = ?1, run = ?2, pending = ?3, updated_at = ?4 WHERE id = ?5").bind(&[
            state_name(run.state).into(),
            serde_json::to_string(run)?.into(),
            serde_json::to_string(pending)?.into(),
            now(),
            job.id.as_str().into(),
        ])?;
    let spender = usage::Spender { conversation_key: job.conversation_key.clone(), person: job.person.clone() };
    let mut statements = vec![update];
    if let Some(approval) = &pending.ask {
        statements.push(approvals::record(db, approval)?);
    }
    let apart = usage::add_beside(env, &mut statements, &spender, "worker", spent, now_ms())?;
    for host in learned_hosts {
        statements.push(
            db.prepare(
                "INSERT INTO conversation_hosts (conversation_key, host, first_used_at) VALUES (?1, ?2, ?3) \
                 ON CONFLICT DO NOTHING",
            )
            .bind(&[job.conversation_key.as_str().into(), host.as_str().into(), now()])?,
        );
    }
    crate::runtime::d1::batch(db, statements).await?;
    usage::send_apart(apart, &job.conversation_key).await;
    Ok(())
}

/// The hosts the conversation has used (containment's known hosts), newest first.
async fn conversation_hosts(db: &D1Database, conversation_key: &str) -> worker::Result<Vec<String>> {
    #[derive(Deserialize)]
    struct Row {
        host: String,
    }
    let rows: Vec<Row> = db
        .prepare(
            "SELECT host FROM conversation_hosts WHERE conversation_key = ?1 ORDER BY first_used_at DESC LIMIT 200",
        )
        .bind(&[conversation_key.into()])?
        .all_counted()
        .await?
        .results()?;
    Ok(rows.into_iter().map(|row| row.host).collect())
}

async fn clear_pending(db: &D1Database, id: &str) -> worker::Result<()> {
    db.prepare("UPDATE workers SET pending = NULL WHERE id = ?1").bind(&[id.into()])?.run_counted().await?;
    Ok(())
}

/// Marks a worker cancelled (the channel's `cancel`); a worker whose job has
/// not started yet is stopped before it does.
pub async fn cancel(db: &D1Database, id: &str, conversation_key: &str) -> worker::Result<()> {
    db.prepare(
        "INSERT INTO workers (id, conversation_key, state, cancelled, updated_at) VALUES (?1, ?2, 'failed', 1, ?3) \
         ON CONFLICT (id) DO UPDATE SET cancelled = 1, state = 'failed', updated_at = excluded.updated_at",
    )
    .bind(&[id.into(), conversation_key.into(), now()])?
    .run_counted()
    .await?;
    Ok(())
}

/// A worker as the admin API and `worker_inspect` show it.
#[derive(Debug, Serialize)]
pub struct WorkerSummary {
    pub id: String,
    pub state: String,
    pub cancelled: bool,
    pub task: String,
    pub segments: u32,
    pub status: Option<String>,
    pub outcome: Option<String>,
    pub usage: crate::llm::Usage,
}

/// The conversation's workers, newest first.
pub async fn list(db: &D1Database, conversation_key: &str) -> worker::Result<Vec<WorkerSummary>> {
    #[derive(Deserialize)]
    struct ListRow {
        id: String,
        state: String,
        run: Option<String>,
        cancelled: i64,
    }
    let rows: Vec<ListRow> = db
        .prepare(
            "SELECT id, state, run, cancelled FROM workers WHERE conversation_key = ?1 \
             ORDER BY updated_at DESC LIMIT 50",
        )
        .bind(&[conversation_key.into()])?
        .all_counted()
        .await?
        .results()?;
    Ok(rows
        .into_iter()
        .map(|row| {
            let run: Option<WorkerRun> = row.run.as_deref().and_then(|run| serde_json::from_str(run).ok());
            WorkerSummary {
                id: row.id,
                state: row.state,
                cancelled: row.cancelled != 0,
                task: run.as_ref().map(|run| run.task.clone()).unwrap_or_default(),
                segments: run.as_ref().map_or(0, |run| run.segments),
                status: run.as_ref().and_then(|run| run.status.clone()),
                outcome: run.as_ref().and_then(|run| run.outcome.clone()),
                usage: run.map(|run| run.usage).unwrap_or_default(),
            }
        })
        .collect())
}
