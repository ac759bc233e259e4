//! Next runs and catch-up, against the real tz database (`chrono-tz`).
//!
//! The 2026 transitions used: Europe/Berlin springs 02:00 → 03:00 on 29 March
//! and falls 03:00 → 02:00 on 25 October (both at 01:00 UTC); America/New_York
//! springs 02:00 → 03:00 on 8 March (07:00 UTC) and falls 02:00 → 01:00 on
//! 1 November (06:00 UTC).

use super::*;
use crate::schedules::test_zones::{show, utc, ChronoZones};
use crate::schedules::zone::Utc;

const HOUR_MS: i64 = 3_600_000;
const MINUTE_MS: i64 = 60_000;

fn plan(zone: &str, recurrence: Recurrence) -> Plan {
    Plan { recurrence, zone: zone.into(), active_hours: None, end_at_ms: None, max_runs: None }
}

fn cron(zone: &str, expression: &str) -> Plan {
    plan(zone, Recurrence::Cron { expression: expression.into() })
}

fn every(zone: &str, interval_ms: i64) -> Plan {
    plan(zone, Recurrence::Every { interval_ms })
}

fn within(mut plan: Plan, hours: &str) -> Plan {
    plan.active_hours = Some(ActiveHours::parse(hours).expect("test windows are valid"));
    plan
}

fn until(mut plan: Plan, end: &str) -> Plan {
    plan.end_at_ms = Some(utc(end));
    plan
}

fn at_most(mut plan: Plan, runs: u32) -> Plan {
    plan.max_runs = Some(runs);
    plan
}

/// One plan followed from `after`: each run is the next one's `after`.
struct Chain {
    name: &'static str,
    plan: Plan,
    after: &'static str,
    runs: &'static [&'static str],
    /// The plan is over after the listed runs.
    then_over: bool,
}

fn chain(name: &'static str, plan: Plan, after: &'static str, runs: &'static [&'static str]) -> Chain {
    Chain { name, plan, after, runs, then_over: false }
}

fn over(chain: Chain) -> Chain {
    Chain { then_over: true, ..chain }
}

fn follow(chain: &Chain) {
    let mut after = utc(chain.after);
    let mut found = Vec::new();
    let wanted = chain.runs.len() + usize::from(chain.then_over);
    for runs_done in 0..wanted as u32 {
        match next_run(&chain.plan, after, runs_done, &ChronoZones) {
            Ok(Some(run)) => {
                assert!(run > after, "{}: {} is not after {}", chain.name, show(run), show(after));
                found.push(show(run));
                after = run;
            }
            Ok(None) => break,
            Err(error) => panic!("{}: {error}", chain.name),
        }
    }
    let expected: Vec<String> = chain.runs.iter().map(|run| show(utc(run))).collect();
    assert_eq!(found, expected, "{}", chain.name);
}

