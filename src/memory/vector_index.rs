//! Where memory vectors live, behind one trait: D1 (the embedded default;
//! Vectorize has no local simulator) or Cloudflare Vectorize, called through JS
//! interop (workers-rs has no binding for it).
//!
//! On D1 each memory row holds its 8-bit vector and a 4-bit sketch of it. A
//! query reads every sketch in a few rows (packs of 2,048 records), ranks them
//! here, then reads the short list's vectors and ranks those exactly: two round
//! trips whatever the store's size, half the text an exact scan of every vector
//! read, and a few rows where that read one per memory.

use js_sys::{Array, Function, Promise, Reflect};
use serde::Deserialize;
use serde_json::json;
use wasm_bindgen::{JsCast, JsValue};
use worker::{D1Database, Env, Result};

use crate::config::Config;
use crate::memory::sketch::{coarse_rank, encode_sketch, SketchQuery};
use crate::memory::types::MemoryType;
use crate::memory::vector::{decode_vector, encode_vector, scan};
use crate::runtime::d1::Metered;

/// The Vectorize binding's name in wrangler.toml.
pub const VECTORIZE_BINDING: &str = crate::bindings::VECTORS.name;
/// Vectors read and re-ranked exactly per result a D1 query asks for: the
/// sketches' scores are off by a few hundredths (src/memory/sketch.rs).
const RERANK_FACTOR: usize = 3;

/// A nearest-neighbour query: the `k` nearest ids to `vector` with a cosine
/// of at least `min_score`, of one memory type if given and of the given
/// scopes only (`None`: all).
#[derive(Debug, Clone, Copy)]
pub struct VectorQuery<'a> {
    pub vector: &'a [f32],
    pub k: usize,
    pub min_score: f32,
    pub memory_type: Option<MemoryType>,
    pub scopes: Option<&'a [String]>,
}

#[allow(async_fn_in_trait)] // Workers are single-threaded; futures need not be Send.
pub trait VectorIndex {
    /// Stores a memory's vector where the index keeps it apart from the memory's
    /// row; the D1 index keeps it in the row ([`EdgeIndex::row_vector`]).
    /// Vectorize keeps the memory's type and scope as metadata to filter on.
    async fn upsert(&self, id: &str, vector: &[f32], memory_type: MemoryType, scope: &str) -> Result<()>;
    /// The `k` nearest ids with a cosine of at least `min_score`, best first,
    /// of one memory type if given and of the given scopes only (`None`: all),
    /// both metadata filters.
    async fn query(&self, query: &VectorQuery<'_>) -> Result<Vec<(String, f32)>>;
    async fn delete(&self, ids: &[String]) -> Result<()>;
    /// The stored vectors of these ids (maintenance compares them).
    async fn vectors(&self, ids: &[String]) -> Result<Vec<(String, Vec<f32>)>>;
}

pub enum EdgeIndex<'a> {
    D1(&'a D1Database),
    Vectorize(JsValue),
}

/// The index `VECTOR_BACKEND` names.
pub fn vector_index<'a>(config: &Config, env: &Env, db: &'a D1Database) -> Result<EdgeIndex<'a>> {
    if config.vector_backend != "vectorize" {
        return Ok(EdgeIndex::D1(db));
    }
    let binding = Reflect::get(env, &JsValue::from_str(VECTORIZE_BINDING))
        .ok()
        .filter(|binding| !binding.is_undefined())
        .ok_or_else(|| {
            worker::Error::RustError(format!("VECTOR_BACKEND=vectorize needs a `{VECTORIZE_BINDING}` binding"))
        })?;
    Ok(EdgeIndex::Vectorize(binding))
}

#[derive(Deserialize)]
struct StoredRow {
    id: String,
    vector: String,
}

/// What a memory row stores of its vector (`vector`, `sketch`): both on D1,
/// neither with Vectorize, which holds the vector itself.
pub struct RowVector {
    pub vector: Option<String>,
    pub sketch: Option<String>,
}

