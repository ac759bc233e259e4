//! The Worker's side of a run's fetches (`SANDBOX_NETWORK = "guarded"`): a
//! request that carries the sandbox header came from a loaded isolate through
//! the `SELF` binding. Its token must be one this Worker signed for a run that
//! is still going; then the URL is fetched through the fetch guard, as
//! `http_fetch` would, and the answer handed back. A refusal answers 403 with
//! the reason in a header the isolate's `fetch` turns into an error.

use worker::{Env, Headers, Request, Response};

use crate::api_error::ApiError;
use crate::runtime::config;
use crate::runtime::failure::internal;
use crate::runtime::http::now_ms;
use crate::sandbox::network::{egress_key, verify, EGRESS_HEADER, REFUSED_HEADER};
use crate::web_tools::tools::guarded_get;

/// The most a run's fetch brings back (the run's own memory is the next limit).
const EGRESS_BODY_LIMIT: usize = 10 * 1024 * 1024;

/// Whether a request came from a run (whatever its token says).
pub fn is_egress(request: &crate::runtime::incoming::Incoming) -> bool {
    request.has_header(EGRESS_HEADER)
}

/// Fetches what the run asked for, if its token holds.
pub async fn serve(request: Request, env: &Env) -> Result<Response, ApiError> {
    let config = config::load(env);
    let token = request.headers().get(EGRESS_HEADER).ok().flatten().unwrap_or_default();
    let allowed = config.sandbox_network
        && egress_key(config.admin_token.expose()).is_some_and(|key| verify(&key, &token, now_ms()));
    if !allowed {
        return refused("this request is not from a run that may fetch");
    }
    if request.method() != worker::Method::Get {
        return refused("only GET");
    }
    let url = request.url().map_err(internal)?;
    match guarded_get(&config, url.as_str(), EGRESS_BODY_LIMIT).await {
        Ok(answer) => {
            let response = Response::from_bytes(answer.body).map_err(internal)?;
            Ok(response.with_status(answer.status))
        }
        Err(why) => refused(&why),
    }
}

fn refused(why: &str) -> Result<Response, ApiError> {
    let headers = Headers::new();
    // A header value is one line.
    let why: String = why.chars().map(|character| if character.is_control() { ' ' } else { character }).collect();
    headers.set(REFUSED_HEADER, &why).map_err(internal)?;
    Ok(Response::error(format!("refused: {why}"), 403).map_err(internal)?.with_headers(headers))
}
