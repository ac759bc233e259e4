//! Recall: finds the memories a viewer sees (hybrid search fused by RRF, or
//! recent / important / typed listings) and counts the access, every query
//! bounded by the viewer's scopes.

use serde::Deserialize;
use serde_json::Value;
use wasm_bindgen::JsValue;
use worker::{D1Database, Env, Result};

use crate::memory::arguments::{DEFAULT_RECALL_LIMIT, MAX_RECALL_LIMIT};
use crate::memory::embedder::embed_one;

use crate::memory::vector_index::vector_index;

use crate::memory::vector_index::{EdgeIndex, VectorIndex, VectorQuery};

use crate::config::Config;
use crate::memory::full_text::fts_query;
use crate::memory::rrf::{candidates_per_list, fuse, CONTEXT, DIRECT};
use crate::memory::scope::Viewer;
use crate::memory::types::{sort_memories, Memory, MemoryType, SearchMode, SearchSort};
use crate::runtime::d1::{number, Metered};
use crate::runtime::http::now_ms;

/// The memory columns a [`crate::memory::types::Memory`] is read from (the vector stays behind).
pub const COLUMNS: &str =
    "id, memory_type, content, importance, created_at, updated_at, last_accessed_at, access_count, source, scope";

/// A recall as the tool or the admin API asks for it.
#[derive(Debug, Clone)]
pub struct RecallRequest {
    pub query: String,
    pub mode: SearchMode,
    pub memory_type: Option<MemoryType>,
    pub sort: Option<SearchSort>,
    pub limit: usize,
}

impl RecallRequest {
    /// From the admin API's query parameters (all optional; words it does
    /// not know are left out).
    pub fn from_arguments(arguments: &Value) -> Self {
        let text =
            |key: &str| arguments.get(key).and_then(Value::as_str).map(str::trim).filter(|text| !text.is_empty());
        let limit = arguments.get("limit").and_then(|value| value.as_u64().or_else(|| value.as_str()?.parse().ok()));
        RecallRequest::new(
            text("query"),
            text("mode").and_then(|mode| SearchMode::parse(mode).ok()),
            text("memory_type").and_then(|kind| MemoryType::parse(kind).ok()),
            text("sort").and_then(|sort| SearchSort::parse(sort).ok()),
            limit,
        )
    }

    /// A recall: without a mode, a query searches, a memory type lists that
    /// type, and neither lists the newest.
    pub fn new(
        query: Option<&str>,
        mode: Option<SearchMode>,
        memory_type: Option<MemoryType>,
        sort: Option<SearchSort>,
        limit: Option<u64>,
    ) -> Self {
        let limit = limit.map_or(DEFAULT_RECALL_LIMIT, |limit| (limit as usize).clamp(1, MAX_RECALL_LIMIT));
        let mode = mode.unwrap_or(match (query, memory_type) {
            (None, Some(_)) => SearchMode::Typed,
            (None, None) => SearchMode::Recent,
            _ => SearchMode::Hybrid,
        });
        RecallRequest { query: query.unwrap_or_default().to_string(), mode, memory_type, sort, limit }
    }
}

/// The SQL condition that keeps to the scopes `viewer` sees, with `?{placeholder}`
/// bound to what [`scope_binding`] gives: every scope for operators, else a
/// JSON list. The two shapes differ so a conversation's condition can use
/// the index on `scope`.
fn scope_condition(viewer: Viewer<'_>, column: &str, placeholder: usize) -> String {
    match viewer {
        Viewer::Operator => format!("?{placeholder} IS NULL"),
        Viewer::Conversation(_) => format!("{column} IN (SELECT value FROM json_each(?{placeholder}))"),
    }
}

fn scope_binding(visible: Option<&[String]>) -> Result<JsValue> {
    Ok(match visible {
        None => JsValue::NULL,
        Some(scopes) => serde_json::to_string(scopes)?.into(),
    })
}