impl EdgeIndex<'_> {
    /// The `vector` and `sketch` a memory row stores for this vector.
    pub fn row_vector(&self, vector: &[f32]) -> RowVector {
        match self {
            EdgeIndex::D1(_) => RowVector { vector: Some(encode_vector(vector)), sketch: Some(encode_sketch(vector)) },
            EdgeIndex::Vectorize(_) => RowVector { vector: None, sketch: None },
        }
    }

    /// Gives up to `limit` stored vectors without a sketch (rows from before
    /// sketches) theirs, in one statement; returns how many it wrote. A vector
    /// that does not decode gets an empty sketch, which never scores, so it is
    /// not read again.
    pub async fn backfill_sketches(&self, limit: usize) -> Result<usize> {
        #[derive(Deserialize)]
        struct Unsketched {
            seq: i64,
            vector: String,
        }
        let EdgeIndex::D1(db) = self else { return Ok(0) };
        let rows: Vec<Unsketched> = db
            .prepare("SELECT seq, vector FROM memories WHERE sketch IS NULL AND vector IS NOT NULL LIMIT ?1")
            .bind(&[JsValue::from_f64(limit as f64)])?
            .all_counted()
            .await?
            .results()?;
        if rows.is_empty() {
            return Ok(0);
        }
        let sketches = crate::sorting::object_from(rows.iter().map(|row| {
            let sketch = decode_vector(&row.vector).map(|vector| encode_sketch(&vector)).unwrap_or_default();
            (row.seq.to_string(), sketch.into())
        }));
        db.prepare(
            "UPDATE memories SET sketch = json_extract(?1, '$.\"' || seq || '\"') \
             WHERE seq IN (SELECT CAST(key AS INTEGER) FROM json_each(?1))",
        )
        .bind(&[serde_json::to_string(&sketches)?.into()])?
        .run_counted()
        .await?;
        Ok(rows.len())
    }
}

impl EdgeIndex<'_> {
    /// Re-writes up to `limit` Vectorize vectors whose metadata scope lags
    /// behind their row's (rows from before scopes, and memories an operator
    /// shared or unshared); returns how many. Until then the hybrid search's
    /// last read, which filters on the row's scope, keeps them from anyone who
    /// may not see them (a lagging vector is only missed, never leaked). The D1
    /// index filters on the row itself and has nothing to do.
    pub async fn sync_scopes(&self, db: &D1Database, limit: usize) -> Result<usize> {
        #[derive(Deserialize)]
        struct Lagging {
            id: String,
            memory_type: String,
            scope: String,
        }
        #[derive(Deserialize)]
        struct Stored {
            id: String,
            values: Vec<f32>,
        }
        let EdgeIndex::Vectorize(index) = self else { return Ok(0) };
        let rows: Vec<Lagging> = db
            .prepare(
                "SELECT id, memory_type, scope FROM memories \
                 WHERE vector IS NULL AND (vector_scope IS NULL OR vector_scope != scope) LIMIT ?1",
            )
            .bind(&[JsValue::from_f64(limit as f64)])?
            .all_counted()
            .await?
            .results()?;
        let mut synced: Vec<(String, String)> = Vec::new();
        for chunk in rows.chunks(20) {
            let ids: Vec<&str> = chunk.iter().map(|row| row.id.as_str()).collect();
            let stored: Vec<Stored> = from_js(&call(index, "getByIds", &[to_js(&ids)?]).await?)?;
            let records: Vec<serde_json::Value> = stored
                .iter()
                .filter_map(|stored| {
                    let row = chunk.iter().find(|row| row.id == stored.id)?;
                    let metadata = json!({ "memory_type": row.memory_type, "scope": row.scope });
                    Some(json!({ "id": stored.id, "values": stored.values, "metadata": metadata }))
                })
                .collect();
            if !records.is_empty() {
                call(index, "upsert", &[to_js(&records)?]).await?;
            }
            // A row without a vector has nothing to sync: it is marked too, so it is not read again.
            synced.extend(chunk.iter().map(|row| (row.id.clone(), row.scope.clone())));
        }
        if synced.is_empty() {
            return Ok(0);
        }
        db.prepare(
            "UPDATE memories SET vector_scope = json_extract(?1, '$.\"' || id || '\"') \
             WHERE id IN (SELECT key FROM json_each(?1))",
        )
        .bind(&[serde_json::to_string(&crate::sorting::object_from(
            synced.iter().map(|(id, scope)| (id.clone(), scope.as_str().into())),
        ))?
        .into()])?
        .run_counted()
        .await?;
        Ok(synced.len())
    }
}

