//! The memory system's pure core: typed memories, embeddings, vector search
//! (4-bit sketches of every vector, then an exact re-rank), rank fusion,
//! automatic links, maintenance, the cortex's circuit breaker and the
//! bulletin's sections, and who may see which memory (scopes), all pure; and,
//! Workers-facing, `store` (D1), `recall`, `embedder`, `vector_index` (D1 or
//! Vectorize), `tools` (the branch tools' calls) and `api` (the admin routes).

pub mod arguments;
pub mod bulletin;
pub mod circuit;
pub mod embed;
pub mod full_text;
pub mod linking;
pub mod maintenance;
pub mod rrf;
pub mod scope;
pub mod sketch;
pub mod types;
pub mod vector;

#[cfg(target_arch = "wasm32")]
pub mod api;
#[cfg(target_arch = "wasm32")]
pub mod embedder;
#[cfg(target_arch = "wasm32")]
pub mod recall;
#[cfg(target_arch = "wasm32")]
pub mod store;
#[cfg(target_arch = "wasm32")]
pub mod tools;
#[cfg(target_arch = "wasm32")]
pub mod vector_index;
