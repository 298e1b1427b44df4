//! Reading cron expressions: the start/step form, and every refusal worded here.

use croner::{CronComponent, CronPattern};

use super::field::SIX;
use super::*;

/// The values croner sets for one field of `expr`.
fn values(expr: &str, pick: fn(&CronPattern) -> &CronComponent) -> Vec<u16> {
    pick(&parse(expr).unwrap().pattern).values()
}

fn message(expr: &str) -> String {
    parse(expr).unwrap_err().to_string()
}

#[test]
fn start_step_runs_to_the_fields_end() {
    assert_eq!(values("0/15 * * * *", |p| &p.minutes), [0, 15, 30, 45]);
    assert_eq!(values("15/35 * * * *", |p| &p.minutes), [15, 50]);
    assert_eq!(values("0/15,7 * * * *", |p| &p.minutes), [0, 7, 15, 30, 45]);
    assert_eq!(values("05/20 * * * *", |p| &p.minutes), [5, 25, 45]);
    assert_eq!(values("59/5 * * * *", |p| &p.minutes), [59]);
    assert_eq!(values("0 3/5 * * *", |p| &p.hours), [3, 8, 13, 18, 23]);
    assert_eq!(values("0 0 1/10 * *", |p| &p.days), [1, 11, 21, 31]);
    assert_eq!(values("0 0 1 2/3 *", |p| &p.months), [2, 5, 8, 11]);
    assert_eq!(values("0 0 1 jan/4 *", |p| &p.months), [1, 5, 9]);
    assert_eq!(values("0 0 * * Mon/2", |p| &p.days_of_week), [1, 3, 5]);
    assert_eq!(values("0 0 * * SUN/2", |p| &p.days_of_week), [0, 2, 4, 6]);
    assert_eq!(values("0 0 * * 7/2", |p| &p.days_of_week), [0, 2, 4, 6]);
    assert_eq!(values("0 0 * * 6/2", |p| &p.days_of_week), [6]);
    assert_eq!(values("0 0 * * +1/2", |p| &p.days_of_week), [1, 3, 5]);
    assert_eq!(values("10/20 * * * * *", |p| &p.seconds), [10, 30, 50]);
    assert_eq!(
        values("0 0 0 1 1 * 2026/2", |p| &p.years)[..2],
        [2026, 2028]
    );
}

/// Every start and step of every field gives what the spelled-out list gives.
#[test]
fn start_step_equals_the_spelled_out_list_for_every_start_and_step() {
    for (i, field) in SIX.iter().enumerate() {
        for start in field.min..=field.max {
            for step in 1..=field.end - field.min + 2 {
                let first = if start > field.end { field.min } else { start };
                let list: Vec<u16> = (first..=field.end).step_by(usize::from(step)).collect();
                let spelled: Vec<String> = list.iter().map(u16::to_string).collect();
                let with = |text: &str| {
                    let mut parts = ["*"; 6];
                    parts[i] = text;
                    parts.join(" ")
                };
                let stepped = parse(&with(&format!("{start}/{step}"))).unwrap();
                let listed = parse(&with(&spelled.join(","))).unwrap();
                let pick: fn(&CronPattern) -> &CronComponent = match i {
                    0 => |p| &p.seconds,
                    1 => |p| &p.minutes,
                    2 => |p| &p.hours,
                    3 => |p| &p.days,
                    4 => |p| &p.months,
                    _ => |p| &p.days_of_week,
                };
                assert_eq!(
                    pick(&stepped.pattern).values(),
                    list,
                    "{} {start}/{step}",
                    field.name
                );
                assert_eq!(
                    pick(&stepped.pattern).values(),
                    pick(&listed.pattern).values()
                );
                // The day fields also decide whether both must match; `a/n` is not `*`.
                assert_eq!(
                    stepped.pattern.is_dom_wildcard(),
                    listed.pattern.is_dom_wildcard()
                );
                assert_eq!(
                    stepped.pattern.is_dow_wildcard(),
                    listed.pattern.is_dow_wildcard()
                );
            }
        }
    }
}