#[test]
fn cron_runs_keep_the_wall_clock_across_dst() {
    let chains = [
        chain(
            "Berlin 09:00 daily stays 09:00 local into summer time",
            cron("Europe/Berlin", "0 9 * * *"),
            "2026-03-27 08:00",
            &["2026-03-28 08:00", "2026-03-29 07:00", "2026-03-30 07:00"],
        ),
        chain(
            "Berlin 09:00 daily stays 09:00 local into winter time",
            cron("Europe/Berlin", "0 9 * * *"),
            "2026-10-23 07:00",
            &["2026-10-24 07:00", "2026-10-25 08:00", "2026-10-26 08:00"],
        ),
        chain(
            "New York 09:00 daily stays 09:00 local into summer time",
            cron("America/New_York", "0 9 * * *"),
            "2026-03-06 14:00",
            &["2026-03-07 14:00", "2026-03-08 13:00", "2026-03-09 13:00"],
        ),
        chain(
            "New York 09:00 daily stays 09:00 local into winter time",
            cron("America/New_York", "0 9 * * *"),
            "2026-10-30 13:00",
            &["2026-10-31 13:00", "2026-11-01 14:00", "2026-11-02 14:00"],
        ),
        chain(
            "Berlin 02:30 on spring-forward day runs at 03:00 local",
            cron("Europe/Berlin", "30 2 * * *"),
            "2026-03-27 01:30",
            &["2026-03-28 01:30", "2026-03-29 01:00", "2026-03-30 00:30"],
        ),
        chain(
            "New York 02:30 on spring-forward day runs at 03:00 local",
            cron("America/New_York", "30 2 * * *"),
            "2026-03-06 07:30",
            &["2026-03-07 07:30", "2026-03-08 07:00", "2026-03-09 06:30"],
        ),
        chain(
            "Berlin 02:30 on fall-back day runs once, at the first 02:30",
            cron("Europe/Berlin", "30 2 * * *"),
            "2026-10-23 00:30",
            &["2026-10-24 00:30", "2026-10-25 00:30", "2026-10-26 01:30"],
        ),
        chain(
            "New York 01:30 on fall-back day runs once, at the first 01:30",
            cron("America/New_York", "30 1 * * *"),
            "2026-10-30 05:30",
            &["2026-10-31 05:30", "2026-11-01 05:30", "2026-11-02 06:30"],
        ),
        chain(
            "New York 01:30 from inside the repeated hour waits for the next day",
            cron("America/New_York", "30 1 * * *"),
            "2026-11-01 06:10",
            &["2026-11-02 06:30"],
        ),
        chain(
            "New York fixed hours 01:00 and 02:00 on fall-back day: each once",
            cron("America/New_York", "0 1,2 * * *"),
            "2026-11-01 04:00",
            &["2026-11-01 05:00", "2026-11-01 07:00", "2026-11-02 06:00"],
        ),
        chain(
            "hourly in New York runs every real hour through the repeated hour",
            cron("America/New_York", "0 * * * *"),
            "2026-11-01 04:00",
            &["2026-11-01 05:00", "2026-11-01 06:00", "2026-11-01 07:00", "2026-11-01 08:00"],
        ),
        chain(
            "hourly in New York: the skipped 02:00 and 03:00 are one run",
            cron("America/New_York", "@hourly"),
            "2026-03-08 06:00",
            &["2026-03-08 07:00", "2026-03-08 08:00"],
        ),
        chain(
            "every 15 minutes in Berlin: the gap's quarters are one run at 03:00",
            cron("Europe/Berlin", "*/15 * * * *"),
            "2026-03-29 00:30",
            &["2026-03-29 00:45", "2026-03-29 01:00", "2026-03-29 01:15"],
        ),
        chain(
            "every 15 minutes in Berlin keeps going through the repeated hour",
            cron("Europe/Berlin", "*/15 * * * *"),
            "2026-10-25 00:30",
            &[
                "2026-10-25 00:45",
                "2026-10-25 01:00",
                "2026-10-25 01:15",
                "2026-10-25 01:30",
                "2026-10-25 01:45",
                "2026-10-25 02:00",
            ],
        ),
        chain(
            "a minute-wildcard at a fixed hour runs in both showings of 01:xx",
            cron("America/New_York", "*/30 1 * * *"),
            "2026-11-01 04:00",
            &["2026-11-01 05:00", "2026-11-01 05:30", "2026-11-01 06:00", "2026-11-01 06:30", "2026-11-02 06:00"],
        ),
        chain(
            "weekdays at 08:30 in New York, over a weekend",
            cron("America/New_York", "30 8 * * mon-fri"),
            "2026-01-02 14:00",
            &["2026-01-05 13:30", "2026-01-06 13:30"],
        ),
        chain(
            "the 1st or any Monday at 09:00 in Berlin (both day fields)",
            cron("Europe/Berlin", "0 9 1 * MON"),
            "2026-05-28 00:00",
            &[
                "2026-06-01 07:00",
                "2026-06-08 07:00",
                "2026-06-15 07:00",
                "2026-06-22 07:00",
                "2026-06-29 07:00",
                "2026-07-01 07:00",
            ],
        ),
        chain(
            "a list of minutes and a step of hours, quarterly in UTC",
            cron("UTC", "0,30 */12 1 jan,apr,jul,oct *"),
            "2026-01-01 12:00",
            &["2026-01-01 12:30", "2026-04-01 00:00", "2026-04-01 00:30", "2026-04-01 12:00"],
        ),
        over(chain("a cron that never matches is over at once", cron("UTC", "0 0 30 2 *"), "2026-01-01 00:00", &[])),
    ];
    for chain in &chains {
        follow(chain);
    }
}

