//! Approvals at the edge: the D1 row (`approvals`), asking in the
//! conversation (through its channel object, which sends the message with
//! buttons), and a decision from any platform's button, the dashboard's
//! admin, or the channel's alarm (a timeout). A decision is recorded once
//! (a conditional update), then carried out: a worker's call resumes through
//! the queue, a task moves on the board.

use serde::{Deserialize, Serialize};
use serde_json::json;
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement, Env};

use crate::approvals::rules::{self as approval, Choice, Click, Kind, Verdict};
use crate::budget::rules::Person;
use crate::channel::routes::ChannelRoute;
use crate::config::Config;
use crate::inbound::PersonKey;
use crate::log_line::LogLine;
use crate::process::worker_run::{WorkerInput, WorkerJob};
use crate::process::Job;
use crate::prompt;
use crate::runtime::channel_stub;
use crate::runtime::config::redactor;
use crate::runtime::config::DATABASE_BINDING;
use crate::runtime::d1::{changes, number, text_or_null, Metered};
use crate::runtime::http::now_ms;
use crate::runtime::log::Emit;
use crate::tasks::rules::{Actor, TaskStatus};
use crate::time::format_utc;

/// An approval as D1 keeps it (and the admin API lists it).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Approval {
    pub id: String,
    pub conversation_key: String,
    pub kind: Kind,
    /// The worker's id, or the task's number.
    pub subject: String,
    pub call_id: Option<String>,
    /// The tool's name as the model called it, or the task's title.
    pub what: String,
    pub arguments: String,
    pub asker_platform: Option<String>,
    pub asker_id: Option<String>,
    pub asker_name: Option<String>,
    pub status: String,
    pub expires_at: Option<i64>,
    pub decided_by: Option<String>,
    pub decided_at: Option<i64>,
    pub created_at: i64,
    /// Why the call waits, when containment asks (not the tool's own rule).
    #[serde(default)]
    pub why: Option<String>,
}

const COLUMNS: &str = "id, conversation_key, kind, subject, call_id, what, arguments, asker_platform, asker_id, \
                       asker_name, status, expires_at, decided_by, decided_at, created_at, why";

impl Approval {
    /// A new wait for `(what, arguments)`. `asker` is the person whose
    /// message started the work.
    pub fn new(
        conversation_key: &str,
        kind: Kind,
        subject: &str,
        call_id: Option<&str>,
        (what, arguments): (&str, &str),
        asker: Option<&Person>,
        expires_at: Option<i64>,
    ) -> Approval {
        let asker_key = asker.and_then(|person| PersonKey::parse(&person.key).ok());
        let (platform, id) = asker_key.map(|key| (key.platform().to_string(), key.user_id().to_string())).unzip();
        Approval {
            id: approval::approval_id(subject, call_id.unwrap_or("task")),
            conversation_key: conversation_key.to_string(),
            kind,
            subject: subject.to_string(),
            call_id: call_id.map(str::to_string),
            what: what.to_string(),
            // Kept and shown (the dashboard too) without any configured secret.
            arguments: redactor().redact(arguments).into_owned(),
            asker_platform: platform,
            asker_id: id,
            asker_name: asker.map(|person| person.name.clone()),
            status: "waiting".into(),
            expires_at,
            decided_by: None,
            decided_at: None,
            created_at: now_ms(),
            why: None,
        }
    }

    fn asker(&self) -> Option<(&str, &str)> {
        self.asker_platform.as_deref().zip(self.asker_id.as_deref())
    }

    fn asker_person(&self) -> Option<Person> {
        let (platform, id) = self.asker()?;
        Some(Person { key: format!("{platform}:{id}"), name: self.asker_name.clone().unwrap_or_default() })
    }

