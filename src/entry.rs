//! The Worker's entry points, and nothing else: a request ([`router`]),
//! a batch of queued jobs ([`jobs`]), a cron tick ([`cron`]) and a routed
//! mail ([`crate::platforms::email::handler`]).
//! Each counts itself (`/api/ops`) and hands over at once.

use worker::{
    event, Context, Env, ForwardableEmailMessage, MessageBatch, Response, Result, ScheduleContext, ScheduledEvent,
};

use crate::ops::{count, Op};
use crate::{cron, jobs, router};

/// The request as the runtime gave it: the router makes a `worker::Request`
/// of it only for a route that needs one ([`crate::runtime::incoming`]).
#[event(fetch)]
async fn fetch(request: worker::web_sys::Request, env: Env, _context: Context) -> Result<Response> {
    count(Op::WorkerInvocation);
    router::handle(request.into(), &env).await
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