/// Finds the memories `viewer` sees and counts the access. Every mode filters
/// on scope in the query itself, before any limit.
pub async fn recall(
    config: &Config,
    env: &Env,
    db: &D1Database,
    viewer: Viewer<'_>,
    request: &RecallRequest,
) -> Result<Vec<Memory>> {
    let limit = number(request.limit as i64);
    let scopes = scope_binding(viewer.visible_scopes().as_deref())?;
    let mut found: Vec<Memory> = match request.mode {
        SearchMode::Hybrid if !request.query.is_empty() => {
            let vector = embed_one(config, env, &request.query).await?;
            hybrid(db, &vector_index(config, env, db)?, &vector, viewer, request).await?
        }
        SearchMode::Typed if request.memory_type.is_some() => {
            let kind = request.memory_type.map(MemoryType::as_str).unwrap_or_default();
            let filter = format!(
                "WHERE memory_type = ?1 AND {} ORDER BY created_at DESC LIMIT ?2",
                scope_condition(viewer, "scope", 3)
            );
            read_and_touch(db, &filter, vec![kind.into(), limit, scopes]).await?
        }
        SearchMode::Important => {
            let filter = format!(
                "WHERE {} ORDER BY importance DESC, created_at DESC LIMIT ?1",
                scope_condition(viewer, "scope", 2)
            );
            read_and_touch(db, &filter, vec![limit, scopes]).await?
        }
        _ => {
            let filter = format!("WHERE {} ORDER BY created_at DESC LIMIT ?1", scope_condition(viewer, "scope", 2));
            read_and_touch(db, &filter, vec![limit, scopes]).await?
        }
    };
    if let Some(sort) = request.sort {
        sort_memories(&mut found, sort);
    }
    Ok(found)
}

/// Reads the memories `filter` (a `WHERE`/`ORDER BY`/`LIMIT` tail over
/// `memories`) selects and counts the recall as an access (for sorting and
/// decay), in one batch, the read first: it returns the counts from before.
/// The access does not move the store version: the bulletin does not depend on
/// access counts.
async fn read_and_touch(db: &D1Database, filter: &str, bindings: Vec<JsValue>) -> Result<Vec<Memory>> {
    let now_placeholder = bindings.len() + 1;
    let mut touch_bindings = bindings.clone();
    touch_bindings.push(number(now_ms()));
    let results = crate::runtime::d1::batch(
        db,
        vec![
            db.prepare(format!("SELECT {COLUMNS} FROM memories {filter}")).bind(&bindings)?,
            db.prepare(format!(
                "UPDATE memories SET access_count = access_count + 1, last_accessed_at = ?{now_placeholder} \
                 WHERE id IN (SELECT id FROM memories {filter})"
            ))
            .bind(&touch_bindings)?,
        ],
    )
    .await?;
    results.first().map_or(Ok(Vec::new()), |result| result.results())
}

