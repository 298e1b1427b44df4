//! Fire times, including daylight-saving transitions in several zones.

use gatehouse_schedule::{Cron, ScheduleError, parse_time, rfc3339};

fn upcoming(expr: &str, tz: &str, from: &str, n: usize) -> Vec<String> {
    Cron::new(expr, tz)
        .unwrap()
        .upcoming(parse_time(from).unwrap(), n)
        .iter()
        .map(rfc3339)
        .collect()
}

#[test]
fn five_and_six_fields_and_aliases() {
    assert_eq!(
        upcoming("*/20 * * * *", "UTC", "2026-11-30T09:05:00Z", 3),
        [
            "2026-11-30T09:20:00+00:00",
            "2026-11-30T09:40:00+00:00",
            "2026-11-30T10:00:00+00:00"
        ]
    );
    assert_eq!(
        upcoming("30 0 12 * * *", "UTC", "2026-11-30T09:05:00Z", 1),
        ["2026-11-30T12:00:30+00:00"],
        "six fields: seconds first"
    );
    assert_eq!(
        upcoming("@daily", "Asia/Tokyo", "2026-11-30T09:05:00Z", 1),
        ["2026-12-01T00:00:00+09:00"]
    );
    assert_eq!(
        upcoming("@hourly", "UTC", "2026-11-30T09:05:00Z", 1),
        ["2026-11-30T10:00:00+00:00"]
    );
    assert_eq!(
        upcoming("@weekly", "UTC", "2026-11-30T09:05:00Z", 1),
        ["2026-12-06T00:00:00+00:00"]
    );
    assert_eq!(
        upcoming("@monthly", "UTC", "2026-11-30T09:05:00Z", 1),
        ["2026-12-01T00:00:00+00:00"]
    );
}

#[test]
fn spring_forward_fires_a_skipped_fixed_time_once_after_the_gap() {
    // Europe/Berlin: 2026-03-29 02:00 CET jumps to 03:00 CEST.
    assert_eq!(
        upcoming("30 2 * * *", "Europe/Berlin", "2026-03-28T00:00:00Z", 3),
        [
            "2026-03-28T02:30:00+01:00",
            "2026-03-29T03:00:00+02:00",
            "2026-03-30T02:30:00+02:00"
        ]
    );
    // America/New_York: 2026-03-08 02:00 EST jumps to 03:00 EDT.
    assert_eq!(
        upcoming("15 2 * * *", "America/New_York", "2026-03-07T12:00:00Z", 2),
        ["2026-03-08T03:00:00-04:00", "2026-03-09T02:15:00-04:00"]
    );
}

#[test]
fn spring_forward_skips_interval_times_that_do_not_exist() {
    assert_eq!(
        upcoming("*/30 * * * *", "Europe/Berlin", "2026-03-28T23:45:00Z", 3),
        [
            "2026-03-29T01:00:00+01:00",
            "2026-03-29T01:30:00+01:00",
            "2026-03-29T03:00:00+02:00"
        ]
    );
}

#[test]
fn fall_back_fires_a_repeated_fixed_time_once() {
    // Europe/Berlin: 2026-10-25 03:00 CEST falls back to 02:00 CET; 02:30 happens twice.
    assert_eq!(
        upcoming("30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z", 3),
        [
            "2026-10-25T02:30:00+02:00",
            "2026-10-26T02:30:00+01:00",
            "2026-10-27T02:30:00+01:00"
        ]
    );
    // America/New_York: 2026-11-01 02:00 EDT falls back to 01:00 EST.
    assert_eq!(
        upcoming("30 1 * * *", "America/New_York", "2026-10-31T12:00:00Z", 2),
        ["2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"]
    );
}

#[test]
fn fall_back_fires_interval_times_in_both_passes() {
    assert_eq!(
        upcoming("0,30 * * * *", "Europe/Berlin", "2026-10-24T23:45:00Z", 4),
        [
            "2026-10-25T02:00:00+02:00",
            "2026-10-25T02:30:00+02:00",
            "2026-10-25T02:00:00+01:00",
            "2026-10-25T02:30:00+01:00",
        ]
    );
}

