//! The arithmetic of `make simulate` (benches/simulate.rs), kept apart so that
//! `cargo test --test pricing` tests it: a day's messages at a peak rate, times
//! the per-message costs `benches/cost.rs` MEASURED (target/bench/cost.json),
//! against each component's documented limit, spread over a layout (how many
//! D1 databases, Gateway shards, queues, Vectorize indexes).
//!
//! Nothing here is a per-message cost: those come from the file. What is here
//! is Cloudflare's and Discord's documented LIMITS (each with its page) and the
//! workload's SHAPE (mix, peak, conversation sizes), which the command takes as
//! arguments with the defaults below.
//!
//! Include it beside `pricing.rs`:
//!
//! ```ignore
//! #[path = "pricing.rs"] mod pricing;
//! #[path = "common/scale.rs"] mod scale;
//! ```

use std::collections::BTreeMap;

use super::pricing::{Usage, DO_BILLED_GB};

// ---------------------------------------------------------------------------
// Documented limits (developers.cloudflare.com, checked 2026-11-27).
// ---------------------------------------------------------------------------

/// A documented limit and where it is written.
#[derive(Debug, Clone, Copy)]
pub struct Limit {
    pub value: f64,
    pub unit: &'static str,
    pub source: &'static str,
}

/// d1/platform/limits, FAQ "Concurrency and throughput": "Each individual D1
/// database is inherently single-threaded, and processes queries one at a
/// time ... If your average query takes 1 ms, you can run approximately 1,000
/// queries per second." The docs' own 1 ms example; writes take longer, so a
/// write-heavy database reaches its ceiling sooner than this says.
pub const D1_QUERIES: Limit =
    Limit { value: 1_000.0, unit: "statements/s", source: "d1/platform/limits (FAQ: 1 ms a query = ~1,000 queries/s)" };
/// durable-objects/reference/faq, "How much work can a single Durable Object
/// do?": "An individual Object has a soft limit of 1,000 requests per second."
pub const DO_REQUESTS: Limit =
    Limit { value: 1_000.0, unit: "req/s", source: "durable-objects/reference/faq (soft limit per object)" };
/// queues/platform/limits: "Per-queue message throughput: 5,000 messages per second".
pub const QUEUE_MESSAGES: Limit =
    Limit { value: 5_000.0, unit: "msg/s", source: "queues/platform/limits (per-queue throughput)" };
/// vectorize/platform/limits: "Maximum vectors per index: 10,000,000".
pub const VECTORS: Limit =
    Limit { value: 10_000_000.0, unit: "vectors", source: "vectorize/platform/limits (vectors per index)" };
/// discord.com/developers/docs/events/gateway#sharding: a Gateway connection
/// carries at most 2,500 guilds (close code 4011, "sharding required").
pub const GUILDS_PER_SHARD: Limit =
    Limit { value: 2_500.0, unit: "guilds", source: "discord.com/developers/docs/events/gateway#sharding" };

/// A component passing this share of its limit at the peak minute is flagged.
pub const HEADROOM: f64 = 0.5;

// ---------------------------------------------------------------------------
// Measured costs.
// ---------------------------------------------------------------------------

/// One measured case: `/api/ops` counter names (src/ops.rs) per inbound
/// message, plus `worker_cpu_ms` (the Worker's own CPU, a V8 profile) and
/// `workerd_cpu_ms` (all of local workerd, an upper bound).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Case(pub BTreeMap<String, f64>);

impl Case {
    pub fn from_pairs(pairs: &[(&str, f64)]) -> Case {
        Case(pairs.iter().map(|(name, value)| (name.to_string(), *value)).collect())
    }

    /// A counter per message; 0 when the file does not have it.
    pub fn get(&self, name: &str) -> f64 {
        self.0.get(name).copied().unwrap_or(0.0)
    }

    /// `shares` of each case, summed (a day's mix of message kinds).
    pub fn blend(shares: &[(&Case, f64)]) -> Case {
        let mut sum = BTreeMap::new();
        for (case, share) in shares {
            for (name, value) in &case.0 {
                *sum.entry(name.clone()).or_insert(0.0) += value * share;
            }
        }
        Case(sum)
    }

    /// The Worker's CPU per message: its own (profiled) when measured, else
    /// all of workerd's (an upper bound).
    pub fn cpu_ms(&self) -> f64 {
        match self.0.get("worker_cpu_ms") {
            Some(own) => *own,
            None => self.get("workerd_cpu_ms"),
        }
    }

