//! ChannelObject: one Durable Object per conversation, the conversation's channel.
//!
//! A webhook's inbound is stored here (and deduplicated) before the Worker
//! acknowledges it; the turn that answers runs later, from the object's alarm,
//! so no webhook ever waits for a model.

#[path = "channel_object/inbox.rs"]
mod inbox;
#[path = "channel_object/outbox.rs"]
mod outbox;
#[path = "channel_object/turn_runner.rs"]
mod turn_runner;

use worker::{durable_object, DurableObject, Env, Method, Request, Response, Result, State};

use crate::channel::engagement;
use crate::edge::http::now_ms;
use crate::inbound::InboundEvent;

#[durable_object]
pub struct ChannelObject {
    state: State,
    env: Env,
}

impl DurableObject for ChannelObject {
    fn new(state: State, env: Env) -> Self {
        if let Err(error) = state.storage().sql().exec(inbox::SCHEMA, None) {
            worker::console_error!("channel schema: {error}");
        }
        if let Err(error) = state.storage().sql().exec(outbox::SCHEMA, None) {
            worker::console_error!("outbox schema: {error}");
        }
        ChannelObject { state, env }
    }

    async fn fetch(&self, request: Request) -> Result<Response> {
        match (request.method(), request.path().as_str()) {
            (Method::Post, "/inbound") => self.receive(request).await,
            (Method::Get, "/events") => Response::from_json(&inbox::events(&self.state.storage().sql())?),
            _ => Response::error("not found", 404),
        }
    }

    async fn alarm(&self) -> Result<Response> {
        turn_runner::run_pending(&self.state, &self.env).await?;
        Response::ok("")
    }
}

impl ChannelObject {
    /// Stores one inbound, once per delivery id, and wakes the channel if it engages.
    async fn receive(&self, mut request: Request) -> Result<Response> {
        let Ok(event) = request.json::<InboundEvent>().await else {
            return Response::error("malformed inbound event", 400);
        };
        let decision = engagement::decide(&event);
        let sql = self.state.storage().sql();
        if !inbox::store(&sql, &event, &decision, now_ms())? {
            return Response::from_json(&serde_json::json!({ "ok": true, "duplicate": true }));
        }
        if decision.engages {
            self.state.storage().set_alarm(0).await?;
        }
        Response::from_json(&serde_json::json!({ "ok": true, "decision": decision.label() }))
    }
}