    /// The message that asks (Markdown; the channel renders it for the platform).
    pub fn ask_text(&self) -> String {
        let asker = self.asker_name.clone().filter(|name| !name.is_empty()).unwrap_or_else(|| "the task board".into());
        let context = json!({
            "kind": self.kind, "what": self.what, "arguments": self.arguments, "asker": asker,
            "until": self.expires_at.map(format_utc), "why": self.why,
        });
        prompt::render("approval_ask", context).unwrap_or_else(|_| format!("Approval needed: {}", self.what))
    }

    /// What the message says once decided.
    pub fn settled_text(&self, verdict: Verdict, by: &str) -> String {
        let context = json!({ "kind": self.kind, "what": self.what, "verdict": verdict, "by": by });
        prompt::render("approval_settled", context).unwrap_or_else(|_| format!("{}: {}", verdict.as_str(), self.what))
    }
}

/// The statement that records `approval` (a repeat of the same id changes
/// nothing), for the caller's batch.
pub fn record(db: &D1Database, approval: &Approval) -> worker::Result<D1PreparedStatement> {
    db.prepare(
        "INSERT INTO approvals (id, conversation_key, kind, subject, call_id, what, arguments, asker_platform, \
         asker_id, asker_name, status, expires_at, created_at, why) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 'waiting', ?11, ?12, ?13) ON CONFLICT (id) DO NOTHING",
    )
    .bind(&[
        approval.id.as_str().into(),
        approval.conversation_key.as_str().into(),
        kind_name(approval.kind).into(),
        approval.subject.as_str().into(),
        text_or_null(approval.call_id.as_deref()),
        approval.what.as_str().into(),
        approval.arguments.as_str().into(),
        text_or_null(approval.asker_platform.as_deref()),
        text_or_null(approval.asker_id.as_deref()),
        text_or_null(approval.asker_name.as_deref()),
        approval.expires_at.map_or(JsValue::NULL, number),
        number(approval.created_at),
        text_or_null(approval.why.as_deref()),
    ])
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Tool => "tool",
        Kind::Task => "task",
        Kind::Question => "question",
    }
}

/// What the channel object is asked to show.
#[derive(Debug, Serialize, Deserialize)]
pub struct Ask {
    pub approval_id: String,
    pub conversation_key: String,
    /// The process it waits for (its message is answered in that thread).
    pub process_id: String,
    pub text: String,
    /// When it times out (None: it waits until decided).
    pub until_ms: Option<i64>,
}

/// What the channel object is told once an approval is decided.
#[derive(Debug, Serialize, Deserialize)]
pub struct Settled {
    pub approval_id: String,
    pub text: String,
}

/// Asks in the conversation (the channel sends it once per approval id).
pub async fn ask(env: &Env, approval: &Approval, process_id: &str) -> worker::Result<()> {
    let ask = Ask {
        approval_id: approval.id.clone(),
        conversation_key: approval.conversation_key.clone(),
        process_id: process_id.to_string(),
        text: approval.ask_text(),
        until_ms: approval.expires_at,
    };
    channel_stub::post(env, &approval.conversation_key, ChannelRoute::ApprovalAsk, serde_json::to_string(&ask)?)
        .await?;
    Ok(())
}

pub async fn one(db: &D1Database, id: &str) -> worker::Result<Option<Approval>> {
    db.prepare(format!("SELECT {COLUMNS} FROM approvals WHERE id = ?1")).bind(&[id.into()])?.first_counted().await
}

/// The newest approvals (the dashboard's list).
pub async fn recent(db: &D1Database, limit: i64) -> worker::Result<Vec<Approval>> {
    db.prepare(format!("SELECT {COLUMNS} FROM approvals ORDER BY created_at DESC LIMIT ?1"))
        .bind(&[number(limit)])?
        .all_counted()
        .await?
        .results()
}

/// A decision made: what the approval's message says now; or why a press
/// decided nothing (said to the presser alone).
pub type Decided = Result<String, String>;

/// A button pressed: checked (known, still waiting, pressed in its own
/// conversation, by someone allowed), recorded once, carried out, and shown
/// on the approval's message.
pub async fn decide(config: &Config, env: &Env, id: &str, choice: Choice, click: &Click) -> worker::Result<Decided> {
    decide_as(config, env, id, choice, click, false).await
}

