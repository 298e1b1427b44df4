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

mod explain;
mod field;

use croner::parser::{CronParser, Seconds};
use thiserror::Error;

use self::field::{Field, Kind, Problem, is_number, layout};

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
}

#[cfg(test)]
mod tests;
