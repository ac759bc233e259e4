//! The memory store on D1: save (embedded, linked to near neighbours, indexed
//! for full text), recall (hybrid search fused by RRF, or recent / important /
//! typed listings), delete, share; and the branch tools over them. Every read
//! and write is bounded by the asker's scope (src/memory/scope.rs): a
//! conversation sees its own and shared memories and changes only its own.

mod embedding;
mod index;

use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement, Env, Result};

pub use embedding::{embedder, AI_BINDING};
pub use index::{vector_index, EdgeIndex, VectorIndex};

use super::d1::number;
use super::http::now_ms;
use super::log::Emit;
use crate::config::Config;
use crate::edge::d1::Metered;
use crate::log_line::LogLine;
use crate::memory::embed::Embedder;
use crate::memory::full_text::fts_query;
use crate::memory::linking::{plan_links, RELATED_THRESHOLD};
use crate::memory::rrf::{candidates_per_list, fuse, CONTEXT, DIRECT};
use crate::memory::scope::{conversation_scope, private_scope, Viewer, SHARED};
use crate::memory::types::{sort_memories, Memory, MemoryType, SearchMode, SearchSort};

/// Results a recall returns unless asked for fewer (or more, up to the max).
const DEFAULT_RECALL_LIMIT: usize = 10;
const MAX_RECALL_LIMIT: usize = 50;
/// Bytes of JSON per import statement: well below D1's 2 MB limit on a value,
/// and about 250 memories of a short sentence each.
const IMPORT_BYTES_PER_STATEMENT: usize = 256 * 1024;
/// Neighbours considered when linking a new memory.
const LINK_CANDIDATES: usize = 10;

/// Runs a memory tool for a branch; the answer is text for the model.
pub async fn tool(
    config: &Config,
    env: &Env,
    db: &D1Database,
    conversation_key: &str,
    name: &str,
    arguments: &Value,
) -> Result<String> {
    let argument = |key: &str| arguments.get(key).and_then(Value::as_str).unwrap_or("").trim().to_string();
    // A conversation's tools act as that conversation, never as an operator.
    let viewer = Viewer::Conversation(conversation_key);
    match name {
        "memory_save" => {
            let content = argument("content");
            if content.is_empty() {
                return Ok("error: `content` must be a non-empty string".into());
            }
            let Ok(memory_type) = MemoryType::parse(&argument("memory_type")) else {
                return Ok("error: `memory_type` must be one of fact, preference, decision, identity, event, \
                           observation, goal, todo"
                    .into());
            };
            let importance = arguments.get("importance").and_then(Value::as_f64);
            let saved = save(config, env, db, conversation_key, memory_type, &content, importance).await?;
            if !saved.stored {
                return Ok("error: an operator has shared a memory with these words; only operators change it".into());
            }
            Ok(format!("saved memory {} ({} link(s) to related memories)", saved.id, saved.links))
        }
        "memory_recall" => {
            let request = RecallRequest::from_arguments(arguments);
            let found = recall(config, env, db, viewer, &request).await?;
            if found.is_empty() {
                return Ok("no memories found".into());
            }
            Ok(found
                .iter()
                .map(|memory| {
                    format!(
                        "[{}] ({}, importance {:.2}) {}\n",
                        memory.id,
                        memory.memory_type.as_str(),
                        memory.importance,
                        memory.content
                    )
                })
                .collect())
        }
        // Another conversation's memory, or a shared one, answers as a missing one does.
        "memory_delete" => Ok(match delete(config, env, db, viewer, &argument("id")).await? {
            true => "deleted".into(),
            false => "error: there is no memory with that id in this conversation".into(),
        }),
        other => Ok(format!("error: there is no tool named `{other}`")),
    }
}

/// What a save did.
pub struct Saved {
    pub id: String,
    pub links: usize,
    /// False when the id belongs to a memory of another scope (an operator
    /// shared this conversation's memory): nothing was written.
    pub stored: bool,
}

/// The same content saved twice in one scope is one memory (its id is the
/// hash of the scope and the content), so a redelivered branch job does not
/// duplicate what it remembered; the same words saved in two conversations are
/// two memories, so neither can touch the other's. Shared memories keep the id
/// they had before an operator shared them.
fn memory_id(scope: &str, content: &str) -> String {
    let normalised = content.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase();
    let digest = Sha256::digest(format!("{scope}\n{normalised}").as_bytes());
    format!("mem-{}", crate::security::encode_hex(&digest[..8]))
}

