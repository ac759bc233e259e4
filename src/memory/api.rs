//! The admin API for memory: list and search every memory, import them in
//! bulk, delete or share one, and the bulletin the cortex built last.

use worker::{Env, Request, Response};

use crate::api_error::ApiError;
use crate::memory::store as memory;
use crate::runtime::config;
use crate::runtime::config::DATABASE_BINDING;
use crate::runtime::failure::internal;
use crate::runtime::failure::Answer;
use crate::runtime::http::read_body;
use crate::security::percent_decode;
use crate::sessions::api::Operator;

/// The largest memory import body taken (4 MiB: 500 memories of about 8 KB).
pub const MAX_IMPORT_BODY_BYTES: usize = 4 << 20;

/// The memory bulletin the cortex built last, and when.
pub async fn bulletin(env: &Env, _operator: &Operator) -> Answer {
    let database = env.d1(DATABASE_BINDING)?;
    Response::from_json(&memory::bulletin(&database).await?).map_err(internal)
}

/// Lists or searches every memory, whatever its scope (operators see all):
/// `?query=…&mode=hybrid|recent|important|typed&memory_type=…
/// &sort=recent|importance|most_accessed&limit=N`. Each carries its `scope`.
pub async fn memories(request: &Request, env: &Env, _operator: &Operator) -> Answer {
    let url = request.url()?;
    let arguments = crate::sorting::object_from(
        url.query_pairs().map(|(key, value)| (key.into_owned(), value.into_owned().into())),
    );
    let recall = crate::memory::recall::RecallRequest::from_arguments(&arguments.into());
    let database = env.d1(DATABASE_BINDING)?;
    let viewer = crate::memory::scope::Viewer::Operator;
    let found = crate::memory::recall::recall(&config::load(env), env, &database, viewer, &recall).await?;
    Response::from_json(&found).map_err(internal)
}

/// Imports memories in bulk (`[{"content", "memory_type", "importance"?, "shared"?}]`,
/// at most 500 per request), without linking them to each other. They are
/// shared with every conversation unless `"shared": false` (operators only).
pub async fn import_memories(mut request: Request, env: &Env, _operator: &Operator) -> Answer {
    let body = read_body(&mut request, MAX_IMPORT_BODY_BYTES).await?;
    let Ok(items) = serde_json::from_slice::<Vec<memory::ImportItem>>(&body) else {
        return Err(ApiError::BadRequest(
            "expected a JSON array of {content, memory_type, importance?, shared?}".into(),
        ));
    };
    if items.len() > 500 {
        return Err(ApiError::BadRequest("at most 500 memories per request".into()));
    }
    let database = env.d1(DATABASE_BINDING)?;
    let imported = memory::import(&config::load(env), env, &database, &items).await?;
    Response::from_json(&serde_json::json!({ "imported": imported })).map_err(internal)
}

pub async fn delete_memory(env: &Env, id: &str, _operator: &Operator) -> Answer {
    let database = env.d1(DATABASE_BINDING)?;
    let viewer = crate::memory::scope::Viewer::Operator;
    match memory::delete(&config::load(env), env, &database, viewer, &percent_decode(id)).await? {
        true => Response::from_json(&serde_json::json!({ "deleted": true })).map_err(internal),
        false => Err(ApiError::NotFound),
    }
}

/// `POST /api/memories/{id}/share` shares a memory with every conversation;
/// `…/unshare` returns it to the conversation it was learned in (operators
/// only when that is unknown). Answers the memory as it now is.
pub async fn share_memory(env: &Env, id: &str, shared: bool, _operator: &Operator) -> Answer {
    let database = env.d1(DATABASE_BINDING)?;
    let id = percent_decode(id);
    match memory::set_shared(&config::load(env), env, &database, &id, shared).await? {
        Some(memory) => Response::from_json(&memory).map_err(internal),
        None => Err(ApiError::NotFound),
    }
}
