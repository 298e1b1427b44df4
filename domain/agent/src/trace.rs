//! Tool traces: what an agent attempt did, read from its CLI's output line by line while it
//! runs.
//!
//! A conversation turn or an SOP agent node shows its progress while the agent works (what
//! it is doing, the tools it used, the time elapsed) and keeps, per turn or attempt, the
//! tools the agent called: which tool, a one-line summary of its input, how long it took and
//! whether it failed. The CLIs print this as they go, each in its own format, read by its
//! executor's [`Events`] (`src/executor/<name>/events.rs`): Claude Code's `stream-json`
//! events, `codex exec --json`, a `command`'s plain stdout (no tools, only the reply and the
//! `gatehouse_usage` line). This module holds what they share: the calls, retries, and the
//! parser that feeds them lines.
//!
//! Not every format carries timestamps, so times are arrival times: the runner passes with
//! each line the milliseconds since the attempt started, and a call's duration is the arrival
//! of its result minus the arrival of its request. Usage, the failure and the reply are read
//! the way [`crate::parse_report`] reads them, from the very lines that carry them, so a
//! trace and a report of the same output agree on what was billed.
//!
//! The output is untrusted. A line that is not a JSON object is counted and skipped, unknown
//! events and missing fields are ignored, a call without a result keeps `duration_ms: None`,
//! and nothing here panics or fails the whole trace.

pub(crate) mod calls;
pub(crate) mod retry;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::executor::Executor;
use crate::usage::{ModelUsage, ParseError, Report};
use calls::Calls;
pub use retry::Retry;

/// Lines longer than this are not parsed; no event the parsers need comes close.
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// How much of the output's start a "printed nothing recognisable" failure quotes.
const EXCERPT_CHARS: usize = 200;

/// One tool the agent called.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// As the CLI names it: Claude Code's tool (`Bash`, `Edit`, `mcp__github__get_issue`),
    /// Codex's item type (`command_execution`, `file_change`, `mcp_tool_call`, …).
    pub tool: String,
    /// What it was called on, on one line of at most 120 characters: the command, the file
    /// path, the pattern, `server.tool` for MCP calls; empty when the input names nothing.
    pub summary: String,
    /// When the request arrived, in milliseconds since the attempt started.
    pub started_ms: u64,
    /// From the request's arrival to the result's; `None` while (or if ever) no result came.
    pub duration_ms: Option<u64>,
    /// The result was an error (a failed tool, a non-zero exit code, a declined command).
    pub error: bool,
}

/// What an attempt's output showed once it ended.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Trace {
    /// The CLI's session (Claude Code's `session_id`, Codex's `thread_id`), for resuming it.
    pub session_id: Option<String>,
    /// Every tool call, in the order the requests arrived.
    pub tools: Vec<ToolCall>,
    /// More calls were made than a trace records (5,000); `tools` holds the first ones.
    pub tools_truncated: bool,
    /// The agent's final message: Claude Code's `result`, Codex's last agent message, a
    /// `command`'s stdout without its usage line.
    pub reply: Option<String>,
    /// As [`Report::usage`].
    pub usage: Vec<ModelUsage>,
    /// As [`Report::reported_cost_usd`].
    pub reported_cost_usd: Option<f64>,
    /// Why the attempt failed, as far as its output says: the CLI's failure, an output that
    /// stops before the CLI's final event, one that holds nothing recognisable, or a
    /// malformed `gatehouse_usage` line.
    pub failure: Option<String>,
    /// Non-blank lines that were not JSON objects (Claude Code and Codex only).
    pub unparsed_lines: u64,
    /// The time [`TraceParser::finish`] was given.
    pub elapsed_ms: u64,
    /// The last retry of a model request the CLI announced, if any: a failure names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<Retry>,
}

impl Trace {
    /// The report the runner bills and records, as [`crate::parse_report`] gives it.
    pub fn report(&self) -> Report {
        Report {
            usage: self.usage.clone(),
            reported_cost_usd: self.reported_cost_usd,
            failed: self.failure.clone(),
            summary: self.reply.clone(),
        }
    }
}

/// A trace so far, for a progress message.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress<'a> {
    pub session_id: Option<&'a str>,
    /// The calls so far, in the order they started.
    pub tools: &'a [ToolCall],
    /// The call started last that has no result yet: what the agent is doing now. `None`
    /// while it thinks or writes.
    pub running: Option<&'a ToolCall>,
    /// The CLI is waiting to retry a model request it could not get answered, and nothing
    /// has happened since: the attempt's progress says so.
    pub retry: Option<&'a Retry>,
}

/// Reads an attempt's output as it arrives: [`feed`](Self::feed) each line, then
/// [`finish`](Self::finish).
#[derive(Debug)]
pub struct TraceParser {
    executor: Executor,
    /// The role's model, for usage the output does not attribute (see [`crate::parse_report`]).
    model: Option<String>,
    shared: Shared,
    reader: Box<dyn Events>,
    /// The start of the output, for the failure of one that holds nothing recognisable.
    head: String,
    unparsed_lines: u64,
}

/// What every format's reader fills in.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    pub(crate) calls: Calls,
    pub(crate) session_id: Option<String>,
    /// The last retry announced; kept for the failure.
    pub(crate) retry: Option<Retry>,
    /// Whether [`Shared::retry`] is still what the CLI is doing (no event since).
    pub(crate) retrying: bool,
}

