//! The Worker's side of the channel object: requests to its routes
//! ([`ChannelRoute`]), sent to the conversation's instance.

use js_sys::{Array, Promise};
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};
use worker::{Env, ObjectNamespace, Request, Response, Result};

use crate::channel::routes::ChannelRoute;
use crate::runtime::config::CHANNEL_BINDING;

pub use crate::runtime::http::object_request as request;

thread_local! {
    /// The channel objects' namespace: bindings are fixed for an isolate's
    /// life, and looking one up checks its type by name on every call.
    static NAMESPACE: std::cell::OnceCell<ObjectNamespace> = const { std::cell::OnceCell::new() };
}

#[wasm_bindgen]
extern "C" {
    /// A channel object's stub as the runtime gives it, for its RPC method
    /// (`ChannelObject::post`; worker/entry.mjs makes the class RPC's).
    type ObjectStub;

    /// The body goes as bytes: the glue copies them out of wasm's memory
    /// in one call, where a string is decoded here and copied into the
    /// object's memory a character at a time by JS.
    #[wasm_bindgen(method, catch, js_name = post)]
    fn post_rpc(this: &ObjectStub, path: &str, body: Vec<u8>) -> std::result::Result<Promise, JsValue>;
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

/// Posts `body` to `route`; an answer other than 200 is an error. One RPC
/// call: no request is built for the object, and no response read from it;
/// the 200 answer's body comes back as the JSON response the caller reads or
/// passes on (a webhook's acknowledgement).
pub async fn post(env: &Env, conversation_key: &str, route: ChannelRoute, body: String) -> Result<Response> {
    let stub: ObjectStub = namespace(env)?.get_by_name(conversation_key)?.into_rpc();
    let answer = crate::runtime::settled::settled(&stub.post_rpc(route.as_str(), body.into_bytes())?).await?;
    let answer: Array = answer.dyn_into().map_err(|_| worker::Error::RustError(format!("no answer from {route}")))?;
    let status = answer.get(0).as_f64().unwrap_or_default();
    let body = answer.get(1).as_string().unwrap_or_default();
    match status as u16 {
        200 => crate::runtime::http::json_ok(body),
        status => Err(worker::Error::RustError(format!("channel object answered {status} to {route}"))),
    }
}
