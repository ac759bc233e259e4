//! The `schedule` tool as a type: its documented arguments (the channel's
//! edge answers it: `tools.rs`), and when a job runs ([`PlanArguments`]),
//! which the admin API's jobs are read from too.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::llm::tool::Tool;

/// `schedule`: create, list and cancel this conversation's jobs.
pub struct Schedule;

impl Tool for Schedule {
    const NAME: &'static str = "schedule";
    type Arguments = ScheduleArguments;
}

// What `schedule` is asked to do (no doc comment: it would become the
// argument's description, which the prompt file gives).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ScheduleAction {
    Create,
    List,
    Cancel,
}

/// `schedule`'s arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ScheduleArguments {
    pub action: ScheduleAction,
    /// create: what to do when it runs, written as a request to yourself.
    pub prompt: Option<String>,
    #[serde(flatten)]
    pub when: PlanArguments,
    /// cancel: the job's id.
    pub id: Option<String>,
}

/// When a job runs: exactly one of `at`, `in_seconds`, `cron` or
/// `every_seconds`, in a time zone, with optional limits.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct PlanArguments {
    /// create, one-shot: local time `YYYY-MM-DD HH:MM` in `timezone`.
    pub at: Option<String>,
    /// create, one-shot: run this many seconds from now.
    pub in_seconds: Option<i64>,
    /// create, recurring: a 5-field cron expression in `timezone`, e.g. `30 8 * * 1-5`.
    pub cron: Option<String>,
    /// create, recurring: a fixed interval.
    pub every_seconds: Option<i64>,
    /// An IANA time zone, e.g. Europe/Berlin (default: the time zone of the person asking, else the configured one).
    pub timezone: Option<String>,
    /// create, optional: local window `HH:MM-HH:MM` (may wrap midnight).
    pub active_hours: Option<String>,
    /// create, optional: local time `YYYY-MM-DD HH:MM` after which it stops.
    pub end_at: Option<String>,
    /// create, optional: stop after this many runs.
    pub max_runs: Option<i64>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_schedule_call_reads_its_action_and_its_timing() {
        let call = Schedule::parse(&json!({ "action": "create", "prompt": "water the plants", "cron": "0 9 * * *",
                                            "timezone": "Europe/Berlin", "max_runs": 3 }))
        .unwrap();
        assert_eq!(call.action, ScheduleAction::Create);
        assert_eq!((call.when.cron.as_deref(), call.when.max_runs), (Some("0 9 * * *"), Some(3)));
        assert_eq!(call.when.timezone.as_deref(), Some("Europe/Berlin"));
        assert!(Schedule::parse(&json!({ "action": "list" })).is_ok());
        assert!(Schedule::parse(&json!({ "action": "snooze" })).unwrap_err().contains("unknown variant `snooze`"));
        assert!(Schedule::parse(&json!({ "action": "create", "in_seconds": "soon" })).is_err());
        assert!(Schedule::parse(&json!({})).unwrap_err().contains("missing field `action`"));
        // The schema lists the timing's arguments beside the action's own.
        let schema = crate::llm::tool::parameters::<ScheduleArguments>();
        let properties = schema["properties"].as_object().unwrap();
        assert!(["action", "prompt", "id", "at", "in_seconds", "cron", "every_seconds", "max_runs"]
            .iter()
            .all(|key| properties.contains_key(*key)));
        assert_eq!(schema["required"], json!(["action"]));
    }
}