#[test]
fn intervals_active_hours_and_ends() {
    let chains = [
        chain(
            "every hour runs on a UTC grid from its creation, whatever the local clock",
            every("Europe/Berlin", HOUR_MS),
            "2026-03-29 00:10",
            &["2026-03-29 01:10", "2026-03-29 02:10"],
        ),
        chain(
            "every hour within 22:00-06:00 in Berlin wraps midnight and skips the day",
            within(every("Europe/Berlin", HOUR_MS), "22:00-06:00"),
            "2026-01-10 03:00",
            &["2026-01-10 04:00", "2026-01-10 21:00", "2026-01-10 22:00", "2026-01-10 23:00"],
        ),
        chain(
            "every 90 minutes within 09:00-10:00: only grid points inside the window",
            within(every("UTC", 90 * MINUTE_MS), "09:00-10:00"),
            "2026-01-01 00:00",
            &["2026-01-01 09:00", "2026-01-02 09:00", "2026-01-03 09:00"],
        ),
        chain(
            "every half hour of a cron within 23:00-01:00 wraps midnight",
            within(cron("UTC", "*/30 * * * *"), "23:00-01:00"),
            "2026-01-01 00:30",
            &["2026-01-01 23:00", "2026-01-01 23:30", "2026-01-02 00:00", "2026-01-02 00:30", "2026-01-02 23:00"],
        ),
        chain(
            "a window in local time follows the zone: 08:00-18:00 New York, hourly",
            within(cron("America/New_York", "0 * * * *"), "08:00-18:00"),
            "2026-07-01 20:30",
            &["2026-07-01 21:00", "2026-07-02 12:00", "2026-07-02 13:00"],
        ),
        chain(
            "a fixed-time cron outside its window waits for a day inside it",
            within(cron("UTC", "0 8,20 * * *"), "19:00-21:00"),
            "2026-01-01 00:00",
            &["2026-01-01 20:00", "2026-01-02 20:00"],
        ),
        over(chain(
            "a cron whose times all fall outside the window never runs",
            within(cron("UTC", "0 3 * * *"), "09:00-17:00"),
            "2026-01-01 00:00",
            &[],
        )),
        over(chain(
            "end_at ends a daily plan (a run exactly at the end still happens)",
            until(cron("UTC", "0 9 * * *"), "2026-01-03 09:00"),
            "2026-01-01 00:00",
            &["2026-01-01 09:00", "2026-01-02 09:00", "2026-01-03 09:00"],
        )),
        over(chain(
            "end_at ends an interval",
            until(every("UTC", HOUR_MS), "2026-01-01 02:30"),
            "2026-01-01 00:00",
            &["2026-01-01 01:00", "2026-01-01 02:00"],
        )),
        over(chain(
            "max_runs ends a plan after that many runs",
            at_most(cron("UTC", "@hourly"), 2),
            "2026-01-01 00:00",
            &["2026-01-01 01:00", "2026-01-01 02:00"],
        )),
        over(chain(
            "once runs at its time, once",
            plan("Europe/Berlin", Recurrence::Once { at_utc_ms: utc("2026-11-23 08:00") }),
            "2026-11-01 00:00",
            &["2026-11-23 08:00"],
        )),
        over(chain(
            "once ignores active hours: a named time is meant to happen",
            within(plan("UTC", Recurrence::Once { at_utc_ms: utc("2026-11-23 03:00") }), "09:00-17:00"),
            "2026-11-01 00:00",
            &["2026-11-23 03:00"],
        )),
        over(chain(
            "once in the past does not run",
            plan("UTC", Recurrence::Once { at_utc_ms: utc("2026-01-01 00:00") }),
            "2026-01-01 00:00",
            &[],
        )),
    ];
    for chain in &chains {
        follow(chain);
    }
}

