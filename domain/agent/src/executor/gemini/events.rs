//! Gemini CLI's `--output-format stream-json` output.
//!
//! One JSON event per line (real output in tests/fixtures/gemini_*.jsonl, timestamps
//! dropped here):
//!
//! ```json
//! {"type":"init","session_id":"5132a22f-712a-4f15-b9e7-a5392557591c","model":"gemini-2.5-flash"}
//! {"type":"message","role":"user","content":"Create hello.txt containing a greeting."}
//! {"type":"tool_use","tool_name":"write_file","tool_id":"write_file__write_file_1796608285766_0","parameters":{"file_path":"/w/hello.txt","content":"hello\n"}}
//! {"type":"tool_result","tool_id":"write_file__write_file_1796608285766_0","status":"success"}
//! {"type":"message","role":"assistant","content":"Done: I wrote hello.txt ","delta":true}
//! {"type":"message","role":"assistant","content":"with the greeting.","delta":true}
//! {"type":"result","status":"success","stats":{"total_tokens":45,"input_tokens":20,"output_tokens":25,"cached":0,"input":20,"duration_ms":508,"tool_calls":1,"models":{"gemini-2.5-flash":{"total_tokens":45,"input_tokens":20,"output_tokens":25,"cached":0,"input":20}}}}
//! ```
//!
//! A call starts with `tool_use` and ends with the `tool_result` of the same `tool_id`;
//! a status other than `success` is an error. The reply is the last assistant message: its
//! deltas are concatenated, and any other event (a tool call, its result) ends it, so the
//! text the model wrote before a tool call is not part of it. The session id (for
//! `--resume`) is `init.session_id`.
//!
//! `result` closes the run: `status` `success`, or `error` with `error.message` (a provider's
//! 401 or 500 after the retries: `[API Error: {…}]`), which is the failure. Usage is
//! `stats.models`, per model and for this call only (a resumed session starts from zero):
//! `input_tokens` is the prompt, `cached` the part of it read from the cache and `input`
//! the rest; `output_tokens` counts the answer's candidates but not the model's thoughts,
//! which are billed as output, so output is `total_tokens − input_tokens` when that is more.
//! Gemini's implicit cache has no write charge. `error` events (`severity` `warning` or
//! `error`) are notices; the last `error` one names the failure of an output that stops
//! before its result.

use serde_json::Value;

use crate::parse::count;
use crate::trace::calls::{SUMMARY_CHARS, shorten, summarize};
use crate::trace::{Ending, Object, Shared, session_id, string};
use crate::usage::{ModelUsage, Report};

/// The failure of an output that ends before its `result` event.
const STOPPED: &str = "Gemini CLI stopped before printing its result";

/// The most models a result's usage lists; a result naming more is not believed further.
const MAX_MODELS: usize = 32;

/// The longest reply kept, in bytes; the rest is cut (a reply is a summary, not a file).
const MAX_REPLY_BYTES: usize = 256 * 1024;

/// The longest failure message kept, in characters.
const MAX_FAILURE_CHARS: usize = 2_000;

/// Gemini CLI's events so far.
#[derive(Debug, Default)]
pub(crate) struct Reader {
    /// `init.model`: usage that names no model is recorded under it.
    model: Option<String>,
    /// The assistant message being written, or the last one.
    reply: String,
    /// Whether the last event was part of that message (a new one starts otherwise).
    in_message: bool,
    /// The `result` event, once read.
    result: Option<Report>,
    /// The last `error` event of severity `error`.
    last_error: Option<String>,
    /// Some line was a Gemini CLI event.
    recognised: bool,
}

