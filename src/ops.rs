//! What this isolate has asked of Cloudflare since it started: the operations
//! Cloudflare bills or limits, counted by the edge where each call is made (the
//! D1 and Durable Object SQL wrappers, the queue producer and consumer, the
//! outbound HTTP callers, each entry point).
//!
//! `GET /api/ops` returns the counts. They are per isolate: in production the
//! Worker and each Durable Object may run in isolates of their own, so a count
//! there covers what one isolate did. Locally (`wrangler dev`) the Worker and
//! its objects share one isolate, which is how `make bench` measures what one
//! inbound message costs in total.

use std::cell::Cell;

use serde_json::{Map, Value};

/// One kind of billed or limited operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// A Worker invocation: a fetch, a queue batch or a cron tick.
    WorkerInvocation,
    /// A request a Durable Object served: an HTTP request or an alarm.
    DoRequest,
    /// Wall milliseconds those requests took (duration is billed by wall time
    /// while an object is active; overlapping requests count twice here).
    DoRequestMs,
    /// A WebSocket message a Durable Object received (20 bill as one request).
    DoWebSocketMessage,
    /// A row a Durable Object's SQL read.
    DoRowRead,
    /// A row a Durable Object's SQL wrote; each alarm set is billed as one too.
    DoRowWritten,
    /// A D1 statement (each statement of a batch counts).
    D1Query,
    D1RowRead,
    D1RowWritten,
    /// A message written to a queue.
    QueueSend,
    /// A message delivered to the consumer (read once, then acked or retried).
    QueueDelivery,
    /// A delivered message sent back to the queue for another attempt.
    QueueRetry,
    /// A call to the chat model (an HTTP subrequest, or Workers AI).
    ModelCall,
    /// A call to the embedding model.
    EmbeddingCall,
    /// A platform API call (Telegram, Slack, Discord).
    PlatformCall,
    /// A fetch a model-driven tool made (web search, http_fetch).
    ToolFetch,
    /// A Vectorize query or upsert.
    VectorizeCall,
    /// An HTTP request to an MCP server (initialize, lists, calls, notifications).
    McpRequest,
    /// A tool call a process made on an MCP server.
    McpToolCall,
    /// A `run_code` run: a fresh isolate from the Worker Loader.
    SandboxRun,
    /// A page a worker's `browse` rendered with Browser Rendering.
    BrowserRender,
    /// Wall milliseconds those renders held a browser (billed by browser time).
    BrowserMs,
    /// A round trip to D1: one statement alone, or a whole batch (its
    /// statements each count as a [`Op::D1Query`]).
    D1Call,
    /// A D1 statement on a conversation's shard (`crate::shards`): also a [`Op::D1Query`].
    D1ShardQuery,
    /// A D1 statement that read an agent's snapshot (`crate::agents::snapshot`):
    /// also a [`Op::D1Query`]. At scale these cost once per isolate and agent
    /// per `SHARED_READS_FRESH_MS`, not per message (`make simulate`).
    D1SnapshotQuery,
    /// An agent's snapshot read (its statements are [`Op::D1SnapshotQuery`]).
    AgentSnapshot,
}

impl Op {
    /// Every kind, in the order `/api/ops` lists them.
    pub const ALL: [Op; 26] = [
        Op::WorkerInvocation,
        Op::DoRequest,
        Op::DoRequestMs,
        Op::DoWebSocketMessage,
        Op::DoRowRead,
        Op::DoRowWritten,
        Op::D1Query,
        Op::D1RowRead,
        Op::D1RowWritten,
        Op::QueueSend,
        Op::QueueDelivery,
        Op::QueueRetry,
        Op::ModelCall,
        Op::EmbeddingCall,
        Op::PlatformCall,
        Op::ToolFetch,
        Op::VectorizeCall,
        Op::McpRequest,
        Op::McpToolCall,
        Op::SandboxRun,
        Op::BrowserRender,
        Op::BrowserMs,
        Op::D1Call,
        Op::D1ShardQuery,
        Op::D1SnapshotQuery,
        Op::AgentSnapshot,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Op::WorkerInvocation => "worker_invocations",
            Op::DoRequest => "do_requests",
            Op::DoRequestMs => "do_request_ms",
            Op::DoWebSocketMessage => "do_websocket_messages",
            Op::DoRowRead => "do_rows_read",
            Op::DoRowWritten => "do_rows_written",
            Op::D1Query => "d1_queries",
            Op::D1RowRead => "d1_rows_read",
            Op::D1RowWritten => "d1_rows_written",
            Op::QueueSend => "queue_sends",
            Op::QueueDelivery => "queue_deliveries",
            Op::QueueRetry => "queue_retries",
            Op::ModelCall => "model_calls",
            Op::EmbeddingCall => "embedding_calls",
            Op::PlatformCall => "platform_calls",
            Op::ToolFetch => "tool_fetches",
            Op::VectorizeCall => "vectorize_calls",
            Op::McpRequest => "mcp_requests",
            Op::McpToolCall => "mcp_tool_calls",
            Op::SandboxRun => "sandbox_runs",
            Op::BrowserRender => "browser_renders",
            Op::BrowserMs => "browser_ms",
            Op::D1Call => "d1_calls",
            Op::D1ShardQuery => "d1_shard_queries",
            Op::D1SnapshotQuery => "d1_snapshot_queries",
            Op::AgentSnapshot => "agent_snapshots",
        }
    }
}

/// Counts, one per [`Op`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts([u64; Op::ALL.len()]);

impl Counts {
    pub fn get(&self, op: Op) -> u64 {
        self.0[op as usize]
    }

    fn add(&mut self, op: Op, amount: u64) {
        self.0[op as usize] = self.0[op as usize].saturating_add(amount);
    }

    /// `{"worker_invocations": 3, ...}`, every kind present.
    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        for op in Op::ALL {
            map.insert(op.name().into(), self.get(op).into());
        }
        Value::Object(map)
    }
}

thread_local! {
    // A Worker isolate runs one thread; natively each test thread has its own.
    static COUNTS: Cell<Counts> = Cell::new(Counts::default());
}

/// Records `amount` operations of one kind.
pub fn add(op: Op, amount: u64) {
    COUNTS.with(|counts| {
        let mut now = counts.get();
        now.add(op, amount);
        counts.set(now);
    });
}

/// Records one operation.
pub fn count(op: Op) {
    add(op, 1);
}

/// What this isolate (this thread, natively) has counted so far.
pub fn snapshot() -> Counts {
    COUNTS.with(Cell::get)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_its_own_slot_and_name() {
        for (index, op) in Op::ALL.into_iter().enumerate() {
            assert_eq!(op as usize, index, "{op:?} is listed out of order");
        }
        let names: std::collections::BTreeSet<_> = Op::ALL.iter().map(|op| op.name()).collect();
        assert_eq!(names.len(), Op::ALL.len());
    }

    #[test]
    fn counts_accumulate_per_kind() {
        let before = snapshot();
        add(Op::D1RowRead, 40);
        count(Op::D1Query);
        count(Op::D1Query);
        let after = snapshot();
        assert_eq!(after.get(Op::D1Query) - before.get(Op::D1Query), 2);
        assert_eq!(after.get(Op::D1RowRead) - before.get(Op::D1RowRead), 40);
        assert_eq!(after.get(Op::DoRowWritten), before.get(Op::DoRowWritten));
        let json = after.to_json();
        assert_eq!(json["d1_queries"], after.get(Op::D1Query));
        assert_eq!(json.as_object().map(Map::len), Some(Op::ALL.len()));
    }
}
