//! Scheduled jobs in D1: create, list, cancel, pause and resume them; claim
//! a conversation's due runs exactly once; record what each run became. The
//! timing rules are the pure [`crate::schedules`] core's; the channel object's
//! alarm fires the runs.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use wasm_bindgen::JsValue;
use worker::{D1Database, Result};

use crate::channel::routes::ChannelRoute;
use crate::inbound::{Author, InboundEvent, ReplyAddress};
use crate::runtime::d1::Metered;
use crate::runtime::d1::{changes, number, text_or_null};
use crate::schedules::plan::{catch_up, next_run, Plan};
use crate::schedules::runs::{claim, Claim, JobRuns};
use crate::schedules::zone::describe_local;
use crate::schedules::zones::IntlZones;

/// A job's status values.
pub const ACTIVE: &str = "active";
pub const PAUSED: &str = "paused";
pub const DISABLED: &str = "disabled";
/// Failed runs in a row that disable a job.
pub const MAX_CONSECUTIVE_FAILURES: i64 = 3;
/// The author of a run's synthetic message, and its delivery-id prefix.
pub const RUN_AUTHOR: &str = "schedule";

/// One job as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Job {
    pub id: String,
    pub conversation_key: String,
    pub reply_address: String,
    pub prompt: String,
    pub plan: String,
    pub status: String,
    pub next_run_at: Option<i64>,
    pub runs_done: i64,
    pub consecutive_failures: i64,
    pub created_at: i64,
    pub last_run_at: Option<i64>,
    /// Who created it: the platform user id ('operator' through the admin API).
    #[serde(default)]
    pub created_by_id: Option<String>,
    #[serde(default)]
    pub created_by_name: Option<String>,
}

impl Job {
    pub fn plan(&self) -> Option<Plan> {
        serde_json::from_str(&self.plan).ok()
    }

    /// The job as a listing shows it: the next run in the job's own zone.
    pub fn view(&self) -> Value {
        let plan = self.plan();
        let zone = plan.as_ref().map_or("UTC", |plan| plan.zone.as_str());
        json!({
            "id": self.id,
            "conversation": self.conversation_key,
            "prompt": self.prompt,
            "status": self.status,
            "plan": plan,
            "next_run": self.next_run_at.map(|at| describe_local(&IntlZones, zone, at)),
            "next_run_at": self.next_run_at,
            "runs_done": self.runs_done,
            "consecutive_failures": self.consecutive_failures,
            "created_by": { "id": self.created_by_id, "name": self.created_by_name },
        })
    }
}

/// Who creates a job, and the cap on the conversation's live jobs that
/// applies to them (None: an operator, uncapped).
pub struct Creation<'a> {
    pub creator: &'a Author,
    pub max_jobs: Option<u32>,
}

/// Why a job was not created.
pub enum Refused {
    /// The conversation holds its cap of active and paused jobs.
    ConversationCap(u32),
    Failed(worker::Error),
}

impl From<worker::Error> for Refused {
    fn from(error: worker::Error) -> Self {
        Refused::Failed(error)
    }
}

impl From<serde_json::Error> for Refused {
    fn from(error: serde_json::Error) -> Self {
        Refused::Failed(error.into())
    }
}

