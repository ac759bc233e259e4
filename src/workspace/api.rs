//! The dashboard's view of a conversation's workspace (operators only):
//! `GET /api/conversations/{key}/workspace` lists it, `DELETE` forgets it.

use worker::{Env, Response};

use crate::api_error::ApiError;
use crate::runtime::failure::internal;
use crate::security::percent_decode;
use crate::sessions::api::Operator;
use crate::workspace::store::Workspace;

/// The workspace's files: path, bytes, read-only, modified.
pub async fn list(env: &Env, key: &str, _operator: &Operator) -> Result<Response, ApiError> {
    let workspace = Workspace::open(env, &percent_decode(key))?;
    let entries = workspace.list().await.map_err(internal)?;
    let quotas = workspace.quotas();
    Response::from_json(&serde_json::json!({
        "entries": entries,
        "quotas": { "files": quotas.files, "bytes": quotas.bytes, "file_bytes": quotas.file_bytes },
    }))
    .map_err(internal)
}

/// Forgets the workspace's own files (the attachments are the files room's).
pub async fn forget(env: &Env, key: &str, _operator: &Operator) -> Result<Response, ApiError> {
    let workspace = Workspace::open(env, &percent_decode(key))?;
    workspace.remove_all().await;
    let left = workspace.list().await.map_err(internal)?.iter().filter(|entry| !entry.read_only).count();
    Response::from_json(&serde_json::json!({ "removed": left == 0 })).map_err(internal)
}
