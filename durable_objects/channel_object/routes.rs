//! The object's routes: which handler answers each, by `fetch` or, for a
//! `POST`, by the RPC call the Worker makes ([`ChannelObject::post`]); and
//! what the smaller ones answer: the admin views (envelopes, processes), the
//! history upkeep a process or the admin API asks for, and the wake-ups from
//! the cron and the sweeper. The inbound path, process reports and approvals
//! have files of their own.

use std::rc::Rc;

use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::JsValue;
use worker::{Request, Response, Result};

use super::reply::Reply;
use super::{approvals, envelopes, external_post, heard, history, inbox, json_body, outbox, Channel, ChannelObject};
use crate::channel::routes::{ChannelRoute, ObjectRoute, Verb};
use crate::channel::state::ScheduleDue;
use crate::log_line::LogLine;
use crate::platforms::web_chat::messenger::{self as web_chat, CHAT, WATCH};
use crate::runtime::durable::{self, MeteredStorage};
use crate::runtime::http::now_ms;
use crate::runtime::log::Emit;

/// The RPC face of the object: what the runtime calls on `stub.post(...)`
/// (worker/entry.mjs makes the class a `DurableObject`, which RPC needs).
#[wasm_bindgen]
impl ChannelObject {
    /// A `POST` route's answer without an HTTP request either way: the
    /// Worker passes the route's path and body (its UTF-8 bytes), the object answers
    /// `[status, body]`, by the same handlers as [`Channel::serve`]. An
    /// answer that waits on nothing (an observed inbound) comes back as it
    /// is, one that waits as a promise of it ([`durable::now_or_later`]).
    pub fn post(&self, path: String, body: Vec<u8>) -> JsValue {
        let channel = Rc::clone(&self.channel);
        durable::now_or_later(async move {
            let reply = durable::served(async {
                let route = ChannelRoute::at(&path).filter(|route| route.verb() == Verb::Post);
                match (route, String::from_utf8(body)) {
                    (Some(route), Ok(body)) => channel.posted(route, &body).await,
                    (Some(_), Err(_)) => Ok(Reply::error("the body is not UTF-8", 400)),
                    (None, _) => Ok(Reply::error("not found", 404)),
                }
            })
            .await
            .map_err(JsValue::from)?;
            Ok(js_sys::Array::of2(&reply.status.into(), &JsValue::from_str(&reply.body)).into())
        })
    }
}

impl Channel {
    /// The object's routes by `fetch`: the admin views, the sockets, and the
    /// `POST` routes' answers for a caller that sends a request.
    pub(super) async fn serve(&self, mut request: Request) -> Result<Response> {
        let Some(route) = ChannelRoute::at(&request.path()) else {
            return Response::error("not found", 404);
        };
        if request.method() != crate::runtime::http::method(route.verb()) {
            return Response::error("method not allowed", 405);
        }
        let sql = || self.state.storage().counted_sql();
        match route {
            ChannelRoute::Envelopes => self.envelopes(&request),
            ChannelRoute::Live => web_chat::accept(&self.state, &[WATCH]),
            ChannelRoute::ChatSocket => {
                let role = request.headers().get("x-edgebot-role")?.unwrap_or_default();
                let key = request.headers().get("x-edgebot-conversation")?.unwrap_or_default();
                web_chat::accept(&self.state, &[CHAT, &format!("role:{role}"), &format!("key:{key}")])
            }
            ChannelRoute::Events => Response::from_json(&inbox::events(&sql())?),
            ChannelRoute::Processes => self.processes(),
            ChannelRoute::Outbox => Response::from_json(&outbox::recent(&sql(), 200)?),
            ChannelRoute::Usage => {
                Response::from_json(&serde_json::json!({ "channel": self.machine.borrow().token_usage.get() }))
            }
            posted => self.posted(posted, &request.text().await?).await?.into_response(),
        }
    }

