//! Claude Code's `--output-format stream-json --verbose` output.
//!
//! Claude Code prints one JSON event per line as it works (shortened from real output,
//! tests/fixtures/claude_stream_*.jsonl):
//!
//! ```json
//! {"type":"system","subtype":"init","session_id":"40e7b02d-…","tools":["Bash","Read"],"model":"claude-opus-4-5-20251101"}
//! {"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_01Be…","name":"Bash","input":{"command":"ls -la"}}]},"parent_tool_use_id":null,"session_id":"40e7b02d-…"}
//! {"type":"user","message":{"content":[{"tool_use_id":"toolu_01Be…","type":"tool_result","content":"total 1976…","is_error":false}]},"session_id":"40e7b02d-…"}
//! {"type":"result","subtype":"success","is_error":false,"result":"Here are the files…","session_id":"40e7b02d-…","modelUsage":{…}}
//! ```
//!
//! A call starts with a `tool_use` block in an assistant message and ends with the
//! `tool_result` block that names its id in a user message. Parallel calls come as several
//! assistant events before their results; calls a sub-agent makes (the `Task` tool) carry a
//! `parent_tool_use_id` and are traced like the others. Server-side tools
//! (`server_tool_use`) get their result (`web_search_tool_result`, …) in the assistant
//! message itself. The final `result` event is the object `--output-format json` prints, so
//! [`crate::parse_report`] reads usage, cost, failure and reply from it; with that flag
//! instead of `stream-json` the trace still has those, only no tools.

use serde_json::Value;

use crate::executor::Executor;
use crate::parse_report;
use crate::trace::calls::{Calls, SUMMARY_CHARS, shorten, summarize};
use crate::trace::{Ending, Object, Shared, session_id, string};
use crate::usage::{ParseError, Report};

/// The failure of an output that ends without its `result` event.
const STOPPED: &str = "Claude Code stopped before printing its result";

/// Claude Code's events so far.
#[derive(Debug, Default)]
pub(crate) struct Reader {
    result: Option<Result<Report, ParseError>>,
    /// Some line was a Claude Code event.
    recognised: bool,
}

impl crate::trace::Events for Reader {
    fn event(
        &mut self,
        event: &Object,
        line: &str,
        at_ms: u64,
        shared: &mut Shared,
        model: Option<&str>,
    ) {
        match event.get("type").and_then(Value::as_str) {
            Some("assistant" | "user") => blocks(event, at_ms, &mut shared.calls),
            Some("result") => self.result = Some(result(line, model)),
            // Some early failures (an invalid API key) print the result fields without a type.
            None if ["is_error", "modelUsage", "total_cost_usd"]
                .iter()
                .any(|key| event.contains_key(*key)) =>
            {
                self.result = Some(result(line, model));
            }
            Some("system") => {
                if let Some(retry) = crate::trace::retry::claude(event, at_ms) {
                    shared.retried(retry);
                }
                if string(event, "subtype") == Some("init") {
                    mcp_servers(event, at_ms, &mut shared.calls);
                }
            }
            Some("stream_event") => {}
            _ => return,
        }
        self.recognised = true;
        if let Some(id) = session_id(string(event, "session_id")) {
            shared.session_id = Some(id);
        }
    }

    fn finish(self: Box<Self>, _model: Option<&str>, no_result: &dyn Fn() -> String) -> Ending {
        match self.result {
            Some(Ok(report)) => Ending {
                reply: report.summary.clone(),
                report,
                failure: None,
            },
            Some(Err(error)) => Ending {
                reply: None,
                report: Report::default(),
                failure: Some(error.to_string()),
            },
            None => Ending {
                reply: None,
                report: Report::default(),
                failure: Some(if self.recognised {
                    STOPPED.to_owned()
                } else {
                    no_result()
                }),
            },
        }
    }
}

fn result(line: &str, model: Option<&str>) -> Result<Report, ParseError> {
    parse_report(Executor::ClaudeCode, model, line.as_bytes())
}

/// The tool name under which an MCP server that did not connect is traced.
pub(crate) const MCP_SERVER_TOOL: &str = "mcp_server";

/// The MCP servers `system/init` lists as not connected (`"status": "failed"`, or
/// `needs-auth`, …; `pending` ones are still starting), each traced once as a failed call
/// of [`MCP_SERVER_TOOL`] saying so, so the run page and `run show` show it among the
/// calls. The names and statuses are the CLI's output: cut to one short line.
fn mcp_servers(event: &Object, at_ms: u64, calls: &mut Calls) {
    let Some(servers) = event.get("mcp_servers").and_then(Value::as_array) else {
        return;
    };
    for server in servers.iter().filter_map(Value::as_object) {
        let (Some(name), Some(status)) = (string(server, "name"), string(server, "status")) else {
            continue;
        };
        if matches!(status, "connected" | "pending") {
            continue;
        }
        let name = shorten(name, 64);
        let summary = match status {
            "failed" => format!("MCP server {name} failed to start"),
            other => format!("MCP server {name}: {}", shorten(other, 32)),
        };
        let id = format!("gatehouse-mcp-server:{name}");
        calls.record(
            Some(&id),
            MCP_SERVER_TOOL,
            shorten(&summary, SUMMARY_CHARS),
            at_ms,
            true,
        );
    }
}

