//! The messenger conformance kit: one set of end-to-end behaviours that every
//! messenger runs against its fake platform. Each behaviour is written once
//! (`behaviours.rs`) against the [`kit::Messenger`] interface; each messenger
//! is one small adapter (`telegram.rs`, `slack.rs`, `discord.rs`, `web.rs`)
//! that knows how a person talks on it, how a forger tries, what its fake
//! shows and how to make it misbehave, and instantiates every behaviour with
//! [`conformance_tests!`]. `cargo test --test e2e conformance::slack::` runs
//! one messenger's set.
//!
//! Where a behaviour does not apply to a messenger, its adapter answers
//! [`kit::Support::Unsupported`] with the reason, and the behaviour asserts
//! the documented alternative instead of skipping.

mod behaviours;
mod discord;
mod kit;
mod slack;
mod telegram;
mod web;

/// Every behaviour of the kit, as tests of one messenger (named in this
/// order, each with optional attributes such as `#[ignore = "why"]`, so a
/// messenger cannot leave one out).
macro_rules! conformance_tests {
    ($messenger:ty {
        $(#[$verify:meta])* refuses_forged_deliveries,
        $(#[$dedupe:meta])* answers_a_retried_delivery_once,
        $(#[$send:meta])* sends_a_reply,
        $(#[$split:meta])* splits_a_long_answer_at_the_limit,
        $(#[$stream:meta])* streams_a_draft_into_the_whole_answer,
        $(#[$withdraw:meta])* withdraws_a_draft_the_answer_did_not_need,
        $(#[$rate:meta])* honours_a_rate_limit,
        $(#[$interrupted:meta])* settles_an_interrupted_send,
        $(#[$buttons:meta])* lets_only_the_asker_decide_an_approval,
        $(#[$files:meta])* takes_a_file_in_and_sends_one_out,
        $(#[$later:meta])* keeps_an_earlier_reply_when_a_worker_reports $(,)?
    }) => {
        $crate::conformance::conformance_tests!(@one $messenger, refuses_forged_deliveries, $(#[$verify])*);
        $crate::conformance::conformance_tests!(@one $messenger, answers_a_retried_delivery_once, $(#[$dedupe])*);
        $crate::conformance::conformance_tests!(@one $messenger, sends_a_reply, $(#[$send])*);
        $crate::conformance::conformance_tests!(@one $messenger, splits_a_long_answer_at_the_limit, $(#[$split])*);
        $crate::conformance::conformance_tests!(@one $messenger, streams_a_draft_into_the_whole_answer, $(#[$stream])*);
        $crate::conformance::conformance_tests!(
            @one $messenger, withdraws_a_draft_the_answer_did_not_need, $(#[$withdraw])*
        );
        $crate::conformance::conformance_tests!(@one $messenger, honours_a_rate_limit, $(#[$rate])*);
        $crate::conformance::conformance_tests!(@one $messenger, settles_an_interrupted_send, $(#[$interrupted])*);
        $crate::conformance::conformance_tests!(
            @one $messenger, lets_only_the_asker_decide_an_approval, $(#[$buttons])*
        );
        $crate::conformance::conformance_tests!(
            @one $messenger, takes_a_file_in_and_sends_one_out, $(#[$files])*
        );
        $crate::conformance::conformance_tests!(
            @one $messenger, keeps_an_earlier_reply_when_a_worker_reports, $(#[$later])*
        );
    };
    (@one $messenger:ty, $behaviour:ident, $(#[$attribute:meta])*) => {
        #[tokio::test(flavor = "multi_thread")]
        $(#[$attribute])*
        async fn $behaviour() {
            $crate::conformance::behaviours::$behaviour::<$messenger>().await;
        }
    };
}
pub(crate) use conformance_tests;
