//! What the object's smaller routes answer: the admin views (envelopes,
//! processes), the history upkeep a process or the admin API asks for, and the
//! wake-ups from the cron and the sweeper. The inbound path, process reports
//! and approvals have files of their own.

use worker::{Request, Response, Result};

use super::{envelopes, history, inbox, json_body, ChannelObject};
use crate::channel::state::ScheduleDue;
use crate::log_line::LogLine;
use crate::runtime::durable::MeteredStorage;
use crate::runtime::http::now_ms;
use crate::runtime::log::Emit;

impl ChannelObject {
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
    pub(super) async fn history_flush(&self) -> Result<Response> {
        let keep = crate::channel::history_mirror::kept_rows(self.config.history_limit);
        history::mirror(&self.state.storage().counted_sql(), &self.env, keep).await?;
        Response::ok("")
    }

    /// A compaction's report: the history it covered is folded into its summary.
    pub(super) async fn history_compacted(&self, mut request: Request) -> Result<Response> {
        let Ok(done) = json_body::<crate::process::compaction::Compacted>(&mut request).await else {
            return Response::error("malformed compaction report", 400);
        };
        let database = crate::runtime::d1::shard_of(&self.env, &done.conversation_key)?;
        history::compacted(&self.state.storage().counted_sql(), &database, &done.conversation_key, &done.covered)
            .await?;
        Response::ok("")
    }

    /// The cron found a job of this conversation overdue: claim it now.
    pub(super) async fn schedule_wake(&self, mut request: Request) -> Result<Response> {
        let conversation_key = request.text().await?;
        let due = ScheduleDue { at_ms: now_ms(), conversation_key };
        self.step(|machine| machine.set_schedule_due(Some(due)))?;
        self.state.storage().set_alarm_counted(0).await?;
        Response::ok("")
    }

    /// The sweeper saw an inbound waiting past its bound: run what waits now.
    /// The index is written again either way, so a stale mark clears and a
    /// live one is seen by the next sweep.
    pub(super) async fn sweep_wake(&self) -> Result<Response> {
        let open = inbox::has_open(&self.state.storage().counted_sql())?;
        if open {
            LogLine::warn("woken_by_sweeper").emit();
            self.state.storage().set_alarm_counted(0).await?;
        }
        self.flush_index_soon();
        Response::from_json(&serde_json::json!({ "open": open }))
    }
}