/// Vector, full-text and graph retrieval, fused by reciprocal rank; a
/// `memory_type` narrows every retriever (a metadata filter on the vectors).
/// The vector and full-text retrievers run at once; the graph then expands
/// their best hits. `vector` is the query's embedding.
async fn hybrid(
    db: &D1Database,
    index: &EdgeIndex<'_>,
    vector: &[f32],
    viewer: Viewer<'_>,
    request: &RecallRequest,
) -> Result<Vec<Memory>> {
    let (query, limit, memory_type) = (request.query.as_str(), request.limit, request.memory_type);
    let visible = viewer.visible_scopes();
    let candidates = candidates_per_list(limit);
    let nearest = VectorQuery { vector, k: candidates, min_score: 0.0, memory_type, scopes: visible.as_deref() };
    let (by_meaning, by_words) =
        futures_util::future::join(index.query(&nearest), full_text(db, viewer, query, candidates, memory_type)).await;
    let by_meaning: Vec<String> = by_meaning?.into_iter().map(|(id, _)| id).collect();
    let by_words = by_words?;
    // The graph: neighbours of the best direct hits, strongest edges first.
    let seeds: Vec<&String> = by_meaning.iter().take(5).chain(by_words.iter().take(5)).collect();
    let by_graph = neighbours(db, viewer, &seeds, candidates).await?;
    let fused = fuse(&[(&by_meaning, DIRECT), (&by_words, DIRECT), (&by_graph, CONTEXT)]);
    let ids: Vec<String> = fused.into_iter().take(limit).map(|(id, _)| id).collect();
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    // Scoped once more: an index whose copy of a scope lags behind (Vectorize
    // metadata) returns nothing the viewer may not see.
    let filter = format!("WHERE id IN (SELECT value FROM json_each(?1)) AND {}", scope_condition(viewer, "scope", 2));
    let bindings = vec![serde_json::to_string(&ids)?.into(), scope_binding(visible.as_deref())?];
    let mut memories = read_and_touch(db, &filter, bindings).await?;
    crate::sorting::sort_by(&mut memories, |a, b| {
        let place = |memory: &Memory| ids.iter().position(|id| *id == memory.id);
        place(a).cmp(&place(b))
    });
    Ok(memories)
}

/// The ids of the memories whose words best match the query's (BM25), of one
/// type if given.
async fn full_text(
    db: &D1Database,
    viewer: Viewer<'_>,
    query: &str,
    candidates: usize,
    memory_type: Option<MemoryType>,
) -> Result<Vec<String>> {
    #[derive(Deserialize)]
    struct Hit {
        id: String,
    }
    let Some(expression) = fts_query(query) else { return Ok(Vec::new()) };
    let type_name = memory_type.map_or(JsValue::NULL, |kind| JsValue::from(kind.as_str()));
    let scopes = scope_binding(viewer.visible_scopes().as_deref())?;
    let hits: Vec<Hit> = db
        .prepare(format!(
            "SELECT memories.id AS id FROM memories_fts JOIN memories ON memories.seq = memories_fts.rowid \
             WHERE memories_fts MATCH ?1 AND (?3 IS NULL OR memories.memory_type = ?3) AND {} \
             ORDER BY memories_fts.rank LIMIT ?2",
            scope_condition(viewer, "memories.scope", 4)
        ))
        .bind(&[expression.into(), number(candidates as i64), type_name, scopes])?
        .all_counted()
        .await?
        .results()?;
    Ok(hits.into_iter().map(|hit| hit.id).collect())
}

/// Graph neighbours of the seeds that the viewer sees (an edge may join
/// memories of two scopes, e.g. one made before scopes existed).
async fn neighbours(db: &D1Database, viewer: Viewer<'_>, seeds: &[&String], candidates: usize) -> Result<Vec<String>> {
    if seeds.is_empty() {
        return Ok(Vec::new());
    }
    #[derive(Deserialize)]
    struct Edge {
        id: String,
    }
    let placeholders = (1..=seeds.len()).map(|index| format!("?{index}")).collect::<Vec<_>>().join(", ");
    let scope = scope_condition(viewer, "memories.scope", seeds.len() + 1);
    let query = format!(
        "SELECT edges.id AS id FROM (\
           SELECT target_id AS id, weight FROM associations WHERE source_id IN ({placeholders}) \
           UNION ALL SELECT source_id AS id, weight FROM associations WHERE target_id IN ({placeholders})) AS edges \
         JOIN memories ON memories.id = edges.id WHERE {scope} \
         GROUP BY edges.id ORDER BY MAX(edges.weight) DESC LIMIT {candidates}"
    );
    let mut bindings: Vec<JsValue> = seeds.iter().map(|id| JsValue::from(id.as_str())).collect();
    bindings.push(scope_binding(viewer.visible_scopes().as_deref())?);
    let edges: Vec<Edge> = db.prepare(query).bind(&bindings)?.all_counted().await?.results()?;
    Ok(edges.into_iter().map(|edge| edge.id).collect())
}