impl VectorIndex for EdgeIndex<'_> {
    async fn upsert(&self, id: &str, vector: &[f32], memory_type: MemoryType, scope: &str) -> Result<()> {
        match self {
            // Written with the row (`row_vector`).
            EdgeIndex::D1(_) => {}
            EdgeIndex::Vectorize(index) => {
                let metadata = json!({ "memory_type": memory_type.as_str(), "scope": scope });
                let record = json!([{ "id": id, "values": vector, "metadata": metadata }]);
                call(index, "upsert", &[to_js(&record)?]).await?;
            }
        }
        Ok(())
    }

    async fn query(&self, query: &VectorQuery<'_>) -> Result<Vec<(String, f32)>> {
        match self {
            EdgeIndex::D1(db) => query_d1(db, query).await,
            EdgeIndex::Vectorize(index) => query_vectorize(index, query).await,
        }
    }

    async fn delete(&self, ids: &[String]) -> Result<()> {
        match self {
            // The vector goes with its row.
            EdgeIndex::D1(_) => Ok(()),
            EdgeIndex::Vectorize(index) => call(index, "deleteByIds", &[to_js(&ids)?]).await.map(drop),
        }
    }

    async fn vectors(&self, ids: &[String]) -> Result<Vec<(String, Vec<f32>)>> {
        match self {
            EdgeIndex::D1(db) => {
                let mut found = Vec::new();
                for chunk in ids.chunks(90) {
                    let placeholders =
                        (1..=chunk.len()).map(|index| format!("?{index}")).collect::<Vec<_>>().join(", ");
                    let bindings: Vec<JsValue> = chunk.iter().map(|id| JsValue::from(id.as_str())).collect();
                    let rows: Vec<StoredRow> = db
                        .prepare(format!(
                            "SELECT id, vector FROM memories WHERE vector IS NOT NULL AND id IN ({placeholders})"
                        ))
                        .bind(&bindings)?
                        .all_counted()
                        .await?
                        .results()?;
                    found.extend(rows.into_iter().filter_map(|row| Some((row.id, decode_vector(&row.vector)?))));
                }
                Ok(found)
            }
            EdgeIndex::Vectorize(index) => {
                #[derive(Deserialize)]
                struct Stored {
                    id: String,
                    values: Vec<f32>,
                }
                let mut found = Vec::new();
                // Vectorize returns at most 20 vectors per getByIds call.
                for chunk in ids.chunks(20) {
                    let answer = call(index, "getByIds", &[to_js(&chunk)?]).await?;
                    let stored: Vec<Stored> = from_js(&answer)?;
                    found.extend(stored.into_iter().map(|stored| (stored.id, stored.values)));
                }
                Ok(found)
            }
        }
    }
}
/// The D1 index's query: every sketch is ranked coarsely, the best
/// [`RERANK_FACTOR`] × `k` and the vectors still without a sketch scored exactly.
async fn query_d1(db: &D1Database, query: &VectorQuery<'_>) -> Result<Vec<(String, f32)>> {
    let VectorQuery { vector, k, min_score, memory_type, scopes } = *query;
    #[derive(Deserialize)]
    struct Pack {
        records: String,
    }
    let type_name = memory_type.map_or(JsValue::NULL, |kind| JsValue::from(kind.as_str()));
    // Only the scopes asked for, through the index that starts with the scope.
    let (in_scope, scope_list) = match scopes {
        None => ("?2 IS NULL", JsValue::NULL),
        Some(scopes) => ("scope IN (SELECT value FROM json_each(?2))", serde_json::to_string(scopes)?.into()),
    };
    let bindings = [type_name, scope_list];
    // Every sketch, and the vectors still without one (scored exactly).
    let read = crate::runtime::d1::batch(
        db,
        vec![
            db.prepare(format!(
                "SELECT group_concat(seq || ':' || sketch) AS records FROM memories \
                 WHERE sketch IS NOT NULL AND (?1 IS NULL OR memory_type = ?1) AND {in_scope} \
                 GROUP BY seq >> 11"
            ))
            .bind(&bindings)?,
            db.prepare(format!(
                "SELECT id, vector FROM memories \
                 WHERE sketch IS NULL AND vector IS NOT NULL AND (?1 IS NULL OR memory_type = ?1) \
                 AND {in_scope}"
            ))
            .bind(&bindings)?,
        ],
    )
    .await?;
    let (Some(packs), Some(unsketched)) = (read.first(), read.get(1)) else {
        return Err(worker::Error::RustError("D1 answered a batch of two with fewer results".into()));
    };
    let packs: Vec<Pack> = packs.results()?;
    let unsketched: Vec<StoredRow> = unsketched.results()?;
    let short_list = coarse_rank(
        &SketchQuery::new(vector),
        packs.iter().map(|pack| pack.records.as_str()),
        k.saturating_mul(RERANK_FACTOR),
    );
    let short_listed: Vec<StoredRow> = if short_list.is_empty() {
        Vec::new()
    } else {
        db.prepare(
            "SELECT id, vector FROM memories \
             WHERE seq IN (SELECT value FROM json_each(?1)) AND vector IS NOT NULL",
        )
        .bind(&[serde_json::to_string(&short_list)?.into()])?
        .all_counted()
        .await?
        .results()?
    };
    let candidates = short_listed.iter().chain(&unsketched);
    Ok(scan(vector, candidates.map(|row| (row.id.as_str(), &row.vector)), k, min_score))
}

