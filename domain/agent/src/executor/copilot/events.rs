//! Copilot CLI's `--output-format json` output, and the usage lines Gatehouse's command line
//! adds after it.
//!
//! One JSON event per line, `{"type":…,"data":{…},"id":…,"timestamp":…}` (real output in
//! tests/fixtures/copilot_*.jsonl; `data` shortened here):
//!
//! ```json
//! {"type":"user.message","data":{"content":"Create hello.txt containing a greeting."}}
//! {"type":"assistant.message","data":{"content":"","toolRequests":[{"toolCallId":"call_1","name":"create","arguments":{…}}]}}
//! {"type":"tool.execution_start","data":{"toolCallId":"call_1","toolName":"create","arguments":{"path":"/w/hello.txt","file_text":"hello\n"}}}
//! {"type":"tool.execution_complete","data":{"toolCallId":"call_1","success":true,"result":{"content":"Created file /w/hello.txt with 29 characters"}}}
//! {"type":"assistant.message_delta","data":{"messageId":"b02b…","deltaContent":"Done: I wrot"}}
//! {"type":"assistant.message","data":{"messageId":"b02b…","content":"Done: I wrote hello.txt with the greeting.","toolRequests":[]}}
//! {"type":"result","sessionId":"e0d17482-1df0-4b0b-8bb6-0d0d1f4f05b4","exitCode":0,"usage":{"premiumRequests":0,"totalApiDurationMs":200,…}}
//! {"type":"gatehouse.copilot_usage","data":{"modelMetrics":{"fake-model":{"usage":{"inputTokens":20,"outputTokens":25,"cacheReadTokens":0,"cacheWriteTokens":0}}},…}}
//! ```
//!
//! A call starts with `tool.execution_start` and ends with the `tool.execution_complete`
//! of the same `toolCallId`; `success: false` is an error. The reply is the content of the
//! last non-empty `assistant.message` of the main agent (a sub-agent's messages carry a
//! `parentToolCallId`). A failed model request is `model.call_failure` (`statusCode`,
//! `retryAttempt` from 0), then `assistant.turn_retry` when Copilot tries again: the
//! attempt's retry. When it gives up it prints `session.error` (`message`: "Authentication
//! failed with provider … (HTTP 401)", "Failed to get response from the AI model; retried 5
//! times …") and the `result` has `exitCode` 1: the failure is that message.
//!
//! Usage is `modelMetrics.<model>.usage` of the `gatehouse.copilot_usage` line (the file
//! `--usage-output-file` writes; see `copilot.rs`), for the whole session. `inputTokens`
//! includes the cache reads and writes (Copilot's own accounting subtracts them to get the
//! uncached input), so they are taken out; `outputTokens` includes reasoning. On a turn the
//! `gatehouse.copilot_usage_before` line, the previous turn's file, is subtracted model by
//! model. When some count went down, the earlier file was not this session's (a turn that
//! started afresh in the same home), and the file is taken whole.

use serde_json::Value;

use crate::parse::count;
use crate::trace::calls::{SUMMARY_CHARS, shorten, summarize};
use crate::trace::{Ending, Object, Retry, Shared, session_id, string};
use crate::usage::{ModelUsage, Report};

/// The failure of an output that ends before its `result` event.
const STOPPED: &str = "Copilot CLI stopped before printing its result";

/// The most models a usage file lists; one naming more is not believed further.
const MAX_MODELS: usize = 32;

/// The longest reply kept, in bytes; a longer one is not kept (a reply is a summary).
const MAX_REPLY_BYTES: usize = 256 * 1024;

/// The longest failure message kept, in characters.
const MAX_FAILURE_CHARS: usize = 2_000;

/// Copilot CLI's events so far.
#[derive(Debug, Default)]
pub(crate) struct Reader {
    reply: Option<String>,
    /// `result.exitCode`, once the result is read.
    exit_code: Option<i64>,
    /// The last `session.error` message.
    error: Option<String>,
    /// The last failed model request: its HTTP status and which attempt it was (from 0).
    failed_call: Option<(Option<u16>, u32)>,
    /// The session's usage after this call, and the usage the previous turn left.
    usage: Option<Vec<ModelUsage>>,
    before: Option<Vec<ModelUsage>>,
    /// Some line was a Copilot CLI event.
    recognised: bool,
}

