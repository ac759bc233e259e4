//! The way to the Discord Gateway object: one per bot, by a fixed name.

use worker::{Env, Method, Request, RequestInit, Response, Result};

use crate::runtime::config::GATEWAY_BINDING;

/// The object's name: one Gateway connection per bot.
const GATEWAY_NAME: &str = "discord-gateway";

/// Calls the Gateway object (`/start`, `/ensure`, `/stop`, `/status`).
pub async fn call(env: &Env, method: Method, path: &str) -> Result<Response> {
    let stub = env.durable_object(GATEWAY_BINDING)?.get_by_name(GATEWAY_NAME)?;
    let mut init = RequestInit::new();
    init.with_method(method);
    stub.fetch_with_request(Request::new_with_init(&format!("https://gateway{path}"), &init)?).await
}