/// Creates a job; its first run is computed now. Returns the job. The cap is
/// checked by the insert itself, so parallel creations cannot pass it.
pub async fn create(
    db: &D1Database,
    conversation_key: &str,
    reply_address: &ReplyAddress,
    prompt: &str,
    plan: &Plan,
    creation: Creation<'_>,
    now_ms: i64,
) -> std::result::Result<Job, Refused> {
    let first = next_run(plan, now_ms, 0, &IntlZones).map_err(|error| Refused::Failed(error.to_string().into()))?;
    let Some(first) = first else {
        return Err(Refused::Failed("that plan never runs (check its time, end and run count)".into()));
    };
    let job = Job {
        id: short_id(),
        conversation_key: conversation_key.to_string(),
        reply_address: serde_json::to_string(&durable_address(reply_address, conversation_key))?,
        prompt: prompt.to_string(),
        plan: serde_json::to_string(plan)?,
        status: ACTIVE.into(),
        next_run_at: Some(first),
        runs_done: 0,
        consecutive_failures: 0,
        created_at: now_ms,
        last_run_at: None,
        created_by_id: Some(creation.creator.id.clone()),
        created_by_name: Some(creation.creator.name.clone()),
    };
    let cap = creation.max_jobs.map_or(JsValue::NULL, |cap| number(cap.into()));
    let result = db
        .prepare(
            "INSERT INTO schedules (id, conversation_key, reply_address, prompt, plan, status, next_run_at, created_at, \
             created_by_id, created_by_name) SELECT ?1, ?2, ?3, ?4, ?5, 'active', ?6, ?7, ?8, ?9 \
             WHERE ?10 IS NULL OR (SELECT COUNT(*) FROM schedules WHERE conversation_key = ?2 \
             AND status IN ('active', 'paused')) < ?10",
        )
        .bind(&[
            job.id.as_str().into(),
            job.conversation_key.as_str().into(),
            job.reply_address.as_str().into(),
            job.prompt.as_str().into(),
            job.plan.as_str().into(),
            number(first),
            number(now_ms),
            creation.creator.id.as_str().into(),
            creation.creator.name.as_str().into(),
            cap,
        ])?
        .run_counted()
        .await?;
    match (changes(&result), creation.max_jobs) {
        (0, Some(cap)) => Err(Refused::ConversationCap(cap)),
        (0, None) => Err(Refused::Failed("the job was not stored".into())),
        _ => Ok(job),
    }
}

/// A command's reply address (an interaction token) expires in minutes: a
/// job answers in the channel instead.
fn durable_address(address: &ReplyAddress, conversation_key: &str) -> ReplyAddress {
    match address {
        ReplyAddress::Discord { channel_id, .. } => {
            let key = crate::inbound::ConversationKey::parse(conversation_key).ok();
            let guild_id = key.and_then(|key| key.guild().map(str::to_string));
            ReplyAddress::DiscordChannel { channel_id: channel_id.clone(), guild_id }
        }
        other => other.clone(),
    }
}

const COLUMNS: &str = "id, conversation_key, reply_address, prompt, plan, status, next_run_at, runs_done, \
                       consecutive_failures, created_at, last_run_at, created_by_id, created_by_name";

/// Jobs of one conversation (or all), oldest first.
pub async fn list(db: &D1Database, conversation_key: Option<&str>) -> Result<Vec<Job>> {
    let key = text_or_null(conversation_key);
    db.prepare(format!("SELECT {COLUMNS} FROM schedules WHERE ?1 IS NULL OR conversation_key = ?1 ORDER BY created_at"))
        .bind(&[key])?
        .all_counted()
        .await?
        .results()
}

/// Removes a job (only from `conversation_key` when given). Its pending run
/// cannot fire after this: a claim needs the row.
pub async fn cancel(db: &D1Database, conversation_key: Option<&str>, id: &str) -> Result<bool> {
    let key = text_or_null(conversation_key);
    let result = db
        .prepare("DELETE FROM schedules WHERE id = ?1 AND (?2 IS NULL OR conversation_key = ?2)")
        .bind(&[id.into(), key])?
        .run_counted()
        .await?;
    Ok(changes(&result) > 0)
}

/// Pauses or resumes a job; a resumed job runs next after now.
pub async fn set_status(db: &D1Database, id: &str, status: &str, now_ms: i64) -> Result<Option<Job>> {
    let Some(job) = one(db, id).await? else {
        return Ok(None);
    };
    let next = match (status, job.plan()) {
        (ACTIVE, Some(plan)) => {
            next_run(&plan, now_ms, job.runs_done as u32, &IntlZones).map_err(|error| error.to_string())?
        }
        _ => job.next_run_at,
    };
    db.prepare("UPDATE schedules SET status = ?1, next_run_at = ?2, consecutive_failures = 0 WHERE id = ?3")
        .bind(&[status.into(), next.map_or(JsValue::NULL, number), id.into()])?
        .run_counted()
        .await?;
    one(db, id).await
}

