//! `make simulate`: replays a synthetic day of 1M, 10M and 100M messages against
//! a model of each Cloudflare component's documented limits, for the current
//! design (BEFORE) and the proposed one (AFTER: the conversation's Durable
//! Object serves the prompt's history and mirrors it in batches to D1s sharded
//! by conversation; the jobs consumer works its batch at once; inbox::settle
//! deletes through an index), shows each change alone, and prices every
//! message type.
//!
//! Pure arithmetic on the assumptions and counts below; nothing here runs the
//! Worker. docs/scale.md says what it finds. Three tables drive everything:
//! the component limits ([`LIMITS`]), the workload ([`Workload`] consts) and the
//! operations each step of the current code performs ([`ACK_OBSERVED`] ..
//! [`WORKER_SEGMENT`]), each number with a pointer to the code that spends it.

#[allow(dead_code)]
#[path = "pricing.rs"]
mod pricing;

use pricing::{Usage, DO_BILLED_GB, QUEUE_OPS_PER_MESSAGE, VERIFIED, WORKERS_PAID};

// ---------------------------------------------------------------------------
// Component limits: one place, each with its source (checked on VERIFIED).
// ---------------------------------------------------------------------------

struct Limit {
    value: f64,
    unit: &'static str,
    what: &'static str,
    source: &'static str,
}

/// "Each individual D1 database is inherently single-threaded, and processes
/// queries one at a time ... If your average query takes 1 ms, you can run
/// approximately 1,000 queries per second": a database is busy at most 1,000 ms a second.
const D1_BUSY: Limit = Limit {
    value: 1000.0,
    unit: "busy ms/s",
    what: "D1: one primary, one query at a time",
    source: "d1/platform/limits (FAQ: concurrency and throughput)",
};
const D1_SIZE: Limit = Limit {
    value: 10e9,
    unit: "bytes",
    what: "D1: maximum database size (Paid; cannot be increased)",
    source: "d1/platform/limits",
};
const D1_ACCOUNT: Limit = Limit {
    value: 1e12,
    unit: "bytes",
    what: "D1: storage per account (Paid; raised on request); 50,000 databases",
    source: "d1/platform/limits",
};
const DO_RATE: Limit = Limit {
    value: 1000.0,
    unit: "req/s",
    what: "Durable Object: soft limit per object (single-threaded)",
    source: "durable-objects/platform/limits (FAQ)",
};
const DO_SIZE: Limit = Limit {
    value: 10e9,
    unit: "bytes",
    what: "Durable Object: SQLite storage per object",
    source: "durable-objects/platform/limits",
};
const QUEUE_RATE: Limit = Limit {
    value: 5000.0,
    unit: "msg/s",
    what: "Queues: message throughput per queue",
    source: "queues/platform/limits",
};
const QUEUE_CONSUMERS: Limit = Limit {
    value: 250.0,
    unit: "invocations",
    what: "Queues: concurrent consumer invocations (push)",
    source: "queues/platform/limits",
};
const VECTORIZE_SIZE: Limit = Limit {
    value: 5e6,
    unit: "vectors",
    what: "Vectorize: vectors per index (no query rate is published)",
    source: "vectorize/platform/limits",
};
const SUBREQUESTS: Limit = Limit {
    value: 10_000.0,
    unit: "per invocation",
    what: "Workers: subrequests per invocation (Paid; D1: 1,000 queries); 6 open connections",
    source: "workers/platform/limits",
};
const TELEGRAM_CONNECTIONS: Limit = Limit {
    value: 40.0,
    unit: "connections",
    what: "Telegram (platform): webhook max_connections default (1-100)",
    source: "core.telegram.org/bots/api#setwebhook",
};
const DISCORD_SHARD: Limit = Limit {
    value: 2500.0,
    unit: "guilds",
    what: "Discord (platform): guilds per Gateway connection before sharding is required",
    source: "discord.com/developers/docs/events/gateway#sharding",
};

const LIMITS: [&Limit; 11] = [
    &D1_BUSY,
    &D1_SIZE,
    &D1_ACCOUNT,
    &DO_RATE,
    &DO_SIZE,
    &QUEUE_RATE,
    &QUEUE_CONSUMERS,
    &VECTORIZE_SIZE,
    &SUBREQUESTS,
    &TELEGRAM_CONNECTIONS,
    &DISCORD_SHARD,
];

// ---------------------------------------------------------------------------
// The workload: a synthetic day (assumptions, stated once).
// ---------------------------------------------------------------------------

/// Shares of the day's messages by what they cause (sum 1).
struct Workload;

impl Workload {
    /// Group chatter the bot only observes (most of a busy group's traffic).
    const OBSERVED: f64 = 0.80;
    /// Messages that engage a turn answered directly (DMs, mentions, replies).
    const ENGAGED: f64 = 0.165;
    /// Messages whose turn starts a branch (the turn, the branch, the retrigger).
    const BRANCH: f64 = 0.03;
    /// Messages whose turn spawns a worker.
    const WORKER: f64 = 0.005;
    /// Where messages come from; Discord channel messages arrive over the Gateway.
    const TELEGRAM: f64 = 0.40;
    const SLACK: f64 = 0.30;
    const DISCORD: f64 = 0.30;
    /// Relative traffic per hour of the day (one dominant region: night trough,
    /// evening peak); peak hour over mean is about 1.9.
    const HOURLY: [f64; 24] = [
        0.45, 0.30, 0.20, 0.15, 0.15, 0.20, 0.35, 0.60, 0.85, 1.00, 1.10, 1.15, 1.20, 1.20, 1.15, 1.15, 1.20, 1.30,
        1.45, 1.60, 1.70, 1.60, 1.20, 0.80,
    ];
    /// The busiest minute of an hour over that hour's mean (bursts: a thread
    /// takes off, a news event).
    const BURST: f64 = 1.5;
    /// Conversations: a day's messages spread over conversations whose sizes
    /// follow Zipf's law (exponent 1), averaging this many messages a day ...
    const MESSAGES_PER_CONVERSATION: f64 = 100.0;
    const ZIPF_EXPONENT: f64 = 1.0;
    /// ... but no conversation exceeds what people can type in one room: the
    /// busiest public groups see ~100k messages a day (~3.5/s at the peak).
    const HOTTEST_CONVERSATION: f64 = 100_000.0;
    /// Discord conversations (channels, threads) per guild.
    const CHANNELS_PER_GUILD: f64 = 4.0;
    /// Group bursts coalesce: turns per engaged message (DMs are 1:1).
    const TURNS_PER_ENGAGED: f64 = 0.85;
    /// Segments a worker runs (15 model turns each).
    const WORKER_SEGMENTS: f64 = 1.5;
    /// Memory tool calls per branch (branch_step.rs EdgeTools).
    const RECALLS_PER_BRANCH: f64 = 0.8;
    const SAVES_PER_BRANCH: f64 = 0.3;
    /// Memories live about a month: maintenance prunes the unaccessed ones
    /// after 30 days (cortex.rs maintain).
    const MEMORY_LIFETIME_DAYS: f64 = 30.0;

    fn peak_hour() -> f64 {
        let mean = Self::HOURLY.iter().sum::<f64>() / 24.0;
        Self::HOURLY.iter().cloned().fold(0.0, f64::max) / mean
    }

    /// The busiest minute's rate over the day's mean rate.
    fn peak_factor() -> f64 {
        Self::peak_hour() * Self::BURST
    }
}