/// [`decide`], where `operator` says the presser is an operator by their
/// session (a web chat an operator opened) rather than by `APPROVERS`.
pub async fn decide_as(
    config: &Config,
    env: &Env,
    id: &str,
    choice: Choice,
    click: &Click,
    operator: bool,
) -> worker::Result<Decided> {
    let db = env.d1(DATABASE_BINDING)?;
    let clicker = &click.clicker;
    let Some(approval) = one(&db, id).await?.filter(|approval| click.is_in(&approval.conversation_key)) else {
        // Another conversation's approval is as unknown here as one that does not exist.
        return Ok(Err("This approval is unknown here.".into()));
    };
    if approval.status != "waiting" {
        let by = approval.decided_by.as_deref().map(|by| format!(" by {by}")).unwrap_or_default();
        return Ok(Err(format!("Already decided: {}{by}.", approval.status.replace('_', " "))));
    }
    if approval.expires_at.is_some_and(|at| at <= now_ms()) {
        return Ok(Err("Too late: this approval has timed out.".into()));
    }
    let mut operators = config.approvers.clone();
    if approval.kind == Kind::Question {
        // A question is the asker's alone to answer: no operator answers for them.
        operators.clear();
    } else if operator {
        operators.push(format!("{}:{}", clicker.platform, clicker.user_id));
    }
    if !approval::may_decide(approval.asker(), &operators, clicker) {
        let asker = approval.asker_name.as_deref().unwrap_or("the person who asked");
        let who = if approval.kind == Kind::Question { "" } else { " or an operator" };
        return Ok(Err(format!("Only {asker}{who} may decide this.")));
    }
    let verdict = choice.verdict();
    let by = clicker.label();
    match settle(env, &db, &approval, verdict, &by).await? {
        true => {
            let text = approval.settled_text(verdict, &by);
            show(env, &approval, &text).await;
            Ok(Ok(text))
        }
        false => Ok(Err("Someone else decided this a moment ago.".into())),
    }
}

/// The wait is over (the channel's alarm): the worker is told. Returns the
/// message's new text when this call timed it out.
pub async fn time_out(env: &Env, id: &str) -> worker::Result<Option<String>> {
    let db = env.d1(DATABASE_BINDING)?;
    let Some(approval) = one(&db, id).await? else {
        return Ok(None);
    };
    let by = "nobody (it timed out)";
    Ok(settle(env, &db, &approval, Verdict::TimedOut, by).await?.then(|| approval.settled_text(Verdict::TimedOut, by)))
}

/// Records the verdict if nobody did yet, then carries it out. A failure to
/// carry it out puts the approval back to waiting, so the click can be tried again.
async fn settle(env: &Env, db: &D1Database, approval: &Approval, verdict: Verdict, by: &str) -> worker::Result<bool> {
    let Some(decided_at) = record_verdict(db, approval, verdict, by).await? else {
        return Ok(false);
    };
    if let Err(error) = carry_out(env, db, approval, verdict, by).await {
        db.prepare(
            "UPDATE approvals SET status = 'waiting', decided_by = NULL, decided_at = NULL \
             WHERE id = ?1 AND decided_at = ?2",
        )
        .bind(&[approval.id.as_str().into(), number(decided_at)])?
        .run_counted()
        .await?;
        return Err(error);
    }
    Ok(true)
}

/// Records a verdict on a waiting approval; returns when, or None if it was
/// decided already.
async fn record_verdict(
    db: &D1Database,
    approval: &Approval,
    verdict: Verdict,
    by: &str,
) -> worker::Result<Option<i64>> {
    let now = now_ms();
    let result = db
        .prepare(
            "UPDATE approvals SET status = ?1, decided_by = ?2, decided_at = ?3 WHERE id = ?4 AND status = 'waiting'",
        )
        .bind(&[verdict.as_str().into(), by.into(), number(now), approval.id.as_str().into()])?
        .run_counted()
        .await?;
    if changes(&result) == 0 {
        return Ok(None);
    }
    LogLine::info("approval_decided")
        .conversation(&approval.conversation_key)
        .id(&approval.id)
        .field("verdict", verdict.as_str())
        .field("what", approval.what.as_str())
        .emit();
    Ok(Some(now))
}