    /// What Cloudflare bills for it. Storage (GB-months) and model tokens are not measured.
    pub fn usage(&self) -> Usage {
        let deliveries = self.get("queue_deliveries");
        Usage {
            // Each run_code is a request into its Dynamic Worker too.
            worker_requests: self.get("worker_invocations") + self.get("sandbox_runs"),
            worker_cpu_ms: self.cpu_ms(),
            // 20 WebSocket messages bill as one request.
            do_requests: self.get("do_requests") + self.get("do_websocket_messages") / 20.0,
            do_gb_seconds: self.get("do_request_ms") / 1000.0 * DO_BILLED_GB,
            do_rows_read: self.get("do_rows_read"),
            do_rows_written: self.get("do_rows_written"),
            d1_rows_read: self.get("d1_rows_read"),
            d1_rows_written: self.get("d1_rows_written"),
            // Written, read, and deleted once acked (a retry is read again).
            queue_operations: self.get("queue_sends") + deliveries + (deliveries - self.get("queue_retries")),
            dynamic_workers: self.get("sandbox_runs"),
            browser_hours: self.get("browser_ms") / 3_600_000.0,
            ..Usage::default()
        }
    }
}

// ---------------------------------------------------------------------------
// Workload and layout.
// ---------------------------------------------------------------------------

/// The day's shape (assumptions, not costs: each is an argument of the command).
#[derive(Debug, Clone, Copy)]
pub struct Workload {
    pub daily: f64,
    /// The busiest minute's rate over the day's mean rate.
    pub peak: f64,
    /// The busiest conversation's messages a day (one ChannelObject holds it).
    pub hottest_conversation: f64,
    /// Discord guilds the deployment is in, and the share of messages that
    /// arrive over the Gateway (one dispatch each at least).
    pub guilds: f64,
    pub discord_share: f64,
    /// How long a vector stays (memories are pruned after 30 days unread).
    pub vector_lifetime_days: f64,
    /// The agent snapshots read at once (`crate::agents::snapshot`): isolates
    /// serving turns times agents, each read again every `SHARED_READS_FRESH_MS`.
    pub snapshots: Snapshots,
}

/// The agent snapshots' reads: a cost per isolate and agent, not per message.
#[derive(Debug, Clone, Copy)]
pub struct Snapshots {
    /// Isolates serving turns at the peak (an assumption: an argument).
    pub isolates: f64,
    /// The deployment's agents (an argument).
    pub agents: f64,
    /// `SHARED_READS_FRESH_MS`, in seconds (production: 30).
    pub fresh_s: f64,
    /// The statements of one snapshot read, MEASURED (the cost file); 0 for a
    /// build without snapshots, whose per-message figures hold those reads.
    pub statements: f64,
}

impl Snapshots {
    /// Statements a second the snapshots cost, however many messages there are.
    pub fn per_second(&self) -> f64 {
        self.isolates * self.agents * self.statements / self.fresh_s
    }
}

impl Workload {
    pub fn peak_per_second(&self) -> f64 {
        self.daily / 86_400.0 * self.peak
    }
}

/// How many of each sharded component.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Layout {
    pub d1: f64,
    pub gateway_shards: f64,
    pub queues: f64,
    pub vector_indexes: f64,
}

/// Today's: one of each.
pub const TODAY: Layout = Layout { d1: 1.0, gateway_shards: 1.0, queues: 1.0, vector_indexes: 1.0 };

/// One component's use of its documented limit at the peak minute.
#[derive(Debug, Clone)]
pub struct Use {
    pub component: &'static str,
    pub load: f64,
    pub limit: Limit,
}

impl Use {
    pub fn fraction(&self) -> f64 {
        self.load / self.limit.value
    }

    pub fn over_half(&self) -> bool {
        self.fraction() > HEADROOM
    }
}

