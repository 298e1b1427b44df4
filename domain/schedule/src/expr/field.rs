//! One field of a cron expression: the values it takes, and what is wrong with an element
//! it does not.

use thiserror::Error;

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
pub(super) enum Kind {
    Plain,
    DayOfMonth,
    DayOfWeek,
}

/// One field of a cron expression: its name, its values and what it takes besides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Field {
    /// How messages name it.
    pub(super) name: &'static str,
    /// The first value.
    pub(super) min: u16,
    /// The last value: where `a/n` stops.
    pub(super) end: u16,
    /// The highest number taken: `end`, except day of week, whose 7 is Sunday again.
    pub(super) max: u16,
    /// Names of the values from `min` on (JAN is 1, SUN is 0).
    pub(super) names: &'static [&'static str],
    /// The values, for messages.
    pub(super) values: &'static str,
    /// Further notations, for messages.
    pub(super) also: &'static str,
    pub(super) kind: Kind,
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
pub(super) static SIX: [Field; 6] = [SECOND, MINUTE, HOUR, DAY_OF_MONTH, MONTH, DAY_OF_WEEK];
static SEVEN: [Field; 7] = [SECOND, MINUTE, HOUR, DAY_OF_MONTH, MONTH, DAY_OF_WEEK, YEAR];

/// The fields of an expression with `count` of them.
pub(super) fn layout(count: usize) -> Option<&'static [Field]> {
    match count {
        5 => Some(&FIVE),
        6 => Some(&SIX),
        7 => Some(&SEVEN),
        _ => None,
    }
}

impl Field {
    /// A number in range or one of the field's names (any case).
    pub(super) fn value(&'static self, text: &str) -> Result<u16, Problem> {
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
pub(super) fn is_number(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())
}
