//! Reading a cron expression before croner does.
//!
//! Two things are added to [croner]'s reading:
//!
//! - **The start/step form** `a/n` ("from `a` to the field's end, every `n`"), as Kubernetes
//!   CronJob, Quartz and robfig/cron read it: minute `0/15` is 0,15,30,45, minute `15/35` is
//!   15,50, day of week `MON/2` is Monday, Wednesday and Friday. croner refuses it unless
//!   its "sloppy ranges" mode is on, and that mode runs day of week up to 7 (Sunday again),
//!   so `MON/2` would fire on Sundays too. Each `a/n` element whose start is a single value
//!   (a number or, for month and day of week, a name) is therefore rewritten to `a-END/n`
//!   with the field's own end (day of week ends at 6, Saturday; a start of 7 is Sunday, 0)
//!   before croner parses the expression. No other element is touched, and croner refused
//!   every `a/n` before, so every expression it accepted reads exactly as it did.
//! - **Errors in Gatehouse's words.** When croner refuses an expression, each field (and
//!   then each element of that field) is parsed on its own to find the one it refuses, and
//!   the message names that field, quotes the element and says what the field takes.
//!   croner's own wording never reaches a user.
//!
//! Five fields are minute hour day-of-month month day-of-week; six put seconds first. croner
//! also takes a seventh, the year (1-5000), after the day of week; that stays accepted
//! so that no stored schedule stops reading, but it is not advertised.

use croner::parser::{CronParser, Seconds};
use thiserror::Error;

/// Why a cron expression cannot be read (the message goes after "cron `<expr>`: ").
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub(crate) enum ExprError {
    /// Not 5 or 6 whitespace-separated fields.
    #[error(
        "expected 5 fields (minute hour day-of-month month day-of-week) or 6 (with seconds first), got {0}"
    )]
    FieldCount(usize),
    /// An `@` word croner does not know.
    #[error(
        "unknown shorthand `{0}`; use @yearly, @annually, @monthly, @weekly, @daily or @hourly"
    )]
    Shorthand(String),
    /// One element of one field is wrong.
    #[error("{} `{text}`: {problem}", .field.name)]
    Field {
        field: &'static Field,
        /// The element of the field croner refused, as written.
        text: String,
        problem: Problem,
    },
    /// croner refuses the whole but no field on its own (not expected to happen).
    #[error(
        "not a cron expression; expected 5 fields (minute hour day-of-month month day-of-week) or 6 (with seconds first), each a value, a range `a-b`, `*`, a step `*/n`, `a/n` or `a-b/n`, or a list of these separated by commas"
    )]
    Unreadable,
}

/// What is wrong with one element of a field.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub(crate) enum Problem {
    /// A number outside the field's range.
    #[error("{value} is out of range; {} is {}", .field.name, .field.values)]
    OutOfRange {
        /// The number as written.
        value: String,
        field: &'static Field,
    },
    /// Neither a number nor one of the field's names.
    #[error("`{value}` is not {}; {} is {}", .field.value_kind(), .field.name, .field.values)]
    NotAValue {
        /// The text as written.
        value: String,
        field: &'static Field,
    },
    /// A range whose start comes after its end.
    #[error(
        "the range runs backwards ({from} is after {to}); write the lower value first, or two ranges for one that wraps (`{wrap}`)"
    )]
    Backwards {
        /// The start, as a number.
        from: u16,
        /// The end, as a number.
        to: u16,
        /// The same span written as two ranges.
        wrap: String,
    },
    /// `-` without a value on one side.
    #[error("a range needs a value on each side of `-`")]
    HalfRange,
    /// `/` with nothing after it.
    #[error("the step after `/` is missing")]
    MissingStep,
    /// `/0`.
    #[error("the step must be at least 1")]
    ZeroStep,
    /// `/x`.
    #[error("step `{0}` is not a whole number")]
    BadStep(String),
    /// `/n` with nothing before it.
    #[error(
        "a step needs a start: write `*/{0}` (from the field's first value) or `a/{0}` (from a)"
    )]
    NoStart(String),
    /// `a/b/c`.
    #[error("only one `/` is allowed in each element")]
    TwoSlashes,
    /// `*` or `?` as one element of a list.
    #[error("`{0}` means every value and cannot be part of a list")]
    WildcardInList(String),
    /// A day-of-month or day-of-week notation in another field.
    #[error("{what} is only for {only}")]
    NotHere {
        what: &'static str,
        /// The fields that take it.
        only: &'static str,
    },
    /// `#0` or `#6`.
    #[error("`#{0}` must be #1 to #5 (a weekday comes at most five times in a month)")]
    Nth(String),
    /// Anything else.
    #[error(
        "not a value, range or step; {} takes {}, a range `a-b`, `*`, a step `*/n`, `a/n` or `a-b/n`{}, or a list of these separated by commas",
        .field.name, .field.values, .field.also
    )]
    Syntax { field: &'static Field },
}

