//! The messenger conformance kit: one set of end-to-end behaviours that every
//! messenger runs against its fake platform. Each behaviour is written once
//! (`behaviours.rs`) against the [`kit::Messenger`] interface; each messenger
//! is one small adapter (`telegram.rs`, `slack.rs`, `discord.rs`, `web.rs`, `email.rs`)
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
mod email;
mod kit;
mod slack;
mod teams;
mod telegram;
mod web;
pub mod webhook;
pub mod whatsapp;

/// Every behaviour of the kit, as tests of one messenger: the list is here
/// once, so no messenger can leave one out. (A behaviour a messenger cannot
/// meet is not skipped: its adapter says `Unsupported` and the behaviour
/// checks the documented alternative.)
macro_rules! conformance_tests {
    ($messenger:ty) => {
        $crate::conformance::conformance_tests!(
            $messenger:
            refuses_forged_deliveries,
            answers_a_retried_delivery_once,
            sends_a_reply,
            splits_a_long_answer_at_the_limit,
            streams_a_draft_into_the_whole_answer,
            withdraws_a_draft_the_answer_did_not_need,
            honours_a_rate_limit,
            settles_an_interrupted_send,
            lets_only_the_asker_decide_an_approval,
            takes_a_file_in_and_sends_one_out,
            keeps_an_earlier_reply_when_a_worker_reports,
            hears_edits_and_deletions,
            sees_a_reaction_to_its_reply
        );
    };
    ($messenger:ty: $($behaviour:ident),+) => {
        $(
            #[tokio::test(flavor = "multi_thread")]
            async fn $behaviour() {
                $crate::conformance::behaviours::$behaviour::<$messenger>().await;
            }
        )+
    };
}
pub(crate) use conformance_tests;
