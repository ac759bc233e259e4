//! The task board in D1: numbered tasks per conversation that branches
//! propose, a person approves, and the cortex's ready-task loop hands to
//! workers. Every status change goes through the pure [`transition`] rules.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use wasm_bindgen::JsValue;
use worker::{D1Database, Env, Result};

use crate::channel::routes::ChannelRoute;
use crate::llm::tool::given;
use crate::runtime::channel_stub;
use crate::runtime::config::DATABASE_BINDING;
use crate::runtime::d1::Metered;
use crate::runtime::d1::{changes, number, text_or_null};
use crate::runtime::http::now_ms;
use crate::tasks::arguments::{Move, TaskCreateArguments, TaskNumber, TaskUpdateArguments};
use crate::tasks::rules::{after_failure, transition, Actor, Priority, TaskStatus};

/// Tasks a list shows at most.
const LIST_LIMIT: f64 = 100.0;
/// Ready tasks the loop claims at most per tick.
const CLAIMS_PER_TICK: usize = 5;

#[derive(Debug, Serialize, Deserialize)]
pub struct Task {
    pub id: i64,
    pub conversation_key: String,
    pub title: String,
    pub description: String,
    pub status: String,
    pub priority: String,
    pub note: String,
    pub subtasks: String,
    pub worker_id: Option<String>,
    pub attempts: i64,
    pub created_at: i64,
    pub approved_at: Option<i64>,
    pub completed_at: Option<i64>,
}

const COLUMNS: &str = "id, conversation_key, title, description, status, priority, note, subtasks, worker_id, \
                       attempts, created_at, approved_at, completed_at";

/// Proposes a task (it waits for approval); returns its number.
pub async fn create(
    db: &D1Database,
    conversation_key: &str,
    title: &str,
    description: &str,
    priority: Priority,
) -> Result<i64> {
    #[derive(Deserialize)]
    struct Created {
        id: i64,
    }
    let created: Option<Created> = db
        .prepare(
            "INSERT INTO tasks (conversation_key, title, description, priority, status, created_at, updated_at) \
             VALUES (?1, ?2, ?3, ?4, 'pending_approval', ?5, ?5) RETURNING id",
        )
        .bind(&[conversation_key.into(), title.into(), description.into(), priority.as_str().into(), number(now_ms())])?
        .first_counted()
        .await?;
    Ok(created.map_or(0, |row| row.id))
}

/// Tasks of one conversation (or all) with an optional status, open ones first.
pub async fn list(db: &D1Database, conversation_key: Option<&str>, status: Option<&str>) -> Result<Vec<Task>> {
    db.prepare(format!(
        "SELECT {COLUMNS} FROM tasks WHERE (?1 IS NULL OR conversation_key = ?1) AND (?2 IS NULL OR status = ?2) \
         ORDER BY status = 'done', id LIMIT ?3"
    ))
    .bind(&[text_or_null(conversation_key), text_or_null(status), JsValue::from_f64(LIST_LIMIT)])?
    .all_counted()
    .await?
    .results()
}

pub async fn one(db: &D1Database, id: i64) -> Result<Option<Task>> {
    db.prepare(format!("SELECT {COLUMNS} FROM tasks WHERE id = ?1")).bind(&[number(id)])?.first_counted().await
}

/// Moves a task, checked by the board's rules for `actor`. The write is
/// conditional on the status read, so a concurrent move is not overwritten.
pub async fn move_task(db: &D1Database, id: i64, to: TaskStatus, actor: Actor) -> std::result::Result<Task, String> {
    let task = one(db, id).await.map_err(|error| error.to_string())?.ok_or(format!("there is no task {id}"))?;
    let from = TaskStatus::read(&task.status).ok_or("the task has an unknown status")?;
    transition(from, to, actor).map_err(|error| error.to_string())?;
    let approved = matches!(from, TaskStatus::PendingApproval);
    db.prepare(
        "UPDATE tasks SET status = ?1, updated_at = ?2, approved_at = CASE WHEN ?3 THEN ?2 ELSE approved_at END \
         WHERE id = ?4 AND status = ?5",
    )
    .bind(&[to.as_str().into(), number(now_ms()), number(i64::from(approved)), number(id), from.as_str().into()])
    .map_err(|error| error.to_string())?
    .run_counted()
    .await
    .map_err(|error| error.to_string())?;
    one(db, id).await.map_err(|error| error.to_string())?.ok_or(format!("task {id} is gone"))
}

pub async fn delete(db: &D1Database, id: i64) -> Result<bool> {
    let result = db.prepare("DELETE FROM tasks WHERE id = ?1").bind(&[number(id)])?.run_counted().await?;
    Ok(changes(&result) > 0)
}

/// A task the agent proposes (`task_create`'s arguments): created waiting
/// for approval; the error is text for the model.
pub async fn propose(
    db: &D1Database,
    conversation_key: &str,
    arguments: &TaskCreateArguments,
) -> Result<std::result::Result<Task, String>> {
    let title = arguments.title.trim();
    if title.is_empty() {
        return Ok(Err("`title` must be a non-empty string".into()));
    }
    let priority = arguments.priority.unwrap_or(Priority::Medium);
    let description = arguments.description.as_deref().unwrap_or_default().trim();
    let id = create(db, conversation_key, title, description, priority).await?;
    Ok(one(db, id).await?.ok_or_else(|| format!("task {id} is gone")))
}