#[test]
fn catching_up_runs_once_and_counts_the_rest() {
    struct Case {
        name: &'static str,
        plan: Plan,
        due: &'static str,
        now: &'static str,
        runs_done: u32,
        missed: u32,
        next: Option<&'static str>,
    }
    let cases = [
        Case {
            name: "hourly, five runs fell due while down: one runs now, four were missed",
            plan: cron("UTC", "0 * * * *"),
            due: "2026-01-01 10:00",
            now: "2026-01-01 14:30",
            runs_done: 3,
            missed: 4,
            next: Some("2026-01-01 15:00"),
        },
        Case {
            name: "an alarm on time misses nothing",
            plan: cron("UTC", "0 * * * *"),
            due: "2026-01-01 10:00",
            now: "2026-01-01 10:00",
            runs_done: 0,
            missed: 0,
            next: Some("2026-01-01 11:00"),
        },
        Case {
            name: "an alarm a moment early is on time",
            plan: cron("UTC", "0 * * * *"),
            due: "2026-01-01 10:00",
            now: "2026-01-01 09:59",
            runs_done: 0,
            missed: 0,
            next: Some("2026-01-01 11:00"),
        },
        Case {
            name: "a run due exactly now counts as missed",
            plan: cron("UTC", "0 * * * *"),
            due: "2026-01-01 10:00",
            now: "2026-01-01 12:00",
            runs_done: 0,
            missed: 2,
            next: Some("2026-01-01 13:00"),
        },
        Case {
            name: "an interval keeps its grid from the due time",
            plan: every("UTC", HOUR_MS),
            due: "2026-01-01 10:20",
            now: "2026-01-01 14:30",
            runs_done: 0,
            missed: 4,
            next: Some("2026-01-01 15:20"),
        },
        Case {
            name: "an interval within active hours counts only runs inside them",
            plan: within(every("UTC", HOUR_MS), "09:00-12:00"),
            due: "2026-01-01 09:00",
            now: "2026-01-01 14:30",
            runs_done: 0,
            missed: 2,
            next: Some("2026-01-02 09:00"),
        },
        Case {
            name: "a cron within active hours counts only runs inside them",
            plan: within(cron("Europe/Berlin", "@hourly"), "10:00-12:00"),
            due: "2026-01-01 09:00",
            now: "2026-01-02 12:00",
            runs_done: 0,
            missed: 3,
            next: Some("2026-01-03 09:00"),
        },
        Case {
            name: "missed runs stop at end_at, and the plan is over",
            plan: until(cron("UTC", "@hourly"), "2026-01-01 12:00"),
            due: "2026-01-01 10:00",
            now: "2026-01-01 14:30",
            runs_done: 0,
            missed: 2,
            next: None,
        },
        Case {
            name: "missed runs stop at end_at for an interval too",
            plan: until(every("UTC", HOUR_MS), "2026-01-01 12:00"),
            due: "2026-01-01 10:00",
            now: "2026-01-01 14:30",
            runs_done: 0,
            missed: 2,
            next: None,
        },
        Case {
            name: "missed runs are not runs: max_runs counts the ones that happened",
            plan: at_most(cron("UTC", "@hourly"), 5),
            due: "2026-01-01 10:00",
            now: "2026-01-01 14:30",
            runs_done: 2,
            missed: 4,
            next: Some("2026-01-01 15:00"),
        },
        Case {
            name: "the last allowed run ends the plan",
            plan: at_most(cron("UTC", "@hourly"), 3),
            due: "2026-01-01 10:00",
            now: "2026-01-01 14:30",
            runs_done: 2,
            missed: 4,
            next: None,
        },
        Case {
            name: "once runs late and is over",
            plan: plan("UTC", Recurrence::Once { at_utc_ms: utc("2026-01-01 10:00") }),
            due: "2026-01-01 10:00",
            now: "2026-01-03 00:00",
            runs_done: 0,
            missed: 0,
            next: None,
        },
        Case {
            name: "every minute for a month down: the count stops at its cap",
            plan: cron("UTC", "* * * * *"),
            due: "2026-01-01 00:00",
            now: "2026-02-01 00:00",
            runs_done: 0,
            missed: MAX_MISSED_COUNTED,
            next: Some("2026-02-01 00:01"),
        },
        Case {
            name: "an interval's count stops at the cap too",
            plan: every("UTC", MINUTE_MS),
            due: "2026-01-01 00:00",
            now: "2026-02-01 00:00",
            runs_done: 0,
            missed: MAX_MISSED_COUNTED,
            next: Some("2026-02-01 00:01"),
        },
        Case {
            name: "New York 01:30 down over the fall-back night: the second 01:30 is no run",
            plan: cron("America/New_York", "30 1 * * *"),
            due: "2026-11-01 05:30",
            now: "2026-11-01 12:00",
            runs_done: 0,
            missed: 0,
            next: Some("2026-11-02 06:30"),
        },
    ];
    for case in &cases {
        let caught = catch_up(&case.plan, utc(case.due), utc(case.now), case.runs_done, &ChronoZones)
            .unwrap_or_else(|error| panic!("{}: {error}", case.name));
        assert_eq!(caught.missed, case.missed, "{}: missed", case.name);
        assert_eq!(caught.next_after_now.map(show), case.next.map(|next| show(utc(next))), "{}: next", case.name);
    }
}