/// Saves a memory learned in the conversation `source`, private to that
/// conversation's scope: embeds it, links it to near neighbours it can see,
/// indexes its words. A private memory never reaches the bulletin, so the
/// store version (which makes the cortex rebuild it) does not move.
pub async fn save(
    config: &Config,
    env: &Env,
    db: &D1Database,
    source: &str,
    memory_type: MemoryType,
    content: &str,
    importance: Option<f64>,
) -> Result<Saved> {
    let now = now_ms();
    let scope = conversation_scope(source);
    let visible = Viewer::Conversation(source).visible_scopes();
    let id = memory_id(&scope, content);
    let mut memory = Memory::new(&id, memory_type, content, source, now);
    if let Some(importance) = importance.filter(|value| value.is_finite()) {
        memory.importance = importance.clamp(0.0, 1.0);
    }
    let vector = embed_one(config, env, content).await?;
    let index = vector_index(config, env, db)?;
    // Links only to what this conversation sees: a count of links to other
    // conversations' memories would tell that they exist.
    let neighbours = index.query(&vector, LINK_CANDIDATES, RELATED_THRESHOLD, None, visible.as_deref()).await?;
    let links = plan_links(&id, &neighbours);
    let stored = index.row_vector(&vector);
    let vector_scope = match index {
        EdgeIndex::Vectorize(_) => JsValue::from(scope.as_str()),
        EdgeIndex::D1(_) => JsValue::NULL,
    };
    let mut statements = vec![
        // A row of another scope (only ever one an operator shared) is left as it is.
        db.prepare(
            "INSERT INTO memories (id, memory_type, content, importance, created_at, updated_at, last_accessed_at, \
             access_count, source, vector, sketch, scope, vector_scope) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?5, 0, ?6, ?7, ?8, ?9, ?10) \
             ON CONFLICT (id) DO UPDATE SET updated_at = excluded.updated_at, \
             importance = MAX(importance, excluded.importance), memory_type = excluded.memory_type, \
             vector = excluded.vector, sketch = excluded.sketch, vector_scope = excluded.vector_scope \
             WHERE memories.scope = excluded.scope",
        )
        .bind(&[
            id.as_str().into(),
            memory_type.as_str().into(),
            content.into(),
            memory.importance.into(),
            number(now),
            source.into(),
            stored.vector.map_or(JsValue::NULL, JsValue::from),
            stored.sketch.map_or(JsValue::NULL, JsValue::from),
            scope.as_str().into(),
            vector_scope,
        ])?,
        // The stored content: a re-save that differs only in case or spacing
        // keeps the first wording, and so does the index.
        db.prepare(
            "INSERT OR REPLACE INTO memories_fts (rowid, content) SELECT seq, content FROM memories \
             WHERE id = ?1 AND scope = ?2",
        )
        .bind(&[id.as_str().into(), scope.as_str().into()])?,
    ];
    for link in &links {
        statements.push(
            db.prepare(
                "INSERT OR IGNORE INTO associations (source_id, target_id, relation, weight, created_at) \
                 SELECT ?1, ?2, ?3, ?4, ?5 WHERE EXISTS (SELECT 1 FROM memories WHERE id = ?1 AND scope = ?6)",
            )
            .bind(&[
                id.as_str().into(),
                link.target.as_str().into(),
                link.relation.as_str().into(),
                f64::from(link.weight).into(),
                number(now),
                scope.as_str().into(),
            ])?,
        );
    }
    let results = crate::edge::d1::batch(db, statements).await?;
    if changes(results.first()) == 0 {
        return Ok(Saved { id, links: 0, stored: false });
    }
    index.upsert(&id, &vector, memory_type, &scope).await?;
    Ok(Saved { id, links: links.len(), stored: true })
}

/// The rows a statement of a batch changed (0 when D1 did not say).
fn changes(result: Option<&worker::D1Result>) -> usize {
    result.and_then(|result| result.meta().ok().flatten()).and_then(|meta| meta.changes).unwrap_or(0)
}

/// Deletes a memory the viewer may change, with its index entries and edges;
/// false when there was none (or it is not the viewer's to delete: the answer
/// is the same, so it tells nothing about other conversations' memories).
/// Only an operator's delete can touch a shared memory, so only it moves the
/// store version.
pub async fn delete(config: &Config, env: &Env, db: &D1Database, viewer: Viewer<'_>, id: &str) -> Result<bool> {
    let scope = viewer.writable_scope();
    let mut statements = forget(db, id, scope.as_deref())?;
    if viewer == Viewer::Operator {
        statements.push(bump_version(db)?);
    }
    let results = crate::edge::d1::batch(db, statements).await?;
    if changes(results.get(FORGET_ROW)) == 0 {
        return Ok(false);
    }
    vector_index(config, env, db)?.delete(&[id.to_string()]).await?;
    Ok(true)
}

/// Where [`forget`] deletes the memory's row (its result tells whether there was one).
const FORGET_ROW: usize = 2;

