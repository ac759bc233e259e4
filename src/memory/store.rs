//! The memory store on D1: save (embedded, linked to near neighbours, indexed
//! for full text), recall (hybrid search fused by RRF, or recent / important /
//! typed listings), delete, share; and the branch tools over them. Every read
//! and write is bounded by the asker's scope (src/memory/scope.rs): a
//! conversation sees its own and shared memories and changes only its own.

use serde::Deserialize;
use std::collections::BTreeMap;

use serde_json::json;
use sha2::{Digest, Sha256};
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement, Env, Result};

use super::embedder::{embed_one, embedder};
use super::recall::COLUMNS;
use super::vector_index::{vector_index, EdgeIndex, VectorIndex, VectorQuery};
use crate::config::Config;
use crate::log_line::LogLine;
use crate::memory::embed::Embedder;
use crate::memory::linking::{plan_links, Link, RELATED_THRESHOLD};
use crate::memory::scope::{conversation_scope, private_scope, Viewer, SHARED};
use crate::memory::types::{Memory, MemoryType};
use crate::runtime::d1::number;
use crate::runtime::d1::Metered;
use crate::runtime::http::now_ms;
use crate::runtime::log::Emit;

/// Bytes of JSON per import statement: well below D1's 2 MB limit on a value,
/// and about 250 memories of a short sentence each.
const IMPORT_BYTES_PER_STATEMENT: usize = 256 * 1024;
/// Neighbours considered when linking a new memory.
const LINK_CANDIDATES: usize = 10;

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

/// Where a memory was learned: the conversation, and the message that led
/// to it (empty when none did), which a deletion of that message takes along.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    pub conversation: &'a str,
    pub message: &'a str,
}

/// Saves a memory learned in the conversation `source`, private to that
/// conversation's scope: embeds it, links it to near neighbours it can see,
/// indexes its words. A private memory never reaches the bulletin, so the
/// store version (which makes the cortex rebuild it) does not move.
pub async fn save(
    config: &Config,
    env: &Env,
    db: &D1Database,
    learned: Source<'_>,
    memory_type: MemoryType,
    content: &str,
    importance: Option<f64>,
) -> Result<Saved> {
    let source = learned.conversation;
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
    let scopes = visible.as_deref();
    let related =
        VectorQuery { vector: &vector, k: LINK_CANDIDATES, min_score: RELATED_THRESHOLD, memory_type: None, scopes };
    let neighbours = index.query(&related).await?;
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
             access_count, source, vector, sketch, scope, vector_scope, source_message) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?5, 0, ?6, ?7, ?8, ?9, ?10, ?11) \
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
            learned.message.into(),
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
        statements.push(link_statement(db, &id, link, &scope, now)?);
    }
    let results = crate::runtime::d1::batch(db, statements).await?;
    if changes(results.first()) == 0 {
        return Ok(Saved { id, links: 0, stored: false });
    }
    index.upsert(&id, &vector, memory_type, &scope).await?;
    Ok(Saved { id, links: links.len(), stored: true })
}

/// The statement that links a saved memory to a neighbour, if the memory is
/// still of `scope` (a re-save into another scope links nothing).
fn link_statement(db: &D1Database, id: &str, link: &Link, scope: &str, now: i64) -> Result<D1PreparedStatement> {
    db.prepare(
        "INSERT OR IGNORE INTO associations (source_id, target_id, relation, weight, created_at) \
         SELECT ?1, ?2, ?3, ?4, ?5 WHERE EXISTS (SELECT 1 FROM memories WHERE id = ?1 AND scope = ?6)",
    )
    .bind(&[
        id.into(),
        link.target.as_str().into(),
        link.relation.as_str().into(),
        f64::from(link.weight).into(),
        number(now),
        scope.into(),
    ])
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
    let results = crate::runtime::d1::batch(db, statements).await?;
    if changes(results.get(FORGET_ROW)) == 0 {
        return Ok(false);
    }
    vector_index(config, env, db)?.delete(&[id.to_string()]).await?;
    Ok(true)
}

/// Deletes the memories of conversation `source` learned from its message
/// `message` (a deletion on the platform), as that conversation deletes its
/// own (a memory an operator has shared is left); how many went.
pub async fn forget_learned_from(
    config: &Config,
    env: &Env,
    db: &D1Database,
    source: &str,
    message: &str,
) -> Result<usize> {
    if message.is_empty() {
        return Ok(0);
    }
    #[derive(serde::Deserialize)]
    struct Row {
        id: String,
    }
    let rows: Vec<Row> = db
        .prepare("SELECT id FROM memories WHERE source = ?1 AND source_message = ?2")
        .bind(&[source.into(), message.into()])?
        .all_counted()
        .await?
        .results()?;
    let mut forgotten = 0;
    for row in rows {
        forgotten += usize::from(delete(config, env, db, Viewer::Conversation(source), &row.id).await?);
    }
    Ok(forgotten)
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
    // Shared within the agent whose conversation learned it (the default agent's: `shared`).
    let agent = crate::agents::agent_of(&row.source);
    let scope = if shared { crate::agents::rules::shared_scope(agent) } else { private_scope(&row.source) };
    let results = crate::runtime::d1::batch(
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
    crate::runtime::d1::batch(db, statements).await?;
    if let EdgeIndex::Vectorize(_) = index {
        for ((item, memory_type), vector) in valid.iter().zip(&vectors) {
            index.upsert(&memory_id(item.scope(), &item.content), vector, *memory_type, item.scope()).await?;
        }
    }
    Ok(valid.len())
}

/// The statement that moves the store version (every content change runs it).
pub fn bump_version(db: &D1Database) -> Result<D1PreparedStatement> {
    Ok(db.prepare(
        "INSERT INTO memory_meta (key, value) VALUES ('version', '1') \
         ON CONFLICT (key) DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)",
    ))
}

/// The memory store's own records (`memory_meta`): its version, the bulletin and when it was built.
pub async fn read_meta(db: &D1Database) -> Result<BTreeMap<String, String>> {
    #[derive(Deserialize)]
    struct Row {
        key: String,
        value: String,
    }
    let rows: Vec<Row> = db.prepare("SELECT key, value FROM memory_meta").all_counted().await?.results()?;
    Ok(crate::sorting::map_from(rows.into_iter().map(|row| (row.key, row.value))))
}

/// The current bulletin, when it was built (None before the first), and
/// the memory store version it was built from.
pub async fn bulletin(db: &D1Database) -> Result<serde_json::Value> {
    let meta = read_meta(db).await?;
    let number = |key: &str| meta.get(key).and_then(|value| value.parse::<i64>().ok());
    Ok(json!({
        "bulletin": meta.get("bulletin").cloned().unwrap_or_default(),
        "built_at": number("bulletin_built_at"),
        "version": number("bulletin_version"),
    }))
}