/// Which notations beyond values, ranges and steps a field takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Plain,
    DayOfMonth,
    DayOfWeek,
}

/// One field of a cron expression: its name, its values and what it takes besides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Field {
    /// How messages name it.
    name: &'static str,
    /// The first value.
    min: u16,
    /// The last value: where `a/n` stops.
    end: u16,
    /// The highest number taken: `end`, except day of week, whose 7 is Sunday again.
    max: u16,
    /// Names of the values from `min` on (JAN is 1, SUN is 0).
    names: &'static [&'static str],
    /// The values, for messages.
    values: &'static str,
    /// Further notations, for messages.
    also: &'static str,
    kind: Kind,
}

const fn plain(name: &'static str, min: u16, end: u16, values: &'static str) -> Field {
    Field {
        name,
        min,
        end,
        max: end,
        names: &[],
        values,
        also: "",
        kind: Kind::Plain,
    }
}

const SECOND: Field = plain("second", 0, 59, "0-59");
const MINUTE: Field = plain("minute", 0, 59, "0-59");
const HOUR: Field = plain("hour", 0, 23, "0-23");
const DAY_OF_MONTH: Field = Field {
    also: ", L (last day), LW (last weekday), 15W (weekday nearest the 15th), ?",
    kind: Kind::DayOfMonth,
    ..plain("day of month", 1, 31, "1-31")
};
const MONTH: Field = Field {
    names: &[
        "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
    ],
    ..plain("month", 1, 12, "1-12 or JAN-DEC")
};
const DAY_OF_WEEK: Field = Field {
    max: 7,
    names: &["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"],
    also: ", 5L (last Friday), 1#2 (second Monday), ?",
    kind: Kind::DayOfWeek,
    ..plain("day of week", 0, 6, "0-6 or SUN-SAT (7 is also Sunday)")
};
const YEAR: Field = plain("year", 1, 5000, "1-5000");

static FIVE: [Field; 5] = [MINUTE, HOUR, DAY_OF_MONTH, MONTH, DAY_OF_WEEK];
static SIX: [Field; 6] = [SECOND, MINUTE, HOUR, DAY_OF_MONTH, MONTH, DAY_OF_WEEK];
static SEVEN: [Field; 7] = [SECOND, MINUTE, HOUR, DAY_OF_MONTH, MONTH, DAY_OF_WEEK, YEAR];

/// The fields of an expression with `count` of them.
fn layout(count: usize) -> Option<&'static [Field]> {
    match count {
        5 => Some(&FIVE),
        6 => Some(&SIX),
        7 => Some(&SEVEN),
        _ => None,
    }
}

/// croner as Gatehouse configures it: seconds optional, everything else its default.
fn parser() -> CronParser {
    CronParser::builder().seconds(Seconds::Optional).build()
}

