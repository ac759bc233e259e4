//! Token usage of the background processes (branch, worker, compactor,
//! cortex), summed per conversation and process type in D1.

use std::collections::BTreeMap;

use serde::Deserialize;
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement, Result};

use crate::edge::d1::Metered;
use crate::llm::Usage;

/// The statement that adds one call's usage (batch it with the process's own writes).
pub fn add(db: &D1Database, conversation_key: &str, process: &str, usage: Usage) -> Result<D1PreparedStatement> {
    db.prepare(
        "INSERT INTO usage (conversation_key, process, input_tokens, output_tokens, calls) VALUES (?1, ?2, ?3, ?4, 1) \
         ON CONFLICT (conversation_key, process) DO UPDATE SET \
         input_tokens = input_tokens + excluded.input_tokens, \
         output_tokens = output_tokens + excluded.output_tokens, calls = calls + 1",
    )
    .bind(&[
        conversation_key.into(),
        process.into(),
        JsValue::from_f64(usage.input_tokens as f64),
        JsValue::from_f64(usage.output_tokens as f64),
    ])
}

/// Records usage on its own.
pub async fn record(db: &D1Database, conversation_key: &str, process: &str, usage: Usage) -> Result<()> {
    add(db, conversation_key, process, usage)?.run_counted().await?;
    Ok(())
}

/// The conversation's usage by process type.
pub async fn by_process(db: &D1Database, conversation_key: &str) -> Result<BTreeMap<String, Usage>> {
    #[derive(Deserialize)]
    struct Row {
        process: String,
        input_tokens: u64,
        output_tokens: u64,
    }
    let rows: Vec<Row> = db
        .prepare("SELECT process, input_tokens, output_tokens FROM usage WHERE conversation_key = ?1")
        .bind(&[conversation_key.into()])?
        .all_counted()
        .await?
        .results()?;
    Ok(crate::sorting::map_from(
        rows.into_iter()
            .map(|row| (row.process, Usage { input_tokens: row.input_tokens, output_tokens: row.output_tokens })),
    ))
}