#[test]
fn plans_that_cannot_run_say_why() {
    let bad_window =
        Plan { active_hours: Some(ActiveHours { start_minute: 600, end_minute: 600 }), ..cron("UTC", "@daily") };
    let past_midnight =
        Plan { active_hours: Some(ActiveHours { start_minute: 1440, end_minute: 60 }), ..cron("UTC", "@daily") };
    let cases = [
        (cron("Mars/Olympus", "@daily"), ScheduleError::UnknownZone("Mars/Olympus".into())),
        (
            cron("UTC", "0 25 * * *"),
            ScheduleError::BadCron { expression: "0 25 * * *".into(), reason: "hour: `25` is outside 0-23".into() },
        ),
        (bad_window, ScheduleError::BadActiveHours("10:00-10:00".into())),
        (past_midnight, ScheduleError::BadActiveHours("24:00-01:00".into())),
        (every("UTC", 0), ScheduleError::IntervalTooShort { interval_ms: 0, minimum_ms: 1 }),
    ];
    for (plan, error) in cases {
        assert_eq!(next_run(&plan, 0, 0, &ChronoZones), Err(error.clone()), "next_run {plan:?}");
        assert_eq!(catch_up(&plan, 0, 0, 0, &ChronoZones), Err(error.clone()), "catch_up {plan:?}");
        assert_eq!(validate(&plan, &ChronoZones, MIN_INTERVAL_MS), Err(error), "validate {plan:?}");
    }
}

#[test]
fn validation_adds_the_product_rules() {
    let short = every("UTC", 30_000);
    assert_eq!(
        validate(&short, &Utc, MIN_INTERVAL_MS),
        Err(ScheduleError::IntervalTooShort { interval_ms: 30_000, minimum_ms: MIN_INTERVAL_MS })
    );
    // next_run still computes with it, for tests that cannot wait a minute.
    assert_eq!(next_run(&short, 0, 0, &Utc), Ok(Some(30_000)));
    assert_eq!(validate(&every("UTC", MIN_INTERVAL_MS), &Utc, MIN_INTERVAL_MS), Ok(()));
    assert_eq!(validate(&every("UTC", 2_000), &Utc, 1_000), Ok(()), "a configured minimum");
    assert_eq!(validate(&at_most(cron("UTC", "@daily"), 0), &Utc, MIN_INTERVAL_MS), Err(ScheduleError::NoRunsAllowed));
    assert_eq!(validate(&cron("Europe/Berlin", "@daily"), &ChronoZones, MIN_INTERVAL_MS), Ok(()));
    assert_eq!(
        validate(&cron("Europe/Berlin", "@daily"), &Utc, MIN_INTERVAL_MS),
        Err(ScheduleError::UnknownZone("Europe/Berlin".into()))
    );
}

#[test]
fn active_hours_parse_and_wrap() {
    let cases = [
        ("09:00-17:00", Some((540, 1020))),
        ("22:00-06:00", Some((1320, 360))),
        ("9:30 - 17:45", Some((570, 1065))),
        ("18:00-24:00", Some((1080, 1440))),
        ("00:00-24:00", Some((0, 1440))),
        ("24:00-06:00", None),
        ("09:00-09:00", None),
        ("09:00", None),
        ("09:60-10:00", None),
        ("9-17", None),
        ("09:0-17:00", None),
        ("", None),
    ];
    for (text, expected) in cases {
        let parsed = ActiveHours::parse(text).map(|hours| (hours.start_minute, hours.end_minute));
        match expected {
            Some(minutes) => assert_eq!(parsed, Ok(minutes), "{text:?}"),
            None => assert_eq!(parsed, Err(ScheduleError::BadActiveHours(text.into())), "{text:?}"),
        }
    }
    let night = ActiveHours::parse("22:00-06:00").expect("valid");
    let inside: Vec<u16> =
        [0, 359, 360, 1319, 1320, 1439].into_iter().filter(|minute| night.contains(*minute)).collect();
    assert_eq!(inside, vec![0, 359, 1320, 1439]);
    let day = ActiveHours::parse("09:00-17:00").expect("valid");
    let inside: Vec<u16> = [539, 540, 1019, 1020].into_iter().filter(|minute| day.contains(*minute)).collect();
    assert_eq!(inside, vec![540, 1019]);
    assert_eq!(night.to_string(), "22:00-06:00");
}