/// Wall-clock and CPU timings (assumptions; `make bench` measures the ack path).
struct Timing;

impl Timing {
    /// One model call (gpt-4o-mini class, a few hundred output tokens).
    const LLM_CALL_S: f64 = 2.5;
    /// A channel turn, alarm to settled outbox: model + platform calls + D1.
    const TURN_S: f64 = 3.3;
    /// A branch job: 3 model calls and its tools.
    const BRANCH_JOB_S: f64 = 3.0 * Self::LLM_CALL_S + 1.0;
    /// A worker segment: ~6 model calls, 2 fetches, D1 between calls.
    const WORKER_SEGMENT_S: f64 = 6.0 * Self::LLM_CALL_S + 4.0;
    /// A webhook's round trip as Telegram waits for it (Worker + DO + SQLite).
    const ACK_S: f64 = 0.06;
    /// ChannelObject CPU per inbound, per turn (outside the inbox scan).
    const DO_ACK_CPU_MS: f64 = 0.5;
    const DO_TURN_CPU_MS: f64 = 3.0;
    /// A full scan of the object's SQLite reads ~1 KB rows at ~1 µs each.
    const SCAN_MS_PER_ROW: f64 = 0.001;
    /// Share of deliveries that find their object evicted (constructor reloads slots).
    const COLD_OBJECT: f64 = 0.2;
}

/// How long a D1 query keeps the (single-threaded) database busy. The docs:
/// an indexed point read takes "less than a millisecond"; writes "can take
/// several milliseconds ... Writes need to be durably persisted across several
/// locations". Modelled as a per-statement cost, per-row costs and one durable
/// commit per round trip that writes (a batch is one transaction).
struct D1Cost;

impl D1Cost {
    const QUERY_MS: f64 = 0.2;
    const ROW_READ_MS: f64 = 0.005;
    const ROW_WRITTEN_MS: f64 = 0.05;
    const COMMIT_MS: f64 = 2.0;
}

/// Stored bytes, tables and indexes, at ~80% page fill (assumptions).
struct Bytes;

impl Bytes {
    /// A `messages` row for an inbound (~120 characters of text) with its
    /// primary-key and `messages_by_conversation` index entries.
    const INBOUND_ROW: f64 = 500.0;
    /// A reply (~450 characters).
    const REPLY_ROW: f64 = 830.0;
    /// A worker's `run` JSON: its whole model conversation, tool outputs included.
    const WORKER_RUN: f64 = 40_000.0;
    /// A memory: row, three indexes, FTS5 entry, two association edges.
    const MEMORY: f64 = 1_300.0;
    /// An inbox row in the ChannelObject (the event's JSON), kept 7 days.
    const INBOX_ROW: f64 = 900.0;
    /// Embedding dimensions (bge-small-en-v1.5 / the local embedder).
    const DIMENSIONS: f64 = 384.0;
}

// ---------------------------------------------------------------------------
// Operation counts of the current code, per step.
// ---------------------------------------------------------------------------