pub async fn one(db: &D1Database, id: &str) -> Result<Option<Job>> {
    db.prepare(format!("SELECT {COLUMNS} FROM schedules WHERE id = ?1")).bind(&[id.into()])?.first_counted().await
}

/// A job's runs, newest first.
pub async fn runs(db: &D1Database, id: &str) -> Result<Vec<Value>> {
    db.prepare(
        "SELECT due_at, claimed_at, finished_at, status, missed, error FROM schedule_runs \
         WHERE schedule_id = ?1 ORDER BY due_at DESC LIMIT 200",
    )
    .bind(&[id.into()])?
    .all_counted()
    .await?
    .results()
}

/// The nearest due time of the conversation's active jobs. A job with an
/// unresolved run is left out: its next run waits for that run's outcome,
/// and the turn that resolves it claims what fell due meanwhile.
pub async fn next_due(db: &D1Database, conversation_key: &str) -> Result<Option<i64>> {
    #[derive(Deserialize)]
    struct Due {
        due: Option<i64>,
    }
    let due: Option<Due> = db
        .prepare(format!(
            "SELECT MIN(next_run_at) AS due FROM schedules WHERE conversation_key = ?1 AND status = 'active' \
             AND NOT EXISTS ({UNRESOLVED_RUN})"
        ))
        .bind(&[conversation_key.into()])?
        .first_counted()
        .await?;
    Ok(due.and_then(|due| due.due))
}

/// Conversations with a job overdue by now (the cron re-arms their objects).
/// A job whose run is unresolved counts too: the claim hands that run's
/// message to its channel again, in case a crash lost it before it was queued.
pub async fn overdue_conversations(db: &D1Database, now_ms: i64) -> Result<Vec<String>> {
    #[derive(Deserialize)]
    struct Key {
        conversation_key: String,
    }
    let keys: Vec<Key> = db
        .prepare(
            "SELECT DISTINCT conversation_key FROM schedules WHERE status = 'active' AND next_run_at <= ?1 LIMIT 500",
        )
        .bind(&[number(now_ms)])?
        .all_counted()
        .await?
        .results()?;
    Ok(keys.into_iter().map(|key| key.conversation_key).collect())
}

/// Wakes the channel object of every conversation with an overdue job (the
/// cron's part: no job depends on its object being awake).
pub async fn rearm_overdue(env: &worker::Env, now_ms: i64) -> Result<usize> {
    let db = env.d1(crate::runtime::config::DATABASE_BINDING)?;
    let overdue = overdue_conversations(&db, now_ms).await?;
    for conversation_key in &overdue {
        wake(env, conversation_key).await?;
    }
    Ok(overdue.len())
}

/// Makes a conversation's channel object claim what is due and re-arm for
/// its next run.
pub async fn wake(env: &worker::Env, conversation_key: &str) -> Result<()> {
    crate::runtime::channel_stub::post(env, conversation_key, ChannelRoute::ScheduleWake, conversation_key.to_string())
        .await?;
    Ok(())
}

/// A claimed run of the job in `schedules` not yet resolved (a subquery;
/// the partial index `schedule_runs_unresolved` answers it).
const UNRESOLVED_RUN: &str =
    "SELECT 1 FROM schedule_runs r WHERE r.schedule_id = schedules.id AND r.status = 'claimed'";

