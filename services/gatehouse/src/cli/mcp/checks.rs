//! Reading a tool's arguments before anything is sent: every id, name and text bounded and
//! of the shape the API takes, with a message that says what to change.

use serde::de::DeserializeOwned;
use serde_json::Value;
use uuid::Uuid;

use super::answer::Failure;

/// The longest SOP, project, node or artifact name accepted.
const NAME_MAX: usize = 200;
/// The longest comment, parameter value or other free text accepted.
pub(crate) const TEXT_MAX: usize = 8 * 1024;

/// A tool's arguments as its parameter type, or why they do not fit it.
pub(crate) fn arguments<T: DeserializeOwned>(arguments: Value) -> Result<T, Failure> {
    serde_json::from_value(arguments).map_err(|e| Failure::Arguments(e.to_string()))
}

/// A run's (or requirement's) id: a UUID, as the API takes it.
pub(crate) fn id(text: &str, what: &str, listed_by: &str) -> Result<Uuid, Failure> {
    let text = text.trim();
    Uuid::parse_str(text).map_err(|_| {
        Failure::Arguments(format!(
            "`{}` is not a {what} id: it is a UUID such as 0193a4b2-7c1d-7e2f-9a3b-4c5d6e7f8091 ({listed_by} shows them)",
            shown(text)
        ))
    })
}

/// A node's id: ASCII letters, digits, `-`, `_` and `.`, as SOPs name them.
pub(crate) fn node(text: &str) -> Result<&str, Failure> {
    let text = text.trim();
    let fits = !text.is_empty()
        && text.len() <= NAME_MAX
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if fits {
        Ok(text)
    } else {
        Err(Failure::Arguments(format!(
            "`{}` is not a node id: letters, digits, `-`, `_` and `.`, at most {NAME_MAX} characters (show_run lists a run's nodes)",
            shown(text)
        )))
    }
}

/// A SOP's, project's or status's name: not empty, at most [`NAME_MAX`] characters, no
/// control characters. (It is sent percent-encoded, so it stays one name.)
pub(crate) fn name<'a>(text: &'a str, what: &str) -> Result<&'a str, Failure> {
    let text = text.trim();
    if text.is_empty() || text.chars().count() > NAME_MAX || text.chars().any(char::is_control) {
        return Err(Failure::Arguments(format!(
            "`{}` is not a {what} name: 1 to {NAME_MAX} characters, none of them control characters",
            shown(text)
        )));
    }
    Ok(text)
}

/// Free text (a comment, a parameter's value): at most [`TEXT_MAX`] bytes.
pub(crate) fn text<'a>(text: &'a str, what: &str) -> Result<&'a str, Failure> {
    if text.len() > TEXT_MAX {
        return Err(Failure::Arguments(format!(
            "the {what} is {} bytes; at most {TEXT_MAX} are accepted",
            text.len()
        )));
    }
    Ok(text)
}

/// A number within `low..=high`, or `default` when absent.
pub(crate) fn bounded(
    value: Option<u32>,
    default: u32,
    low: u32,
    high: u32,
    what: &str,
) -> Result<u32, Failure> {
    let value = value.unwrap_or(default);
    if (low..=high).contains(&value) {
        Ok(value)
    } else {
        Err(Failure::Arguments(format!(
            "{what} is {value}; it must be from {low} to {high}"
        )))
    }
}

/// Text a caller gave, fit to be quoted in a message: at most 80 characters, control
/// characters escaped.
pub(crate) fn shown(text: &str) -> String {
    let mut out: String = text.chars().take(80).flat_map(char::escape_debug).collect();
    if text.chars().count() > 80 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_uuids() {
        assert!(id("0193a4b2-7c1d-7e2f-9a3b-4c5d6e7f8091", "run", "list_runs").is_ok());
        let refused = id("../../tokens", "run", "list_runs")
            .unwrap_err()
            .to_string();
        assert!(refused.contains("is not a run id"), "{refused}");
    }

    #[test]
    fn nodes_are_sop_ids() {
        assert_eq!(node(" build ").unwrap(), "build");
        assert!(node("a/b").is_err());
        assert!(node("").is_err());
        assert!(node(&"x".repeat(201)).is_err());
    }

    #[test]
    fn names_and_texts_are_bounded() {
        assert!(name("bug-fix", "SOP").is_ok());
        assert!(name("a\nb", "SOP").is_err());
        assert!(text(&"x".repeat(TEXT_MAX + 1), "comment").is_err());
        assert!(bounded(Some(0), 20, 1, 100, "limit").is_err());
        assert_eq!(bounded(None, 20, 1, 100, "limit").unwrap(), 20);
    }

    #[test]
    fn hostile_text_is_quoted_short_and_escaped() {
        assert_eq!(shown("a\u{1b}[31m"), "a\\u{1b}[31m");
        assert_eq!(shown(&"y".repeat(100)).chars().count(), 81);
    }
}
