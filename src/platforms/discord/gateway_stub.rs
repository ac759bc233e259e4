//! The way to the Discord Gateway objects: the gate (one per bot, by a fixed
//! name) that plans the shards, and each shard by its name.

use worker::{Env, Response, Result};

use crate::platforms::discord::gateway_route::GatewayRoute;
use crate::platforms::discord::shards::GATE_NAME;
use crate::runtime::config::GATEWAY_BINDING;
use crate::runtime::http::object_request;

/// The admin's and the cron's calls, through the gate: start (plan and start
/// every shard), ensure (the cron's check, which also reshards when K
/// changed), stop (every shard), status (every shard's).
pub async fn call(env: &Env, route: GatewayRoute) -> Result<Response> {
    let route = match route {
        GatewayRoute::Start => GatewayRoute::Plan,
        GatewayRoute::Ensure => GatewayRoute::Check,
        GatewayRoute::Stop => GatewayRoute::Halt,
        GatewayRoute::Status => GatewayRoute::Shards,
        other => other,
    };
    object(env, GATE_NAME, route, "").await
}

/// Calls the Gateway object named `name` (the gate or a shard) at `route`;
/// `query` is empty or starts with `?`.
pub async fn object(env: &Env, name: &str, route: GatewayRoute, query: &str) -> Result<Response> {
    let stub = env.durable_object(GATEWAY_BINDING)?.get_by_name(name)?;
    stub.fetch_with_request(object_request(route, query, None, &[])?).await
}