    /// What a `POST` route answers to `body`: the inbound path, process
    /// reports, approvals, the wake-ups and the history upkeep.
    async fn posted(&self, route: ChannelRoute, body: &str) -> Result<Reply> {
        match route {
            ChannelRoute::Inbound => self.receive(body).await,
            ChannelRoute::ProcessEvent => self.receive_process_event(body).await,
            ChannelRoute::HistoryFlush => self.history_flush().await,
            ChannelRoute::HistoryCompacted => self.history_compacted(body).await,
            ChannelRoute::TaskStart => self.start_task_worker(body).await,
            ChannelRoute::ScheduleWake => self.schedule_wake(body).await,
            ChannelRoute::SweepWake => self.sweep_wake().await,
            ChannelRoute::ApprovalAsk => approvals::ask(self, body).await,
            ChannelRoute::ApprovalSettled => approvals::settled(self, body).await,
            ChannelRoute::Heard => heard::receive(self, body).await,
            ChannelRoute::ExternalPost => external_post::post(self, body).await,
            // The `GET` routes ([`ObjectRoute::verb`]): `fetch` alone serves them.
            _ => Ok(Reply::error("not found", 404)),
        }
    }

    /// The envelopes between the channel and its processes, as JSON lines;
    /// `?type=` keeps one type, `?last=N` the newest N.
    pub(super) fn envelopes(&self, request: &Request) -> Result<Response> {
        let url = request.url()?;
        let query = |name: &str| url.query_pairs().find(|(key, _)| key == name).map(|(_, value)| value.into_owned());
        let last = query("last").and_then(|value| value.parse().ok());
        let lines = envelopes::read(&self.state.storage().counted_sql(), query("type").as_deref(), last)?;
        let mut response = Response::ok(lines)?;
        response.headers_mut().set("content-type", "application/x-ndjson")?;
        Ok(response)
    }

    /// The branches and workers the channel waits on, with their latest status.
    pub(super) fn processes(&self) -> Result<Response> {
        let machine = self.machine.borrow();
        let running: Vec<serde_json::Value> = machine
            .processes
            .get()
            .iter()
            .map(|(id, process)| {
                serde_json::json!({
                    "id": id,
                    "kind": process.kind.label(),
                    "task": process.task,
                    "status": process.status,
                    "started_at": process.started_at_ms,
                    "last_heard_at": process.last_heard_ms,
                    "waiting": process.waiting,
                })
            })
            .collect();
        Response::from_json(&running)
    }

    /// The admin API lists D1's copy: bring it up to date first.
    pub(super) async fn history_flush(&self) -> Result<Reply> {
        let keep = crate::channel::history_mirror::kept_rows(self.config.history_limit);
        history::mirror(&self.state.storage().counted_sql(), &self.held, &self.env, keep).await?;
        Ok(Reply::done())
    }

    /// A compaction's report: the history it covered is folded into its summary.
    pub(super) async fn history_compacted(&self, body: &str) -> Result<Reply> {
        let Ok(done) = json_body::<crate::process::compaction::Compacted>(body) else {
            return Ok(Reply::error("malformed compaction report", 400));
        };
        let database = crate::runtime::d1::shard_of(&self.env, &done.conversation_key)?;
        history::compacted(&self.state.storage().counted_sql(), &database, &done.conversation_key, &done.covered)
            .await?;
        Ok(Reply::done())
    }

    /// The cron found a job of this conversation overdue: claim it now.
    pub(super) async fn schedule_wake(&self, conversation_key: &str) -> Result<Reply> {
        let due = ScheduleDue { at_ms: now_ms(), conversation_key: conversation_key.to_string() };
        self.step(|machine| machine.set_schedule_due(Some(due)))?;
        self.state.storage().set_alarm_counted(0).await?;
        Ok(Reply::done())
    }

    /// The sweeper saw an inbound waiting past its bound: run what waits now.
    /// The index is written again either way, so a stale mark clears and a
    /// live one is seen by the next sweep.
    pub(super) async fn sweep_wake(&self) -> Result<Reply> {
        let open = inbox::has_open(&self.state.storage().counted_sql())?;
        if open {
            LogLine::warn("woken_by_sweeper").emit();
            self.state.storage().set_alarm_counted(0).await?;
        }
        self.flush_index_soon();
        Reply::json(&serde_json::json!({ "open": open }))
    }
}
