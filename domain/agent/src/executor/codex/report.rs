//! Codex's `codex exec --json` output.
//!
//! Codex prints one JSON event per line (the schema is `codex-rs/exec/src/exec_events.rs`
//! in the Codex repository):
//!
//! ```json
//! {"type":"thread.started","thread_id":"0199a213-81c0-7800-8aa1-bbab2a035a53"}
//! {"type":"turn.started"}
//! {"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"Done."}}
//! {"type":"turn.completed","usage":{"input_tokens":24763,"cached_input_tokens":24448,"output_tokens":122}}
//! ```
//!
//! Usage is summed over `turn.completed` events (and any `turn.failed` that carries usage).
//! No event names the model, so usage is recorded under the role's model. OpenAI counts
//! cached tokens inside `input_tokens` (and, in newer Codex versions, cache writes as
//! `cache_write_input_tokens`, also inside it), so both are taken out of the input count:
//! each token then falls under exactly one price. `output_tokens` already includes reasoning tokens (`reasoning_output_tokens` is a
//! breakdown, not an addition) and is taken as is.
//!
//! A failure is a `turn.failed` event (`{"error":{"message":…}}`) or an `error` event
//! (`{"message":…}`). Codex also prints `error` events it recovers from ("Reconnecting…
//! 1/5"), so a later `turn.completed` clears an earlier failure. The summary is the text of
//! the last `agent_message` item.

use serde_json::Value;

use crate::parse::{Object, count, objects, string};
use crate::usage::{ModelUsage, Report};

/// The attempt's report, or `None` when the output holds no Codex event at all.
pub(crate) fn report(text: &str, model: &str) -> Option<Report> {
    let mut recognised = false;
    let mut usage = ModelUsage {
        model: model.to_owned(),
        ..ModelUsage::default()
    };
    let mut failed = None;
    let mut summary = None;
    for event in objects(text) {
        match event.get("type").and_then(Value::as_str) {
            Some("turn.completed") => {
                add_usage(&mut usage, &event);
                failed = None;
            }
            Some("turn.failed") => {
                add_usage(&mut usage, &event);
                let message = event.get("error").and_then(Value::as_object);
                failed = Some(message_or_default(message, "Codex reported a failed turn"));
            }
            Some("error") => failed = Some(message_or_default(Some(&event), "Codex failed")),
            Some("item.completed") => {
                if let Some(message) = agent_message(&event) {
                    summary = Some(message.to_owned());
                }
            }
            Some("thread.started" | "turn.started" | "item.started" | "item.updated") => {}
            _ => continue,
        }
        recognised = true;
    }
    recognised.then(|| Report {
        usage: if usage.has_tokens() {
            vec![usage]
        } else {
            Vec::new()
        },
        reported_cost_usd: None,
        failed,
        summary,
    })
}

fn add_usage(total: &mut ModelUsage, event: &Object) {
    let Some(usage) = event.get("usage").and_then(Value::as_object) else {
        return;
    };
    let cached = count(usage, "cached_input_tokens");
    let cache_written = count(usage, "cache_write_input_tokens");
    let uncached = count(usage, "input_tokens")
        .saturating_sub(cached)
        .saturating_sub(cache_written);
    // Saturating: absurd counts must not panic the runner.
    total.input_tokens = total.input_tokens.saturating_add(uncached);
    total.cache_read_tokens = total.cache_read_tokens.saturating_add(cached);
    total.cache_write_tokens = total.cache_write_tokens.saturating_add(cache_written);
    total.output_tokens = total
        .output_tokens
        .saturating_add(count(usage, "output_tokens"));
}

fn message_or_default(error: Option<&Object>, default: &str) -> String {
    error
        .and_then(|error| string(error, "message"))
        .unwrap_or(default)
        .to_owned()
}

fn agent_message(event: &Object) -> Option<&str> {
    let item = event.get("item")?.as_object()?;
    (item.get("type")?.as_str()? == "agent_message")
        .then(|| string(item, "text"))
        .flatten()
}
