//! Codex's `codex exec --json` output.
//!
//! Codex prints one JSON event per line (the schema is `codex-rs/exec/src/exec_events.rs` in
//! the Codex repository; real output in tests/fixtures/codex_*.jsonl):
//!
//! ```json
//! {"type":"thread.started","thread_id":"019a2d7b-7fb8-78e1-8cfa-5bdbe274a3aa"}
//! {"type":"turn.started"}
//! {"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"zsh -lc ls","aggregated_output":"","status":"in_progress"}}
//! {"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"zsh -lc ls","aggregated_output":"hello.txt\n…","exit_code":0,"status":"completed"}}
//! {"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"Found 1 text file…"}}
//! {"type":"turn.completed","usage":{"input_tokens":6086,"cached_input_tokens":2944,"output_tokens":223}}
//! ```
//!
//! The calls are the items of type `command_execution`, `file_change`, `mcp_tool_call`,
//! `web_search` and `collab_tool_call`: one starts with `item.started` (or `item.updated`)
//! and ends with the `item.completed` of the same id. Codex reports some items only once
//! they are done (file changes, in the versions sampled); those took no time the output can
//! show. `reasoning`, `todo_list` (the plan, which lives as long as the turn), `error`
//! (notices Codex recovers from) and `agent_message` are not calls; the last agent message
//! is the reply. A web search item names `id` twice (the schema flattens the search's own id
//! into the item's); the last one counts, and it is the same on start and completion.
//!
//! Usage and the failure are what [`crate::parse_report`] reads from the `thread.started`,
//! `turn.*` and `error` lines; an output that ends before its turn does is a failure too.

use serde_json::Value;

use crate::executor::Executor;
use crate::parse_report;
use crate::trace::calls::{SUMMARY_CHARS, shorten};
use crate::trace::{Ending, Object, Shared, session_id, string};
use crate::usage::Report;

/// The failure of an output that ends before its turn does.
const STOPPED: &str = "Codex stopped before its turn completed";

/// The item types that are tool calls.
const TOOLS: [&str; 5] = [
    "command_execution",
    "file_change",
    "mcp_tool_call",
    "web_search",
    "collab_tool_call",
];

/// Lines kept for the report longer than this are not kept: no real one comes close.
const MAX_REPORT_LINE_BYTES: usize = 64 * 1024;

/// Commands longer than this are summed up as written, not unwrapped from their shell.
const MAX_UNWRAPPED_BYTES: usize = 64 * 1024;

/// Codex's events so far.
#[derive(Debug, Default)]
pub(crate) struct Reader {
    /// The `thread.started`, `turn.completed` and `turn.failed` lines, in order.
    report_lines: String,
    /// The last `error` line since a turn ended: an earlier one is cleared or overridden by
    /// the turn's own outcome.
    last_error: Option<String>,
    reply: Option<String>,
    turn_ended: bool,
    /// Some line was a Codex event.
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
        match event.get("type").and_then(Value::as_str) {
            Some("thread.started") => {
                if let Some(id) = session_id(string(event, "thread_id")) {
                    shared.session_id = Some(id);
                }
                self.keep(line);
            }
            Some("turn.completed" | "turn.failed") => {
                self.turn_ended = true;
                self.last_error = None;
                self.keep(line);
            }
            Some("error") => {
                if let Some(retry) = crate::trace::retry::codex(event, at_ms) {
                    shared.retried(retry);
                }
                self.last_error = (line.len() <= MAX_REPORT_LINE_BYTES).then(|| line.to_owned());
            }
            Some("item.started" | "item.updated") => {
                if let Some((id, kind, item)) = tool(event) {
                    shared.calls.start(id, kind, summary(kind, item), at_ms);
                }
            }
            Some("item.completed") => {
                if let Some((id, kind, item)) = tool(event) {
                    let error = failed(kind, item);
                    shared
                        .calls
                        .record(id, kind, summary(kind, item), at_ms, error);
                } else if let Some(text) = agent_message(event) {
                    self.reply = Some(text.to_owned());
                }
            }
            Some("turn.started" | "item.plan.delta" | "request_user_input") => {}
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
        let mut lines = self.report_lines;
        if let Some(error) = &self.last_error {
            lines.push_str(error);
            lines.push('\n');
        }
        let (report, unreadable) = if lines.is_empty() {
            (Report::default(), None)
        } else {
            match parse_report(Executor::Codex, model, lines.as_bytes()) {
                Ok(report) => (report, None),
                Err(error) => (Report::default(), Some(error.to_string())),
            }
        };
        let failure = unreadable
            .or_else(|| report.failed.clone())
            .or_else(|| (!self.turn_ended).then(|| STOPPED.to_owned()));
        Ending {
            reply: self.reply,
            report,
            failure,
        }
    }
}

impl Reader {
    fn keep(&mut self, line: &str) {
        if line.len() <= MAX_REPORT_LINE_BYTES {
            self.report_lines.push_str(line.trim());
            self.report_lines.push('\n');
        }
    }
}

/// The event's item, when it is a tool call: its id, type and fields.
fn tool(event: &Object) -> Option<(Option<&str>, &'static str, &Object)> {
    let item = event.get("item")?.as_object()?;
    let kind = string(item, "type")?;
    let kind = TOOLS.into_iter().find(|tool| *tool == kind)?;
    Some((string(item, "id"), kind, item))
}

fn agent_message(event: &Object) -> Option<&str> {
    let item = event.get("item")?.as_object()?;
    (string(item, "type")? == "agent_message")
        .then(|| string(item, "text"))
        .flatten()
}