/// Every component's use at the workload's peak minute, with `mix` the
/// day's blended per-message costs, spread evenly over `layout` (a stable
/// hash over virtual buckets spreads keys evenly; a hot key is the hottest
/// conversation's own object, counted apart).
///
/// D1: with one database it takes every statement; with shards
/// (`D1_SHARDS`, src/shards.rs) each shard takes its share of the
/// statements on conversations' rows (`d1_shard_queries`), and the shared
/// database the rest, however many shards there are. The agent snapshots'
/// statements (`d1_snapshot_queries`, measured at the bench's own rate) are
/// charged per isolate and agent instead ([`Snapshots`]).
pub fn uses(mix: &Case, workload: &Workload, layout: &Layout) -> Vec<Use> {
    let rate = workload.peak_per_second();
    let hottest = workload.hottest_conversation / 86_400.0 * workload.peak;
    let vectors_stored = workload.daily * mix.get("vectorize_calls") * workload.vector_lifetime_days;
    let on_shards = mix.get("d1_shard_queries");
    let (all, snapshots) = match workload.snapshots.statements > 0.0 {
        true => (mix.get("d1_queries") - mix.get("d1_snapshot_queries"), workload.snapshots.per_second()),
        false => (mix.get("d1_queries"), 0.0),
    };
    let d1 = match layout.d1 > 1.0 {
        false => vec![Use {
            component: "D1, the one database (statements/s)",
            load: rate * all + snapshots,
            limit: D1_QUERIES,
        }],
        true => vec![
            Use { component: "D1, each shard (statements/s)", load: rate * on_shards / layout.d1, limit: D1_QUERIES },
            Use {
                component: "D1, the shared database (statements/s)",
                load: rate * (all - on_shards) + snapshots,
                limit: D1_QUERIES,
            },
        ],
    };
    d1.into_iter()
        .chain([
            Use {
                component: "hottest ChannelObject (requests/s)",
                load: hottest * mix.get("do_requests"),
                limit: DO_REQUESTS,
            },
            Use {
                component: "Gateway, each shard (dispatches/s)",
                load: rate * workload.discord_share / layout.gateway_shards,
                limit: DO_REQUESTS,
            },
            Use {
                component: "Gateway, each shard (guilds)",
                load: workload.guilds / layout.gateway_shards,
                limit: GUILDS_PER_SHARD,
            },
            Use {
                component: "Queue, each (messages/s)",
                load: rate * mix.get("queue_sends") / layout.queues,
                limit: QUEUE_MESSAGES,
            },
            Use {
                component: "Vectorize, each index (vectors, 1 per call)",
                load: vectors_stored / layout.vector_indexes,
                limit: VECTORS,
            },
        ])
        .collect()
}

/// The smallest layout that keeps every sharded component at or under
/// [`HEADROOM`] (the hottest object is one key: no layout spreads it).
pub fn smallest_layout(mix: &Case, workload: &Workload) -> Layout {
    let need = |load: f64, limit: Limit| (load / (limit.value * HEADROOM)).ceil().max(1.0);
    let at_one = uses(mix, workload, &TODAY);
    let load = |prefix: &str| at_one.iter().filter(|each| each.component.starts_with(prefix)).collect::<Vec<_>>();
    let gateway = load("Gateway").iter().map(|each| need(each.load, each.limit)).fold(1.0, f64::max);
    Layout {
        // The shards take the statements on conversations' rows; the shared
        // database's share is the same with any number (printed, not sharded).
        d1: need(workload.peak_per_second() * mix.get("d1_shard_queries"), D1_QUERIES),
        gateway_shards: gateway,
        queues: need(load("Queue")[0].load, QUEUE_MESSAGES),
        vector_indexes: need(load("Vectorize")[0].load, VECTORS),
    }
}

