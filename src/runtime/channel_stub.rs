//! The Worker's side of the channel object: requests to its routes
//! ([`ChannelRoute`]), sent to the conversation's instance.

use js_sys::Promise;
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use worker::{Env, ObjectNamespace, Request, Response, Result};

use crate::channel::routes::{ChannelRoute, ObjectRoute};
use crate::runtime::config::CHANNEL_BINDING;

pub use crate::runtime::http::object_request as request;

thread_local! {
    /// The channel objects' namespace: bindings are fixed for an isolate's
    /// life, and looking one up checks its type by name on every call.
    static NAMESPACE: std::cell::OnceCell<ObjectNamespace> = const { std::cell::OnceCell::new() };
}

#[wasm_bindgen]
extern "C" {
    /// A Durable Object stub as the runtime gives it, for `fetch(url, init)`:
    /// one call, where a `worker::Request` would build a `Request` and read
    /// its method, URL and headers back into wasm before sending it.
    type ObjectStub;

    #[wasm_bindgen(method, catch, js_name = fetch)]
    fn fetch_with_init(
        this: &ObjectStub,
        url: &str,
        init: &worker::web_sys::RequestInit,
    ) -> std::result::Result<Promise, JsValue>;
}

/// The namespace, looked up once per isolate.
fn namespace(env: &Env) -> Result<ObjectNamespace> {
    NAMESPACE.with(|cached| {
        if let Some(namespace) = cached.get() {
            return Ok(namespace.clone());
        }
        let namespace = env.durable_object(CHANNEL_BINDING)?;
        Ok(cached.get_or_init(|| namespace).clone())
    })
}

/// Sends `request` to the conversation's channel object.
pub async fn send(env: &Env, conversation_key: &str, request: Request) -> Result<Response> {
    let stub = namespace(env)?.get_by_name(conversation_key)?;
    stub.fetch_with_request(request).await
}

/// Posts `body` to `route`; an answer other than 200 is an error.
pub async fn post(env: &Env, conversation_key: &str, route: ChannelRoute, body: String) -> Result<Response> {
    let stub: ObjectStub = namespace(env)?.get_by_name(conversation_key)?.into_rpc();
    let init = worker::web_sys::RequestInit::new();
    init.set_method(crate::runtime::http::method(route.verb()).as_ref());
    init.set_body(&JsValue::from_str(&body));
    let answer = JsFuture::from(stub.fetch_with_init(&route.url(), &init)?).await?;
    // A stub's fetch resolves to a `Response`: no `instanceof` check across
    // the boundary.
    let answer: worker::web_sys::Response = answer.unchecked_into();
    match answer.status() {
        200 => Ok(as_it_came(answer)),
        status => Err(worker::Error::RustError(format!("channel object answered {status} to {route}"))),
    }
}

/// The object's 200 answer as a `worker::Response`: its headers and body
/// stream, nothing copied. (worker's own conversion also reads the answer's
/// `cf` and `webSocket`, a runtime call each, the first of them the costliest
/// call of a webhook's ack after the object's fetch itself; an object's
/// answer to a route has neither.)
fn as_it_came(answer: worker::web_sys::Response) -> Response {
    let builder = worker::ResponseBuilder::new().with_headers(worker::Headers(answer.headers()));
    match answer.body() {
        Some(body) => builder.stream(body),
        None => builder.empty(),
    }
}
