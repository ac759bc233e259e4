//! Cloudflare's published Workers Paid rates, in one place, and what a set of
//! operations costs at them. `make simulate` (benches/simulate.rs) prices each
//! message type with it; a per-message cost bench can include it the same way:
//!
//! ```ignore
//! #[allow(dead_code)]
//! #[path = "pricing.rs"]
//! mod pricing;
//! ```
//!
//! Marginal rates only: the allowances the $5 plan includes each month (10M
//! Worker requests, 1M Durable Object requests, 25B D1 rows read, ...) are left
//! out, because at the volumes simulated they are spent within the first day.
//! Model tokens (the provider's price) and platform API calls (free) are not
//! Cloudflare's and are not priced here.

/// When each rate below was checked against developers.cloudflare.com (the
/// pages themselves were last updated 2026-04-21).
pub const VERIFIED: &str = "2026-11-22";

/// Durable Objects bill duration for the 128 MB an object is allocated,
/// whatever it uses (durable-objects/platform/pricing, footnote 5).
pub const DO_BILLED_GB: f64 = 0.128;

/// Queues bill one operation per 64 KB written, read or deleted: a message
/// delivered once costs three (queues/platform/pricing).
pub const QUEUE_OPS_PER_MESSAGE: f64 = 3.0;

const MILLION: f64 = 1e6;

/// USD per unit.
#[derive(Debug, Clone, Copy)]
pub struct Rates {
    /// Workers Standard: "+$0.30 per additional million" requests. Every
    /// invocation counts: fetch, queue consumer batch, cron. workers/platform/pricing
    pub worker_request: f64,
    /// "+$0.02 per additional million CPU milliseconds". workers/platform/pricing
    pub worker_cpu_ms: f64,
    /// "$0.15/million", including HTTP requests, RPC sessions, WebSocket messages
    /// (20 incoming count as 1) and alarm invocations. durable-objects/platform/pricing
    pub do_request: f64,
    /// "$12.50/million GB-s" of wall-clock time while active. durable-objects/platform/pricing
    pub do_gb_second: f64,
    /// SQLite-backed objects: "$0.001 / million rows" read. durable-objects/platform/pricing
    pub do_row_read: f64,
    /// "$1.00 / million rows" written; each setAlarm() is one row. durable-objects/platform/pricing
    pub do_row_written: f64,
    /// "$0.20/ GB-month" stored. durable-objects/platform/pricing
    pub do_gb_month: f64,
    /// "$0.001 / million rows" read (rows scanned, not returned). d1/platform/pricing
    pub d1_row_read: f64,
    /// "$1.00 / million rows" written; every index a write touches is another row. d1/platform/pricing
    pub d1_row_written: f64,
    /// "$0.75 / GB-mo" stored, tables and indexes. d1/platform/pricing
    pub d1_gb_month: f64,
    /// "$0.40/million operations", one per 64 KB written, read or deleted. queues/platform/pricing
    pub queue_operation: f64,
    /// "$0.01 per million" queried vector dimensions. vectorize/platform/pricing
    pub vectorize_queried_dimension: f64,
    /// "$0.05 per 100 million" stored vector dimensions (a month). vectorize/platform/pricing
    pub vectorize_stored_dimension_month: f64,
    /// "+$0.002 per Dynamic Worker per day"; `load()` makes one per run
    /// (`run_code`). dynamic-workers/pricing
    pub dynamic_worker: f64,
    /// "$0.09 per additional browser hour". browser-rendering/pricing
    pub browser_hour: f64,
    /// "$0.011 per 1,000 Neurons" (e.g. @cf/baai/bge-small-en-v1.5: 1,841 neurons
    /// per million input tokens). workers-ai/platform/pricing
    pub neuron: f64,
}

/// The Workers Paid plan's rates, verified on [`VERIFIED`].
pub const WORKERS_PAID: Rates = Rates {
    worker_request: 0.30 / MILLION,
    worker_cpu_ms: 0.02 / MILLION,
    do_request: 0.15 / MILLION,
    do_gb_second: 12.50 / MILLION,
    do_row_read: 0.001 / MILLION,
    do_row_written: 1.00 / MILLION,
    do_gb_month: 0.20,
    d1_row_read: 0.001 / MILLION,
    d1_row_written: 1.00 / MILLION,
    d1_gb_month: 0.75,
    queue_operation: 0.40 / MILLION,
    vectorize_queried_dimension: 0.01 / MILLION,
    vectorize_stored_dimension_month: 0.05 / 100.0 / MILLION,
    neuron: 0.011 / 1000.0,
    dynamic_worker: 0.002,
    browser_hour: 0.09,
};