/// Parses a trimmed cron expression, with `a/n` read as `a-END/n`.
pub(crate) fn parse(expr: &str) -> Result<croner::Cron, ExprError> {
    if expr.starts_with('@') {
        return parser()
            .parse(expr)
            .map_err(|_| ExprError::Shorthand(expr.to_owned()));
    }
    let fields: Vec<&str> = expr.split_whitespace().collect();
    let layout = layout(fields.len()).ok_or(ExprError::FieldCount(fields.len()))?;
    parser()
        .parse(&rewrite(&fields, layout))
        .map_err(|_| diagnose(&fields, layout))
}

/// The expression with every `a/n` element spelled `a-END/n`.
fn rewrite(fields: &[&str], layout: &'static [Field]) -> String {
    let fields: Vec<String> = fields
        .iter()
        .zip(layout)
        .map(|(text, field)| field.rewrite(text))
        .collect();
    fields.join(" ")
}

/// Finds the field, then the element, that croner refuses on its own, and says why.
fn diagnose(fields: &[&str], layout: &'static [Field]) -> ExprError {
    for (i, (text, field)) in fields.iter().zip(layout).enumerate() {
        if accepts_alone(layout, i, &field.rewrite(text)) {
            continue;
        }
        // Each element is tried as one of a list (`e,`): croner reads a field that is only
        // `*` specially, but refuses `*` inside a list.
        let (_, body) = field.split_plus(text);
        let culprit = body
            .split(',')
            .filter(|element| !element.is_empty())
            .find(|element| {
                !accepts_alone(layout, i, &format!("{},", field.rewrite_element(element)))
            })
            .unwrap_or(text);
        return ExprError::Field {
            field,
            text: culprit.to_owned(),
            problem: field.explain(culprit),
        };
    }
    ExprError::Unreadable
}

/// Whether croner takes `text` as field `i` with every other field `*`.
fn accepts_alone(layout: &[Field], i: usize, text: &str) -> bool {
    let mut parts = vec!["*"; layout.len()];
    if let Some(part) = parts.get_mut(i) {
        *part = text;
    }
    parser().parse(&parts.join(" ")).is_ok()
}

impl Field {
    /// The field with each `a/n` element spelled `a-END/n`; the rest as written.
    fn rewrite(&'static self, text: &str) -> String {
        let (plus, body) = self.split_plus(text);
        let elements: Vec<String> = body
            .split(',')
            .map(|element| self.rewrite_element(element))
            .collect();
        format!("{plus}{}", elements.join(","))
    }

