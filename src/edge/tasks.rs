//! The shared task list in D1 that branches (create, list, update) and
//! workers (update) keep per conversation.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use wasm_bindgen::JsValue;
use worker::{D1Database, Result};

use super::http::now_ms;

/// Tasks a list shows at most.
const LIST_LIMIT: f64 = 50.0;
const STATUSES: [&str; 3] = ["todo", "in_progress", "done"];

#[derive(Debug, Serialize, Deserialize)]
pub struct Task {
    pub id: i64,
    pub title: String,
    pub status: String,
    pub note: String,
}

/// Adds a task; returns its id.
pub async fn create(db: &D1Database, conversation_key: &str, title: &str) -> Result<i64> {
    #[derive(Deserialize)]
    struct Created {
        id: i64,
    }
    let now = JsValue::from_f64(now_ms() as f64);
    let created: Option<Created> = db
        .prepare(
            "INSERT INTO tasks (conversation_key, title, created_at, updated_at) VALUES (?1, ?2, ?3, ?3) RETURNING id",
        )
        .bind(&[conversation_key.into(), title.into(), now])?
        .first(None)
        .await?;
    Ok(created.map_or(0, |row| row.id))
}

/// The conversation's tasks, open ones first.
pub async fn list(db: &D1Database, conversation_key: &str) -> Result<Vec<Task>> {
    db.prepare(
        "SELECT id, title, status, note FROM tasks WHERE conversation_key = ?1 \
         ORDER BY status = 'done', updated_at DESC LIMIT ?2",
    )
    .bind(&[conversation_key.into(), JsValue::from_f64(LIST_LIMIT)])?
    .all()
    .await?
    .results()
}

/// `task_update` from a model's arguments (`id`, `status`, `note`).
pub async fn update_from_arguments(db: &D1Database, conversation_key: &str, arguments: &Value) -> Result<String> {
    let Some(id) = arguments.get("id").and_then(|id| id.as_i64().or_else(|| id.as_str()?.trim().parse().ok())) else {
        return Ok("error: `id` must be a task id".into());
    };
    let text = |key: &str| arguments.get(key).and_then(Value::as_str).map(str::trim).filter(|text| !text.is_empty());
    update(db, conversation_key, id, text("status"), text("note")).await
}

/// Changes a task's status and/or note; the answer is text for the model.
async fn update(
    db: &D1Database,
    conversation_key: &str,
    id: i64,
    status: Option<&str>,
    note: Option<&str>,
) -> Result<String> {
    if let Some(status) = status.filter(|status| !STATUSES.contains(status)) {
        return Ok(format!("error: unknown status `{status}` (use todo, in_progress or done)"));
    }
    let result = db
        .prepare(
            "UPDATE tasks SET status = COALESCE(?1, status), note = COALESCE(?2, note), updated_at = ?3 \
             WHERE id = ?4 AND conversation_key = ?5",
        )
        .bind(&[
            status.map_or(JsValue::NULL, JsValue::from),
            note.map_or(JsValue::NULL, JsValue::from),
            JsValue::from_f64(now_ms() as f64),
            JsValue::from_f64(id as f64),
            conversation_key.into(),
        ])?
        .run()
        .await?;
    let changed = result.meta()?.and_then(|meta| meta.changes).unwrap_or(0);
    Ok(if changed > 0 { format!("task {id} updated") } else { format!("error: there is no task {id}") })
}