#[test]
fn zones_that_change_at_midnight() {
    // America/Santiago: 2026-09-06 00:00 -04 jumps to 01:00 -03, so that midnight does not
    // exist; the daily job fires at the first instant of the day.
    assert_eq!(
        upcoming("0 0 * * *", "America/Santiago", "2026-09-05T12:00:00Z", 2),
        ["2026-09-06T01:00:00-03:00", "2026-09-07T00:00:00-03:00"]
    );
    // America/Havana: 2026-03-08 00:00 CST jumps to 01:00 CDT.
    assert_eq!(
        upcoming("0 0 * * *", "America/Havana", "2026-03-07T12:00:00Z", 2),
        ["2026-03-08T01:00:00-04:00", "2026-03-09T00:00:00-04:00"]
    );
    // Back again: America/Santiago 2026-04-05 00:00 -03 falls back to 23:00 -04 on the 4th,
    // so 23:30 on 4 April happens twice and the fixed-time job fires once.
    assert_eq!(
        upcoming("30 23 * * *", "America/Santiago", "2026-04-04T12:00:00Z", 2),
        ["2026-04-04T23:30:00-03:00", "2026-04-05T23:30:00-04:00"]
    );
}

#[test]
fn bad_expressions_and_zones_name_the_field() {
    let cron_error = Cron::new("61 * * * *", "UTC").unwrap_err();
    assert!(matches!(cron_error, ScheduleError::Cron { .. }));
    assert_eq!(
        cron_error.to_string(),
        "cron `61 * * * *`: minute `61`: 61 is out of range; minute is 0-59"
    );
    assert_eq!(
        Cron::new("* * *", "UTC").unwrap_err().to_string(),
        "cron `* * *`: expected 5 fields (minute hour day-of-month month day-of-week) or 6 (with seconds first), got 3"
    );
    assert_eq!(
        Cron::new("0 0 * * Mon/0", "UTC").unwrap_err().to_string(),
        "cron `0 0 * * Mon/0`: day of week `Mon/0`: the step must be at least 1"
    );
    assert_eq!(
        Cron::new("0 3 * * *", "Mars/Olympus")
            .unwrap_err()
            .to_string(),
        "timezone `Mars/Olympus` is not a known IANA time zone (e.g. Europe/Berlin, UTC)"
    );
    assert_eq!(
        Cron::new("0 0 30 2 *", "UTC").unwrap_err(),
        ScheduleError::NeverFires("0 0 30 2 *".into())
    );
    assert_eq!(
        Cron::new("0 0 30/5 2 *", "UTC").unwrap_err(),
        ScheduleError::NeverFires("0 0 30/5 2 *".into())
    );
    assert_eq!(
        parse_time("tomorrow").unwrap_err().to_string(),
        "`tomorrow` is not an RFC 3339 time with offset (e.g. 2026-03-29T00:00:00+01:00)"
    );
}

/// `a/n` runs from `a` to the field's end, as Kubernetes CronJob, Quartz and robfig/cron
/// read it: the same fire times as the list spelled out, across a DST change too.
#[test]
fn start_step_fires_as_the_spelled_out_list() {
    for (stepped, listed) in [
        ("0/15 * * * *", "0,15,30,45 * * * *"),
        ("15/35 * * * *", "15,50 * * * *"),
        ("0/15,7 * * * *", "0,7,15,30,45 * * * *"),
        ("0 3/5 * * *", "0 3,8,13,18,23 * * *"),
        ("0 0 1/10 * *", "0 0 1,11,21,31 * *"),
        ("0 0 1 JAN/3 *", "0 0 1 1,4,7,10 *"),
        ("0 9 * * Mon/2", "0 9 * * Mon,Wed,Fri"),
        ("0 9 * * sun/3", "0 9 * * 0,3,6"),
        ("0 9 * * 7/2", "0 9 * * 0,2,4,6"),
        ("0/20 0 12 * * *", "0,20,40 0 12 * * *"),
        ("0/30 2 * * *", "0,30 2 * * *"),
    ] {
        for tz in ["UTC", "Europe/Berlin", "America/New_York"] {
            assert_eq!(
                upcoming(stepped, tz, "2026-03-01T00:00:00Z", 40),
                upcoming(listed, tz, "2026-03-01T00:00:00Z", 40),
                "`{stepped}` in {tz}"
            );
        }
    }
}

#[test]
fn start_step_keeps_the_expression_as_written() {
    let cron = Cron::new(" 0/15 * * * * ", "UTC").unwrap();
    assert_eq!(cron.expr(), "0/15 * * * *");
}

#[test]
fn leap_days_still_fire() {
    assert_eq!(
        upcoming("0 0 29 2 *", "UTC", "2026-11-30T00:00:00Z", 1),
        ["2028-02-29T00:00:00+00:00"]
    );
}
