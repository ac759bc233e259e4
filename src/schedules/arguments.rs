//! The `schedule` tool as a type: its documented arguments (the channel's
//! edge answers it: `tools.rs`), and when a job runs ([`PlanArguments`]),
//! which the admin API's jobs are read from too, and the plan they say.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::llm::tool::given;
use crate::schedules::plan::{once_at, validate, ActiveHours, Plan, Recurrence};
use crate::schedules::zone::{is_known_zone, ZoneRules};

crate::tool! {
    /// `schedule`: create, list and cancel this conversation's jobs.
    pub Schedule = "schedule", ScheduleArguments
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

impl PlanArguments {
    /// The plan these arguments say, in the job's zone (`timezone`, else
    /// `default_zone`: the asker's or the configured `TIMEZONE`). The error is
    /// written for the model.
    pub fn plan(
        &self,
        default_zone: &str,
        min_interval_ms: i64,
        zones: &(impl ZoneRules + ?Sized),
        now_ms: i64,
    ) -> Result<Plan, String> {
        let arguments = self;
        let zone = given(&arguments.timezone).unwrap_or(default_zone).to_string();
        if !is_known_zone(zones, &zone) {
            return Err(format!("unknown time zone `{zone}`: use an IANA name such as Europe/Berlin"));
        }
        let local_instant = |value: &str| once_at(zones, &zone, value).map_err(|error| error.to_string());
        let when = (given(&arguments.at), arguments.in_seconds, given(&arguments.cron), arguments.every_seconds);
        let recurrence = match when {
            (Some(at), None, None, None) => Recurrence::Once { at_utc_ms: local_instant(at)? },
            (None, Some(seconds), None, None) => Recurrence::Once { at_utc_ms: now_ms + seconds.max(1) * 1000 },
            (None, None, Some(expression), None) => Recurrence::Cron { expression: expression.to_string() },
            (None, None, None, Some(seconds)) => Recurrence::Every { interval_ms: seconds * 1000 },
            _ => return Err("give exactly one of `at`, `in_seconds`, `cron` or `every_seconds`".into()),
        };
        let active_hours =
            given(&arguments.active_hours).map(ActiveHours::parse).transpose().map_err(|error| error.to_string())?;
        let end_at_ms = given(&arguments.end_at).map(local_instant).transpose()?;
        let max_runs = arguments.max_runs.map(|runs| runs.clamp(1, u32::MAX.into()) as u32);
        let plan = Plan { recurrence, zone, active_hours, end_at_ms, max_runs };
        validate(&plan, zones, min_interval_ms).map_err(|error| error.to_string())?;
        Ok(plan)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::llm::tool::Tool;
    use crate::schedules::test_zones::{utc, ChronoZones};

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

    const NOW: i64 = 1_780_000_000_000;

    fn plan(arguments: serde_json::Value) -> Result<Plan, String> {
        let arguments: PlanArguments = serde_json::from_value(arguments).expect("timing arguments");
        arguments.plan("Europe/Berlin", 60_000, &ChronoZones, NOW)
    }

    #[test]
    fn each_way_of_saying_when_becomes_its_recurrence() {
        let table = [
            (json!({ "at": "2026-07-01 09:30" }), Recurrence::Once { at_utc_ms: utc("2026-07-01 07:30") }),
            (json!({ "in_seconds": 90 }), Recurrence::Once { at_utc_ms: NOW + 90_000 }),
            (json!({ "in_seconds": -5 }), Recurrence::Once { at_utc_ms: NOW + 1000 }),
            (json!({ "cron": "0 9 * * 1-5" }), Recurrence::Cron { expression: "0 9 * * 1-5".into() }),
            (json!({ "every_seconds": 3600 }), Recurrence::Every { interval_ms: 3_600_000 }),
        ];
        for (arguments, expected) in table {
            let shown = arguments.to_string();
            let plan = plan(arguments).unwrap_or_else(|error| panic!("{shown}: {error}"));
            assert_eq!(plan.recurrence, expected, "{shown}");
            assert_eq!(plan.zone, "Europe/Berlin", "{shown}: the configured zone without `timezone`");
        }
    }

    #[test]
    fn the_jobs_own_zone_reads_its_local_times() {
        let plan = plan(json!({ "at": "2026-07-01 09:30", "timezone": "America/New_York" })).expect("a plan");
        assert_eq!(plan.recurrence, Recurrence::Once { at_utc_ms: utc("2026-07-01 13:30") });
        assert_eq!(plan.zone, "America/New_York");
    }

    #[test]
    fn limits_are_read_in_the_zone_and_max_runs_is_at_least_one() {
        let plan = plan(json!({
            "cron": "0 * * * *",
            "active_hours": "09:00-17:00",
            "end_at": "2026-08-01 00:00",
            "max_runs": 0,
        }))
        .expect("a plan");
        assert_eq!(plan.active_hours, Some(ActiveHours { start_minute: 9 * 60, end_minute: 17 * 60 }));
        assert_eq!(plan.end_at_ms, Some(utc("2026-07-31 22:00")));
        assert_eq!(plan.max_runs, Some(1));
    }

    #[test]
    fn what_cannot_be_a_plan_is_refused_in_words_for_the_model() {
        let table = [
            (json!({}), "exactly one of"),
            (json!({ "in_seconds": 60, "cron": "0 9 * * *" }), "exactly one of"),
            (json!({ "at": "  " }), "exactly one of"),
            (json!({ "in_seconds": 60, "timezone": "Mars/Olympus" }), "unknown time zone `Mars/Olympus`"),
            (json!({ "at": "tomorrow" }), "bad local time"),
            (json!({ "cron": "every day" }), "bad cron expression"),
            (json!({ "every_seconds": 10 }), "too short"),
            (json!({ "in_seconds": 60, "active_hours": "9-5" }), "bad active hours"),
        ];
        for (arguments, expected) in table {
            let shown = arguments.to_string();
            let error = plan(arguments).expect_err(&shown);
            assert!(error.contains(expected), "{shown}: {error}");
        }
    }
}
