//! The Worker's side of the channel object: requests to its routes
//! ([`ChannelRoute`]), sent to the conversation's instance.

use worker::{Env, Request, Response, Result};

use crate::channel::routes::ChannelRoute;
use crate::runtime::config::CHANNEL_BINDING;

pub use crate::runtime::http::object_request as request;

/// Sends `request` to the conversation's channel object.
pub async fn send(env: &Env, conversation_key: &str, request: Request) -> Result<Response> {
    let stub = env.durable_object(CHANNEL_BINDING)?.get_by_name(conversation_key)?;
    stub.fetch_with_request(request).await
}

/// Posts `body` to `route`; an answer other than 200 is an error.
pub async fn post(env: &Env, conversation_key: &str, route: ChannelRoute, body: String) -> Result<Response> {
    let response = send(env, conversation_key, request(route, "", Some(body), &[])?).await?;
    match response.status_code() {
        200 => Ok(response),
        status => Err(worker::Error::RustError(format!("channel object answered {status} to {route}"))),
    }
}
