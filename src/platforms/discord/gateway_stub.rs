//! The way to the Discord Gateway object: one per bot, by a fixed name.

use worker::{Env, Response, Result};

use crate::platforms::discord::gateway_route::GatewayRoute;
use crate::runtime::config::GATEWAY_BINDING;
use crate::runtime::http::object_request;

/// The object's name: one Gateway connection per bot.
const GATEWAY_NAME: &str = "discord-gateway";

/// Calls the Gateway object at one of its routes.
pub async fn call(env: &Env, route: GatewayRoute) -> Result<Response> {
    let stub = env.durable_object(GATEWAY_BINDING)?.get_by_name(GATEWAY_NAME)?;
    stub.fetch_with_request(object_request(route, "", None, &[])?).await
}