/// Vectorize's query, filtered by type and scope on its metadata indexes.
async fn query_vectorize(index: &JsValue, query: &VectorQuery<'_>) -> Result<Vec<(String, f32)>> {
    let VectorQuery { vector, k, min_score, memory_type, scopes } = *query;
    #[derive(Deserialize)]
    struct Match {
        id: String,
        score: f32,
    }
    #[derive(Deserialize)]
    struct Matches {
        matches: Vec<Match>,
    }
    let mut options = json!({ "topK": k.min(100), "returnValues": false, "returnMetadata": "none" });
    // Both need a metadata index (`make deploy` creates them; see docs/memory.md).
    let mut filter = serde_json::Map::new();
    if let Some(kind) = memory_type {
        filter.insert("memory_type".into(), json!(kind.as_str()));
    }
    if let Some(scopes) = scopes {
        filter.insert("scope".into(), json!({ "$in": scopes }));
    }
    if !filter.is_empty() {
        options["filter"] = serde_json::Value::Object(filter);
    }
    let answer = call(index, "query", &[to_js(&vector)?, to_js(&options)?]).await?;
    let found: Matches = from_js(&answer)?;
    Ok(found.matches.into_iter().filter(|hit| hit.score >= min_score).map(|hit| (hit.id, hit.score)).collect())
}

/// Values cross to and from JS as JSON text: serde_json is in the bundle anyway.
fn to_js(value: &impl serde::Serialize) -> Result<JsValue> {
    js_sys::JSON::parse(&serde_json::to_string(value)?).map_err(worker::Error::from)
}

fn from_js<T: serde::de::DeserializeOwned>(value: &JsValue) -> Result<T> {
    let text = js_sys::JSON::stringify(value).map_err(worker::Error::from)?;
    Ok(serde_json::from_str(&String::from(text))?)
}

/// Calls `index.method(...arguments)` and awaits the promise it returns.
async fn call(index: &JsValue, method: &str, arguments: &[JsValue]) -> Result<JsValue> {
    crate::ops::count(crate::ops::Op::VectorizeCall);
    let function: Function = Reflect::get(index, &JsValue::from_str(method))
        .map_err(worker::Error::from)?
        .dyn_into()
        .map_err(|_| worker::Error::RustError(format!("Vectorize has no `{method}`")))?;
    let arguments: Array = arguments.iter().collect();
    let promise: Promise = function
        .apply(index, &arguments)
        .map_err(worker::Error::from)?
        .dyn_into()
        .map_err(|_| worker::Error::RustError(format!("Vectorize `{method}` did not return a promise")))?;
    crate::runtime::settled::settled(&promise).await.map_err(worker::Error::from)
}