macro_rules! counted {
    ($(#[$meta:meta])* struct $name:ident { $($(#[$field_meta:meta])* $field:ident,)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, Default)]
        struct $name { $($(#[$field_meta])* $field: f64,)* }

        impl $name {
            const ZERO: $name = $name { $($field: 0.0,)* };

            /// `self` plus `times` of `other`.
            const fn and(self, other: $name, times: f64) -> $name {
                $name { $($field: self.$field + other.$field * times,)* }
            }
        }
    };
}

counted! {
    /// What one step (or one message) makes each component do.
    struct Ops {
        /// Worker invocations (webhook fetch, queue consumer batch) and their CPU.
        worker_requests,
        worker_cpu_ms,
        /// Billed Durable Object requests (fetch, alarm; Gateway frames 20:1).
        do_requests,
        /// Wall time a ChannelObject is active (duration billing).
        do_active_ms,
        do_rows_read,
        do_rows_written,
        /// Frames through the one GatewayObject (all Discord traffic).
        gateway_frames,
        /// D1, tables keyed by conversation: messages, summaries, workers, usage (today on the primary).
        conv_queries,
        conv_commits,
        conv_rows_read,
        conv_rows_written,
        conv_bytes,
        /// D1, the agent-wide tables: memories, memory_meta (the bulletin), tasks, schedules.
        global_queries,
        global_commits,
        global_rows_read,
        global_rows_written,
        global_bytes,
        /// Queue `jobs`: sends, and consumer wall time (an invocation works its
        /// batch one job at a time: jobs.rs `for message in messages`).
        queue_sends,
        job_seconds,
        vector_queries,
        vectors_stored,
        embed_tokens,
        /// Subrequests outside Cloudflare: model/embedding calls, platform APIs and the web.
        llm_calls,
        api_calls,
        /// Channel turns (alarm runs of run_one).
        turns,
    }
}

const TG: f64 = Workload::TELEGRAM;
const SL: f64 = Workload::SLACK;
const DC: f64 = Workload::DISCORD;
/// Gateway dispatches per Discord message: MESSAGE_CREATE plus edits and
/// reactions under the intents gateway_object.rs identifies with.
const FRAMES_PER_DISCORD_MESSAGE: f64 = 1.3;
/// Messages a turn stores as history (coalesced inbounds, process reports) and replies it sends.
const STORED_PER_TURN: f64 = 1.15;
const PIECES_PER_TURN: f64 = 1.05;

/// An observed message, from webhook to 200.
const ACK_OBSERVED: Ops = Ops {
    // webhooks.rs telegram()/slack(): one fetch invocation per delivery; Discord
    // channel messages come over the Gateway (gateway_object.rs hand_over) instead.
    worker_requests: TG + SL,
    // verify + parse + serialise (assumption; `make bench` prints workerd CPU per webhook).
    worker_cpu_ms: (TG + SL) * 1.0,
    // webhooks.rs deliver() -> ChannelObject fetch /inbound; a Gateway frame bills 1/20 request.
    do_requests: 1.0 + DC * FRAMES_PER_DISCORD_MESSAGE / 20.0,
    // channel_object.rs receive(): inbox lookup, checkpoint, inbox insert (assumption).
    do_active_ms: 5.0,
    // inbox::contains (1); a cold object's constructor runs slots::load (~25 rows) and inbox::PROBE.
    do_rows_read: 1.0 + Timing::COLD_OBJECT * 26.0,
    // slots::save: context_buffer (+ participants/membership now and then) = 1.2;
    // inbox::store: row + UNIQUE(delivery_id) + sqlite_sequence = 3; its delete by
    // inbox::settle a week later: row + index = 2; GatewayObject Move::Persist per
    // dispatch with a seq (gateway.rs on_frame -> Shared::save) = 1 per frame.
    do_rows_written: 1.2 + 3.0 + 2.0 + DC * FRAMES_PER_DISCORD_MESSAGE,
    gateway_frames: DC * FRAMES_PER_DISCORD_MESSAGE,
    ..Ops::ZERO
};

/// An engaged message's ack: as observed, plus the prompt queue and the alarm.
const ACK_ENGAGED: Ops = Ops {
    // slots::save also writes prompt_queue (+ sticky/loop guard now and then): 1.6 rows;
    // state.set_alarm (channel_object.rs receive): "each setAlarm() is billed as a single row written".
    do_rows_written: 1.6 + 3.0 + 2.0 + DC * FRAMES_PER_DISCORD_MESSAGE + 1.0,
    ..ACK_OBSERVED
};

/// One channel turn that answers with one reply (turn_runner.rs run -> run_one),
/// without its D1 history reads and writes ([`TURN_HISTORY_D1`]).
const TURN: Ops = Ops {
    // the alarm invocation (turn_runner::run).
    do_requests: 1.0,
    // the object is active while it awaits the model and the platform.
    do_active_ms: Timing::TURN_S * 1000.0,
    // outbox::entries (1 per piece). inbox::settle's DELETE scans the whole inbox (no index on
    // received_at): added per conversation size in `turn_scan_rows`.
    do_rows_read: PIECES_PER_TURN,
    // begin_turn step 2; record_turn_result 1; outbox::enqueue per piece (row, PK, outbox_by_turn) 3;
    // mark_sending 1 + mark_sent 1 per piece; inbox::settle UPDATE per handled message 1;
    // finish_turn step (prompt_queue, context_buffer, sticky, bot_sends, token_usage,
    // versions_seen, current_turn) 7; a follow-up set_alarm half the time 0.5.
    do_rows_written: 2.0 + 1.0 + PIECES_PER_TURN * 5.0 + STORED_PER_TURN + 7.0 + 0.5,
    // run_turn: the reply tool (or plain text) ends the turn after one call.
    llm_calls: 1.0,
    // show_working (Telegram typing + reaction, Slack reaction, Discord typing), renew_working
    // (Telegram, Discord; every 4.5 s, ~0.3 per turn), refresh_membership (groups, count older
    // than 60 s: ~0.5), send per piece, clear_working (Telegram, Slack reaction).
    api_calls: TG * 2.0 + SL + DC + 0.3 * (TG + DC) + 0.5 + PIECES_PER_TURN + TG + SL,
    turns: 1.0,
    ..Ops::ZERO
};

/// The current history path of one turn (history.rs), all on the one D1 primary.
const TURN_HISTORY_D1: Ops = Ops {
    // load_and_record: ONE batch of summaries, latest, bulletin + an INSERT per stored message;
    // record(): one batch of an INSERT per piece sent.
    conv_queries: 3.0 + STORED_PER_TURN + PIECES_PER_TURN,
    // both batches write, so both pay a durable commit.
    conv_commits: 2.0,
    // summaries (~1), latest (LIMIT history_limit + current = 51.15), bulletin (1).
    conv_rows_read: 1.0 + 51.15 + 1.0,
    // each INSERT: row + PK autoindex + messages_by_conversation = 3 rows.
    conv_rows_written: (STORED_PER_TURN + PIECES_PER_TURN) * 3.0,
    conv_bytes: STORED_PER_TURN * Bytes::INBOUND_ROW + PIECES_PER_TURN * Bytes::REPLY_ROW,
    ..Ops::ZERO
};

/// The extra work of a turn that starts a branch (channel_object/delegation.rs delegate).
const BRANCH_DELEGATION: Ops = Ops {
    // the branch tool call does not end the turn: a second call for the reply.
    llm_calls: 1.0,
    // start_process step (processes slot) 1; envelopes::log (row, UNIQUE id, sqlite_sequence) 3.
    do_rows_written: 4.0,
    // env.queue(JOBS).send(BranchJob).
    queue_sends: 1.0,
    ..Ops::ZERO
};

/// One memory_recall, hybrid (edge/memory/recall.rs recall -> hybrid).
const MEMORY_RECALL: Ops = Ops {
    // embed_one: one embedding call of the query.
    llm_calls: 1.0,
    embed_tokens: 30.0,
    // index.query (Vectorize in production: VECTOR_BACKEND=vectorize).
    vector_queries: 1.0,
    // full_text 1, neighbours 1, read_and_touch batch (SELECT + UPDATE) 2.
    global_queries: 4.0,
    // read_and_touch writes access counts: one commit.
    global_commits: 1.0,
    // FTS candidates ~40, edges ~20, the results ~10 twice.
    global_rows_read: 80.0,
    // access_count/last_accessed_at of ~10 results (no index on them).
    global_rows_written: 10.0,
    ..Ops::ZERO
};

/// One memory_save (memory.rs save).
const MEMORY_SAVE: Ops = Ops {
    llm_calls: 1.0,
    embed_tokens: 40.0,
    // neighbours for linking, then the upsert.
    vector_queries: 1.0,
    vectors_stored: 1.0,
    // one batch: INSERT memories, memories_fts, bump_version, ~2 associations.
    global_queries: 5.0,
    global_commits: 1.0,
    global_rows_read: 3.0,
    // memory row + PK + 3 indexes 5; FTS5 shadow rows ~4; version 1; 2 edges x (PK + by_target) 4.
    global_rows_written: 14.0,
    global_bytes: Bytes::MEMORY,
    ..Ops::ZERO
};

/// A branch job, without its memory tools (jobs.rs handle -> branch_step::run).
const BRANCH_JOB: Ops = Ops {
    // one consumer invocation per batch: max_batch_size = 4 (wrangler.toml).
    worker_requests: 0.25,
    // prompt rendering, the fork's JSON (assumption).
    worker_cpu_ms: 6.0,
    job_seconds: Timing::BRANCH_JOB_S,
    // run_branch: a tool round or two, then the conclusion.
    llm_calls: 3.0,
    // usage::record: one upsert of the (conversation, "branch") row.
    conv_queries: 1.0,
    conv_commits: 1.0,
    conv_rows_read: 1.0,
    conv_rows_written: 1.0,
    ..Ops::ZERO
};

/// A branch's or worker's report reaching the channel (jobs.rs deliver ->
/// channel_object.rs receive_process_event), which retriggers a turn.
const PROCESS_REPORT: Ops = Ops {
    do_requests: 1.0,
    do_active_ms: 5.0,
    // envelopes::log 3; processes + process_events slots 2; set_alarm 1.
    do_rows_written: 6.0,
    ..Ops::ZERO
};

/// The extra work of a turn that spawns a worker (channel_object/delegation.rs start_worker).
const WORKER_SPAWN: Ops = Ops {
    llm_calls: 1.0,
    // processes slot 1; task envelope 3.
    do_rows_written: 4.0,
    queue_sends: 1.0,
    ..Ops::ZERO
};

/// Once per worker (worker_step.rs): create, the final run stored, tasks::settle_worker.
const WORKER_ONCE: Ops = Ops {
    // create (INSERT ... ON CONFLICT): workers row + PK + workers_by_conversation; the run
    // JSON the row ends with (never pruned).
    conv_queries: 1.0,
    conv_commits: 1.0,
    conv_rows_written: 3.0,
    conv_bytes: Bytes::WORKER_RUN,
    // tasks::settle_worker's SELECT through the in-progress tasks (tasks_ready index).
    global_queries: 1.0,
    global_rows_read: 5.0,
    ..Ops::ZERO
};

/// One worker segment (worker_step.rs run_step; 15 model turns at most).
const WORKER_SEGMENT: Ops = Ops {
    worker_requests: 0.25,
    worker_cpu_ms: 10.0,
    job_seconds: Timing::WORKER_SEGMENT_S,
    // run_segment: ~6 model calls; http_fetch x2 (+ redirects), web_search now and then.
    llm_calls: 6.0,
    api_calls: 2.5,
    // load 1; is_cancelled before each model call 6; save batch (workers UPDATE + usage) 2;
    // clear_pending 1.
    conv_queries: 10.0,
    // save and clear_pending write.
    conv_commits: 2.0,
    conv_rows_read: 7.0,
    // workers row + workers_by_conversation (updated_at moves) 2, usage 1, pending cleared 1.
    conv_rows_written: 4.0,
    // report_progress (set_status, ~1) and heartbeats (every 60 s, ~0.3): deliver to the channel;
    // a progress line logs an envelope (3) and moves the processes slot (1).
    do_requests: 1.3,
    do_active_ms: 1.3 * 5.0,
    do_rows_written: 4.0 + 0.3,
    ..Ops::ZERO
};

// ---------------------------------------------------------------------------
// Conversations: a Zipf population, bucketed so any volume is cheap to sum.
// ---------------------------------------------------------------------------

/// Conversations as (how many, messages a day each).
struct Population {
    buckets: Vec<(f64, f64)>,
}

impl Population {
    fn new(daily: f64) -> Population {
        let count = (daily / Workload::MESSAGES_PER_CONVERSATION).max(1.0);
        let s = Workload::ZIPF_EXPONENT;
        // Ranks 1..1000 one by one, then ranges 20 to a decade (weights by integral).
        let mut ranges: Vec<(f64, f64)> = Vec::new();
        let exact = count.min(1000.0) as usize;
        for rank in 1..=exact {
            ranges.push((1.0, (rank as f64).powf(-s)));
        }
        let mut start = exact as f64 + 1.0;
        while start <= count {
            let end = (start * 10f64.powf(1.0 / 20.0)).min(count + 1.0).max(start + 1.0);
            let n = (end - start).floor().max(1.0);
            let (a, b) = (start - 0.5, start + n - 0.5);
            let sum =
                if (s - 1.0).abs() < 1e-9 { (b / a).ln() } else { (b.powf(1.0 - s) - a.powf(1.0 - s)) / (1.0 - s) };
            ranges.push((n, sum / n));
            start += n;
        }
        let total: f64 = ranges.iter().map(|(n, weight)| n * weight).sum();
        let mut buckets: Vec<(f64, f64)> = ranges.iter().map(|(n, weight)| (*n, daily * weight / total)).collect();
        // Cap the hottest at what a room can type; spread the excess over the rest.
        for _ in 0..8 {
            let excess: f64 = buckets.iter().map(|(n, m)| n * (m - Workload::HOTTEST_CONVERSATION).max(0.0)).sum();
            if excess < 1e-6 * daily {
                break;
            }
            let free: f64 =
                buckets.iter().filter(|(_, m)| *m < Workload::HOTTEST_CONVERSATION).map(|(n, m)| n * m).sum();
            for (_, m) in buckets.iter_mut() {
                if *m >= Workload::HOTTEST_CONVERSATION {
                    *m = Workload::HOTTEST_CONVERSATION;
                } else if free > 0.0 {
                    *m *= 1.0 + excess / free;
                }
            }
        }
        Population { buckets }
    }

    fn conversations(&self) -> f64 {
        self.buckets.iter().map(|(n, _)| n).sum()
    }

    fn hottest(&self) -> f64 {
        self.buckets.first().map_or(0.0, |(_, m)| *m)
    }

    /// Sum over conversations of f(messages a day), weighted by messages
    /// (an average per message, or per turn: turns follow messages).
    fn per_message(&self, f: impl Fn(f64) -> f64) -> f64 {
        let total: f64 = self.buckets.iter().map(|(n, m)| n * m).sum();
        self.buckets.iter().map(|(n, m)| n * m * f(*m)).sum::<f64>() / total
    }

    /// The same for a whole set of operations.
    fn ops_per_message(&self, f: impl Fn(f64) -> Ops) -> Ops {
        let total: f64 = self.buckets.iter().map(|(n, m)| n * m).sum();
        self.buckets.iter().fold(Ops::ZERO, |sum, (n, m)| sum.and(f(*m), n * m / total))
    }
}

// ---------------------------------------------------------------------------
// Designs.
// ---------------------------------------------------------------------------

#[derive(Clone, Copy)]
struct Design {
    name: &'static str,
    /// The ChannelObject keeps the recent history (and summaries, and a cached
    /// bulletin) in its SQLite and serves the prompt from there ...
    history_in_object: bool,
    /// ... and mirrors new rows to D1 at the end of a turn once `mirror_rows`
    /// are pending, the oldest is `mirror_seconds` old, or the room went quiet
    /// (as built: after every alarm, so `mirror_seconds` 0 and a turn's rows).
    mirror_rows: f64,
    mirror_seconds: f64,
    /// D1 databases the conversation-keyed tables (messages, summaries, workers,
    /// usage) are spread over by hash of the conversation key; 1: all on the primary.
    conversation_shards: f64,
    /// Jobs a queue consumer invocation works at once (today 1: jobs.rs awaits
    /// each in turn; at most 6, the open connections an invocation may hold).
    jobs_at_once: f64,
    /// inbox::settle deletes through an index on received_at instead of a full scan.
    inbox_index: bool,
}

const BEFORE: Design = Design {
    name: "BEFORE: current design",
    history_in_object: false,
    mirror_rows: 0.0,
    mirror_seconds: 0.0,
    conversation_shards: 1.0,
    jobs_at_once: 1.0,
    inbox_index: false,
};

/// The history change alone: off the hot path, still one D1.
const HISTORY_IN_OBJECT: Design = Design {
    name: "B: history served by the ChannelObject, mirrored in batches (one D1)",
    history_in_object: true,
    // turn_runner::run mirrors after every alarm's turns (one batch): a flush per turn.
    mirror_rows: STORED_PER_TURN + PIECES_PER_TURN,
    mirror_seconds: 0.0,
    ..BEFORE
};

/// ... and the conversation tables sharded.
const SHARDED: Design = Design { name: "A + B", conversation_shards: 16.0, ..HISTORY_IN_OBJECT };

/// Everything recommended.
const AFTER: Design = Design {
    name: "AFTER: A + B + 6 jobs at once per consumer invocation + an inbox index",
    jobs_at_once: 6.0,
    inbox_index: true,
    ..SHARDED
};

/// The history change without the object: sharding alone, for the summary.
const SHARDS_ONLY: Design =
    Design { name: "A: conversation tables over 16 D1s (history path as today)", conversation_shards: 16.0, ..BEFORE };

/// How long the ChannelObject keeps the memory bulletin before reading it again
/// (the cron rebuilds it at most every 15 minutes).
const BULLETIN_CACHE_S: f64 = 900.0;
/// Rows a conversation keeps in its object (history_mirror::kept_rows: history_limit 50 twice, at least 200).
const KEPT_HISTORY_ROWS: f64 = 200.0;

/// Rows of the object's `history` table a turn reads: it has no secondary index (each
/// would cost a row written per row, billed 1,000x a row read), so history::load, the
/// mirror's pending read, has_pending and the prune (and its OFFSET walk) each scan it.
fn history_scan_rows(design: &Design) -> f64 {
    if design.history_in_object {
        5.0 * KEPT_HISTORY_ROWS
    } else {
        0.0
    }
}

/// The history path of one turn under `design`, averaged over the
/// conversations turns happen in; `rate` is the traffic over the day's mean.
fn turn_history(design: &Design, population: &Population, rate: f64) -> Ops {
    let rows = STORED_PER_TURN + PIECES_PER_TURN;
    if !design.history_in_object {
        if design.conversation_shards > 1.0 {
            // The history batch moves to the shard; the bulletin read stays on the primary.
            return Ops {
                conv_queries: TURN_HISTORY_D1.conv_queries - 1.0,
                conv_rows_read: TURN_HISTORY_D1.conv_rows_read - 1.0,
                global_queries: 1.0,
                global_rows_read: 1.0,
                ..TURN_HISTORY_D1
            };
        }
        return TURN_HISTORY_D1;
    }
    let turns_per_message = mix_turns();
    // A conversation's history rows per second at this rate, and what one flush carries: at
    // least a turn's rows (inbound and reply land within one alarm), at most mirror_rows.
    // Flushes ride on the turn's own alarm: no extra request.
    let per_turn = |messages_a_day: f64| {
        let turns_per_s = messages_a_day / 86_400.0 * rate * turns_per_message;
        let batch = (turns_per_s * rows * design.mirror_seconds).clamp(rows, design.mirror_rows);
        let flushes = rows / batch;
        let bulletin_reads = (1.0 / BULLETIN_CACHE_S / turns_per_s.max(1e-12)).min(1.0);
        Ops {
            // One INSERT OR IGNORE ... SELECT FROM json_each(?) per flush (as memory::import does).
            conv_queries: flushes,
            conv_commits: flushes,
            conv_rows_written: rows * 3.0,
            conv_bytes: TURN_HISTORY_D1.conv_bytes,
            // The bulletin, read when the cached copy is older than 15 minutes.
            global_queries: bulletin_reads,
            global_rows_read: bulletin_reads,
            // History and summaries served from the object; pending rows read back to mirror.
            do_rows_read: history_scan_rows(design) + rows,
            // Each row: insert + UNIQUE id (2), its `mirrored` flag once D1 took it (1), its
            // prune once 200 newer exist (2).
            do_rows_written: rows * 5.0,
            ..Ops::ZERO
        }
    };
    population.ops_per_message(per_turn)
}

/// Rows the inbox keeps in a conversation of this size (7 days).
fn inbox_rows(messages_a_day: f64) -> f64 {
    7.0 * messages_a_day
}

/// Rows inbox::settle reads on each turn: today its DELETE (`status != 'queued' AND
/// received_at < ?`, no index) scans the whole inbox; through an index on received_at
/// it reads what it deletes (a turn's share of the inbounds, row and index entry).
fn settle_rows(design: &Design, messages_a_day: f64) -> f64 {
    match design.inbox_index {
        true => 2.0 / mix_turns(),
        false => inbox_rows(messages_a_day),
    }
}

fn mix_turns() -> f64 {
    Workload::ENGAGED * Workload::TURNS_PER_ENGAGED + Workload::BRANCH * 2.0 + Workload::WORKER * 2.0
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Observed,
    Engaged,
    Branch,
    Worker,
}

const KINDS: [(Kind, &str, f64); 4] = [
    (Kind::Observed, "observed group chatter", Workload::OBSERVED),
    (Kind::Engaged, "engaged turn (reply)", Workload::ENGAGED),
    (Kind::Branch, "branch-starting turn", Workload::BRANCH),
    (Kind::Worker, "worker task", Workload::WORKER),
];

/// Everything one message of `kind` causes, from webhook to its last reply.
fn message(kind: Kind, design: &Design, population: &Population, rate: f64) -> Ops {
    let scan = population.per_message(|messages_a_day| settle_rows(design, messages_a_day));
    let turn = TURN.and(turn_history(design, population, rate), 1.0).and(Ops { do_rows_read: scan, ..Ops::ZERO }, 1.0);
    match kind {
        Kind::Observed => ACK_OBSERVED,
        Kind::Engaged => ACK_ENGAGED.and(turn, Workload::TURNS_PER_ENGAGED),
        Kind::Branch => ACK_ENGAGED
            .and(turn, 2.0)
            .and(BRANCH_DELEGATION, 1.0)
            .and(BRANCH_JOB, 1.0)
            .and(MEMORY_RECALL, Workload::RECALLS_PER_BRANCH)
            .and(MEMORY_SAVE, Workload::SAVES_PER_BRANCH)
            .and(PROCESS_REPORT, 1.0),
        Kind::Worker => ACK_ENGAGED
            .and(turn, 2.0)
            .and(WORKER_SPAWN, 1.0)
            .and(WORKER_ONCE, 1.0)
            .and(WORKER_SEGMENT, Workload::WORKER_SEGMENTS)
            .and(Ops { queue_sends: Workload::WORKER_SEGMENTS - 1.0, ..Ops::ZERO }, 1.0)
            .and(PROCESS_REPORT, 1.0),
    }
}

/// The day's mix, per message.
fn mix(design: &Design, population: &Population, rate: f64) -> Ops {
    KINDS.iter().fold(Ops::ZERO, |sum, (kind, _, share)| sum.and(message(*kind, design, population, rate), *share))
}

fn d1_busy_ms(queries: f64, commits: f64, rows_read: f64, rows_written: f64) -> f64 {
    queries * D1Cost::QUERY_MS
        + commits * D1Cost::COMMIT_MS
        + rows_read * D1Cost::ROW_READ_MS
        + rows_written * D1Cost::ROW_WRITTEN_MS
}

fn usage(ops: &Ops) -> Usage {
    Usage {
        worker_requests: ops.worker_requests,
        worker_cpu_ms: ops.worker_cpu_ms,
        do_requests: ops.do_requests,
        do_gb_seconds: ops.do_active_ms / 1000.0 * DO_BILLED_GB,
        do_rows_read: ops.do_rows_read,
        do_rows_written: ops.do_rows_written,
        // The inbox keeps each event a week.
        do_gb_months: Bytes::INBOX_ROW * 7.0 / 30.0 / 1e9,
        d1_rows_read: ops.conv_rows_read + ops.global_rows_read,
        d1_rows_written: ops.conv_rows_written + ops.global_rows_written,
        // One month of keeping what the message stored.
        d1_gb_months: (ops.conv_bytes + ops.global_bytes) / 1e9,
        queue_operations: ops.queue_sends * QUEUE_OPS_PER_MESSAGE,
        vectorize_queried_dimensions: ops.vector_queries * Bytes::DIMENSIONS,
        vectorize_stored_dimension_months: ops.vectors_stored * Bytes::DIMENSIONS,
        neurons: ops.embed_tokens * 1841.0 / 1e6,
        // The simulated message types run no code and browse no page (benches/cost.rs prices those).
        ..Usage::default()
    }
}

// ---------------------------------------------------------------------------
// Component loads.
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq)]
enum Component {
    D1Primary,
    D1ConversationShard,
    QueueConsumers,
    QueueRate,
    GatewayObject,
    HottestChannel,
    Subrequests,
    TelegramWebhook,
    DiscordShard,
}

impl Component {
    fn label(self) -> &'static str {
        match self {
            Component::D1Primary => "D1 primary (busy ms/s)",
            Component::D1ConversationShard => "D1 conversation shard (busy ms/s)",
            Component::QueueConsumers => "Queue consumers (invocations busy)",
            Component::QueueRate => "Queue jobs (msg/s)",
            Component::GatewayObject => "GatewayObject (frames/s)",
            Component::HottestChannel => "hottest ChannelObject (req or CPU ms/s)",
            Component::Subrequests => "subrequests per invocation (worst)",
            Component::TelegramWebhook => "Telegram webhook (deliveries in flight)",
            Component::DiscordShard => "Discord Gateway shard (guilds)",
        }
    }

    fn limit(self) -> f64 {
        match self {
            Component::D1Primary | Component::D1ConversationShard => D1_BUSY.value,
            Component::QueueConsumers => QUEUE_CONSUMERS.value,
            Component::QueueRate => QUEUE_RATE.value,
            Component::GatewayObject | Component::HottestChannel => DO_RATE.value,
            Component::Subrequests => SUBREQUESTS.value,
            Component::TelegramWebhook => TELEGRAM_CONNECTIONS.value,
            Component::DiscordShard => DISCORD_SHARD.value,
        }
    }

    fn outside_cloudflare(self) -> bool {
        matches!(self, Component::TelegramWebhook | Component::DiscordShard)
    }

    fn breaks(self) -> &'static str {
        match self {
            Component::D1Primary | Component::D1ConversationShard => {
                "D1 queues, then answers \"overloaded\": history::load_and_record fails before the model is \
                 called, the alarm retries with backoff; replies come late or not at all, and every D1 user \
                 (memory tools, workers, admin) stalls with it"
            }
            Component::QueueConsumers => {
                "jobs wait in the queue: a branch not done 60 s (BRANCH_TIMEOUT_MS) after it started is given up \
                 on and the person is told it failed; worker results arrive late"
            }
            Component::QueueRate => {
                "send() throws Too Many Requests: the turn fails after the model answered and is retried"
            }
            Component::GatewayObject => {
                "Discord frames queue in the one object, then \"overloaded\": hand-overs fail (3 tries) and Discord \
                 messages are dropped; heartbeats slip and the session drops"
            }
            Component::HottestChannel => {
                "the busiest group's acks slow (platforms retry) and its turns lag; inbox::settle scans a week of \
                 the inbox on every turn"
            }
            Component::Subrequests => "the invocation's later fetches throw: a turn or segment ends half done",
            Component::TelegramWebhook => {
                "updates wait at Telegram (pending_update_count grows): every reply is delayed"
            }
            Component::DiscordShard => {
                "Discord closes the Gateway with 4011 (sharding required) and edgebot stops it for good: Discord \
                 channel messages go unheard"
            }
        }
    }
}

