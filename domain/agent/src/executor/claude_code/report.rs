//! Claude Code's `--output-format json` output.
//!
//! Claude Code prints one result object when it finishes:
//!
//! ```json
//! {"type":"result","subtype":"success","is_error":false,"result":"Done.",
//!  "total_cost_usd":0.247,
//!  "usage":{"input_tokens":18,"output_tokens":424,
//!           "cache_creation_input_tokens":25067,"cache_read_input_tokens":17254},
//!  "modelUsage":{"claude-opus-4-5-20251101":{"inputTokens":38,"outputTokens":765,
//!           "cacheReadInputTokens":28775,"cacheCreationInputTokens":31159,"costUSD":0.228}}}
//! ```
//!
//! `modelUsage` has every model the attempt used (a smaller model runs some tools), so usage
//! is read from it; `usage`, which has no model name, is the fallback and is recorded under
//! the role's model. Claude's input counts already exclude cached tokens. A failure is
//! `is_error: true` (the message in `result`) or an `error_*` subtype (`error_max_turns`,
//! `error_during_execution`), which may come with `is_error: false`.
//!
//! The object is usually one long line, so a tail of stdout can start inside it. Then the
//! fields that survive the cut (`total_cost_usd`, `usage` and `modelUsage` come after the
//! agent's final message) are read on their own, and usage is still billed.

use serde_json::Value;

use crate::parse::{Object, count, objects, string};
use crate::usage::{ModelUsage, Report};

/// The fields a salvage looks for: all that [`from_result`] reads.
const RESULT_FIELDS: [&str; 7] = [
    "subtype",
    "is_error",
    "result",
    "errors",
    "total_cost_usd",
    "usage",
    "modelUsage",
];

/// The attempt's report, or `None` when the output holds no result at all.
pub(crate) fn report(text: &str, model: &str) -> Option<Report> {
    match objects(text).iter().rev().find(|o| is_result(o)) {
        Some(result) => Some(from_result(result, model)),
        None => salvage(text).map(|result| from_result(&result, model)),
    }
}

fn is_result(object: &Object) -> bool {
    match object.get("type").and_then(Value::as_str) {
        Some(kind) => kind == "result",
        // Some early failures (an invalid API key) print the result fields without a type.
        None => ["is_error", "modelUsage", "total_cost_usd"]
            .iter()
            .any(|key| object.contains_key(*key)),
    }
}

fn from_result(result: &Object, model: &str) -> Report {
    let is_error = result
        .get("is_error")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    Report {
        usage: usage(result, model),
        reported_cost_usd: result.get("total_cost_usd").and_then(Value::as_f64),
        failed: failure(result, is_error),
        // With `is_error`, `result` is the error message rather than the agent's.
        summary: (!is_error)
            .then(|| string(result, "result").map(str::to_owned))
            .flatten(),
    }
}

fn usage(result: &Object, model: &str) -> Vec<ModelUsage> {
    let per_model = result
        .get("modelUsage")
        .and_then(Value::as_object)
        .filter(|per_model| !per_model.is_empty());
    let mut usage: Vec<ModelUsage> = match per_model {
        Some(per_model) => per_model
            .iter()
            .filter_map(|(name, counts)| {
                let counts = counts.as_object()?;
                Some(ModelUsage {
                    model: name.clone(),
                    input_tokens: count(counts, "inputTokens"),
                    output_tokens: count(counts, "outputTokens"),
                    cache_read_tokens: count(counts, "cacheReadInputTokens"),
                    cache_write_tokens: count(counts, "cacheCreationInputTokens"),
                })
            })
            .collect(),
        None => result
            .get("usage")
            .and_then(Value::as_object)
            .map(|counts| ModelUsage {
                model: model.to_owned(),
                input_tokens: count(counts, "input_tokens"),
                output_tokens: count(counts, "output_tokens"),
                cache_read_tokens: count(counts, "cache_read_input_tokens"),
                cache_write_tokens: count(counts, "cache_creation_input_tokens"),
            })
            .into_iter()
            .collect(),
    };
    usage.retain(ModelUsage::has_tokens);
    usage.sort_by(|a, b| a.model.cmp(&b.model));
    usage
}

fn failure(result: &Object, is_error: bool) -> Option<String> {
    let error_subtype = string(result, "subtype").filter(|s| s.starts_with("error"));
    if !is_error && error_subtype.is_none() {
        return None;
    }
    let errors: Vec<&str> = result
        .get("errors")
        .and_then(Value::as_array)
        .map(|errors| {
            errors
                .iter()
                .filter_map(Value::as_str)
                .map(str::trim)
                .filter(|e| !e.is_empty())
                .collect()
        })
        .unwrap_or_default();
    let message = match (
        is_error.then(|| string(result, "result")).flatten(),
        error_subtype,
    ) {
        (Some(message), _) => message.to_owned(),
        (None, _) if !errors.is_empty() => errors.join("; "),
        (None, Some(subtype)) => describe_subtype(subtype),
        (None, None) => "Claude Code reported an error without a message".to_owned(),
    };
    Some(message)
}

fn describe_subtype(subtype: &str) -> String {
    let what = match subtype {
        "error_max_turns" => "stopped at its turn limit",
        "error_max_budget_usd" => "stopped at its budget",
        "error_during_execution" => "failed during execution",
        _ => "ended with an error",
    };
    format!("Claude Code {what} ({subtype})")
}

/// Rebuilds what survives of a result object whose start was cut off: its top-level fields
/// found by name, the last occurrence of each. A field name inside the agent's own text is
/// escaped (`\"usage\":`) and does not match. `None` unless `modelUsage` or
/// `total_cost_usd` is found, the marks of a result object.
fn salvage(text: &str) -> Option<Object> {
    let result: Object = RESULT_FIELDS
        .iter()
        .filter_map(|key| Some(((*key).to_owned(), last_value_of(text, key)?)))
        .collect();
    (result.contains_key("modelUsage") || result.contains_key("total_cost_usd")).then_some(result)
}

/// The value after the last `"key":` in `text` that parses.
fn last_value_of(text: &str, key: &str) -> Option<Value> {
    let quoted = format!("\"{key}\"");
    text.rmatch_indices(&quoted).find_map(|(at, _)| {
        let rest = text[at + quoted.len()..].trim_start().strip_prefix(':')?;
        serde_json::Deserializer::from_str(rest)
            .into_iter::<Value>()
            .next()?
            .ok()
    })
}
