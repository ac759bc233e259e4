//! The web chat's files over HTTP: a signed-in chat uploads a file (kept
//! like any platform's, under an upload token its next message names), and a
//! signed, expiring link downloads one of a conversation's files
//! (src/files/download_link.rs).

use worker::{Env, Request, Response};

use crate::api_error::ApiError;
use crate::budget::rules::seconds_until_next_day;
use crate::files::download_link::LinkKey;
use crate::files::rules::{safe_name, Refusal, FILE_LIMIT_BYTES};
use crate::runtime::failure::Answer;
use crate::security::percent_decode;

use crate::runtime::config;

use crate::files::store as files;
use crate::runtime::config::DATABASE_BINDING;
use crate::runtime::failure::internal;
use crate::runtime::http::now_ms;
use crate::runtime::http::read_body;
use crate::sessions::api as sessions;

/// The header that carries an upload's name (percent-encoded UTF-8).
const NAME_HEADER: &str = "x-file-name";

fn too_large() -> ApiError {
    ApiError::ContentTooLarge(format!("the file is larger than {} MB", FILE_LIMIT_BYTES / (1024 * 1024)))
}

/// `POST /api/chat/files`: the body is the file, `x-file-name` its name.
/// Answers the upload token the next message names it by, and what it is.
pub async fn upload(mut request: Request, env: &Env) -> Answer {
    let conversation = sessions::chat_conversation(&request, env).await?;
    let name = request.headers().get(NAME_HEADER)?.map(|name| percent_decode(&name));
    let name = name.filter(|name| !name.trim().is_empty()).ok_or_else(|| {
        ApiError::BadRequest(format!("send the file's name in the {NAME_HEADER} header (percent-encoded)"))
    })?;
    let bytes = match read_body(&mut request, FILE_LIMIT_BYTES as usize).await {
        Err(ApiError::TooLarge(_)) => return Err(too_large()),
        other => other?,
    };
    if bytes.is_empty() {
        return Err(ApiError::BadRequest("the file is empty".into()));
    }
    let token = uuid::Uuid::new_v4().to_string();
    let db = env.d1(DATABASE_BINDING)?;
    let now = now_ms();
    let file = match files::store_upload(env, &db, &conversation, &token, &name, bytes, now).await {
        Ok(file) => file,
        Err(Refusal::TooLarge { .. }) => return Err(too_large()),
        Err(Refusal::DayFull) => {
            return Err(ApiError::TooManyRequests {
                message: "this conversation has sent as many files as it may today",
                retry_after_secs: seconds_until_next_day(now),
            })
        }
        Err(Refusal::Unreachable) => return Err(ApiError::Unavailable("the file could not be kept; try again")),
    };
    Response::from_json(&serde_json::json!({
        "upload": token,
        "id": file.id,
        "name": file.name,
        "kind": file.kind.name(),
        "content_type": file.content_type,
        "size": file.size,
    }))
    .map_err(internal)
}

/// `GET /api/files/{id}?c=&exp=&sig=`: the file's bytes, as an attachment,
/// while the link's signature holds.
pub async fn download(request: &Request, env: &Env, id: &str) -> Answer {
    let refused = ApiError::Forbidden("this link is not valid, or it has expired");
    let url = request.url()?;
    let query = |name: &str| url.query_pairs().find(|(key, _)| key == name).map(|(_, value)| value.into_owned());
    let expires = query("exp").and_then(|value| value.parse::<i64>().ok());
    let (Some(conversation), Some(expires), Some(signature)) = (query("c"), expires, query("sig")) else {
        return Err(refused);
    };
    let id = percent_decode(id);
    let key = LinkKey::of(&config::load(env)).ok_or(ApiError::Forbidden("this deployment signs no links"))?;
    if !key.verify(&conversation, &id, expires, &signature, now_ms()) {
        return Err(refused);
    }
    let db = env.d1(DATABASE_BINDING)?;
    let (file, bytes) = files::download(env, &db, &conversation, &id).await?.ok_or(ApiError::NotFound)?;
    let mut response = Response::from_bytes(bytes)?;
    let headers = response.headers_mut();
    let disposition = format!("attachment; filename=\"{}\"", safe_name(&file.name));
    for (name, value) in [
        ("content-type", file.content_type.as_str()),
        ("content-disposition", disposition.as_str()),
        ("x-content-type-options", "nosniff"),
        // A link names a file until it expires; no shared cache keeps a copy.
        ("cache-control", "private, no-store"),
    ] {
        headers.set(name, value)?;
    }
    Ok(response)
}