/// Starts and finishes the calls a message's content blocks hold.
fn blocks(event: &Object, at_ms: u64, calls: &mut Calls) {
    let Some(content) = event
        .get("message")
        .and_then(|message| message.get("content"))
        .and_then(Value::as_array)
    else {
        return;
    };
    for block in content.iter().filter_map(Value::as_object) {
        let Some(kind) = string(block, "type") else {
            continue;
        };
        if matches!(kind, "tool_use" | "server_tool_use" | "mcp_tool_use") {
            let name = string(block, "name").unwrap_or(kind);
            let input = block.get("input").and_then(Value::as_object);
            calls.start(string(block, "id"), name, summary(name, input), at_ms);
        } else if kind.ends_with("tool_result")
            && let Some(id) = string(block, "tool_use_id")
        {
            calls.finish(id, at_ms, is_error(block), String::new());
        }
    }
}

/// `is_error: true`, or a server tool's `…_error` content.
fn is_error(block: &Object) -> bool {
    block.get("is_error").and_then(Value::as_bool) == Some(true)
        || block
            .get("content")
            .and_then(Value::as_object)
            .and_then(|content| string(content, "type"))
            .is_some_and(|kind| kind.ends_with("_error"))
}

/// The one line that says what a call works on.
fn summary(tool: &str, input: Option<&Object>) -> String {
    if let Some(name) = tool.strip_prefix("mcp__") {
        let name = match name.split_once("__") {
            Some((server, tool)) => format!("{server}.{tool}"),
            None => name.to_owned(),
        };
        return shorten(&name, SUMMARY_CHARS);
    }
    let Some(input) = input else {
        return String::new();
    };
    let keys: &[&str] = match tool {
        "Bash" => &["command"],
        "Read" | "Write" | "Edit" | "MultiEdit" => &["file_path"],
        "NotebookEdit" | "NotebookRead" => &["notebook_path"],
        "Grep" | "Glob" => &["pattern"],
        "WebFetch" => &["url"],
        "WebSearch" => &["query"],
        "Task" | "Agent" => &["description", "subagent_type"],
        "BashOutput" | "KillShell" | "KillBash" => &["bash_id", "shell_id"],
        "Skill" | "SlashCommand" => &["skill", "command"],
        "TodoWrite" => return todos(input),
        _ => &[
            "command",
            "file_path",
            "path",
            "pattern",
            "query",
            "url",
            "description",
        ],
    };
    summarize(input, keys)
}

/// `TodoWrite`: the step in progress, or how many steps the list has.
fn todos(input: &Object) -> String {
    let Some(todos) = input.get("todos").and_then(Value::as_array) else {
        return String::new();
    };
    let current = todos
        .iter()
        .filter_map(Value::as_object)
        .find(|todo| string(todo, "status") == Some("in_progress"))
        .and_then(|todo| string(todo, "activeForm").or_else(|| string(todo, "content")));
    match current {
        Some(step) => shorten(step, SUMMARY_CHARS),
        None if todos.len() == 1 => "1 step".to_owned(),
        None => format!("{} steps", todos.len()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{Object, summary};

    fn input(value: serde_json::Value) -> Object {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn each_tool_is_summed_up_by_what_it_works_on() {
        let cases = [
            (
                "Bash",
                json!({"command": "ls -la", "description": "List"}),
                "ls -la",
            ),
            (
                "Edit",
                json!({"file_path": "/a/b.rs", "old_string": "x"}),
                "/a/b.rs",
            ),
            (
                "Grep",
                json!({"pattern": "fn main", "path": "src"}),
                "fn main",
            ),
            ("Glob", json!({"pattern": "**/*.md"}), "**/*.md"),
            (
                "WebFetch",
                json!({"url": "https://x.test", "prompt": "p"}),
                "https://x.test",
            ),
            (
                "Task",
                json!({"description": "Explore", "prompt": "long"}),
                "Explore",
            ),
            (
                "mcp__github__get_issue",
                json!({"number": 7}),
                "github.get_issue",
            ),
            ("Unknown", json!({"n": 1, "question": "Why?"}), "Why?"),
            ("Unknown", json!({"n": 1}), ""),
            (
                "TodoWrite",
                json!({"todos": [{"content": "A", "status": "completed"},
                                 {"content": "Run tests", "activeForm": "Running tests", "status": "in_progress"}]}),
                "Running tests",
            ),
            (
                "TodoWrite",
                json!({"todos": [{"content": "A", "status": "pending"}]}),
                "1 step",
            ),
        ];
        for (tool, args, expected) in cases {
            assert_eq!(summary(tool, Some(&input(args))), expected, "{tool}");
        }
        assert_eq!(summary("Bash", None), "");
    }
}