impl Shared {
    /// The CLI announced a retry.
    pub(crate) fn retried(&mut self, retry: Retry) {
        self.retry = Some(retry);
        self.retrying = true;
    }
}

/// How one CLI's output becomes a trace: each line as it arrives, then what the output
/// concluded. Each executor has one (see `src/executor/`).
pub(crate) trait Events: std::fmt::Debug + Send {
    /// Every line as printed, before it is read as JSON, which arrived at `at_ms`; `true`
    /// when the reader took it (a `command`'s or aider's plain stdout), and so wants no
    /// events. `shared` is there for a plain-text format that shows tool calls or a session.
    fn line(
        &mut self,
        _line: &str,
        _at_ms: u64,
        _shared: &mut Shared,
        _model: Option<&str>,
    ) -> bool {
        false
    }

    /// A line that is a JSON object (`event`), as printed (`line`).
    fn event(
        &mut self,
        _event: &Object,
        _line: &str,
        _at_ms: u64,
        _shared: &mut Shared,
        _model: Option<&str>,
    ) {
    }

    /// What the whole output concluded; `no_result` words an output with nothing
    /// recognisable.
    fn finish(self: Box<Self>, model: Option<&str>, no_result: &dyn Fn() -> String) -> Ending;
}

/// What a reader concludes at the end of the output.
pub(crate) struct Ending {
    pub(crate) reply: Option<String>,
    pub(crate) report: Report,
    pub(crate) failure: Option<String>,
}

/// A JSON object as printed.
pub(crate) type Object = Map<String, Value>;

impl TraceParser {
    /// A parser for `executor`'s output; `model` is the role's model.
    pub fn new(executor: Executor, model: Option<&str>) -> Self {
        Self {
            executor,
            model: model.map(str::to_owned),
            shared: Shared::default(),
            reader: executor.cli().events(),
            head: String::new(),
            unparsed_lines: 0,
        }
    }

    /// One line of output, which arrived `at_ms` milliseconds after the attempt started.
    /// The line ending is optional; text holding several lines is read as those lines.
    pub fn feed(&mut self, line: &str, at_ms: u64) {
        if line.is_empty() {
            self.feed_line("", at_ms);
        }
        for line in line.lines() {
            self.feed_line(line, at_ms);
        }
    }

    fn feed_line(&mut self, line: &str, at_ms: u64) {
        if self.head.chars().count() <= EXCERPT_CHARS {
            self.head.extend(line.chars().take(EXCERPT_CHARS + 1));
            self.head.push('\n');
        }
        let model = self.model.as_deref();
        if self.reader.line(line, at_ms, &mut self.shared, model) {
            return;
        }
        let Some(event) = object(line) else {
            if !line.trim().is_empty() {
                self.unparsed_lines += 1;
            }
            return;
        };
        // Anything the CLI prints after a retry means it is past the wait.
        self.shared.retrying = false;
        self.reader
            .event(&event, line, at_ms, &mut self.shared, model);
    }

    /// The trace so far.
    pub fn progress(&self) -> Progress<'_> {
        Progress {
            session_id: self.shared.session_id.as_deref(),
            tools: &self.shared.calls.tools,
            running: self.shared.calls.running(),
            retry: self.shared.retry.as_ref().filter(|_| self.shared.retrying),
        }
    }

    /// The trace of the whole output; `at_ms` is when the output ended.
    pub fn finish(self, at_ms: u64) -> Trace {
        let executor = self.executor;
        let model = self.model.as_deref();
        let no_result = || {
            ParseError::NoResult {
                executor,
                excerpt: excerpt(&self.head),
            }
            .to_string()
        };
        let ending = self.reader.finish(model, &no_result);
        Trace {
            session_id: self.shared.session_id,
            tools: self.shared.calls.tools,
            tools_truncated: self.shared.calls.truncated,
            reply: ending.reply,
            usage: ending.report.usage,
            reported_cost_usd: ending.report.reported_cost_usd,
            failure: ending.failure.or(ending.report.failed),
            unparsed_lines: self.unparsed_lines,
            elapsed_ms: at_ms,
            retry: self.shared.retry,
        }
    }
}

/// The line as a JSON object, or `None` for anything else.
fn object(line: &str) -> Option<Object> {
    let line = line.trim();
    if !line.starts_with('{') || line.len() > MAX_LINE_BYTES {
        return None;
    }
    serde_json::from_str(line).ok()
}

/// A non-empty string field, read as the report's parsers read it.
pub(crate) use crate::parse::string;

/// A session id as printed, kept only when a later turn could resume it
/// ([`crate::check_session_id`]: the agent wrote it, and it goes on a command line).
pub(crate) fn session_id(value: Option<&str>) -> Option<String> {
    value
        .filter(|id| crate::check_session_id(id).is_ok())
        .map(str::to_owned)
}

/// The start of the output, as [`ParseError::NoResult`] quotes it.
fn excerpt(head: &str) -> String {
    let trimmed = head.trim();
    let mut excerpt: String = trimmed.chars().take(EXCERPT_CHARS).collect();
    if excerpt.len() < trimmed.len() {
        excerpt.push('…');
    }
    excerpt
}
