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
    assert!(
        cron_error.to_string().starts_with("cron `61 * * * *`: "),
        "{cron_error}"
    );
    assert!(
        Cron::new("* * *", "UTC")
            .unwrap_err()
            .to_string()
            .starts_with("cron `* * *`: ")
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
        parse_time("tomorrow").unwrap_err().to_string(),
        "`tomorrow` is not an RFC 3339 time with offset (e.g. 2026-03-29T00:00:00+01:00)"
    );
}

#[test]
fn leap_days_still_fire() {
    assert_eq!(
        upcoming("0 0 29 2 *", "UTC", "2026-11-30T00:00:00Z", 1),
        ["2028-02-29T00:00:00+00:00"]
    );
}