/// The work waiting on approval `id` was stopped (the channel's `cancel`):
/// the approval is withdrawn. Returns its message's new text, or None if it
/// was decided already.
pub async fn withdraw(env: &Env, id: &str) -> worker::Result<Option<String>> {
    let withdrawn = withdraw_as(env, id, "nobody (the work was stopped)").await?;
    Ok(withdrawn.map(|(_, text)| text))
}

/// Withdraws approval `id`, `by` saying why nobody decided it; returns the
/// approval and its message's new text, or None if it was decided already.
pub async fn withdraw_as(env: &Env, id: &str, by: &str) -> worker::Result<Option<(Approval, String)>> {
    let db = env.d1(DATABASE_BINDING)?;
    let Some(approval) = one(&db, id).await? else {
        return Ok(None);
    };
    let recorded = record_verdict(&db, &approval, Verdict::Withdrawn, by).await?;
    let text = approval.settled_text(Verdict::Withdrawn, by);
    Ok(recorded.map(|_| (approval, text)))
}

/// An operator moved a proposed task on the board: its approval is decided
/// by that, and its message says so (its buttons gone).
pub async fn task_moved(env: &Env, task_id: i64, approved: bool) -> worker::Result<()> {
    let db = env.d1(DATABASE_BINDING)?;
    let Some(approval) = one(&db, &approval::approval_id(&task_id.to_string(), "task")).await? else {
        return Ok(());
    };
    let verdict = if approved { Verdict::Approved } else { Verdict::Denied };
    let by = "an operator (on the task board)";
    if record_verdict(&db, &approval, verdict, by).await?.is_some() {
        show(env, &approval, &approval.settled_text(verdict, by)).await;
    }
    Ok(())
}

async fn carry_out(env: &Env, db: &D1Database, approval: &Approval, verdict: Verdict, by: &str) -> worker::Result<()> {
    match approval.kind {
        Kind::Tool => {
            let job = WorkerJob {
                id: approval.subject.clone(),
                conversation_key: approval.conversation_key.clone(),
                step: format!("approval:{}", approval.id),
                input: WorkerInput::Decision {
                    call_id: approval.call_id.clone().unwrap_or_default(),
                    verdict,
                    by: by.to_string(),
                },
                person: approval.asker_person(),
            };
            crate::runtime::queue::enqueue(env, &Job::Worker(job)).await
        }
        // The MCP call that asked waits on the row itself (`crate::mcp::elicit`).
        Kind::Question => Ok(()),
        Kind::Task => {
            let to = if verdict == Verdict::Approved { TaskStatus::Ready } else { TaskStatus::Backlog };
            let id = approval.subject.parse().unwrap_or_default();
            // A task someone already moved on the board stays where it is.
            if let Err(why) = crate::tasks::store::move_task(db, id, to, Actor::Admin).await {
                LogLine::info("task_approval_moot").id(&approval.id).reason(&why).emit();
            }
            if to == TaskStatus::Ready {
                crate::tasks::store::run_ready_loop(env).await?;
            }
            Ok(())
        }
    }
}

/// Shows the decision on the approval's message (best effort: the decision stands either way).
pub async fn show(env: &Env, approval: &Approval, text: &str) {
    let settled = Settled { approval_id: approval.id.clone(), text: text.to_string() };
    let body = serde_json::to_string(&settled).unwrap_or_default();
    if let Err(error) = channel_stub::post(env, &approval.conversation_key, ChannelRoute::ApprovalSettled, body).await {
        LogLine::warn("approval_not_shown").id(&approval.id).reason(&error).emit();
    }
}
