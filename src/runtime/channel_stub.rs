//! The Worker's side of the channel object: requests to its routes
//! ([`ChannelRoute`]), sent to the conversation's instance.

use worker::{Env, Headers, Request, RequestInit, Response, Result};

use crate::channel::routes::ChannelRoute;
use crate::runtime::config::CHANNEL_BINDING;
use crate::runtime::http::method;

/// A request to `route`; `query` is appended as given (empty, or `?…`).
pub fn request(route: ChannelRoute, query: &str, body: Option<String>, headers: &[(&str, &str)]) -> Result<Request> {
    let sent = Headers::new();
    for (name, value) in headers {
        sent.set(name, value)?;
    }
    let mut init = RequestInit::new();
    init.with_method(method(route.verb())).with_headers(sent).with_body(body.map(Into::into));
    Request::new_with_init(&format!("{}{query}", route.url()), &init)
}

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
        status => Err(worker::Error::RustError(format!("channel object answered {status} to {}", route.path()))),
    }
}
