//! pi's `-p --mode json` output, for the trace and the report.
//!
//! One JSON event per line (shortened from real output, tests/fixtures/pi_*.jsonl):
//!
//! ```json
//! {"type":"session","version":3,"id":"01a24e3e-766c-7414-bf1a-1725bdc45a3a","cwd":"/work"}
//! {"type":"message_end","message":{"role":"assistant","content":[{"type":"toolCall","id":"toolu_1","name":"write","arguments":{"path":"/work/hello.txt","content":"hi\n"}}],"model":"fake-model","usage":{"input":10,"output":20,"cacheRead":0,"cacheWrite":0,"totalTokens":30,"cost":{"total":0}},"stopReason":"toolUse"}}
//! {"type":"tool_execution_start","toolCallId":"toolu_1","toolName":"write","args":{"path":"/work/hello.txt","content":"hi\n"}}
//! {"type":"tool_execution_end","toolCallId":"toolu_1","toolName":"write","result":{…},"isError":false}
//! {"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"Done."}],"model":"fake-model","usage":{…},"stopReason":"stop"}}
//! {"type":"agent_end","messages":[…]}
//! ```
//!
//! A call runs from `tool_execution_start` to the `tool_execution_end` of its id. Usage is
//! the sum over assistant `message_end` events, per the model each names (pi's counts
//! already keep cache reads and writes out of `input`); `cost.total` is pi's own price.
//! The reply is the text of the last assistant message that has any. A failed request is
//! an assistant message with `stopReason` `error` (or `aborted`) and an `errorMessage`; pi
//! then retries, printing `auto_retry_start` (`attempt`, `maxAttempts`, `delayMs`,
//! `errorMessage`), and `auto_retry_end` with `success: false` and `finalError` when it
//! gives up. A later message that succeeds clears the failure. The run is over at an
//! `agent_end` no retry follows; an output that ends before it stopped early.

use serde_json::Value;

use crate::parse::{Object, objects};
use crate::trace::calls::{SUMMARY_CHARS, shorten};
use crate::trace::{Ending, Retry, Shared, session_id, string};
use crate::usage::{ModelUsage, Report};

/// The failure of an output that ends before its `agent_end`.
const STOPPED: &str = "pi stopped before its run ended";

/// How much of pi's error message a failure keeps.
const ERROR_CHARS: usize = 500;

/// The most models an output's usage is kept for: each message names one, and the output
/// is untrusted.
const MAX_MODELS: usize = 16;

/// pi's events so far.
#[derive(Debug, Default)]
pub(crate) struct Reader {
    usage: Vec<ModelUsage>,
    cost_usd: f64,
    failed: Option<String>,
    reply: Option<String>,
    ended: bool,
    recognised: bool,
}