impl crate::trace::Events for Reader {
    fn event(
        &mut self,
        event: &Object,
        _line: &str,
        at_ms: u64,
        shared: &mut Shared,
        model: Option<&str>,
    ) {
        let kind = event.get("type").and_then(Value::as_str);
        let assistant_text = kind == Some("message") && string(event, "role") == Some("assistant");
        if !assistant_text {
            self.in_message = false;
        }
        match kind {
            Some("init") => {
                if let Some(id) = session_id(string(event, "session_id")) {
                    shared.session_id = Some(id);
                }
                self.model = string(event, "model").map(|m| shorten(m, SUMMARY_CHARS));
            }
            Some("message") => {
                if assistant_text {
                    self.message(event);
                }
            }
            Some("tool_use") => {
                let tool = string(event, "tool_name").unwrap_or("tool");
                let input = event.get("parameters").and_then(Value::as_object);
                shared
                    .calls
                    .start(string(event, "tool_id"), tool, summary(input), at_ms);
            }
            Some("tool_result") => {
                if let Some(id) = string(event, "tool_id") {
                    let error = string(event, "status") != Some("success");
                    shared.calls.finish(id, at_ms, error, String::new());
                }
            }
            Some("error") => {
                if string(event, "severity") != Some("warning") {
                    self.last_error = string(event, "message").map(failure_text);
                }
            }
            Some("result") => {
                let model = self.model.as_deref().or(model).unwrap_or("unknown");
                self.result = Some(result(event, model));
            }
            _ => return,
        }
        self.recognised = true;
    }

    fn finish(self: Box<Self>, _model: Option<&str>, no_result: &dyn Fn() -> String) -> Ending {
        let reply = Some(self.reply).filter(|reply| !reply.trim().is_empty());
        match self.result {
            Some(report) => Ending {
                reply: reply.clone(),
                report: Report {
                    summary: reply,
                    ..report
                },
                failure: None,
            },
            None => {
                let failure = if !self.recognised {
                    no_result()
                } else if let Some(error) = self.last_error {
                    format!("{STOPPED}; its last error: {error}")
                } else {
                    STOPPED.to_owned()
                };
                Ending {
                    reply,
                    report: Report::default(),
                    failure: Some(failure),
                }
            }
        }
    }
}

impl Reader {
    /// Whether some event was Gemini CLI's.
    pub(crate) fn recognised(&self) -> bool {
        self.recognised
    }

    /// Text of an assistant message: a delta continues the message, anything else is
    /// a whole message.
    fn message(&mut self, event: &Object) {
        let delta = event.get("delta").and_then(Value::as_bool) == Some(true);
        if !self.in_message || !delta {
            self.reply.clear();
        }
        self.in_message = true;
        let content = event
            .get("content")
            .and_then(Value::as_str)
            .unwrap_or_default();
        push_bounded(&mut self.reply, content, MAX_REPLY_BYTES);
    }
}

/// Appends what fits of `text` within `max` bytes, cut on a character boundary.
fn push_bounded(out: &mut String, text: &str, max: usize) {
    let room = max.saturating_sub(out.len());
    if text.len() <= room {
        out.push_str(text);
        return;
    }
    let mut end = room;
    while end > 0 && !text.is_char_boundary(end) {
        end -= 1;
    }
    out.push_str(&text[..end]);
}

/// The report of a `result` event (without its reply, which the messages give).
fn result(event: &Object, model: &str) -> Report {
    let stats = event.get("stats").and_then(Value::as_object);
    let mut usage: Vec<ModelUsage> = stats
        .and_then(|stats| stats.get("models"))
        .and_then(Value::as_object)
        .map(|models| {
            models
                .iter()
                .take(MAX_MODELS)
                .filter_map(|(name, counts)| Some(tokens(name, counts.as_object()?)))
                .collect()
        })
        .unwrap_or_default();
    if usage.is_empty()
        && let Some(stats) = stats
    {
        usage.push(tokens(model, stats));
    }
    usage.retain(ModelUsage::has_tokens);
    let failed = (string(event, "status") != Some("success")).then(|| {
        event
            .get("error")
            .and_then(Value::as_object)
            .and_then(|error| string(error, "message"))
            .map(failure_text)
            .unwrap_or_else(|| match string(event, "status") {
                Some(status) => format!("Gemini CLI ended with status {}", failure_text(status)),
                None => "Gemini CLI ended without a status".to_owned(),
            })
    });
    Report {
        usage,
        reported_cost_usd: None,
        failed,
        summary: None,
    }
}