/// `task_update`: a branch may move a task (by the rules) and change its
/// priority and note; a worker (`worker_id`) only the note and subtasks of
/// the task it is bound to.
pub async fn update(
    db: &D1Database,
    conversation_key: Option<&str>,
    worker_id: Option<&str>,
    arguments: &TaskUpdateArguments,
) -> Result<String> {
    let TaskNumber(id) = arguments.id;
    let Some(task) = one(db, id).await?.filter(|task| conversation_key.is_none_or(|key| key == task.conversation_key))
    else {
        return Ok(format!("error: there is no task {id}"));
    };
    if let Some(worker) = worker_id {
        if task.worker_id.as_deref() != Some(worker) {
            return Ok(format!("error: task {id} is not yours: a worker may only update its own task"));
        }
        if arguments.status.is_some() || arguments.priority.is_some() {
            return Ok("error: a worker may only change its task's note and subtasks".into());
        }
    }
    if let Some(to) = arguments.status {
        let to = match to {
            Move::Backlog => TaskStatus::Backlog,
            Move::Ready => TaskStatus::Ready,
        };
        if let Err(refusal) = move_task(db, id, to, Actor::Branch).await {
            return Ok(format!("error: {refusal}"));
        }
    }
    let priority = arguments.priority.map(Priority::as_str);
    let subtasks = arguments.subtasks.as_ref().map(|steps| Value::from(steps.0.clone()).to_string());
    db.prepare(
        "UPDATE tasks SET note = COALESCE(?1, note), priority = COALESCE(?2, priority), \
         subtasks = COALESCE(?3, subtasks), updated_at = ?4 WHERE id = ?5",
    )
    .bind(&[
        text_or_null(given(&arguments.note)),
        text_or_null(priority),
        text_or_null(subtasks.as_deref()),
        number(now_ms()),
        number(id),
    ])?
    .run_counted()
    .await?;
    Ok(format!("task {id} updated"))
}

/// The ready-task loop: claims the oldest highest-priority ready tasks, one
/// atomic statement each (two ticks never claim the same task), and starts a
/// worker for each in its conversation; returns how many it started.
pub async fn run_ready_loop(env: &Env) -> Result<usize> {
    let db = env.d1(DATABASE_BINDING)?;
    for claimed in 0..CLAIMS_PER_TICK {
        let Some(task) = claim_next(&db).await? else {
            return Ok(claimed);
        };
        let worker_id = task.worker_id.clone().unwrap_or_default();
        let brief = format!("Task {}: {}\n\n{}", task.id, task.title, task.description).trim().to_string();
        let body = serde_json::json!({ "id": worker_id, "task": brief, "conversation_key": task.conversation_key });
        let started =
            channel_stub::post(env, &task.conversation_key, ChannelRoute::TaskStart, body.to_string()).await.is_ok();
        if !started {
            // The conversation has no room for another worker now: back to ready for a later tick.
            db.prepare("UPDATE tasks SET status = 'ready', worker_id = NULL WHERE id = ?1 AND worker_id = ?2")
                .bind(&[number(task.id), worker_id.as_str().into()])?
                .run_counted()
                .await?;
            return Ok(claimed);
        }
    }
    Ok(CLAIMS_PER_TICK)
}

async fn claim_next(db: &D1Database) -> Result<Option<Task>> {
    db.prepare(format!(
        "UPDATE tasks SET status = 'in_progress', attempts = attempts + 1, updated_at = ?1, \
         worker_id = conversation_key || ':task:' || id || ':' || (attempts + 1) \
         WHERE id = (SELECT id FROM tasks WHERE status = 'ready' ORDER BY \
           CASE priority WHEN 'critical' THEN 0 WHEN 'high' THEN 1 WHEN 'medium' THEN 2 ELSE 3 END, created_at, id \
           LIMIT 1) AND status = 'ready' RETURNING {COLUMNS}"
    ))
    .bind(&[number(now_ms())])?
    .first_counted()
    .await
}

/// A worker bound to a task finished: the task is done, or after a failure
/// goes back to ready (or, after its last attempt, to the backlog) with the
/// error. Conditional on the binding, so a repeated report changes nothing.
/// Returns whether a task went back to ready (the loop should run).
pub async fn settle_worker(db: &D1Database, worker_id: &str, outcome: std::result::Result<&str, &str>) -> Result<bool> {
    #[derive(Deserialize)]
    struct Bound {
        id: i64,
        attempts: i64,
    }
    let bound: Option<Bound> = db
        .prepare("SELECT id, attempts FROM tasks WHERE worker_id = ?1 AND status = 'in_progress'")
        .bind(&[worker_id.into()])?
        .first_counted()
        .await?;
    let Some(bound) = bound else {
        return Ok(false);
    };
    let (status, note) = match outcome {
        Ok(result) => (TaskStatus::Done, result),
        Err(error) => (after_failure(bound.attempts.max(0) as u32), error),
    };
    db.prepare(
        "UPDATE tasks SET status = ?1, note = ?2, updated_at = ?3, \
         completed_at = CASE WHEN ?1 = 'done' THEN ?3 ELSE completed_at END \
         WHERE id = ?4 AND worker_id = ?5 AND status = 'in_progress'",
    )
    .bind(&[status.as_str().into(), note.into(), number(now_ms()), number(bound.id), worker_id.into()])?
    .run_counted()
    .await?;
    Ok(status == TaskStatus::Ready)
}
