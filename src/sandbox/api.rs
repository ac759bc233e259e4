//! `POST /api/channels/{key}/run_code` (operators only): runs a module on a
//! conversation's workspace exactly as a worker's `run_code` would, answering
//! the text the model would read and how long the run took (what `make bench`
//! measures; also a way for an operator to try the sandbox). It has the
//! network when `SANDBOX_NETWORK` gives runs the network.

use serde_json::json;
use worker::{Env, Request, Response};

use crate::api_error::ApiError;
use crate::runtime::config;
use crate::runtime::failure::internal;
use crate::runtime::http::{json_object, now_ms};
use crate::sandbox::arguments::RunCodeArguments;
use crate::security::percent_decode;
use crate::sessions::api::Operator;

/// `{"code": "…"}` in; `{"result": "…", "ms": N}` out.
pub async fn run(mut request: Request, env: &Env, key: &str, _operator: &Operator) -> Result<Response, ApiError> {
    let body = json_object(&mut request).await?;
    let code = body["code"].as_str().ok_or_else(|| ApiError::BadRequest("`code` must be a string".into()))?;
    let arguments = RunCodeArguments { code: code.to_string() };
    let config = config::load(env);
    let started = now_ms();
    let result = crate::sandbox::tools::run_code(&config, env, &percent_decode(key), &arguments, true).await;
    Response::from_json(&json!({ "result": result, "ms": now_ms() - started })).map_err(internal)
}
