//! The states of a piece in a conversation's outbox (docs/delivery.md, "Each
//! piece at most once") and the moves between them. The channel object keeps
//! each piece's state as this text in its outbox table; every change of state
//! goes through [`OutboxStatus::to`], so a move the delivery rules do not
//! allow is an error value, never a silent overwrite.
//!
//! A piece is `pending`, then `sending` (recorded before each platform call),
//! then `sent` or `failed`. A piece found still `sending` was interrupted
//! mid-call: the platform says whether it landed. A streamed piece starts as
//! `drafting` (its first post under way), then `draft` (posted, edited as the
//! model writes) until delivery's edit makes it `sent`; a draft whose post was
//! refused, or that cannot be edited, becomes `pending` and is sent whole. A
//! draft the reply did not need is marked `withdraw`, deleted, then `withdrawn`.

use serde::{Deserialize, Serialize};

crate::named! {
    /// Where a piece of a reply stands.
    #[derive(Hash, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum OutboxStatus {
        /// Written, not yet sent (or to be sent again).
        Pending = "pending",
        /// A platform call for it is under way (found so after a crash: its
        /// outcome is unknown until the platform is asked).
        Sending = "sending",
        /// The platform has it; its message id is recorded.
        Sent = "sent",
        /// Given up after its attempts (shown in the admin outbox).
        Failed = "failed",
        /// A draft's first post is under way.
        Drafting = "drafting",
        /// A draft is posted and edited as the model writes.
        Draft = "draft",
        /// A draft the finished reply did not need: delivery deletes it.
        Withdraw = "withdraw",
        /// The unneeded draft is deleted (or was never found).
        Withdrawn = "withdrawn",
        /// Written by earlier versions for an interrupted send the platform could
        /// not settle; nothing writes it now, and a piece in it stays as it is.
        Unknown = "unknown",
    }
}

/// A move between two states that the delivery rules do not allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("an outbox piece cannot go from {from} to {to}")]
pub struct IllegalTransition {
    pub from: OutboxStatus,
    pub to: OutboxStatus,
}

impl OutboxStatus {
    /// A draft, posted or with its post under way.
    pub const DRAFTS: [OutboxStatus; 2] = [OutboxStatus::Draft, OutboxStatus::Drafting];

    /// Not sent yet, and not given up: what `/api/status` counts as waiting.
    pub const UNSENT: [OutboxStatus; 2] = [OutboxStatus::Pending, OutboxStatus::Sending];

    /// Whether a piece in this state may go to `next`:
    ///
    /// - `pending` → `sending` (a call starts), `sent` (an unanswered call
    ///   found landed), `failed` (its attempts are spent, its file is gone),
    ///   `draft` (a turn run again after a crash posts its draft anew);
    /// - `sending` → `sent`, `pending` (the call failed, or was interrupted:
    ///   try again), `failed`, `sending` (an approval's message asked again);
    /// - `failed` → `sending` (an approval's message asked again);
    /// - `drafting` → `draft` (posted, or found landed), `pending` (the post
    ///   was refused, or never landed), `withdraw`;
    /// - `draft` → `sent` (the final edit), `pending` (the edit will never be
    ///   taken: sent anew), `failed`, `withdraw`, `withdrawn`;
    /// - `withdraw` → `draft` (its interrupted post found landed, to be
    ///   deleted), `withdrawn`;
    /// - `sent`, `withdrawn` and `unknown` are final.
    pub fn may_become(self, next: OutboxStatus) -> bool {
        use OutboxStatus::*;
        matches!(
            (self, next),
            (Pending, Sending | Sent | Failed | Draft)
                | (Sending, Sending | Sent | Pending | Failed)
                | (Failed, Sending)
                | (Drafting, Draft | Pending | Withdraw)
                | (Draft, Sent | Pending | Failed | Withdraw | Withdrawn)
                | (Withdraw, Draft | Withdrawn)
        )
    }

    /// The move to `next`, if the rules allow it.
    pub fn to(self, next: OutboxStatus) -> Result<OutboxStatus, IllegalTransition> {
        match self.may_become(next) {
            true => Ok(next),
            false => Err(IllegalTransition { from: self, to: next }),
        }
    }

    /// The states a piece may come to `self` from.
    pub fn sources(self) -> Vec<OutboxStatus> {
        OutboxStatus::ALL.into_iter().filter(|from| from.may_become(self)).collect()
    }

    /// `statuses` as an SQL list of literals (`'draft', 'drafting'`), for a
    /// `status IN (…)` condition.
    pub fn sql_list(statuses: &[OutboxStatus]) -> String {
        statuses.iter().map(|status| format!("'{}'", status.as_str())).collect::<Vec<_>>().join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use OutboxStatus::*;

    #[test]
    fn every_state_is_stored_as_its_own_text_and_read_back() {
        crate::named::assert_spellings::<OutboxStatus>(&["", "Pending", "queued", "sent "]);
        for status in OutboxStatus::ALL {
            assert_eq!(serde_json::to_value(status).unwrap(), serde_json::json!(status.as_str()));
            assert_eq!(serde_json::from_value::<OutboxStatus>(serde_json::json!(status.as_str())).unwrap(), status);
        }
        let texts: Vec<&str> = OutboxStatus::ALL.into_iter().map(OutboxStatus::as_str).collect();
        assert_eq!(
            texts,
            ["pending", "sending", "sent", "failed", "drafting", "draft", "withdraw", "withdrawn", "unknown"],
            "the texts already stored in outboxes"
        );
    }

    #[test]
    fn each_move_is_allowed_or_refused_as_the_delivery_rules_say() {
        // Every pair, by row: the states each one may become.
        let table: [(OutboxStatus, &[OutboxStatus]); 9] = [
            (Pending, &[Sending, Sent, Failed, Draft]),
            (Sending, &[Pending, Sending, Sent, Failed]),
            (Sent, &[]),
            (Failed, &[Sending]),
            (Drafting, &[Pending, Draft, Withdraw]),
            (Draft, &[Pending, Sent, Failed, Withdraw, Withdrawn]),
            (Withdraw, &[Draft, Withdrawn]),
            (Withdrawn, &[]),
            (Unknown, &[]),
        ];
        for (from, allowed) in table {
            for to in OutboxStatus::ALL {
                let expected = allowed.contains(&to);
                assert_eq!(from.may_become(to), expected, "{from} → {to}");
                match expected {
                    true => assert_eq!(from.to(to), Ok(to)),
                    false => assert_eq!(from.to(to), Err(IllegalTransition { from, to })),
                }
            }
        }
    }

    #[test]
    fn a_sent_piece_is_never_sent_again_and_a_withdrawn_draft_never_returns() {
        for next in OutboxStatus::ALL {
            assert!(Sent.to(next).is_err(), "sent → {next}");
            assert!(Withdrawn.to(next).is_err(), "withdrawn → {next}");
        }
        assert_eq!(Sent.to(Sending).unwrap_err().to_string(), "an outbox piece cannot go from sent to sending");
    }

    #[test]
    fn sources_and_sql_lists_come_from_the_table() {
        assert_eq!(Withdrawn.sources(), [Draft, Withdraw]);
        assert_eq!(Sending.sources(), [Pending, Sending, Failed]);
        assert_eq!(OutboxStatus::sql_list(&OutboxStatus::DRAFTS), "'draft', 'drafting'");
        assert_eq!(OutboxStatus::sql_list(&Sent.sources()), "'pending', 'sending', 'draft'");
    }
}
