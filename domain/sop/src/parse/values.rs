//! Values checked the same wherever they appear: people lists, ids, durations.

use std::time::Duration;

use marked_yaml::Spanned;

use super::report::Report;
use crate::check_person_or_group;

/// The entries of a people list (`approvers`, `starters`), each checked where it is
/// written.
pub(super) fn people(
    report: &mut Report<'_>,
    entries: &[Spanned<String>],
    key: &str,
) -> Vec<String> {
    for entry in entries {
        if let Err(e) = check_person_or_group(entry) {
            report.span(entry.span(), format!("`{key}`: {e}"));
        }
    }
    entries.iter().map(|e| e.to_string()).collect()
}

pub(super) fn valid_id(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_lowercase())
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

pub(super) fn valid_param(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

pub(super) fn duration(
    report: &mut Report<'_>,
    value: &Spanned<String>,
    key: &str,
) -> Option<Duration> {
    match humantime::parse_duration(value.trim()) {
        Ok(d) if !d.is_zero() => Some(d),
        Ok(_) => {
            report.span(value.span(), format!("`{key}` must be longer than zero"));
            None
        }
        Err(e) => {
            report.span(
                value.span(),
                format!(
                    "`{key}`: invalid duration `{}` ({e}); use e.g. 30s, 10m, 1h30m",
                    &**value
                ),
            );
            None
        }
    }
}
