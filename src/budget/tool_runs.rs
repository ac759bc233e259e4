//! The runs of the metered tools in D1 (`tool_runs`), per UTC day,
//! conversation and worker: read before a run (its caps), counted after it.

use serde::Deserialize;
use worker::{D1Database, Result};

use super::metered::{refusal, Caps, MeteredTool};
use super::rules::day_of;
use crate::runtime::d1::Metered;

/// Why `worker` in `conversation_key` may not run `tool` again now, if it
/// may not (the tool error the model reads).
pub async fn refused(
    db: &D1Database,
    (conversation_key, worker): (&str, &str),
    tool: MeteredTool,
    caps: Caps,
    now_ms: i64,
) -> Result<Option<String>> {
    #[derive(Deserialize)]
    struct Counts {
        by_worker: Option<f64>,
        today: Option<f64>,
    }
    let counts: Option<Counts> = db
        .prepare(
            "SELECT (SELECT SUM(runs) FROM tool_runs WHERE worker_id = ?3 AND tool = ?4) AS by_worker, \
             (SELECT SUM(runs) FROM tool_runs WHERE day = ?1 AND conversation_key = ?2 AND tool = ?4) AS today",
        )
        .bind(&[day_of(now_ms).into(), conversation_key.into(), worker.into(), tool.as_str().into()])?
        .first_counted()
        .await?;
    let count = |value: Option<f64>| value.unwrap_or(0.0) as u32;
    let (by_worker, today) = counts.map_or((0, 0), |counts| (count(counts.by_worker), count(counts.today)));
    Ok(refusal(tool, caps, by_worker, today))
}

/// Counts one run of `tool` by `worker` in `conversation_key`.
pub async fn count(
    db: &D1Database,
    (conversation_key, worker): (&str, &str),
    tool: MeteredTool,
    now_ms: i64,
) -> Result<()> {
    db.prepare(
        "INSERT INTO tool_runs (day, conversation_key, worker_id, tool, runs) VALUES (?1, ?2, ?3, ?4, 1) \
         ON CONFLICT (day, conversation_key, worker_id, tool) DO UPDATE SET runs = runs + 1",
    )
    .bind(&[day_of(now_ms).into(), conversation_key.into(), worker.into(), tool.as_str().into()])?
    .run_counted()
    .await
    .map(drop)
}