/// The statements that remove a memory (of `scope` only, when given), its
/// edges and its words from the full-text index (found by the row's seq), the
/// row last: the others find it to check its scope.
pub fn forget(db: &D1Database, id: &str, scope: Option<&str>) -> Result<Vec<D1PreparedStatement>> {
    let bindings = [JsValue::from(id), scope.map_or(JsValue::NULL, JsValue::from)];
    let row = "SELECT seq FROM memories WHERE id = ?1 AND (?2 IS NULL OR scope = ?2)";
    Ok(vec![
        db.prepare(format!("DELETE FROM associations WHERE (source_id = ?1 OR target_id = ?1) AND EXISTS ({row})"))
            .bind(&bindings)?,
        db.prepare(format!("DELETE FROM memories_fts WHERE rowid = ({row})")).bind(&bindings)?,
        db.prepare("DELETE FROM memories WHERE id = ?1 AND (?2 IS NULL OR scope = ?2)").bind(&bindings)?,
    ])
}

/// An operator shares a memory with every conversation (`shared`), or returns
/// it to the conversation it was learned in (operators only when that is
/// unknown). Returns the memory as it now is; None when there is none.
pub async fn set_shared(config: &Config, env: &Env, db: &D1Database, id: &str, shared: bool) -> Result<Option<Memory>> {
    #[derive(Deserialize)]
    struct Row {
        source: String,
    }
    let rows: Vec<Row> =
        db.prepare("SELECT source FROM memories WHERE id = ?1").bind(&[id.into()])?.all_counted().await?.results()?;
    let Some(row) = rows.into_iter().next() else { return Ok(None) };
    let scope = if shared { SHARED.to_string() } else { private_scope(&row.source) };
    let results = crate::edge::d1::batch(
        db,
        vec![
            db.prepare("UPDATE memories SET scope = ?2 WHERE id = ?1").bind(&[id.into(), scope.as_str().into()])?,
            bump_version(db)?,
            db.prepare(format!("SELECT {COLUMNS} FROM memories WHERE id = ?1")).bind(&[id.into()])?,
        ],
    )
    .await?;
    // The vector index's copy of the scope follows now (or on the next cron tick).
    let index = vector_index(config, env, db)?;
    if let Err(error) = index.sync_scopes(db, SCOPE_SYNC_PER_CALL).await {
        LogLine::warn("vector_scope_not_synced").field("memory", id).reason(&error).emit();
    }
    Ok(results.get(2).map(|result| result.results::<Memory>()).transpose()?.and_then(|rows| rows.into_iter().next()))
}

/// Vectors whose metadata scope is brought up to date per call or cron tick.
pub const SCOPE_SYNC_PER_CALL: usize = 100;

/// One memory of a bulk import.
#[derive(Debug, Deserialize)]
pub struct ImportItem {
    pub content: String,
    pub memory_type: String,
    pub importance: Option<f64>,
    /// Shared with every conversation (the default: an operator imports what
    /// the agent should know everywhere); false keeps it to operators until
    /// one shares it.
    pub shared: Option<bool>,
}

impl ImportItem {
    fn scope(&self) -> &'static str {
        match self.shared {
            Some(false) => crate::memory::scope::OPERATORS,
            _ => SHARED,
        }
    }
}