/// A failed, declined or non-zero-exit item.
fn failed(kind: &str, item: &Object) -> bool {
    let status = string(item, "status");
    let bad_status = matches!(status, Some("failed" | "declined"));
    match kind {
        "command_execution" => {
            bad_status
                || item
                    .get("exit_code")
                    .and_then(Value::as_i64)
                    .is_some_and(|code| code != 0)
        }
        "mcp_tool_call" => bad_status || item.get("error").is_some_and(|error| !error.is_null()),
        _ => bad_status,
    }
}

/// The one line that says what a call works on.
fn summary(kind: &str, item: &Object) -> String {
    let text = match kind {
        "command_execution" => return command(string(item, "command").unwrap_or_default()),
        "file_change" => item
            .get("changes")
            .and_then(Value::as_array)
            .map(|changes| {
                let paths: Vec<&str> = changes
                    .iter()
                    .filter_map(|change| string(change.as_object()?, "path"))
                    .collect();
                paths.join(", ")
            })
            .unwrap_or_default(),
        "mcp_tool_call" => {
            // Some versions nest the call under `invocation`.
            let call = item
                .get("invocation")
                .and_then(Value::as_object)
                .unwrap_or(item);
            match (string(call, "server"), string(call, "tool")) {
                (Some(server), Some(tool)) => format!("{server}.{tool}"),
                (server, tool) => server.or(tool).unwrap_or_default().to_owned(),
            }
        }
        "web_search" => web_search(item).unwrap_or_default(),
        "collab_tool_call" => match (string(item, "tool"), string(item, "prompt")) {
            (Some(tool), Some(prompt)) => format!("{tool}: {prompt}"),
            (tool, _) => tool.unwrap_or_default().to_owned(),
        },
        _ => String::new(),
    };
    shorten(&text, SUMMARY_CHARS)
}

/// What was searched for or opened: the query, else the action's.
fn web_search(item: &Object) -> Option<String> {
    if let Some(query) = string(item, "query") {
        return Some(query.to_owned());
    }
    let action = item.get("action")?.as_object()?;
    let queries = action
        .get("queries")
        .and_then(Value::as_array)
        .and_then(|queries| queries.iter().find_map(Value::as_str));
    string(action, "query")
        .or(queries)
        .or_else(|| string(action, "url"))
        .map(str::to_owned)
}

/// The command, without the `bash -lc` Codex wraps it in.
fn command(command: &str) -> String {
    let script = (command.len() <= MAX_UNWRAPPED_BYTES)
        .then(|| shlex::split(command))
        .flatten()
        .and_then(|words| match <[String; 3]>::try_from(words) {
            Ok([shell, flag, script])
                if is_shell(&shell) && matches!(flag.as_str(), "-c" | "-lc") =>
            {
                Some(script)
            }
            _ => None,
        });
    shorten(script.as_deref().unwrap_or(command), SUMMARY_CHARS)
}

fn is_shell(program: &str) -> bool {
    matches!(
        program.rsplit('/').next(),
        Some("bash" | "zsh" | "sh" | "dash")
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{Object, command, failed, summary};

    fn item(value: serde_json::Value) -> Object {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn commands_lose_their_shell_wrapper() {
        assert_eq!(command("bash -lc ls"), "ls");
        assert_eq!(command("/bin/zsh -lc 'cat test.js'"), "cat test.js");
        assert_eq!(
            command("/usr/bin/bash -c \"rg -n 'a b' src\""),
            "rg -n 'a b' src"
        );
        assert_eq!(
            command("python3 -c 'print(1)' extra"),
            "python3 -c 'print(1)' extra"
        );
        assert_eq!(command("echo 'unterminated"), "echo 'unterminated");
    }

    #[test]
    fn each_item_is_summed_up_by_what_it_works_on() {
        let cases = [
            (
                "file_change",
                json!({"changes": [{"path": "a.rs", "kind": "update"}, {"path": "b.rs", "kind": "add"}]}),
                "a.rs, b.rs",
            ),
            (
                "mcp_tool_call",
                json!({"server": "docs", "tool": "search", "arguments": {}}),
                "docs.search",
            ),
            (
                "mcp_tool_call",
                json!({"invocation": {"server": "notes", "tool": "read"}}),
                "notes.read",
            ),
            (
                "web_search",
                json!({"query": "", "action": {"type": "search", "queries": ["rust mpsc"]}}),
                "rust mpsc",
            ),
            (
                "web_search",
                json!({"action": {"type": "open_page", "url": "https://x.test"}}),
                "https://x.test",
            ),
            (
                "collab_tool_call",
                json!({"tool": "spawn_agent", "prompt": "Write the tests"}),
                "spawn_agent: Write the tests",
            ),
            ("file_change", json!({"changes": "not a list"}), ""),
        ];
        for (kind, fields, expected) in cases {
            assert_eq!(summary(kind, &item(fields)), expected, "{kind}");
        }
    }

    #[test]
    fn failures_are_statuses_exit_codes_and_errors() {
        let cases = [
            (
                "command_execution",
                json!({"exit_code": 0, "status": "completed"}),
                false,
            ),
            (
                "command_execution",
                json!({"exit_code": 2, "status": "completed"}),
                true,
            ),
            (
                "command_execution",
                json!({"exit_code": null, "status": "declined"}),
                true,
            ),
            (
                "mcp_tool_call",
                json!({"error": null, "status": "completed"}),
                false,
            ),
            (
                "mcp_tool_call",
                json!({"error": {"message": "boom"}, "status": "completed"}),
                true,
            ),
            ("file_change", json!({"status": "failed"}), true),
            ("web_search", json!({"query": "q"}), false),
        ];
        for (kind, fields, expected) in cases {
            assert_eq!(
                failed(kind, &item(fields.clone())),
                expected,
                "{kind} {fields}"
            );
        }
    }
}
