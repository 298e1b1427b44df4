//! A `command` executor's output: the usage line a user's own agent wrapper prints.
//!
//! Gatehouse cannot know what an arbitrary program used, so a wrapper that wants its tokens
//! counted (and priced from `[pricing]`) prints one line of JSON to stdout when it is done:
//!
//! ```json
//! {"gatehouse_usage": {"model": "my-model", "input_tokens": 1200, "output_tokens": 340, "cache_read_tokens": 8000, "cache_write_tokens": 0}}
//! ```
//!
//! or, for a wrapper that used several models, a list of such objects:
//!
//! ```json
//! {"gatehouse_usage": [{"model": "big", "input_tokens": 900, "output_tokens": 300}, {"model": "small", "input_tokens": 300, "output_tokens": 40}]}
//! ```
//!
//! Every key but `model` is optional (0 when absent). `input_tokens` counts input tokens that were neither read from nor written to a
//! prompt cache: each token belongs in exactly one of the four counts. The counts are for
//! the whole attempt; when several such lines are printed, the last one wins. Other keys
//! are refused, so a misspelt count is reported instead of silently billed as zero. A
//! program that prints no such line has no usage, which is not an error.

use serde::Deserialize;
use serde_json::Value;

use crate::parse::objects;
use crate::usage::{ModelUsage, ParseError, Report};

/// The key that marks the usage line.
const KEY: &str = "gatehouse_usage";

/// How much of a malformed line an error quotes.
const LINE_CHARS: usize = 200;

/// One entry of the usage line.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    model: String,
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cache_read_tokens: u64,
    #[serde(default)]
    cache_write_tokens: u64,
}

/// The report of the last usage line; an empty one when there is none.
pub(crate) fn report(text: &str) -> Result<Report, ParseError> {
    let Some(usage) = objects(text)
        .into_iter()
        .rev()
        .find_map(|mut object| object.remove(KEY))
    else {
        return Ok(Report::default());
    };
    let malformed = |reason: String| {
        let line = serde_json::json!({ KEY: &usage }).to_string();
        ParseError::CommandUsage {
            reason,
            line: line.chars().take(LINE_CHARS).collect(),
        }
    };
    let entries = match &usage {
        Value::Array(entries) => entries.clone(),
        Value::Object(_) => vec![usage.clone()],
        _ => {
            return Err(malformed(format!(
                "`{KEY}` must be an object or a list of objects"
            )));
        }
    };
    let usage = entries
        .into_iter()
        .map(|entry| {
            let entry: Entry =
                serde_json::from_value(entry).map_err(|e| malformed(e.to_string()))?;
            if entry.model.trim().is_empty() {
                return Err(malformed("`model` is empty".to_owned()));
            }
            Ok(ModelUsage {
                model: entry.model,
                input_tokens: entry.input_tokens,
                output_tokens: entry.output_tokens,
                cache_read_tokens: entry.cache_read_tokens,
                cache_write_tokens: entry.cache_write_tokens,
            })
        })
        .collect::<Result<Vec<_>, ParseError>>()?;
    Ok(Report {
        usage,
        ..Report::default()
    })
}