/// Claims the conversation's due runs, each exactly once: the run row is
/// written only while the job is still due at that time, active, and has no
/// unresolved run (one run of a job at a time, see
/// [`crate::schedules::runs`]); the job moves to its next run in the same
/// transaction. A job that missed several runs (downtime, or a run that took
/// long) runs once and says how many it missed. Runs claimed before but
/// never finished (a crash in between) come back too; the channel takes each
/// run's message once.
pub async fn claim_due(db: &D1Database, conversation_key: &str, now_ms: i64) -> Result<Vec<InboundEvent>> {
    #[derive(Deserialize)]
    struct Due {
        id: String,
        plan: String,
        status: String,
        next_run_at: Option<i64>,
        runs_done: i64,
        unresolved_due_at: Option<i64>,
    }
    let due: Vec<Due> = db
        .prepare(
            "SELECT id, plan, status, next_run_at, runs_done, (SELECT MIN(r.due_at) FROM schedule_runs r \
             WHERE r.schedule_id = schedules.id AND r.status = 'claimed') AS unresolved_due_at \
             FROM schedules WHERE conversation_key = ?1 AND status = 'active' AND next_run_at <= ?2",
        )
        .bind(&[conversation_key.into(), number(now_ms)])?
        .all_counted()
        .await?
        .results()?;
    for job in &due {
        let runs = JobRuns {
            is_active: job.status == ACTIVE,
            next_run_at: job.next_run_at,
            unresolved_due_at: job.unresolved_due_at,
        };
        let Claim::Run { due_at } = claim(&runs, now_ms) else {
            continue;
        };
        let Some(plan) = serde_json::from_str::<Plan>(&job.plan).ok() else {
            continue;
        };
        let caught =
            catch_up(&plan, due_at, now_ms, job.runs_done as u32, &IntlZones).map_err(|error| error.to_string())?;
        let next = caught.next_after_now.map_or(JsValue::NULL, number);
        // The read above may be stale (another claim, a run resolved, a
        // pause): the writes check the same conditions again, atomically.
        let still_due = "id = ?1 AND next_run_at = ?2 AND status = 'active'";
        crate::runtime::d1::batch(
            db,
            vec![
                db.prepare(format!(
                    "INSERT INTO schedule_runs (schedule_id, due_at, claimed_at, status, missed) \
                     SELECT id, next_run_at, ?3, 'claimed', ?4 FROM schedules WHERE {still_due} \
                     AND NOT EXISTS ({UNRESOLVED_RUN}) ON CONFLICT (schedule_id, due_at) DO NOTHING"
                ))
                .bind(&[
                    job.id.as_str().into(),
                    number(due_at),
                    number(now_ms),
                    number(i64::from(caught.missed)),
                ])?,
                // The run just inserted is the only unresolved one allowed.
                db.prepare(format!(
                    "UPDATE schedules SET next_run_at = ?3, runs_done = runs_done + 1, last_run_at = ?4 \
                     WHERE {still_due} AND NOT EXISTS ({UNRESOLVED_RUN} AND r.due_at <> ?2)"
                ))
                .bind(&[job.id.as_str().into(), number(due_at), next, number(now_ms)])?,
            ],
        )
        .await?;
    }
    pending_runs(db, conversation_key).await
}

/// Claimed runs not yet finished, as the messages that start them (marked
/// as commands: addressed to the bot, answered at once, quoting nothing).
async fn pending_runs(db: &D1Database, conversation_key: &str) -> Result<Vec<InboundEvent>> {
    #[derive(Deserialize)]
    struct Pending {
        id: String,
        due_at: i64,
        missed: i64,
        prompt: String,
        reply_address: String,
    }
    let pending: Vec<Pending> = db
        .prepare(
            "SELECT s.id AS id, r.due_at AS due_at, r.missed AS missed, s.prompt AS prompt, \
             s.reply_address AS reply_address FROM schedule_runs r JOIN schedules s ON s.id = r.schedule_id \
             WHERE s.conversation_key = ?1 AND r.status = 'claimed' ORDER BY r.due_at",
        )
        .bind(&[conversation_key.into()])?
        .all_counted()
        .await?
        .results()?;
    Ok(pending
        .into_iter()
        .filter_map(|run| {
            let address: ReplyAddress = serde_json::from_str(&run.reply_address).ok()?;
            let missed = match run.missed {
                0 => String::new(),
                missed => format!(" (It missed {missed} earlier run(s) while edgebot was down; it runs once now.)"),
            };
            let author = Author { id: RUN_AUTHOR.into(), name: "Scheduled job".into(), is_bot: false };
            let text = format!("[scheduled job {}] {}{missed}", run.id, run.prompt);
            let delivery_id = run_delivery_id(&run.id, run.due_at);
            let event =
                InboundEvent::new(conversation_key.to_string(), delivery_id, String::new(), author, text, address);
            Some(InboundEvent { is_command: true, ..event })
        })
        .collect())
}