#[test]
fn once_reads_a_wall_clock_time_in_its_zone() {
    let cases = [
        ("Europe/Berlin", "2026-11-23 09:00", "2026-11-23 08:00"),
        ("Europe/Berlin", "2026-03-29T02:30", "2026-03-29 01:00"),
        ("America/New_York", "2026-11-01 01:30:00", "2026-11-01 05:30"),
        ("UTC", "2026-01-01 00:00", "2026-01-01 00:00"),
    ];
    for (zone, local, expected) in cases {
        assert_eq!(once_at(&ChronoZones, zone, local).map(show), Ok(show(utc(expected))), "{local} in {zone}");
    }
    assert_eq!(
        once_at(&ChronoZones, "Mars/Olympus", "2026-01-01 00:00"),
        Err(ScheduleError::UnknownZone("Mars/Olympus".into()))
    );
    assert_eq!(once_at(&ChronoZones, "UTC", "tomorrow"), Err(ScheduleError::BadLocalTime("tomorrow".into())));
}

#[test]
fn plans_round_trip_through_json() {
    let original = until(within(cron("Europe/Berlin", "0 9 * * mon-fri"), "08:00-18:00"), "2027-01-01 00:00");
    let json = serde_json::to_string(&original).expect("serializes");
    assert!(json.contains(r#""recurrence":{"cron":{"expression":"0 9 * * mon-fri"}}"#), "{json}");
    assert_eq!(serde_json::from_str::<Plan>(&json).expect("deserializes"), original);
}

/// The rules read minute by minute over three days around each transition,
/// against the search. A fixed-time job runs at the minute whose wall clock
/// first reaches a matching time not shown before (a skipped one included); a
/// wildcard job runs at every minute whose wall clock matches, and at the end
/// of a gap that swallowed a match.
#[test]
fn next_run_agrees_with_a_minute_by_minute_reading_of_the_rules() {
    use crate::schedules::cron::CronExpr;
    use crate::schedules::zone::to_local;

    let transitions = [
        ("Europe/Berlin", "2026-03-29 01:00"),
        ("Europe/Berlin", "2026-10-25 01:00"),
        ("America/New_York", "2026-03-08 07:00"),
        ("America/New_York", "2026-11-01 06:00"),
        ("Australia/Lord_Howe", "2026-10-03 15:30"),
        ("Australia/Lord_Howe", "2026-04-04 15:00"),
    ];
    let expressions = [
        "30 2 * * *",
        "30 1 * * *",
        "0 2 * * *",
        "15,45 1-3 * * *",
        "*/15 * * * *",
        "0 * * * *",
        "*/30 1 * * *",
        "* 2 * * *",
        "10 */2 * * *",
    ];
    let wall = |zone: &str, minute: i64| -> i64 {
        to_local(&ChronoZones, zone, minute * MINUTE_MS).expect("known zone").to_minutes_since_epoch()
    };
    for (zone, transition) in transitions {
        let start = utc(transition) / MINUTE_MS - 24 * 60;
        let end = start + 3 * 24 * 60;
        for expression in expressions {
            let parsed = CronExpr::parse(expression).expect("valid");
            let matches = |wall_minute: i64| parsed.matches(&LocalDateTime::from_minutes_since_epoch(wall_minute));
            let mut expected = Vec::new();
            let mut highest_wall = (start - 24 * 60..=start).map(|minute| wall(zone, minute)).max().expect("a day");
            for minute in start + 1..end {
                let (previous, current) = (wall(zone, minute - 1), wall(zone, minute));
                let runs = if parsed.has_wildcard_time() {
                    matches(current) || (previous + 1..current).any(matches)
                } else {
                    (highest_wall + 1..=current).any(matches)
                };
                if runs {
                    expected.push(show(minute * MINUTE_MS));
                }
                highest_wall = highest_wall.max(current);
            }
            let plan = cron(zone, expression);
            let mut found = Vec::new();
            let mut after = start * MINUTE_MS;
            while let Some(run) = next_run(&plan, after, 0, &ChronoZones).expect("valid plan") {
                if run >= end * MINUTE_MS {
                    break;
                }
                found.push(show(run));
                after = run;
            }
            assert_eq!(found, expected, "{expression} in {zone} around {transition}");
            assert!(!found.is_empty(), "{expression} in {zone}: the window should hold runs");
        }
    }
}