/// Whatever croner took before reads exactly as it did: generated field texts from a
/// small alphabet, in every field. Where croner refuses one, so does Gatehouse, in its
/// own words.
#[test]
fn what_croner_accepts_is_unchanged_and_its_refusals_are_worded_here() {
    let tokens = [
        "", "0", "1", "7", "60", "*", "?", "L", "W", "#", "/", "-", ",", "MON", "jan", "+",
    ];
    let mut texts = std::collections::BTreeSet::new();
    for a in tokens {
        for b in tokens {
            for c in tokens {
                texts.insert(format!("{a}{b}{c}"));
            }
        }
    }
    texts.remove("");
    let croner_words = [
        "croner",
        "Cron",
        "Pattern",
        "Component",
        "Invalid",
        "bounds",
        "Position",
        "Bit ",
        "Feature",
    ];
    for i in 0..6 {
        for text in &texts {
            let mut parts = ["*"; 6];
            parts[i] = text;
            let expr = parts.join(" ");
            let ours = parse(&expr);
            match (parser().parse(&expr), &ours) {
                (Ok(before), Ok(now)) => assert_eq!(&before, now, "{expr}"),
                (Ok(_), Err(e)) => panic!("`{expr}` was accepted, now: {e}"),
                (Err(_), Ok(_)) => assert!(text.contains('/'), "{expr}"),
                (Err(_), Err(e)) => {
                    let e = e.to_string();
                    assert!(e.starts_with(SIX[i].name), "`{expr}`: {e}");
                    assert!(!croner_words.iter().any(|w| e.contains(w)), "`{expr}`: {e}");
                }
            }
        }
    }
}

#[test]
fn accepted_forms_are_not_rewritten() {
    for expr in [
        "*/15 * * * *",
        "0-30/10 9-17 * * 1-5",
        "0 0 L * *",
        "0 0 LW * *",
        "0 0 15W * *",
        "0 0 ? * MON#2",
        "0 0 * * 5L",
        "0 0 * * FRI-SUN",
        "0 0 * * 7",
        "0 0 1 * +MON",
        "0 0 1 jan-mar,dec *",
        "30 0 12 * * *",
        "0 0 0 1 1 * 2030",
        "1,,2 * * * *",
    ] {
        let fields: Vec<&str> = expr.split_whitespace().collect();
        let layout = layout(fields.len()).unwrap();
        assert_eq!(rewrite(&fields, layout), expr);
        assert_eq!(
            parse(expr).unwrap(),
            parser().parse(expr).unwrap(),
            "{expr}"
        );
    }
}

#[test]
fn field_counts_and_shorthands() {
    assert_eq!(
        message("* * *"),
        "expected 5 fields (minute hour day-of-month month day-of-week) or 6 (with seconds first), got 3"
    );
    assert_eq!(
        message(""),
        "expected 5 fields (minute hour day-of-month month day-of-week) or 6 (with seconds first), got 0"
    );
    assert_eq!(
        message("0 0 0 1 1 * 2030 5"),
        "expected 5 fields (minute hour day-of-month month day-of-week) or 6 (with seconds first), got 8"
    );
    assert_eq!(
        message("@every 5m"),
        "unknown shorthand `@every 5m`; use @yearly, @annually, @monthly, @weekly, @daily or @hourly"
    );
    assert!(parse("@DAILY").is_ok());
    assert!(parse("@annually").is_ok());
}

#[test]
fn each_field_is_named_with_what_it_takes() {
    for (expr, expected) in [
        (
            "60 * * * * *",
            "second `60`: 60 is out of range; second is 0-59",
        ),
        (
            "61 * * * *",
            "minute `61`: 61 is out of range; minute is 0-59",
        ),
        ("0 24 * * *", "hour `24`: 24 is out of range; hour is 0-23"),
        (
            "0 0 0 * *",
            "day of month `0`: 0 is out of range; day of month is 1-31",
        ),
        (
            "0 0 * 13 *",
            "month `13`: 13 is out of range; month is 1-12 or JAN-DEC",
        ),
        (
            "0 0 * * 8",
            "day of week `8`: 8 is out of range; day of week is 0-6 or SUN-SAT (7 is also Sunday)",
        ),
        (
            "0 0 0 1 1 * 0",
            "year `0`: 0 is out of range; year is 1-5000",
        ),
        (
            "0 0 * * Fun",
            "day of week `Fun`: `Fun` is not a number or name; day of week is 0-6 or SUN-SAT (7 is also Sunday)",
        ),
        (
            "0 0 * Jun-Foo *",
            "month `Jun-Foo`: `Foo` is not a number or name; month is 1-12 or JAN-DEC",
        ),
        ("0 x * * *", "hour `x`: `x` is not a number; hour is 0-23"),
    ] {
        assert_eq!(message(expr), expected, "{expr}");
    }
}

