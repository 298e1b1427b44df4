//! Reading the JSON that coding-agent CLIs print, from the tail of their stdout: each
//! executor's report reader (`src/executor/<name>/report.rs`) and what they share.

use serde_json::{Map, Value};

use crate::executor::Executor;
use crate::usage::{ParseError, Report};

/// The model name recorded when neither the CLI's output nor the role names one.
const UNKNOWN_MODEL: &str = "unknown";

/// A JSON object as printed.
pub(crate) type Object = Map<String, Value>;

/// How much of the output a [`crate::ParseError`] quotes.
const EXCERPT_CHARS: usize = 200;

/// Reads usage, the failure message and the final message from the tail of a CLI's stdout.
///
/// The tail may start mid-line: lines that are not JSON are skipped. `model` is the role's
/// model, recorded for usage whose output does not name the model (Codex never does).
/// Only a Claude Code or Codex output with no recognisable result at all is an error.
pub fn parse_report(
    executor: Executor,
    model: Option<&str>,
    stdout: &[u8],
) -> Result<Report, ParseError> {
    let text = String::from_utf8_lossy(stdout);
    let model = model.unwrap_or(UNKNOWN_MODEL);
    executor.cli().report(&text, model)
}

/// The error of an output with no recognisable result.
pub(crate) fn no_result(executor: Executor, text: &str) -> ParseError {
    ParseError::NoResult {
        executor,
        excerpt: excerpt(text),
    }
}

/// Every JSON object that starts a line of `text`, in order, whether it fits on its line
/// (JSON Lines) or spans several (pretty-printed). Anything else is skipped: a first line cut
/// by the tail, log lines, a line the CLI printed before its JSON.
pub(crate) fn objects(text: &str) -> Vec<Object> {
    let mut objects = Vec::new();
    let mut line_start = 0;
    while line_start < text.len() {
        let line_end = text[line_start..]
            .find('\n')
            .map_or(text.len(), |i| line_start + i);
        let trimmed = text[line_start..line_end].trim_start();
        let mut next = line_end + 1;
        if trimmed.starts_with('{') {
            let object_start = line_end - trimmed.len();
            let mut values =
                serde_json::Deserializer::from_str(&text[object_start..]).into_iter::<Value>();
            if let Some(Ok(Value::Object(object))) = values.next() {
                objects.push(object);
                // Lines inside a multi-line object are not candidates of their own.
                next = next.max(object_start + values.byte_offset());
            }
        }
        line_start = next;
    }
    objects
}

/// A token count; absent, negative or non-integer counts are 0.
pub(crate) fn count(object: &Object, key: &str) -> u64 {
    object.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// A non-empty string field.
pub(crate) fn string<'a>(object: &'a Object, key: &str) -> Option<&'a str> {
    object
        .get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// The start of the output, for error messages.
pub(crate) fn excerpt(text: &str) -> String {
    let trimmed = text.trim_start();
    let mut excerpt: String = trimmed.chars().take(EXCERPT_CHARS).collect();
    if excerpt.len() < trimmed.len() {
        excerpt.push('…');
    }
    excerpt
}

#[cfg(test)]
mod tests {
    use super::{excerpt, objects};

    #[test]
    fn finds_json_lines_pretty_objects_and_skips_the_rest() {
        let text = "ed\":1}}\nnot json\n{\"a\":1}\n{\n  \"b\": {\n    \"c\": 2\n  }\n}\n  {\"d\":3}\n{broken\n";
        let found: Vec<String> = objects(text)
            .iter()
            .map(|o| serde_json::to_string(o).unwrap_or_default())
            .collect();
        assert_eq!(found, [r#"{"a":1}"#, r#"{"b":{"c":2}}"#, r#"{"d":3}"#]);
    }

    #[test]
    fn lines_inside_an_object_are_not_objects_of_their_own() {
        let text = "{\n  \"list\": [\n    {\"inner\": true}\n  ]\n}\n";
        assert_eq!(objects(text).len(), 1);
    }

    #[test]
    fn excerpt_is_the_first_200_characters() {
        let long = "é".repeat(300);
        let cut = excerpt(&long);
        assert_eq!(cut.chars().count(), 201);
        assert!(cut.ends_with('…'));
        assert_eq!(excerpt("  short\n"), "short\n");
    }
}