const THROUGHPUT: [Component; 9] = [
    Component::D1Primary,
    Component::D1ConversationShard,
    Component::QueueConsumers,
    Component::QueueRate,
    Component::GatewayObject,
    Component::HottestChannel,
    Component::Subrequests,
    Component::TelegramWebhook,
    Component::DiscordShard,
];

/// A component's load at `daily` messages a day, in the busiest minute of the
/// hour `rate` describes (traffic over the day's mean).
fn load(component: Component, design: &Design, daily: f64, rate: f64) -> f64 {
    let population = Population::new(daily);
    let per_second = daily / 86_400.0 * rate;
    let ops = mix(design, &population, rate);
    let conversation_ms = d1_busy_ms(ops.conv_queries, ops.conv_commits, ops.conv_rows_read, ops.conv_rows_written);
    let global_ms = d1_busy_ms(ops.global_queries, ops.global_commits, ops.global_rows_read, ops.global_rows_written);
    match component {
        Component::D1Primary => {
            let conversations_here = if design.conversation_shards > 1.0 { 0.0 } else { conversation_ms };
            per_second * (global_ms + conversations_here)
        }
        Component::D1ConversationShard if design.conversation_shards > 1.0 => {
            per_second * conversation_ms / design.conversation_shards
        }
        Component::D1ConversationShard => 0.0,
        // Little's law: jobs arriving a second x how long each holds an invocation.
        Component::QueueConsumers => per_second * ops.job_seconds / design.jobs_at_once,
        Component::QueueRate => per_second * ops.queue_sends,
        Component::GatewayObject => per_second * ops.gateway_frames,
        Component::HottestChannel => {
            let hottest = population.hottest() / 86_400.0 * rate;
            let turns = hottest * ops.turns;
            let requests = hottest * ops.do_requests;
            let cpu_ms = hottest * Timing::DO_ACK_CPU_MS
                + turns
                    * (Timing::DO_TURN_CPU_MS
                        + (settle_rows(design, population.hottest()) + history_scan_rows(design))
                            * Timing::SCAN_MS_PER_ROW);
            requests.max(cpu_ms)
        }
        Component::Subrequests => {
            // An alarm runs up to 8 turns (MAX_TURNS_PER_ALARM); each: 2 model calls, ~4 platform
            // calls, 2 D1 round trips, a queue send. A worker segment: 15 model calls, 15
            // is_cancelled reads, a fetch with up to 5 redirects per call. Not load-dependent.
            (8.0_f64 * (2.0 + 4.0 + 2.0 + 1.0)).max(15.0 + 15.0 + 15.0 * 5.0)
        }
        Component::TelegramWebhook => per_second * Workload::TELEGRAM * Timing::ACK_S,
        Component::DiscordShard => population.conversations() * Workload::DISCORD / Workload::CHANNELS_PER_GUILD,
    }
}

