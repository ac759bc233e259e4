//! The channel's pure per-inbound work (receive + checkpoint), measured natively:
//! `benches/webhook.rs` prints it, `benches/cpu.rs` sets the wasm profile beside it.

use std::time::{Duration, Instant};

use edgebot::channel::checkpoint::Checkpoint;
use edgebot::channel::participants::MembershipCount;
use edgebot::channel::state::{ChannelSettings, ChannelState};
use edgebot::config::Config;
use edgebot::inbound::{Author, InboundEvent};

/// Mean native time per observed inbound in a busy group.
pub fn channel_cost_per_inbound() -> Duration {
    let config = Config::from_lookup(|_| None);
    let settings: &ChannelSettings = &config.channel;
    let mut state = ChannelState::default();
    state.membership.update([MembershipCount { others: 5, truncated: false, fetched_at_ms: 0 }]);
    let mut saved = Checkpoint::default();
    let messages = 20_000;
    let started = Instant::now();
    for index in 0..messages {
        let author = Author { id: (index % 7).to_string(), name: format!("user {}", index % 7), is_bot: false };
        let text = "a message of ordinary length in a busy group, not addressed to the bot";
        let event = InboundEvent::plain_text(-1, &index.to_string(), author, text);
        state.receive(&event, settings, 1_000 + index as i64);
        if let Some(pending) = saved.next(&state).expect("checkpoint") {
            pending.saved(&mut saved);
        }
    }
    started.elapsed() / messages
}