/// Imports memories (operators only): embedded and indexed, not linked
/// (linking each against all others would be quadratic). Returns how many were
/// valid. The rows travel as JSON, two statements per 256 KB of it (the rows,
/// then their words by seq), not three statements per memory.
pub async fn import(config: &Config, env: &Env, db: &D1Database, items: &[ImportItem]) -> Result<usize> {
    let now = now_ms();
    let valid: Vec<(&ImportItem, MemoryType)> = items
        .iter()
        .filter(|item| !item.content.trim().is_empty())
        .filter_map(|item| Some((item, MemoryType::parse(&item.memory_type).ok()?)))
        .collect();
    let texts: Vec<String> = valid.iter().map(|(item, _)| item.content.clone()).collect();
    let vectors = embedder(config, env).embed(&texts).await.map_err(|error| error.to_string())?;
    let index = vector_index(config, env, db)?;
    let mut chunks: Vec<String> = Vec::new();
    let mut rows: Vec<String> = Vec::new();
    let mut bytes = 0;
    for ((item, memory_type), vector) in valid.iter().zip(&vectors) {
        let importance = item.importance.filter(|value| value.is_finite()).unwrap_or(memory_type.default_importance());
        let stored = index.row_vector(vector);
        let scope = item.scope();
        let vector_scope = matches!(index, EdgeIndex::Vectorize(_)).then_some(scope);
        let row = serde_json::to_string(&(
            memory_id(scope, &item.content),
            memory_type.as_str(),
            &item.content,
            importance.clamp(0.0, 1.0),
            stored.vector,
            stored.sketch,
            scope,
            vector_scope,
        ))?;
        if bytes + row.len() > IMPORT_BYTES_PER_STATEMENT && !rows.is_empty() {
            chunks.push(format!("[{}]", rows.join(",")));
            rows.clear();
            bytes = 0;
        }
        bytes += row.len() + 1;
        rows.push(row);
    }
    if !rows.is_empty() {
        chunks.push(format!("[{}]", rows.join(",")));
    }
    let mut statements = vec![bump_version(db)?];
    for chunk in chunks {
        let chunk = JsValue::from(chunk);
        statements.push(
            db.prepare(
                "INSERT OR IGNORE INTO memories (id, memory_type, content, importance, created_at, updated_at, \
                 last_accessed_at, access_count, source, vector, sketch, scope, vector_scope) \
                 SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'), \
                 json_extract(value, '$[3]'), ?2, ?2, ?2, 0, 'import', json_extract(value, '$[4]'), \
                 json_extract(value, '$[5]'), json_extract(value, '$[6]'), json_extract(value, '$[7]') \
                 FROM json_each(?1)",
            )
            .bind(&[chunk.clone(), number(now)])?,
        );
        statements.push(
            db.prepare(
                "INSERT OR REPLACE INTO memories_fts (rowid, content) SELECT seq, content FROM memories \
                 WHERE id IN (SELECT json_extract(value, '$[0]') FROM json_each(?1))",
            )
            .bind(&[chunk])?,
        );
    }
    crate::edge::d1::batch(db, statements).await?;
    if let EdgeIndex::Vectorize(_) = index {
        for ((item, memory_type), vector) in valid.iter().zip(&vectors) {
            index.upsert(&memory_id(item.scope(), &item.content), vector, *memory_type, item.scope()).await?;
        }
    }
    Ok(valid.len())
}

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
    /// From tool arguments or query parameters (all optional).
    pub fn from_arguments(arguments: &Value) -> Self {
        let text =
            |key: &str| arguments.get(key).and_then(Value::as_str).map(str::trim).filter(|text| !text.is_empty());
        let limit = arguments
            .get("limit")
            .and_then(|value| value.as_u64().or_else(|| value.as_str()?.parse().ok()))
            .map_or(DEFAULT_RECALL_LIMIT, |limit| (limit as usize).clamp(1, MAX_RECALL_LIMIT));
        let memory_type = text("memory_type").and_then(|kind| MemoryType::parse(kind).ok());
        let mode =
            text("mode").and_then(|mode| SearchMode::parse(mode).ok()).unwrap_or(match (text("query"), memory_type) {
                (None, Some(_)) => SearchMode::Typed,
                (None, None) => SearchMode::Recent,
                _ => SearchMode::Hybrid,
            });
        RecallRequest {
            query: text("query").unwrap_or_default().to_string(),
            mode,
            memory_type,
            sort: text("sort").and_then(|sort| SearchSort::parse(sort).ok()),
            limit,
        }
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
        SearchMode::Hybrid if !request.query.is_empty() => hybrid(config, env, db, viewer, request).await?,
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
    let results = crate::edge::d1::batch(
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

/// The memory columns a [`Memory`] is read from (the vector stays behind).
pub const COLUMNS: &str =
    "id, memory_type, content, importance, created_at, updated_at, last_accessed_at, access_count, source, scope";

/// Vector, full-text and graph retrieval, fused by reciprocal rank; a
/// `memory_type` narrows every retriever (a metadata filter on the vectors).
/// The vector and full-text retrievers run at once; the graph then expands
/// their best hits.
async fn hybrid(
    config: &Config,
    env: &Env,
    db: &D1Database,
    viewer: Viewer<'_>,
    request: &RecallRequest,
) -> Result<Vec<Memory>> {
    let (query, limit, memory_type) = (request.query.as_str(), request.limit, request.memory_type);
    let visible = viewer.visible_scopes();
    let candidates = candidates_per_list(limit);
    let vector = embed_one(config, env, query).await?;
    let index = vector_index(config, env, db)?;
    let (by_meaning, by_words) = futures_util::future::join(
        index.query(&vector, candidates, 0.0, memory_type, visible.as_deref()),
        full_text(db, viewer, query, candidates, memory_type),
    )
    .await;
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

/// The statement that moves the store version (every content change runs it).
pub fn bump_version(db: &D1Database) -> Result<D1PreparedStatement> {
    Ok(db.prepare(
        "INSERT INTO memory_meta (key, value) VALUES ('version', '1') \
         ON CONFLICT (key) DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)",
    ))
}

async fn embed_one(config: &Config, env: &Env, text: &str) -> Result<Vec<f32>> {
    let vectors = embedder(config, env).embed(&[text.to_string()]).await.map_err(|error| error.to_string())?;
    vectors.into_iter().next().ok_or_else(|| "the embedder returned nothing".into())
}
