//! The conversation's running counts (what the dashboard's index shows), as
//! the channel object keeps them on each counted inbound's inbox row: the
//! counts after that inbound, so counting writes no row of its own.

use serde::Deserialize;

/// The conversation's counts after an inbound.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Counts {
    pub conversation_key: String,
    pub title: Option<String>,
    pub messages: i64,
    pub engaged: i64,
    pub observed: i64,
    pub last_activity: i64,
}

impl Counts {
    /// The counts once one more inbound (engaged or observed) of
    /// `conversation_key` is counted at `now_ms`, after `before` (None: the
    /// conversation's first). A title the inbound does not carry stays as it
    /// was (platforms send it on some messages only).
    pub fn after(
        before: Option<Counts>,
        conversation_key: &str,
        title: Option<&str>,
        engaged: bool,
        now_ms: i64,
    ) -> Counts {
        let before = before.unwrap_or_default();
        Counts {
            conversation_key: conversation_key.to_string(),
            title: title.map(str::to_string).or(before.title),
            messages: before.messages + 1,
            engaged: before.engaged + i64::from(engaged),
            observed: before.observed + i64::from(!engaged),
            last_activity: now_ms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_inbound_starts_the_counts() {
        let counts = Counts::after(None, "telegram:1", None, true, 5);
        assert_eq!(
            counts,
            Counts {
                conversation_key: "telegram:1".into(),
                title: None,
                messages: 1,
                engaged: 1,
                observed: 0,
                last_activity: 5
            }
        );
    }

    #[test]
    fn each_inbound_adds_one_to_its_kind_and_moves_the_activity() {
        let first = Counts::after(None, "slack:T:C", Some("general"), false, 10);
        let second = Counts::after(Some(first), "slack:T:C", None, true, 20);
        let third = Counts::after(Some(second), "slack:T:C", None, false, 30);
        assert_eq!((third.messages, third.engaged, third.observed, third.last_activity), (3, 1, 2, 30));
    }

    #[test]
    fn a_title_stays_until_an_inbound_carries_a_new_one() {
        let named = Counts::after(None, "slack:T:C", Some("general"), false, 1);
        let untitled = Counts::after(Some(named), "slack:T:C", None, false, 2);
        assert_eq!(untitled.title.as_deref(), Some("general"));
        let renamed = Counts::after(Some(untitled), "slack:T:C", Some("random"), false, 3);
        assert_eq!(renamed.title.as_deref(), Some("random"));
    }
}
