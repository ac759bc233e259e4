//! The Worker's entry points, and nothing else: a request ([`router`]),
//! a batch of queued jobs ([`jobs`]), a cron tick ([`cron`]) and a routed
//! mail ([`crate::platforms::email::handler`]).
//! Each counts itself (`/api/ops`) and hands over at once.

use worker::{
    event, Context, Env, ForwardableEmailMessage, MessageBatch, Response, Result, ScheduleContext, ScheduledEvent,
};

use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::JsValue;

use crate::ops::{count, Op};
use crate::runtime::task::now_or_later;
use crate::{cron, jobs, router};

/// The request as the runtime gave it: the router makes a `worker::Request`
/// of it only for a route that needs one ([`crate::runtime::incoming`]).
/// Exported by hand rather than by `#[event(fetch)]`, whose export is an
/// `async fn` run by `spawn_local`: here the request is a task of the
/// isolate, polled at once and when woken ([`crate::runtime::task`]).
#[wasm_bindgen]
pub fn fetch(request: worker::web_sys::Request, env: Env, _context: worker::worker_sys::Context) -> JsValue {
    count(Op::WorkerInvocation);
    now_or_later(async move {
        // What `#[event(fetch)]` answers to an error the router let through.
        let response = router::handle(request.into(), &env).await.or_else(|error| {
            worker::console_error!("{error}");
            Response::error("INTERNAL SERVER ERROR", 500)
        });
        Ok(worker::web_sys::Response::from(response.map_err(JsValue::from)?).into())
    })
}

#[event(queue)]
async fn queue(batch: MessageBatch<serde_json::Value>, env: Env, _context: Context) -> Result<()> {
    count(Op::WorkerInvocation);
    jobs::run_batch(batch, &env).await
}

#[event(scheduled)]
async fn scheduled(event: ScheduledEvent, env: Env, _context: ScheduleContext) {
    count(Op::WorkerInvocation);
    cron::run(&event.cron(), &env).await
}

#[event(email)]
async fn email(message: ForwardableEmailMessage, env: Env, _context: Context) -> Result<()> {
    count(Op::WorkerInvocation);
    crate::platforms::email::handler::receive(message, &env).await
}