fn peak_load(component: Component, design: &Design, daily: f64) -> f64 {
    load(component, design, daily, Workload::peak_factor())
}

/// The daily volume at which the component's peak reaches its limit.
fn saturates_at(component: Component, design: &Design) -> Option<f64> {
    let over = |daily: f64| peak_load(component, design, daily) >= component.limit();
    let (mut low, mut high) = (1e4_f64, 1e12_f64);
    if !over(high) {
        return None;
    }
    if over(low) {
        return Some(low);
    }
    for _ in 0..60 {
        let middle = (low * high).sqrt();
        if over(middle) {
            high = middle;
        } else {
            low = middle;
        }
    }
    Some(high)
}

/// Hours of the day in which the busiest minute is over the limit.
fn hours_over(component: Component, design: &Design, daily: f64) -> usize {
    let mean = Workload::HOURLY.iter().sum::<f64>() / 24.0;
    Workload::HOURLY
        .iter()
        .filter(|weight| load(component, design, daily, *weight / mean * Workload::BURST) >= component.limit())
        .count()
}

/// The jobs queue over the day: arrivals per hour against what 250 invocations
/// clear. None: it keeps up; Some((worst wait in seconds, whether the backlog
/// outlives the day because even the day's average is more than they clear)).
fn queue_backlog(design: &Design, daily: f64) -> Option<(f64, bool)> {
    let mean = Workload::HOURLY.iter().sum::<f64>() / 24.0;
    let ops = mix(design, &Population::new(daily), 1.0);
    let job_seconds = ops.job_seconds / ops.queue_sends.max(1e-12);
    let capacity = QUEUE_CONSUMERS.value * design.jobs_at_once / job_seconds;
    let (mut backlog, mut worst) = (0.0_f64, 0.0_f64);
    for weight in Workload::HOURLY {
        let arriving = daily / 86_400.0 * weight / mean * ops.queue_sends;
        backlog = (backlog + (arriving - capacity) * 3600.0).max(0.0);
        worst = worst.max(backlog / capacity);
    }
    let grows = daily / 86_400.0 * ops.queue_sends > capacity;
    (worst > 0.0).then_some((worst, grows))
}

