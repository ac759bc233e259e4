//! The `schedule` tool's and the admin API's arguments read into a [`Plan`]:
//! plain JSON in, a checked plan or the words of a refusal out.

use serde_json::Value;

use crate::schedules::plan::{once_at, validate, ActiveHours, Plan, Recurrence};
use crate::schedules::zone::{is_known_zone, ZoneRules};

/// Reads a plan from the `schedule` tool's (or the admin API's) arguments, in
/// the job's zone (`timezone`, else `default_zone`, the configured `TIMEZONE`): exactly one of `at` (local
/// `YYYY-MM-DD HH:MM`), `in_seconds`, `cron` or `every_seconds`, and optionally
/// `active_hours`, `end_at` and `max_runs`. The error is written for the model.
pub fn plan_from_arguments(
    default_zone: &str,
    min_interval_ms: i64,
    zones: &(impl ZoneRules + ?Sized),
    arguments: &Value,
    now_ms: i64,
) -> Result<Plan, String> {
    let text = |key: &str| arguments.get(key).and_then(Value::as_str).map(str::trim).filter(|value| !value.is_empty());
    let whole = |key: &str| arguments.get(key).and_then(Value::as_i64);
    let zone = text("timezone").unwrap_or(default_zone).to_string();
    if !is_known_zone(zones, &zone) {
        return Err(format!("unknown time zone `{zone}`: use an IANA name such as Europe/Berlin"));
    }
    let local_instant = |value: &str| once_at(zones, &zone, value).map_err(|error| error.to_string());
    let recurrence = match (text("at"), whole("in_seconds"), text("cron"), whole("every_seconds")) {
        (Some(at), None, None, None) => Recurrence::Once { at_utc_ms: local_instant(at)? },
        (None, Some(seconds), None, None) => Recurrence::Once { at_utc_ms: now_ms + seconds.max(1) * 1000 },
        (None, None, Some(expression), None) => Recurrence::Cron { expression: expression.to_string() },
        (None, None, None, Some(seconds)) => Recurrence::Every { interval_ms: seconds * 1000 },
        _ => return Err("give exactly one of `at`, `in_seconds`, `cron` or `every_seconds`".into()),
    };
    let active_hours = text("active_hours").map(ActiveHours::parse).transpose().map_err(|error| error.to_string())?;
    let end_at_ms = text("end_at").map(local_instant).transpose()?;
    let max_runs = whole("max_runs").map(|runs| runs.clamp(1, u32::MAX.into()) as u32);
    let plan = Plan { recurrence, zone, active_hours, end_at_ms, max_runs };
    validate(&plan, zones, min_interval_ms).map_err(|error| error.to_string())?;
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::schedules::test_zones::{utc, ChronoZones};

    const NOW: i64 = 1_780_000_000_000;

    fn plan(arguments: Value) -> Result<Plan, String> {
        plan_from_arguments("Europe/Berlin", 60_000, &ChronoZones, &arguments, NOW)
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
