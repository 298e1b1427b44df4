//! The `gatehouse-acp` shim's output as it arrives (see `report.rs` beside this file for
//! the lines and adapters/acp/src/output.rs for their schema; real runs of Gemini CLI and
//! OpenCode in tests/fixtures/acp_*.jsonl).
//!
//! The calls are ACP tool calls, named by their `kind` (`read`, `edit`, `execute`, `fetch`,
//! `search`, `other`, …) and summed up by their `title` (a command, a path, "Writing to
//! hello.txt"; the last title given wins, as agents refine it). A call starts with a
//! `tool_call` update, or with the `permission` line asking for it (Gemini asks before it
//! reports the call at all), and ends with the `tool_call_update` whose status is
//! `completed` or `failed` (an error). A call first seen completed took no time the output
//! shows.
//!
//! A `gatehouse.permission` line (a role with `permissions`) is what the role's rules or a
//! person decided about a call: it becomes a trace entry of its own, tool `permission`,
//! summed up as `deny Bash git push --force (rule Bash(git push*))` or `allow Bash git push
//! (asked: ana)`, an error unless allowed, so the run page lists every decision.
//!
//! The session id is the `session` line's. Usage, the failure and the reply are read as
//! [`crate::parse_report`] reads them (`report.rs`); an output that ends before a `result`
//! or `error` line is a failure too (the shim was killed).

use serde_json::Value;

use super::report::Reply;
use crate::executor::Executor;
use crate::parse_report;
use crate::trace::calls::{SUMMARY_CHARS, shorten};
use crate::trace::{Ending, Object, Shared, session_id, string};
use crate::usage::Report;

/// The failure of an output that ends without a `result` or `error` line.
const STOPPED: &str = "gatehouse-acp stopped before the agent's prompt returned";

/// A `result` or `error` line longer than this is not kept: no real one comes close (an
/// agent's `_meta` is the only part of unbounded size).
const MAX_ENDING_LINE_BYTES: usize = 1024 * 1024;

/// The shim's lines so far.
#[derive(Debug, Default)]
pub(crate) struct Reader {
    reply: Reply,
    /// The `result` or `error` line.
    ending: Option<String>,
    /// Some line was one of the shim's.
    recognised: bool,
}

impl crate::trace::Events for Reader {
    fn event(
        &mut self,
        event: &Object,
        line: &str,
        at_ms: u64,
        shared: &mut Shared,
        _model: Option<&str>,
    ) {
        match string(event, "type") {
            Some("session") => {
                if let Some(id) = session_id(string(event, "sessionId")) {
                    shared.session_id = Some(id);
                }
            }
            Some("prompt") => self.reply = Reply::default(),
            Some("update") => {
                if let Some(update) = event.get("update").and_then(Value::as_object) {
                    self.reply.update(update);
                    tool_update(update, at_ms, shared);
                }
            }
            Some("permission") => {
                self.reply.interrupt();
                if let Some(call) = event.get("toolCall").and_then(Value::as_object) {
                    shared.calls.start(
                        string(call, "toolCallId"),
                        tool(call),
                        summary(call),
                        at_ms,
                    );
                }
            }
            Some("result" | "error") => {
                let kept = if line.len() <= MAX_ENDING_LINE_BYTES {
                    line.trim().to_owned()
                } else {
                    r#"{"type":"error","message":"gatehouse-acp's last line was too long to read"}"#
                        .to_owned()
                };
                self.ending = Some(kept);
            }
            Some("gatehouse.permission") => permission(event, at_ms, shared),
            Some("notice") => {}
            _ => return,
        }
        self.recognised = true;
    }

    fn finish(self: Box<Self>, model: Option<&str>, no_result: &dyn Fn() -> String) -> Ending {
        if !self.recognised {
            return Ending {
                reply: None,
                report: Report::default(),
                failure: Some(no_result()),
            };
        }
        let reply = self.reply.take();
        let Some(ending) = self.ending else {
            return Ending {
                reply,
                report: Report::default(),
                failure: Some(STOPPED.to_owned()),
            };
        };
        let (report, unreadable) = match parse_report(Executor::Acp, model, ending.as_bytes()) {
            Ok(report) => (report, None),
            Err(error) => (Report::default(), Some(error.to_string())),
        };
        Ending {
            reply,
            failure: unreadable.or_else(|| report.failed.clone()),
            report,
        }
    }
}

/// A policy's or a person's decision, into the calls.
fn permission(event: &Object, at_ms: u64, shared: &mut Shared) {
    let decision = string(event, "decision").unwrap_or("deny");
    let tool = string(event, "tool").unwrap_or("Other");
    let input = string(event, "input").unwrap_or_default();
    let by = match (string(event, "rule"), string(event, "by")) {
        (Some(rule), _) => format!("rule {rule}"),
        (None, Some(by)) => format!("asked: {by}"),
        (None, None) => "asked".to_owned(),
    };
    let summary = shorten(&format!("{decision} {tool} {input} ({by})"), SUMMARY_CHARS);
    shared
        .calls
        .record(None, "permission", summary, at_ms, decision != "allow");
}

/// A `tool_call` or `tool_call_update`, into the calls.
fn tool_update(update: &Object, at_ms: u64, shared: &mut Shared) {
    let first = match string(update, "sessionUpdate") {
        Some("tool_call") => true,
        Some("tool_call_update") => false,
        _ => return,
    };
    let id = string(update, "toolCallId");
    let calls = &mut shared.calls;
    match string(update, "status") {
        Some(status @ ("completed" | "failed")) => {
            calls.record(id, tool(update), summary(update), at_ms, status == "failed");
        }
        _ if first || id.is_some() => calls.start(id, tool(update), summary(update), at_ms),
        _ => {}
    }
}

/// The call's kind, `other` when it names none.
fn tool(call: &Object) -> &str {
    string(call, "kind").unwrap_or("other")
}

/// The call's title on one line; empty when it has none.
fn summary(call: &Object) -> String {
    shorten(string(call, "title").unwrap_or_default(), SUMMARY_CHARS)
}