/// Billable quantities, in the units the rates are quoted in.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    pub worker_requests: f64,
    pub worker_cpu_ms: f64,
    pub do_requests: f64,
    pub do_gb_seconds: f64,
    pub do_rows_read: f64,
    pub do_rows_written: f64,
    pub do_gb_months: f64,
    pub d1_rows_read: f64,
    pub d1_rows_written: f64,
    pub d1_gb_months: f64,
    pub queue_operations: f64,
    pub vectorize_queried_dimensions: f64,
    pub vectorize_stored_dimension_months: f64,
    pub neurons: f64,
    pub dynamic_workers: f64,
    pub browser_hours: f64,
}

impl Usage {
    pub fn scaled(&self, factor: f64) -> Usage {
        Usage {
            worker_requests: self.worker_requests * factor,
            worker_cpu_ms: self.worker_cpu_ms * factor,
            do_requests: self.do_requests * factor,
            do_gb_seconds: self.do_gb_seconds * factor,
            do_rows_read: self.do_rows_read * factor,
            do_rows_written: self.do_rows_written * factor,
            do_gb_months: self.do_gb_months * factor,
            d1_rows_read: self.d1_rows_read * factor,
            d1_rows_written: self.d1_rows_written * factor,
            d1_gb_months: self.d1_gb_months * factor,
            queue_operations: self.queue_operations * factor,
            vectorize_queried_dimensions: self.vectorize_queried_dimensions * factor,
            vectorize_stored_dimension_months: self.vectorize_stored_dimension_months * factor,
            neurons: self.neurons * factor,
            dynamic_workers: self.dynamic_workers * factor,
            browser_hours: self.browser_hours * factor,
        }
    }
}

/// What a [`Usage`] costs, per product (USD).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Bill {
    pub workers: f64,
    pub durable_objects: f64,
    pub d1: f64,
    pub queues: f64,
    pub vectorize: f64,
    pub workers_ai: f64,
    pub browser_rendering: f64,
}

impl Bill {
    pub fn total(&self) -> f64 {
        self.workers
            + self.durable_objects
            + self.d1
            + self.queues
            + self.vectorize
            + self.workers_ai
            + self.browser_rendering
    }

    /// The products in a fixed order, for tables.
    pub fn lines(&self) -> [(&'static str, f64); 7] {
        [
            ("Workers", self.workers),
            ("DO", self.durable_objects),
            ("D1", self.d1),
            ("Queues", self.queues),
            ("Vectorize", self.vectorize),
            ("Workers AI", self.workers_ai),
            ("Browser Rendering", self.browser_rendering),
        ]
    }
}

impl Rates {
    pub fn bill(&self, usage: &Usage) -> Bill {
        Bill {
            workers: usage.worker_requests * self.worker_request
                + usage.worker_cpu_ms * self.worker_cpu_ms
                + usage.dynamic_workers * self.dynamic_worker,
            durable_objects: usage.do_requests * self.do_request
                + usage.do_gb_seconds * self.do_gb_second
                + usage.do_rows_read * self.do_row_read
                + usage.do_rows_written * self.do_row_written
                + usage.do_gb_months * self.do_gb_month,
            d1: usage.d1_rows_read * self.d1_row_read
                + usage.d1_rows_written * self.d1_row_written
                + usage.d1_gb_months * self.d1_gb_month,
            queues: usage.queue_operations * self.queue_operation,
            vectorize: usage.vectorize_queried_dimensions * self.vectorize_queried_dimension
                + usage.vectorize_stored_dimension_months * self.vectorize_stored_dimension_month,
            workers_ai: usage.neurons * self.neuron,
            browser_rendering: usage.browser_hours * self.browser_hour,
        }
    }

    /// The price of 1,000 messages that each cause `per_message`.
    pub fn per_thousand(&self, per_message: &Usage) -> Bill {
        self.bill(&per_message.scaled(1000.0))
    }
}