// ---------------------------------------------------------------------------
// Capacity over time.
// ---------------------------------------------------------------------------

struct Capacity {
    label: &'static str,
    per_day: f64,
    limit: f64,
    /// What it settles at when its contents expire (memories are pruned after
    /// 30 days, the inbox after 7); None: it only grows.
    steady: Option<f64>,
    breaks: &'static str,
}

fn capacity(design: &Design, daily: f64) -> Vec<Capacity> {
    let population = Population::new(daily);
    let ops = mix(design, &population, 1.0);
    let conversations = ops.conv_bytes * daily;
    let global = ops.global_bytes * daily;
    let saves = ops.vectors_stored * daily;
    let hottest_object = inbox_rows(population.hottest()) * Bytes::INBOX_ROW
        + if design.history_in_object { KEPT_HISTORY_ROWS * Bytes::REPLY_ROW } else { 0.0 };
    let history_insert_fails = if design.history_in_object {
        "its mirror fails: the objects keep the rows and retry, replies go on, the D1 copy and the admin \
         history fall behind (workers in it fail)"
    } else {
        "every INSERT fails: history::load_and_record errors on every engaged turn, so nobody gets a reply"
    };
    let mut rows = Vec::new();
    if design.conversation_shards > 1.0 {
        rows.push(Capacity {
            label: "D1 primary (memories, tasks)",
            per_day: global,
            limit: D1_SIZE.value,
            steady: Some(global * Workload::MEMORY_LIFETIME_DAYS),
            breaks: "memory_save and task writes fail: branches report errors",
        });
        rows.push(Capacity {
            label: "D1 conversation shard (each)",
            per_day: conversations / design.conversation_shards,
            limit: D1_SIZE.value,
            steady: None,
            breaks: history_insert_fails,
        });
    } else {
        rows.push(Capacity {
            label: "D1 primary (all)",
            per_day: conversations + global,
            limit: D1_SIZE.value,
            steady: None,
            breaks: history_insert_fails,
        });
    }
    rows.push(Capacity {
        label: "D1 account (all databases)",
        per_day: conversations + global,
        limit: D1_ACCOUNT.value,
        steady: None,
        breaks: "writes fail in every database until Cloudflare raises the limit (on request)",
    });
    rows.push(Capacity {
        label: "Vectorize index (memories)",
        per_day: saves,
        limit: VECTORIZE_SIZE.value,
        steady: Some(saves * Workload::MEMORY_LIFETIME_DAYS),
        breaks: "upserts fail: memory_save errors and branches report failure",
    });
    rows.push(Capacity {
        label: "hottest ChannelObject storage",
        per_day: 0.0,
        limit: DO_SIZE.value,
        steady: Some(hottest_object),
        breaks: "the object's writes fail: its conversation stops",
    });
    rows
}