impl crate::trace::Events for Reader {
    fn event(
        &mut self,
        event: &Object,
        _line: &str,
        at_ms: u64,
        shared: &mut Shared,
        _model: Option<&str>,
    ) {
        let Some(kind) = string(event, "type") else {
            return;
        };
        let data = event.get("data").and_then(Value::as_object);
        let empty = Object::new();
        let data = data.unwrap_or(&empty);
        match kind {
            "tool.execution_start" => {
                let tool = string(data, "toolName").unwrap_or("tool");
                let input = data.get("arguments").and_then(Value::as_object);
                shared
                    .calls
                    .start(string(data, "toolCallId"), tool, summary(input), at_ms);
            }
            "tool.execution_complete" => {
                if let Some(id) = string(data, "toolCallId") {
                    let error = data.get("success").and_then(Value::as_bool) != Some(true);
                    shared.calls.finish(id, at_ms, error, String::new());
                }
            }
            "assistant.message" => {
                let content = data.get("content").and_then(Value::as_str);
                if let Some(content) = content.filter(|c| !c.trim().is_empty())
                    && !data.contains_key("parentToolCallId")
                    && content.len() <= MAX_REPLY_BYTES
                {
                    self.reply = Some(content.to_owned());
                }
            }
            "model.call_failure" => {
                let status = data
                    .get("statusCode")
                    .and_then(Value::as_u64)
                    .and_then(|s| u16::try_from(s).ok());
                let attempt = data
                    .get("retryAttempt")
                    .and_then(Value::as_u64)
                    .and_then(|a| u32::try_from(a).ok())
                    .unwrap_or(0);
                self.failed_call = Some((status, attempt));
            }
            "assistant.turn_retry" => {
                let (status, attempt) = self.failed_call.unwrap_or((None, 0));
                shared.retried(Retry {
                    attempt: attempt.saturating_add(1),
                    max_retries: None,
                    status,
                    error: shorten(string(data, "reason").unwrap_or_default(), SUMMARY_CHARS),
                    at_ms,
                });
            }
            "session.error" => {
                self.error = string(data, "message").map(failure_text);
            }
            "result" => {
                if let Some(id) = session_id(string(event, "sessionId")) {
                    shared.session_id = Some(id);
                }
                self.exit_code = Some(event.get("exitCode").and_then(Value::as_i64).unwrap_or(0));
            }
            "gatehouse.copilot_usage" => self.usage = Some(models(data)),
            "gatehouse.copilot_usage_before" => self.before = Some(models(data)),
            _ if [
                "session.",
                "assistant.",
                "tool.",
                "user.",
                "model.",
                "subagent.",
            ]
            .iter()
            .any(|prefix| kind.starts_with(prefix)) => {}
            _ => return,
        }
        self.recognised = true;
    }

    fn finish(self: Box<Self>, _model: Option<&str>, no_result: &dyn Fn() -> String) -> Ending {
        if !self.recognised {
            return Ending {
                reply: None,
                report: Report::default(),
                failure: Some(no_result()),
            };
        }
        let usage = match (self.usage, self.before) {
            (Some(after), Some(before)) => turn(after, &before),
            (Some(after), None) => after,
            (None, _) => Vec::new(),
        };
        let failed = match self.exit_code {
            Some(0) => None,
            Some(code) => Some(
                self.error
                    .unwrap_or_else(|| format!("Copilot CLI exited with code {code}")),
            ),
            None => Some(match self.error {
                Some(error) => format!("{STOPPED}; its last error: {error}"),
                None => STOPPED.to_owned(),
            }),
        };
        Ending {
            reply: self.reply.clone(),
            report: Report {
                usage: usage.into_iter().filter(ModelUsage::has_tokens).collect(),
                reported_cost_usd: None,
                failed,
                summary: self.reply,
            },
            failure: None,
        }
    }
}

impl Reader {
    /// Whether some event was Copilot's (or the usage lines').
    pub(crate) fn recognised(&self) -> bool {
        self.recognised
    }
}

/// The usage per model of a usage file, each token in one field.
fn models(file: &Object) -> Vec<ModelUsage> {
    let Some(metrics) = file.get("modelMetrics").and_then(Value::as_object) else {
        return Vec::new();
    };
    metrics
        .iter()
        .take(MAX_MODELS)
        .filter_map(|(model, metric)| {
            let usage = metric.get("usage")?.as_object()?;
            let cache_read = count(usage, "cacheReadTokens");
            let cache_write = count(usage, "cacheWriteTokens");
            Some(ModelUsage {
                model: shorten(model, SUMMARY_CHARS),
                input_tokens: count(usage, "inputTokens")
                    .saturating_sub(cache_read)
                    .saturating_sub(cache_write),
                output_tokens: count(usage, "outputTokens"),
                cache_read_tokens: cache_read,
                cache_write_tokens: cache_write,
            })
        })
        .collect()
}