impl Reader {
    /// Reads one event; `None` when it is none of pi's.
    fn read(&mut self, event: &Object, model: Option<&str>) -> Option<&'static str> {
        let kind = match event.get("type").and_then(Value::as_str)? {
            "session" => "session",
            "message_end" => {
                if let Some(message) = event.get("message").and_then(Value::as_object)
                    && string(message, "role") == Some("assistant")
                {
                    self.message(message, model);
                }
                "message_end"
            }
            "agent_end" => {
                self.ended = true;
                "agent_end"
            }
            "auto_retry_start" => {
                self.ended = false;
                "auto_retry_start"
            }
            "auto_retry_end" => {
                if event.get("success").and_then(Value::as_bool) == Some(false) {
                    self.failed = Some(error(string(event, "finalError")));
                }
                "auto_retry_end"
            }
            "tool_execution_start" => "tool_execution_start",
            "tool_execution_end" => "tool_execution_end",
            "agent_start"
            | "turn_start"
            | "turn_end"
            | "message_start"
            | "message_update"
            | "tool_execution_update"
            | "agent_settled" => "other",
            _ => return None,
        };
        self.recognised = true;
        Some(kind)
    }

    fn message(&mut self, message: &Object, model: Option<&str>) {
        if let Some(usage) = message.get("usage").and_then(Value::as_object) {
            let name = string(message, "model").or(model).unwrap_or("unknown");
            self.add_usage(name, usage);
        }
        match string(message, "stopReason") {
            Some("error" | "aborted") => {
                self.failed = Some(error(string(message, "errorMessage")));
            }
            _ => self.failed = None,
        }
        let texts: Vec<&str> = message
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_object)
            .filter(|block| string(block, "type") == Some("text"))
            .filter_map(|block| string(block, "text"))
            .collect();
        if !texts.is_empty() {
            self.reply = Some(texts.join("\n\n"));
        }
    }

    fn add_usage(&mut self, model: &str, usage: &Object) {
        let count = |key| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
        let index = match self.usage.iter().position(|u| u.model == model) {
            Some(index) => index,
            None if self.usage.len() < MAX_MODELS => {
                self.usage.push(ModelUsage {
                    model: shorten(model, 128),
                    ..ModelUsage::default()
                });
                self.usage.len() - 1
            }
            None => return,
        };
        if let Some(total) = self.usage.get_mut(index) {
            // Saturating: absurd counts must not panic the runner.
            total.input_tokens = total.input_tokens.saturating_add(count("input"));
            total.output_tokens = total.output_tokens.saturating_add(count("output"));
            total.cache_read_tokens = total.cache_read_tokens.saturating_add(count("cacheRead"));
            total.cache_write_tokens = total.cache_write_tokens.saturating_add(count("cacheWrite"));
        }
        if let Some(cost) = usage
            .get("cost")
            .and_then(Value::as_object)
            .and_then(|cost| cost.get("total"))
            .and_then(Value::as_f64)
            .filter(|cost| cost.is_finite() && *cost > 0.0)
        {
            self.cost_usd += cost;
        }
    }

    fn report(self) -> Report {
        Report {
            usage: self
                .usage
                .into_iter()
                .filter(ModelUsage::has_tokens)
                .collect(),
            reported_cost_usd: (self.cost_usd > 0.0).then_some(self.cost_usd),
            failed: self.failed,
            summary: self.reply,
        }
    }
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
        match self.read(event, model) {
            Some("session") => {
                if let Some(id) = session_id(string(event, "id")) {
                    shared.session_id = Some(id);
                }
            }
            Some("tool_execution_start") => {
                if let Some(tool) = string(event, "toolName") {
                    let args = event.get("args").and_then(Value::as_object);
                    let summary = summary(tool, args);
                    shared
                        .calls
                        .start(string(event, "toolCallId"), tool, summary, at_ms);
                }
            }
            Some("tool_execution_end") => {
                if let Some(id) = string(event, "toolCallId") {
                    let error = event.get("isError").and_then(Value::as_bool) == Some(true);
                    shared.calls.finish(id, at_ms, error, String::new());
                }
            }
            Some("auto_retry_start") => shared.retried(retry(event, at_ms)),
            _ => {}
        }
    }

    fn finish(self: Box<Self>, _model: Option<&str>, no_result: &dyn Fn() -> String) -> Ending {
        if !self.recognised {
            return Ending {
                reply: None,
                report: Report::default(),
                failure: Some(no_result()),
            };
        }
        let stopped = (!self.ended).then(|| STOPPED.to_owned());
        let report = self.report();
        Ending {
            reply: report.summary.clone(),
            failure: report.failed.clone().or(stopped),
            report,
        }
    }
}

/// The attempt's report, or `None` when the output holds no pi event at all.
pub(crate) fn report(text: &str, model: &str) -> Option<Report> {
    let mut reader = Reader::default();
    for event in objects(text) {
        reader.read(&event, Some(model));
    }
    reader.recognised.then(|| reader.report())
}

/// pi's error message, shortened.
fn error(message: Option<&str>) -> String {
    shorten(message.unwrap_or("pi's model request failed"), ERROR_CHARS)
}

/// An `auto_retry_start` as the attempt's retry; the HTTP status is the number pi's
/// message starts with (`500 {"type":"error",…}`).
fn retry(event: &Object, at_ms: u64) -> Retry {
    let number = |key| {
        event
            .get(key)
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok())
    };
    let message = string(event, "errorMessage").unwrap_or_default();
    let status = message
        .split_once(' ')
        .and_then(|(code, _)| code.parse::<u16>().ok())
        .filter(|code| (100..600).contains(code));
    Retry {
        attempt: number("attempt").unwrap_or(1),
        max_retries: number("maxAttempts"),
        status,
        error: shorten(message, 160),
        at_ms,
    }
}

/// The one line that says what a call works on: pi's tools are `read`, `write`, `edit`
/// (`path`), `bash` (`command`), `grep`/`find` (`pattern`) and `ls` (`path`).
fn summary(tool: &str, args: Option<&Object>) -> String {
    let Some(args) = args else {
        return String::new();
    };
    let keys: &[&str] = match tool {
        "bash" => &["command"],
        "grep" | "find" => &["pattern"],
        _ => &["path", "command", "pattern", "query", "url"],
    };
    let text = keys
        .iter()
        .find_map(|key| string(args, key))
        .or_else(|| args.values().find_map(Value::as_str))
        .unwrap_or_default();
    shorten(text, SUMMARY_CHARS)
}