    /// A day of week's leading `+` (both day fields must match) and the rest.
    fn split_plus<'a>(&self, text: &'a str) -> (&'static str, &'a str) {
        match text.strip_prefix('+') {
            Some(rest) if self.kind == Kind::DayOfWeek => ("+", rest),
            _ => ("", text),
        }
    }

    /// `a/n` as `a-END/n` when `a` is one value of the field and `n` a number.
    fn rewrite_element(&'static self, element: &str) -> String {
        if let Some((start, step)) = element.split_once('/')
            && is_number(step)
            && let Ok(start) = self.value(start)
        {
            // Day of week 7 is Sunday, which starts the week at 0.
            let start = if start > self.end {
                start - (self.end - self.min + 1)
            } else {
                start
            };
            return format!("{start}-{}/{step}", self.end);
        }
        element.to_owned()
    }

    /// A number in range or one of the field's names (any case).
    fn value(&'static self, text: &str) -> Result<u16, Problem> {
        let upper = text.to_ascii_uppercase();
        if is_number(&upper) {
            return match upper.parse::<u16>() {
                Ok(value) if (self.min..=self.max).contains(&value) => Ok(value),
                _ => Err(Problem::OutOfRange {
                    value: text.to_owned(),
                    field: self,
                }),
            };
        }
        (self.min..)
            .zip(self.names)
            .find(|(_, name)| **name == upper)
            .map(|(value, _)| value)
            .ok_or_else(|| Problem::NotAValue {
                value: text.to_owned(),
                field: self,
            })
    }

    /// What is wrong with an element croner refused (croner reads letters in any case).
    fn explain(&'static self, element: &str) -> Problem {
        let days = self.kind != Kind::Plain;
        let syntax = Problem::Syntax { field: self };
        if let Some((range, step)) = element.split_once('/') {
            return self.explain_step(range, step).unwrap_or(syntax);
        }
        if element.contains('-') {
            return self.explain_range(element).unwrap_or(syntax);
        }
        if element == "?" && !days {
            return Problem::NotHere {
                what: "`?`",
                only: "day of month and day of week",
            };
        }
        if element == "*" || element == "?" {
            return Problem::WildcardInList(element.to_owned());
        }
        if element.eq_ignore_ascii_case("L") && !days {
            return Problem::NotHere {
                what: "`L` (last)",
                only: "day of month and day of week",
            };
        }
        if let Some(day) = element.strip_suffix(['W', 'w']) {
            if self.kind != Kind::DayOfMonth {
                return Problem::NotHere {
                    what: "`W` (nearest weekday)",
                    only: "day of month",
                };
            }
            return self.value(day).err().unwrap_or(syntax);
        }
        if let Some((day, nth)) = element.split_once('#') {
            if self.kind != Kind::DayOfWeek {
                return Problem::NotHere {
                    what: "`#` (nth weekday of the month)",
                    only: "day of week",
                };
            }
            if let Err(problem) = self.value(day) {
                return problem;
            }
            return match nth.parse::<u8>() {
                Ok(1..=5) => syntax,
                _ => Problem::Nth(nth.to_owned()),
            };
        }
        if let Some(day) = element.strip_suffix(['L', 'l']) {
            if self.kind != Kind::DayOfWeek {
                return Problem::NotHere {
                    what: "`5L` (last such weekday of the month)",
                    only: "day of week",
                };
            }
            return self.value(day).err().unwrap_or(syntax);
        }
        self.value(element).err().unwrap_or(syntax)
    }

    /// What is wrong with `range/step`, if it can be told.
    fn explain_step(&'static self, range: &str, step: &str) -> Option<Problem> {
        if step.contains('/') {
            return Some(Problem::TwoSlashes);
        }
        if step.is_empty() {
            return Some(Problem::MissingStep);
        }
        if !is_number(step) {
            return Some(Problem::BadStep(step.to_owned()));
        }
        if step.bytes().all(|b| b == b'0') {
            return Some(Problem::ZeroStep);
        }
        match range {
            "" => Some(Problem::NoStart(step.to_owned())),
            "*" => None,
            "?" if self.kind == Kind::Plain => Some(Problem::NotHere {
                what: "`?`",
                only: "day of month and day of week",
            }),
            "?" => None,
            range if range.contains('-') => self.explain_range(range),
            start => self.value(start).err(),
        }
    }

    /// What is wrong with `a-b`, if it can be told.
    fn explain_range(&'static self, range: &str) -> Option<Problem> {
        let (from, to) = range.split_once('-')?;
        if to.contains('-') {
            return None;
        }
        if from.is_empty() || to.is_empty() {
            return Some(Problem::HalfRange);
        }
        let from = match self.value(from) {
            Ok(value) => value,
            Err(problem) => return Some(problem),
        };
        let to = match self.value(to) {
            Ok(value) => value,
            Err(problem) => return Some(problem),
        };
        (from > to).then(|| Problem::Backwards {
            from,
            to,
            wrap: format!("{from}-{},{}-{to}", self.end, self.min),
        })
    }

    /// "a number" or "a number or name", for messages.
    fn value_kind(&self) -> &'static str {
        if self.names.is_empty() {
            "a number"
        } else {
            "a number or name"
        }
    }
}

/// Only ASCII digits, at least one.
fn is_number(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use croner::{CronComponent, CronPattern};

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
}