/// Conversation databases needed to hold one month of conversation tables
/// (rotating to a fresh set each month; the old set stays, read-only).
fn shards_for_a_month(design: &Design, daily: f64) -> f64 {
    let ops = mix(design, &Population::new(daily), 1.0);
    (ops.conv_bytes * daily * 31.0 / D1_SIZE.value).ceil()
}

// ---------------------------------------------------------------------------
// Output.
// ---------------------------------------------------------------------------

/// Prints `text` wrapped at 118 columns (at spaces), later lines indented by `indent`.
fn say(text: &str, indent: usize) {
    let mut rest = text.to_string();
    while rest.chars().count() > 118 {
        let cut = rest.char_indices().take_while(|(at, _)| *at <= 118).filter(|(_, c)| *c == ' ').last();
        let Some((at, _)) = cut.filter(|(at, _)| *at > indent) else { break };
        println!("{}", &rest[..at]);
        rest = format!("{}{}", " ".repeat(indent), rest[at..].trim_start());
    }
    println!("{rest}");
}

fn human(value: f64) -> String {
    let magnitude = value.abs();
    if magnitude >= 1e12 {
        format!("{:.1}T", value / 1e12)
    } else if magnitude >= 1e9 {
        format!("{:.1}G", value / 1e9)
    } else if magnitude >= 1e6 {
        format!("{:.1}M", value / 1e6)
    } else if magnitude >= 1e4 {
        format!("{:.0}k", value / 1e3)
    } else if magnitude >= 100.0 {
        format!("{value:.0}")
    } else if magnitude >= 1.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

fn bytes(value: f64) -> String {
    if value >= 1e9 {
        format!("{:.1} GB", value / 1e9)
    } else {
        format!("{:.0} MB", value / 1e6)
    }
}

fn volume(daily: f64) -> String {
    if daily >= 1e6 {
        format!("{:.1}M/day", daily / 1e6)
    } else {
        format!("{:.0}k/day", daily / 1e3)
    }
}

fn print_limits() {
    println!("Component limits (Cloudflare pages under developers.cloudflare.com/, checked {VERIFIED}):");
    for limit in LIMITS {
        say(&format!("  {:>6} {:<14} {} [{}]", human(limit.value), limit.unit, limit.what, limit.source), 24);
    }
    println!();
}

fn print_assumptions() {
    say(
        &format!(
            "Workload: {:.0}% observed chatter, {:.1}% engaged turns, {:.0}% branch-starting, {:.1}% worker tasks; \
         Telegram/Slack/Discord {:.0}/{:.0}/{:.0}%.",
            Workload::OBSERVED * 100.0,
            Workload::ENGAGED * 100.0,
            Workload::BRANCH * 100.0,
            Workload::WORKER * 100.0,
            TG * 100.0,
            SL * 100.0,
            DC * 100.0
        ),
        2,
    );
    say(
        &format!(
        "Day: hourly curve (peak hour {:.2}x the mean) x busiest minute {:.1}x its hour = peak {:.2}x the mean rate. \
         Conversations: Zipf(1) sizes, {} messages/day on average, the busiest capped at {}/day.",
        Workload::peak_hour(),
        Workload::BURST,
        Workload::peak_factor(),
        Workload::MESSAGES_PER_CONVERSATION,
        human(Workload::HOTTEST_CONVERSATION)
    ),
        2,
    );
    say(
        &format!(
        "Timings: model call {} s, turn {} s, branch job {} s, worker segment {} s; D1: {} ms a statement, {} ms a \
         durable commit, {} ms a row read, {} ms a row written.",
        Timing::LLM_CALL_S,
        Timing::TURN_S,
        Timing::BRANCH_JOB_S,
        Timing::WORKER_SEGMENT_S,
        D1Cost::QUERY_MS,
        D1Cost::COMMIT_MS,
        D1Cost::ROW_READ_MS,
        D1Cost::ROW_WRITTEN_MS
    ),
        2,
    );
    println!();
}

fn print_operations(design: &Design, daily: f64) {
    let population = Population::new(daily);
    say(&format!("Operations per message, {} (at {}, day average):", design.name, volume(daily)), 2);
    println!("  (DO: billed requests, SQLite rows read/written. D1: statements, durable commits (round trips that");
    println!("  write), rows read/written. queue: jobs sent, each also received and deleted once. job s: consumer");
    println!("  wall time. LLM: model and embedding calls. API: platform and web calls. vecq: Vectorize queries.)");
    println!(
        "  {:<24} {:>6} {:>7} {:>7} {:>8} {:>7} {:>8} {:>9} {:>7} {:>6} {:>5} {:>5} {:>5}",
        "", "DO req", "DO rd", "DO wr", "D1 q", "D1 cmt", "D1 rd", "D1 wr", "queue", "job s", "LLM", "API", "vecq"
    );
    let rows = KINDS.iter().map(|(kind, label, _)| (*label, message(*kind, design, &population, 1.0)));
    for (label, ops) in rows.chain([("the day's mix", mix(design, &population, 1.0))]) {
        println!(
            "  {:<24} {:>6.2} {:>7.0} {:>7.1} {:>8.2} {:>7.2} {:>8.1} {:>9.2} {:>7.2} {:>6.2} {:>5.2} {:>5.2} {:>5.2}",
            label,
            ops.do_requests,
            ops.do_rows_read,
            ops.do_rows_written,
            ops.conv_queries + ops.global_queries,
            ops.conv_commits + ops.global_commits,
            ops.conv_rows_read + ops.global_rows_read,
            ops.conv_rows_written + ops.global_rows_written,
            ops.queue_sends,
            ops.job_seconds,
            ops.llm_calls,
            ops.api_calls,
            ops.vector_queries
        );
    }
    println!(
        "  (DO rd includes what inbox::settle reads on every turn: {:.0} rows, weighted by conversation size)\n",
        population.per_message(|messages_a_day| settle_rows(design, messages_a_day))
    );
}

fn print_prices(design: &Design, daily: f64) {
    let population = Population::new(daily);
    println!(
        "Price per 1,000 messages, USD, Workers Paid marginal rates verified {VERIFIED} (model tokens excluded), {}:",
        design.name.split(':').next().unwrap_or_default()
    );
    print!("  {:<24}", "");
    for (product, _) in pricing::Bill::default().lines() {
        print!(" {product:>10}");
    }
    println!(" {:>10}", "total");
    let rows = KINDS.iter().map(|(kind, label, _)| (*label, message(*kind, design, &population, 1.0)));
    for (label, ops) in rows.chain([("the day's mix", mix(design, &population, 1.0))]) {
        let bill = WORKERS_PAID.per_thousand(&usage(&ops));
        print!("  {label:<24}");
        for (_, usd) in bill.lines() {
            print!(" {usd:>10.5}");
        }
        println!(" {:>10.5}", bill.total());
    }
    let gateway_day = 86_400.0 * DO_BILLED_GB * WORKERS_PAID.do_gb_second;
    println!(
        "  fixed: the Workers Paid plan $5/month; the GatewayObject, pinned by its socket, ${gateway_day:.3}/day.\n"
    );
}

fn print_day(design: &Design, daily: f64) {
    let peak = daily / 86_400.0 * Workload::peak_factor();
    println!("-- {} (mean {:.0} msg/s, busiest minute {:.0} msg/s) --", volume(daily), daily / 86_400.0, peak);
    println!(
        "  {:<42} {:>10} {:>8} {:>7} {:>10} {:>15}",
        "throughput, busiest minute", "load", "limit", "util", "hours over", "saturates at"
    );
    let mut first: Option<(Component, f64)> = None;
    let mut platform: Vec<Component> = Vec::new();
    for component in THROUGHPUT {
        if component == Component::D1ConversationShard && design.conversation_shards <= 1.0 {
            continue;
        }
        let load = peak_load(component, design, daily);
        let util = load / component.limit();
        let saturation = saturates_at(component, design);
        let over = hours_over(component, design, daily);
        let at = saturation.map_or_else(|| "never".to_string(), volume);
        let label = if component.outside_cloudflare() {
            format!("{} *", component.label())
        } else {
            component.label().to_string()
        };
        println!(
            "  {:<42} {:>10} {:>8} {:>6.0}% {:>7}/24 {:>15}",
            label,
            human(load),
            human(component.limit()),
            util * 100.0,
            over,
            at
        );
        if util >= 1.0 && component.outside_cloudflare() {
            platform.push(component);
        }
        if !component.outside_cloudflare() && first.is_none_or(|(_, best)| util > best) {
            first = Some((component, util));
        }
    }
    match queue_backlog(design, daily) {
        Some((_, true)) => {
            println!("  jobs queue: even the day's average outruns the consumers: the backlog grows day after day")
        }
        Some((wait, false)) => {
            println!(
                "  jobs queue: worst wait {:.0} min at the evening peak (branches give up after 60 s)",
                wait / 60.0
            )
        }
        None => {}
    }
    println!("  {:<42} {:>10} {:>8} {:>7} {:>26}", "capacity over time", "per day", "limit", "", "full in");
    let mut fills: Option<(f64, &'static str, &'static str)> = None;
    for row in capacity(design, daily) {
        let days = row.limit / row.per_day;
        let full_soon = row.steady.is_none_or(|steady| steady >= row.limit) && row.per_day > 0.0;
        if full_soon && fills.is_none_or(|(soonest, _, _)| days < soonest) {
            fills = Some((days, row.label, row.breaks));
        }
        let steady = row.steady.map(|steady| format!(" (steady {:.0}%)", steady / row.limit * 100.0));
        let full = match (full_soon, &steady) {
            (true, _) => format!("{days:.0} days{}", steady.clone().unwrap_or_default()),
            (false, Some(steady)) => format!("never{steady}"),
            (false, None) => "never".to_string(),
        };
        let per_day = match (row.per_day, row.label.starts_with("Vectorize")) {
            (0.0, _) => "-".to_string(),
            (per_day, true) => human(per_day),
            (per_day, false) => bytes(per_day),
        };
        let limit = if row.label.starts_with("Vectorize") { human(row.limit) } else { bytes(row.limit) };
        println!("  {:<42} {:>10} {:>8} {:>7} {:>26}", row.label, per_day, limit, "", full);
    }
    if design.conversation_shards > 1.0 {
        println!(
            "  conversation D1s to hold a month (then rotate to a new set): {:.0}",
            shards_for_a_month(design, daily)
        );
    }
    if let Some((component, util)) = first {
        let state = if util >= 1.0 { "OVER its limit" } else { "the most loaded" };
        let (label, breaks) = (component.label(), component.breaks());
        say(&format!("  first bottleneck: {label} at {:.0}%, {state}. Then: {breaks}", util * 100.0), 4);
    }
    if let Some((days, label, breaks)) = fills {
        say(&format!("  first to fill: {label} in {days:.1} days. Then: {breaks}"), 4);
    }
    for component in platform {
        say(&format!("  * outside Cloudflare, over its limit: {}. Then: {}", component.label(), component.breaks()), 4);
    }
    println!();
}

fn print_design(design: &Design) {
    println!("== {} ==\n", design.name);
    for daily in [1e6, 10e6, 100e6] {
        print_day(design, daily);
    }
}

fn print_summary() {
    println!("== One change at a time: the first Cloudflare limits each design reaches, and the mix's price ==");
    for design in [BEFORE, SHARDS_ONLY, HISTORY_IN_OBJECT, SHARDED, AFTER] {
        let cloudflare = THROUGHPUT.iter().filter(|component| !component.outside_cloudflare());
        let mut order: Vec<(Component, f64)> =
            cloudflare.filter_map(|component| Some((*component, saturates_at(*component, &design)?))).collect();
        order.sort_by(|a, b| a.1.total_cmp(&b.1));
        let listed: Vec<String> =
            order.iter().take(3).map(|(component, at)| format!("{} {}", component.label(), volume(*at))).collect();
        let ops = mix(&design, &Population::new(10e6), 1.0);
        let price = WORKERS_PAID.per_thousand(&usage(&ops)).total();
        println!("  {} (${price:.4} per 1,000 at 10M/day)\n      {}", design.name, listed.join("; "));
    }
    println!();
}

fn main() {
    println!("edgebot load simulation: a synthetic day at 1M, 10M and 100M messages (benches/simulate.rs)\n");
    print_limits();
    print_assumptions();
    print_operations(&BEFORE, 10e6);
    print_prices(&BEFORE, 10e6);
    print_operations(&AFTER, 10e6);
    print_prices(&AFTER, 10e6);
    print_design(&BEFORE);
    print_design(&AFTER);
    print_summary();
}