/// One model's counts, each token in one field.
fn tokens(model: &str, counts: &Object) -> ModelUsage {
    let prompt = count(counts, "input_tokens");
    let cached = count(counts, "cached");
    let uncached = counts
        .get("input")
        .and_then(Value::as_u64)
        .unwrap_or_else(|| prompt.saturating_sub(cached));
    let output =
        count(counts, "output_tokens").max(count(counts, "total_tokens").saturating_sub(prompt));
    ModelUsage {
        model: shorten(model, SUMMARY_CHARS),
        input_tokens: uncached,
        output_tokens: output,
        cache_read_tokens: cached,
        cache_write_tokens: 0,
    }
}

/// A failure message as kept: its first 2,000 characters.
fn failure_text(text: &str) -> String {
    let mut kept: String = text.chars().take(MAX_FAILURE_CHARS).collect();
    if kept.len() < text.len() {
        kept.push('…');
    }
    kept
}

/// The one line that says what a call works on: the path, command, pattern or query its
/// parameters name, else its first text parameter.
fn summary(input: Option<&Object>) -> String {
    let Some(input) = input else {
        return String::new();
    };
    summarize(
        input,
        &[
            "command",
            "file_path",
            "absolute_path",
            "pattern",
            "query",
            "url",
            "dir_path",
            "path",
            "prompt",
            "description",
        ],
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{Object, push_bounded, result, summary, tokens};

    fn object(value: serde_json::Value) -> Object {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn each_tool_is_summed_up_by_what_it_works_on() {
        let cases = [
            (
                json!({"command": "ls -la", "description": "List"}),
                "ls -la",
            ),
            (json!({"file_path": "/w/a.rs", "content": "x"}), "/w/a.rs"),
            (json!({"dir_path": "src"}), "src"),
            (json!({"pattern": "fn main", "dir_path": "src"}), "fn main"),
            (json!({"query": "rust mpsc"}), "rust mpsc"),
            (json!({"n": 1, "fact": "Uses tabs"}), "Uses tabs"),
            (json!({"n": 1}), ""),
        ];
        for (input, expected) in cases {
            assert_eq!(summary(Some(&object(input.clone()))), expected, "{input}");
        }
        assert_eq!(summary(None), "");
    }

    #[test]
    fn thoughts_count_as_output_and_cached_tokens_as_cache_reads() {
        let usage = tokens(
            "gemini-2.5-pro",
            &object(
                json!({"total_tokens": 1500, "input_tokens": 1000, "output_tokens": 200,
                           "cached": 600, "input": 400}),
            ),
        );
        assert_eq!(
            (
                usage.input_tokens,
                usage.cache_read_tokens,
                usage.output_tokens
            ),
            (400, 600, 500)
        );
        // Without `input`, the prompt minus the cached part.
        let usage = tokens("m", &object(json!({"input_tokens": 10, "cached": 4})));
        assert_eq!((usage.input_tokens, usage.cache_read_tokens), (6, 4));
    }

    #[test]
    fn a_result_without_models_is_the_init_model_s_and_a_bad_status_fails() {
        let report = result(
            &object(
                json!({"status": "cancelled", "stats": {"input_tokens": 3, "output_tokens": 2, "input": 3}}),
            ),
            "gemini-2.5-flash",
        );
        assert_eq!(report.usage.len(), 1);
        assert_eq!(report.usage[0].model, "gemini-2.5-flash");
        assert_eq!(
            report.failed.as_deref(),
            Some("Gemini CLI ended with status cancelled")
        );
        let report = result(&object(json!({"status": "success", "stats": {}})), "m");
        assert!(report.usage.is_empty());
        assert_eq!(report.failed, None);
    }

    #[test]
    fn a_bounded_reply_is_cut_on_a_character_boundary() {
        let mut out = "ab".to_owned();
        push_bounded(&mut out, "éé", 4);
        assert_eq!(out, "abé");
        push_bounded(&mut out, "x", 4);
        assert_eq!(out, "abé");
    }
}
