//! `POST /mcp`: the streamable HTTP transport, answered with
//! `application/json` (the server sends nothing unasked, so `GET` and
//! `DELETE` are 405 from the route table; no session is kept, so no
//! `MCP-Session-Id` is issued). In order: the Origin rule (403), the bearer
//! token (401), the client's rate per minute (429), the protocol version
//! header (400), the body (400); then the JSON-RPC request is answered, and a
//! `tools/call` is checked against the client's scope and daily budget,
//! logged and counted.

use serde_json::{json, Value};
use worker::{Env, Request, Response};

use crate::api_error::ApiError;
use crate::log_line::LogLine;
use crate::mcp_server::rules::{
    self, bearer, error, initialize_result, origin_allowed, parse_token, read_message, result, seconds_to_next_minute,
    tool_call, tools_list, version_header_ok, Message, INVALID_PARAMS, METHOD_NOT_FOUND, OVER_LIMIT, VERSION_HEADER,
};
use crate::mcp_server::store::{self, Client};
use crate::mcp_server::tools;
use crate::runtime::config::{self, DATABASE_BINDING};
use crate::runtime::failure::{internal, Answer};
use crate::runtime::http::{now_ms, read_body};
use crate::runtime::log::Emit;

/// The largest JSON-RPC message taken.
const BODY_CAP: usize = 64 * 1024;

pub async fn serve(mut request: Request, env: &Env) -> Answer {
    let header = |name: &str| request.headers().get(name).ok().flatten();
    let url = request.url()?;
    let own_host = match url.port() {
        Some(port) => format!("{}:{port}", url.host_str().unwrap_or_default()),
        None => url.host_str().unwrap_or_default().to_string(),
    };
    if !origin_allowed(header("origin").as_deref(), &own_host) {
        return Err(ApiError::Forbidden("this origin may not use the tool server"));
    }
    let authorization = header("authorization");
    let Some((client_id, secret)) = bearer(authorization.as_deref()).and_then(parse_token) else {
        return Err(ApiError::Unauthorized("a client token is required (Authorization: Bearer …)"));
    };
    let db = env.d1(DATABASE_BINDING)?;
    // A client is issued for one agent: its token speaks to that agent only.
    let client = store::authenticate(&db, client_id, secret).await?;
    let Some(client) = client else {
        return Err(ApiError::Unauthorized("this token is unknown or revoked"));
    };
    let now = now_ms();
    if store::count_request(&db, &client.id, now).await? > client.rate_per_minute {
        let message = format!("this client is over its rate of {} requests a minute", client.rate_per_minute);
        let mut response = Response::from_json(&error(&Value::Null, OVER_LIMIT, &message))?.with_status(429);
        response.headers_mut().set("retry-after", &seconds_to_next_minute(now).to_string())?;
        return Ok(response);
    }
    if !version_header_ok(header(VERSION_HEADER).as_deref()) {
        let message =
            format!("unsupported {VERSION_HEADER}; this server speaks {}", rules::PROTOCOL_VERSIONS.join(", "));
        return json_answer(&error(&Value::Null, rules::INVALID_REQUEST, &message), 400);
    }
    let body = read_body(&mut request, BODY_CAP).await?;
    let (id, method, params) = match read_message(&body) {
        Ok(Message::Request { id, method, params }) => (id, method, params),
        Ok(Message::NoAnswer) => return Ok(Response::empty()?.with_status(202)),
        Err(refusal) => return json_answer(&refusal, 400),
    };
    let answer = match method.as_str() {
        "initialize" => result(&id, initialize_result(&params, &client.agent, env!("CARGO_PKG_VERSION"))),
        "ping" => result(&id, json!({})),
        "tools/list" => result(&id, tools_list(&client.scope)),
        "tools/call" => call(env, &db, &client, &id, &params).await?,
        _ => error(&id, METHOD_NOT_FOUND, &format!("method not found: {method}")),
    };
    json_answer(&answer, 200)
}

fn json_answer(body: &Value, status: u16) -> Answer {
    Ok(Response::from_json(body).map_err(internal)?.with_status(status))
}

/// A `tools/call`: a tool outside the client's scope is unknown to it; a
/// client at its daily budget is told so before anything runs.
async fn call(
    env: &Env,
    db: &worker::D1Database,
    client: &Client,
    id: &Value,
    params: &Value,
) -> worker::Result<Value> {
    let (tool, arguments) = match tool_call(params, &client.scope) {
        Ok(call) => call,
        Err(why) => return Ok(error(id, INVALID_PARAMS, &why)),
    };
    let now = now_ms();
    let spent = store::spent_today(db, &client.id, now).await?;
    if spent >= client.daily_budget_micro_usd {
        store::log_call(db, client, tool.as_str(), "over_budget", 0, now).await?;
        let message = format!(
            "this client has spent its daily budget of ${:.2}; it renews at 00:00 UTC",
            client.daily_budget_micro_usd as f64 / 1e6
        );
        return Ok(error(id, OVER_LIMIT, &message));
    }
    let config = config::load(env);
    let ran = tools::run(&config, env, db, client, tool, &arguments).await;
    store::log_call(db, client, tool.as_str(), ran.outcome, ran.micro_usd, now_ms()).await?;
    LogLine::info("mcp_server_call").id(&client.id).field("tool", tool.as_str()).field("outcome", ran.outcome).emit();
    Ok(result(id, ran.result))
}
