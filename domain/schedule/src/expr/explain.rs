//! Why croner refused an element of a field, in Gatehouse's words.

use super::field::{Field, Kind, Problem, is_number};

impl Field {
    /// What is wrong with an element croner refused (croner reads letters in any case).
    pub(super) fn explain(&'static self, element: &str) -> Problem {
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
}
