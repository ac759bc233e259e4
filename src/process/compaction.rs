//! The programmatic compactor: estimates how full the context is after each
//! channel turn and decides what to do, without an LLM. Summarising is a
//! background job; only the emergency cut happens at once.

use serde::{Deserialize, Serialize};

/// The context window assumed when none is configured (tokens).
pub const DEFAULT_CONTEXT_WINDOW_TOKENS: u64 = 128_000;
/// Above this share of the window, summarise the oldest ~30% in the background.
pub const BACKGROUND_THRESHOLD: f64 = 0.80;
/// Above this, summarise the oldest ~50%.
pub const AGGRESSIVE_THRESHOLD: f64 = 0.85;
/// Above this, drop the oldest half at once, without an LLM.
pub const EMERGENCY_THRESHOLD: f64 = 0.95;

/// The queue job that summarises a conversation's oldest messages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactionJob {
    /// Stable per turn, so a redelivered job writes its summary once.
    pub id: String,
    pub conversation_key: String,
    /// The history rows to summarise, oldest first.
    pub message_ids: Vec<String>,
}

/// The compactor's report to the conversation's channel object once D1 holds
/// the summary: the object reads the summaries and drops `covered` from its
/// copy of the live history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Compacted {
    pub conversation_key: String,
    /// The messages the summary replaced (all the job's: on a redelivery some
    /// may have been compacted already, which changes nothing).
    pub covered: Vec<String>,
}

/// What the compactor decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum CompactionPlan {
    Nothing,
    /// Summarise this many of the oldest messages (a background job).
    Summarise {
        oldest: usize,
    },
    /// Drop this many of the oldest messages now (archived, not summarised).
    Truncate {
        oldest: usize,
    },
}

/// A rough token count: about four characters a token, as tokenizers average on prose.
pub fn estimate_tokens(text_chars: usize) -> u64 {
    (text_chars as u64).div_ceil(4)
}

/// Decides, from the estimated context size and the history's length.
pub fn plan(estimated_tokens: u64, window_tokens: u64, history_messages: usize) -> CompactionPlan {
    if history_messages < 2 || window_tokens == 0 {
        return CompactionPlan::Nothing;
    }
    let fill = estimated_tokens as f64 / window_tokens as f64;
    let share = |fraction: f64| ((history_messages as f64 * fraction).ceil() as usize).clamp(1, history_messages);
    if fill > EMERGENCY_THRESHOLD {
        CompactionPlan::Truncate { oldest: share(0.5) }
    } else if fill > AGGRESSIVE_THRESHOLD {
        CompactionPlan::Summarise { oldest: share(0.5) }
    } else if fill > BACKGROUND_THRESHOLD {
        CompactionPlan::Summarise { oldest: share(0.3) }
    } else {
        CompactionPlan::Nothing
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_pick_the_action_and_its_share() {
        let cases = [
            (7_900, CompactionPlan::Nothing),
            (8_100, CompactionPlan::Summarise { oldest: 6 }),
            (8_600, CompactionPlan::Summarise { oldest: 10 }),
            (9_600, CompactionPlan::Truncate { oldest: 10 }),
        ];
        for (tokens, expected) in cases {
            assert_eq!(plan(tokens, 10_000, 20), expected, "{tokens} tokens");
        }
    }

    #[test]
    fn tiny_histories_and_unknown_windows_are_left_alone() {
        assert_eq!(plan(10_000, 100, 1), CompactionPlan::Nothing);
        assert_eq!(plan(10_000, 0, 50), CompactionPlan::Nothing);
        assert_eq!(plan(10_000, 100, 3), CompactionPlan::Truncate { oldest: 2 });
    }

    #[test]
    fn tokens_are_estimated_at_four_characters() {
        assert_eq!(estimate_tokens(0), 0);
        assert_eq!(estimate_tokens(4), 1);
        assert_eq!(estimate_tokens(5), 2);
    }
}