/// Price per 1,000 messages of one case (USD).
pub fn price_per_thousand(case: &Case) -> f64 {
    super::pricing::WORKERS_PAID.per_thousand(&case.usage()).total()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workload(daily: f64) -> Workload {
        Workload {
            daily,
            peak: 3.0,
            hottest_conversation: 86_400.0,
            guilds: 5_000.0,
            discord_share: 0.3,
            vector_lifetime_days: 30.0,
            snapshots: Snapshots { isolates: 100.0, agents: 2.0, fresh_s: 30.0, statements: 0.0 },
        }
    }

    fn find<'a>(uses: &'a [Use], prefix: &str) -> &'a Use {
        uses.iter().find(|each| each.component.starts_with(prefix)).expect(prefix)
    }

    #[test]
    fn load_is_the_peak_rate_times_the_measured_cost_over_the_shards() {
        // 86.4M a day is 1,000 a second on average, 3,000 at a 3x peak.
        let mix = Case::from_pairs(&[
            ("d1_queries", 0.2),
            ("d1_shard_queries", 0.15),
            ("queue_sends", 0.5),
            ("do_requests", 2.0),
        ]);
        let today = uses(&mix, &workload(86.4e6), &TODAY);
        assert!((find(&today, "D1").load - 600.0).abs() < 1e-6);
        assert!((find(&today, "D1").fraction() - 0.6).abs() < 1e-9);
        assert!(find(&today, "D1").over_half());
        assert!((find(&today, "Queue").load - 1_500.0).abs() < 1e-6);
        // The hottest conversation: one message a second, 3 at the peak, 2 requests each.
        assert!((find(&today, "hottest").load - 6.0).abs() < 1e-9);
        let sharded = Layout { d1: 4.0, gateway_shards: 2.0, queues: 3.0, vector_indexes: 1.0 };
        let after = uses(&mix, &workload(86.4e6), &sharded);
        // 0.15 a message on the shards, over 4; 0.05 on the shared database, whatever the shards.
        assert!((find(&after, "D1, each shard").load - 112.5).abs() < 1e-6);
        assert!(!find(&after, "D1, each shard").over_half());
        assert!((find(&after, "D1, the shared").load - 150.0).abs() < 1e-6);
        assert!((find(&after, "Queue").load - 500.0).abs() < 1e-6);
        assert!((find(&after, "Gateway, each shard (guilds)").load - 2_500.0).abs() < 1e-9);
        // Sharding never spreads one conversation.
        assert_eq!(find(&after, "hottest").load, find(&today, "hottest").load);
    }

    #[test]
    fn snapshots_cost_the_shared_database_per_isolate_and_agent_not_per_message() {
        // 0.5 statements a message, 0.2 of them a snapshot's (the bench's own rate).
        let mix = Case::from_pairs(&[("d1_queries", 0.5), ("d1_snapshot_queries", 0.2), ("d1_shard_queries", 0.1)]);
        let mut day = workload(86.4e6);
        let sharded = Layout { d1: 4.0, gateway_shards: 1.0, queues: 1.0, vector_indexes: 1.0 };
        // A build without snapshots: its per-message reads are the load.
        let before = find(&uses(&mix, &day, &sharded), "D1, the shared").load;
        assert!((before - 3_000.0 * 0.4).abs() < 1e-6);
        // 100 isolates x 2 agents x 6 statements every 30 s = 40 a second, at any rate.
        day.snapshots.statements = 6.0;
        let after = find(&uses(&mix, &day, &sharded), "D1, the shared").load;
        assert!((after - (3_000.0 * 0.2 + 40.0)).abs() < 1e-6, "{after}");
        let one = find(&uses(&mix, &day, &TODAY), "D1, the one").load;
        assert!((one - (3_000.0 * 0.3 + 40.0)).abs() < 1e-6, "{one}");
        day.daily *= 10.0;
        let busier = find(&uses(&mix, &day, &sharded), "D1, the shared").load;
        assert!((busier - (30_000.0 * 0.2 + 40.0)).abs() < 1e-6, "{busier}");
    }

    #[test]
    fn the_smallest_layout_keeps_each_component_at_or_under_half() {
        // Every statement on conversations' rows: the shared database has none.
        let mix = Case::from_pairs(&[
            ("d1_queries", 1.0),
            ("d1_shard_queries", 1.0),
            ("queue_sends", 0.1),
            ("vectorize_calls", 0.01),
        ]);
        let day = workload(100e6);
        let layout = smallest_layout(&mix, &day);
        for each in uses(&mix, &day, &layout).iter().filter(|each| !each.component.starts_with("hottest")) {
            assert!(each.fraction() <= HEADROOM + 1e-9, "{} at {}", each.component, each.fraction());
        }
        // 100M/day x3 peak = 3,472 statements/s: 7 databases at 500 each (one fewer passes half).
        assert_eq!(layout.d1, 7.0);
        let fewer = Layout { d1: layout.d1 - 1.0, ..layout };
        assert!(find(&uses(&mix, &day, &fewer), "D1, each shard").over_half());
        // 5,000 guilds need 4 shards at 1,250 each.
        assert_eq!(layout.gateway_shards, 4.0);
    }

    #[test]
    fn a_blend_weights_each_case_by_its_share_and_prices_follow() {
        let observed = Case::from_pairs(&[("do_rows_written", 7.0), ("worker_invocations", 1.0)]);
        let engaged = Case::from_pairs(&[("do_rows_written", 32.0), ("d1_rows_written", 10.0)]);
        let mix = Case::blend(&[(&observed, 0.8), (&engaged, 0.2)]);
        assert!((mix.get("do_rows_written") - (5.6 + 6.4)).abs() < 1e-9);
        assert!((mix.get("d1_rows_written") - 2.0).abs() < 1e-9);
        assert!((mix.get("worker_invocations") - 0.8).abs() < 1e-9);
        // $1 per million rows written (DO and D1): 12 + 2 rows a message, $0.014 per 1,000 (+ requests).
        let price = price_per_thousand(&mix);
        assert!((price - (0.014 + 800.0 * 0.30 / 1e6)).abs() < 1e-9, "{price}");
    }

    #[test]
    fn the_workers_own_cpu_is_preferred_to_the_runtimes() {
        let both = Case::from_pairs(&[("worker_cpu_ms", 0.3), ("workerd_cpu_ms", 4.0)]);
        assert_eq!(both.cpu_ms(), 0.3);
        assert_eq!(Case::from_pairs(&[("workerd_cpu_ms", 4.0)]).cpu_ms(), 4.0);
        let queue = Case::from_pairs(&[("queue_sends", 1.0), ("queue_deliveries", 2.0), ("queue_retries", 1.0)]);
        assert_eq!(queue.usage().queue_operations, 1.0 + 2.0 + 1.0);
    }
}
