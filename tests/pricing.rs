//! The pricing table `make simulate` uses (benches/pricing.rs), checked against
//! the worked examples on Cloudflare's own pricing pages.

#[allow(dead_code)]
#[path = "../benches/pricing.rs"]
mod pricing;
// `make simulate`'s projection arithmetic: its unit tests run with these.
#[allow(dead_code)]
#[path = "../benches/common/scale.rs"]
mod scale;

use pricing::{Usage, QUEUE_OPS_PER_MESSAGE, WORKERS_PAID};

fn close(actual: f64, expected: f64) -> bool {
    (actual - expected).abs() < 1e-9 * expected.abs().max(1.0)
}

#[test]
fn workers_example_four_of_the_pricing_page() {
    // workers/platform/pricing, example 4: 100M requests at 7 ms of CPU, less
    // the included 10M requests and 30M CPU ms: $27.00 + $13.40.
    let usage = Usage { worker_requests: 90e6, worker_cpu_ms: 7.0 * 100e6 - 30e6, ..Usage::default() };
    let bill = WORKERS_PAID.bill(&usage);
    assert!(close(bill.workers, 27.00 + 13.40), "{}", bill.workers);
    assert!(close(bill.total(), bill.workers));
}

#[test]
fn queues_and_vectorize_examples_of_their_pricing_pages() {
    // queues/platform/pricing: one million messages a day for 30 days, three
    // operations each, less the included million: $35.60.
    let queues = Usage { queue_operations: QUEUE_OPS_PER_MESSAGE * 30.0 * 1e6 - 1e6, ..Usage::default() };
    assert!(close(WORKERS_PAID.bill(&queues).queues, 35.60));
    // vectorize/platform/pricing, "Production": 50,000 vectors of 768
    // dimensions queried 200,000 times a month: $1.94.
    let vectorize = Usage {
        vectorize_queried_dimensions: (200_000.0 + 50_000.0) * 768.0,
        vectorize_stored_dimension_months: 50_000.0 * 768.0,
        ..Usage::default()
    };
    let price = WORKERS_PAID.bill(&vectorize).vectorize;
    assert!((price - 1.94).abs() < 0.005, "{price}");
}

#[test]
fn per_thousand_is_a_thousand_messages() {
    let one = Usage { do_requests: 2.0, d1_rows_written: 6.0, ..Usage::default() };
    let bill = WORKERS_PAID.per_thousand(&one);
    assert!(close(bill.durable_objects, 2000.0 * 0.15 / 1e6));
    assert!(close(bill.d1, 6000.0 * 1.00 / 1e6));
}
