//! Who may create and cancel jobs, as pure decisions. A job costs a model
//! call every time it runs, so creating one is bounded three ways: never from
//! inside a scheduled run (a job must not breed jobs), at most a few per turn,
//! and at most a number of live jobs per conversation (that last count is
//! enforced by the insert itself, atomically, in D1). Cancelling is the
//! creator's (or an operator's through the admin API).

use thiserror::Error;

/// Default cap on a conversation's active and paused jobs (`SCHEDULE_MAX_JOBS_PER_CONVERSATION`).
pub const DEFAULT_MAX_JOBS_PER_CONVERSATION: u32 = 20;
/// Default cap on jobs one turn may create (`SCHEDULE_MAX_CREATIONS_PER_TURN`).
pub const DEFAULT_MAX_CREATIONS_PER_TURN: u32 = 3;

/// Why the schedule tool refused. The messages are written for the model,
/// which relays them to the person.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Refusal {
    #[error("a scheduled job's own run cannot create jobs; ask the person to create it in a normal message")]
    InsideScheduledRun,
    #[error("at most {cap} jobs can be created in one turn; the others were not created")]
    TurnCap { cap: u32 },
    #[error("this conversation already has {cap} active jobs (the limit); cancel one first")]
    ConversationCap { cap: u32 },
    #[error("only {creator} (who created job {id}) or an operator can cancel it")]
    NotCreator { id: String, creator: String },
    #[error("job {id} has no recorded creator; only an operator can cancel it here")]
    NoCreator { id: String },
}

/// Whether this turn may create another job, given how many it created so far.
pub fn may_create(is_scheduled_run: bool, created_this_turn: u32, per_turn_cap: u32) -> Result<(), Refusal> {
    if is_scheduled_run {
        return Err(Refusal::InsideScheduledRun);
    }
    if created_this_turn >= per_turn_cap {
        return Err(Refusal::TurnCap { cap: per_turn_cap });
    }
    Ok(())
}

/// The job's recorded creator, as a cancel sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Creator<'a> {
    pub id: Option<&'a str>,
    pub name: Option<&'a str>,
}

/// Whether `asker_id` may cancel job `id`. A job made before creators were
/// recorded has none: in a direct message its one person may cancel it, in a
/// group only an operator (through the admin API) can.
pub fn may_cancel(id: &str, creator: Creator<'_>, asker_id: &str, is_dm: bool) -> Result<(), Refusal> {
    match creator.id {
        Some(creator_id) if creator_id == asker_id => Ok(()),
        Some(creator_id) => {
            Err(Refusal::NotCreator { id: id.to_string(), creator: creator.name.unwrap_or(creator_id).to_string() })
        }
        None if is_dm => Ok(()),
        None => Err(Refusal::NoCreator { id: id.to_string() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creation_is_refused_inside_a_run_and_past_the_turn_cap() {
        let cases = [
            ("a person's turn, first job", false, 0, 3, Ok(())),
            ("a person's turn, third job", false, 2, 3, Ok(())),
            ("a person's turn, fourth job", false, 3, 3, Err(Refusal::TurnCap { cap: 3 })),
            ("a scheduled run, first job", true, 0, 3, Err(Refusal::InsideScheduledRun)),
            ("a scheduled run past the cap", true, 9, 3, Err(Refusal::InsideScheduledRun)),
        ];
        for (name, is_run, created, cap, expected) in cases {
            assert_eq!(may_create(is_run, created, cap), expected, "{name}");
        }
    }

    #[test]
    fn only_the_creator_cancels_and_a_job_without_one_only_in_a_dm() {
        let ada = Creator { id: Some("7"), name: Some("Ada") };
        let unknown = Creator { id: None, name: None };
        let not_creator = Err(Refusal::NotCreator { id: "j1".into(), creator: "Ada".into() });
        let cases = [
            ("the creator, in a group", ada, "7", false, Ok(())),
            ("another member, in a group", ada, "8", false, not_creator.clone()),
            ("another member, in a DM", ada, "8", true, not_creator),
            (
                "a scheduled run",
                ada,
                "schedule",
                false,
                Err(Refusal::NotCreator { id: "j1".into(), creator: "Ada".into() }),
            ),
            ("no creator, in a DM", unknown, "8", true, Ok(())),
            ("no creator, in a group", unknown, "8", false, Err(Refusal::NoCreator { id: "j1".into() })),
        ];
        for (name, creator, asker, is_dm, expected) in cases {
            assert_eq!(may_cancel("j1", creator, asker, is_dm), expected, "{name}");
        }
    }
}