/// This turn's usage: the session's after it minus the session's before it, or the whole
/// of `after` when `before` is not an earlier state of the same session.
fn turn(after: Vec<ModelUsage>, before: &[ModelUsage]) -> Vec<ModelUsage> {
    let earlier = |usage: &ModelUsage| before.iter().find(|b| b.model == usage.model);
    let grew = before.iter().all(|b| {
        after.iter().any(|a| {
            a.model == b.model
                && a.input_tokens >= b.input_tokens
                && a.output_tokens >= b.output_tokens
                && a.cache_read_tokens >= b.cache_read_tokens
                && a.cache_write_tokens >= b.cache_write_tokens
        })
    });
    if !grew {
        return after;
    }
    after
        .iter()
        .map(|usage| match earlier(usage) {
            Some(b) => ModelUsage {
                model: usage.model.clone(),
                input_tokens: usage.input_tokens.saturating_sub(b.input_tokens),
                output_tokens: usage.output_tokens.saturating_sub(b.output_tokens),
                cache_read_tokens: usage.cache_read_tokens.saturating_sub(b.cache_read_tokens),
                cache_write_tokens: usage
                    .cache_write_tokens
                    .saturating_sub(b.cache_write_tokens),
            },
            None => usage.clone(),
        })
        .collect()
}

/// A failure message as kept: its first 2,000 characters.
fn failure_text(text: &str) -> String {
    let mut kept: String = text.chars().take(MAX_FAILURE_CHARS).collect();
    if kept.len() < text.len() {
        kept.push('…');
    }
    kept
}

/// The one line that says what a call works on: the command, path, pattern or query its
/// arguments name, else its first text argument.
fn summary(input: Option<&Object>) -> String {
    let Some(input) = input else {
        return String::new();
    };
    summarize(
        input,
        &[
            "command",
            "path",
            "file_path",
            "pattern",
            "query",
            "url",
            "description",
            "intent",
        ],
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{Object, models, summary, turn};
    use crate::usage::ModelUsage;

    fn object(value: serde_json::Value) -> Object {
        value.as_object().cloned().unwrap_or_default()
    }

    fn usage(model: &str, input: u64, output: u64, read: u64, write: u64) -> ModelUsage {
        ModelUsage {
            model: model.to_owned(),
            input_tokens: input,
            output_tokens: output,
            cache_read_tokens: read,
            cache_write_tokens: write,
        }
    }

    #[test]
    fn input_tokens_lose_the_cache_reads_and_writes_they_include() {
        let file = object(json!({"modelMetrics": {
            "claude-sonnet-4.5": {"usage": {"inputTokens": 1000, "outputTokens": 50,
                "cacheReadTokens": 700, "cacheWriteTokens": 200, "reasoningTokens": 10}},
            "broken": {"usage": "none"},
        }}));
        assert_eq!(
            models(&file),
            [usage("claude-sonnet-4.5", 100, 50, 700, 200)]
        );
        assert!(models(&object(json!({"modelMetrics": []}))).is_empty());
    }

    #[test]
    fn a_turn_is_the_session_s_usage_minus_the_turn_before_s() {
        let after = vec![usage("a", 40, 50, 6, 0), usage("b", 5, 5, 0, 0)];
        assert_eq!(
            turn(after.clone(), &[usage("a", 20, 25, 6, 0)]),
            [usage("a", 20, 25, 0, 0), usage("b", 5, 5, 0, 0)]
        );
        // Counts that went down, or a model gone: another session's file.
        assert_eq!(turn(after.clone(), &[usage("a", 41, 1, 0, 0)]), after);
        assert_eq!(turn(after.clone(), &[usage("c", 1, 1, 0, 0)]), after);
    }

    #[test]
    fn each_tool_is_summed_up_by_what_it_works_on() {
        let cases = [
            (json!({"command": "ls", "description": "List"}), "ls"),
            (json!({"path": "/w/a.txt", "file_text": "x"}), "/w/a.txt"),
            (json!({"pattern": "TODO"}), "TODO"),
            (json!({"intent": "Creating file"}), "Creating file"),
            (json!({"n": 2}), ""),
        ];
        for (input, expected) in cases {
            assert_eq!(summary(Some(&object(input.clone()))), expected, "{input}");
        }
    }
}