#[test]
fn syntax_errors_say_what_is_wrong() {
    for (expr, expected) in [
        ("0/0 * * * *", "minute `0/0`: the step must be at least 1"),
        ("*/ * * * *", "minute `*/`: the step after `/` is missing"),
        (
            "*/x * * * *",
            "minute `*/x`: step `x` is not a whole number",
        ),
        (
            "/5 * * * *",
            "minute `/5`: a step needs a start: write `*/5` (from the field's first value) or `a/5` (from a)",
        ),
        (
            "1/2/3 * * * *",
            "minute `1/2/3`: only one `/` is allowed in each element",
        ),
        (
            "75/15 * * * *",
            "minute `75/15`: 75 is out of range; minute is 0-59",
        ),
        (
            "0/15,75 * * * *",
            "minute `75`: 75 is out of range; minute is 0-59",
        ),
        (
            "0 22-2 * * *",
            "hour `22-2`: the range runs backwards (22 is after 2); write the lower value first, or two ranges for one that wraps (`22-23,0-2`)",
        ),
        (
            "0 0 * * FRI-MON",
            "day of week `FRI-MON`: the range runs backwards (5 is after 1); write the lower value first, or two ranges for one that wraps (`5-6,0-1`)",
        ),
        (
            "1,* * * * *",
            "minute `*`: `*` means every value and cannot be part of a list",
        ),
        (
            "0 L * * *",
            "hour `L`: `L` (last) is only for day of month and day of week",
        ),
        (
            "? * * * *",
            "minute `?`: `?` is only for day of month and day of week",
        ),
        (
            "0 0 * * 1W",
            "day of week `1W`: `W` (nearest weekday) is only for day of month",
        ),
        (
            "0 0 32W * *",
            "day of month `32W`: 32 is out of range; day of month is 1-31",
        ),
        (
            "0 0 1#2 * *",
            "day of month `1#2`: `#` (nth weekday of the month) is only for day of week",
        ),
        (
            "0 0 * * MON#6",
            "day of week `MON#6`: `#6` must be #1 to #5 (a weekday comes at most five times in a month)",
        ),
        (
            "0 0 5L * *",
            "day of month `5L`: `5L` (last such weekday of the month) is only for day of week",
        ),
        (
            "0 0 * * Mon/x",
            "day of week `Mon/x`: step `x` is not a whole number",
        ),
        (
            "0 0 1-2-3 * *",
            "day of month `1-2-3`: not a value, range or step; day of month takes 1-31, a range `a-b`, `*`, a step `*/n`, `a/n` or `a-b/n`, L (last day), LW (last weekday), 15W (weekday nearest the 15th), ?, or a list of these separated by commas",
        ),
        (
            "0 9- * * *",
            "hour `9-`: a range needs a value on each side of `-`",
        ),
        (
            "0 0 * * 1-",
            "day of week `1-`: a range needs a value on each side of `-`",
        ),
        (
            "0 0 * * 1--2",
            "day of week `1--2`: not a value, range or step; day of week takes 0-6 or SUN-SAT (7 is also Sunday), a range `a-b`, `*`, a step `*/n`, `a/n` or `a-b/n`, 5L (last Friday), 1#2 (second Monday), ?, or a list of these separated by commas",
        ),
        (
            "0 0 * * %",
            "day of week `%`: `%` is not a number or name; day of week is 0-6 or SUN-SAT (7 is also Sunday)",
        ),
    ] {
        assert_eq!(message(expr), expected, "{expr}");
    }
}