/// The delivery id of a run's message: `schedule:{job}:{due_at}`.
pub fn run_delivery_id(job_id: &str, due_at: i64) -> String {
    format!("{RUN_AUTHOR}:{job_id}:{due_at}")
}

/// The job and due time a run's delivery id names.
pub fn parse_run_delivery_id(delivery_id: &str) -> Option<(&str, i64)> {
    let rest = delivery_id.strip_prefix(RUN_AUTHOR)?.strip_prefix(':')?;
    let (job, due) = rest.rsplit_once(':')?;
    Some((job, due.parse().ok()?))
}

/// Records what a run became (`delivered`, `nothing`, `failed`). Returns
/// true when this failure disabled the job (three in a row): the caller tells
/// the conversation, once.
pub async fn finish_run(
    db: &D1Database,
    delivery_id: &str,
    status: &str,
    error: Option<&str>,
    now_ms: i64,
) -> Result<bool> {
    let Some((job_id, due_at)) = parse_run_delivery_id(delivery_id) else {
        return Ok(false);
    };
    let failed = status == "failed";
    #[derive(Deserialize)]
    struct After {
        status: String,
        consecutive_failures: i64,
    }
    // One transaction: the run's outcome and what it does to its job are
    // recorded together, so no restart can leave a failure recorded but not
    // counted (the job would then stay active and run again). Only the first
    // outcome recorded for a run counts (a resumed turn may report again):
    // the job changes only while the run is still unresolved.
    let is_unresolved = "SELECT 1 FROM schedule_runs WHERE schedule_id = ?1 AND due_at = ?2 AND status = 'claimed'";
    let results = crate::runtime::d1::batch(
        db,
        vec![
            db.prepare(format!(
                "UPDATE schedules SET consecutive_failures = CASE WHEN ?3 = 1 THEN consecutive_failures + 1 ELSE 0 END, \
                 status = CASE WHEN ?3 = 1 AND consecutive_failures + 1 >= ?4 AND status = 'active' THEN 'disabled' \
                 ELSE status END WHERE id = ?1 AND EXISTS ({is_unresolved}) RETURNING status, consecutive_failures"
            ))
            .bind(&[job_id.into(), number(due_at), number(i64::from(failed)), number(MAX_CONSECUTIVE_FAILURES)])?,
            db.prepare(
                "UPDATE schedule_runs SET status = ?3, error = ?4, finished_at = ?5 \
                 WHERE schedule_id = ?1 AND due_at = ?2 AND status = 'claimed'",
            )
            .bind(&[job_id.into(), number(due_at), status.into(), text_or_null(error), number(now_ms)])?,
        ],
    )
    .await?;
    let after: Option<After> = match results.first() {
        Some(result) => result.results::<After>()?.into_iter().next(),
        None => None,
    };
    Ok(after.is_some_and(|after| after.status == DISABLED && after.consecutive_failures == MAX_CONSECUTIVE_FAILURES))
}

/// A short job id people can type, from a v4 UUID's random bits (the
/// runtime's CSPRNG, where `Math.random` was before). Not a v7: six
/// characters someone types cannot carry a timestamp, and jobs are listed by
/// their next run, not their id.
fn short_id() -> String {
    crate::schedules::job_id(uuid::Uuid::new_v4().as_u128())
}
