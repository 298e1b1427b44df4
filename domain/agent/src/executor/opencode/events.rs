//! OpenCode's `run --format json` output, read for the trace; Kilo prints the same.
//!
//! One JSON event per line, each with the session's `sessionID` (`ses_…`). A tool call is
//! printed once, when it is over (shortened from real output, tests/fixtures/opencode_*.jsonl):
//!
//! ```json
//! {"type":"tool_use","timestamp":1796608261300,"sessionID":"ses_db1c…","part":{"type":"tool","tool":"write","callID":"toolu_fake00000002","state":{"status":"completed","input":{"filePath":"/work/hello.txt","content":"hello\n"},"output":"Wrote file successfully.","title":"hello.txt","time":{"start":1796608261233,"end":1796608261275}}}}
//! ```
//!
//! `state.status` is `completed` or `error` (then `state.error` says why). Since the call
//! arrives whole, its duration is OpenCode's own (`time.end - time.start`), and it is taken
//! to have started that long before the line arrived. The summary is what the tool works
//! on: the command of `bash`, the `filePath` of `read`/`write`/`edit`, the pattern of
//! `grep`/`glob`, the files an `apply_patch` touches, and so on. Usage, the failure and the
//! reply are [`super::report::Tally`]'s, which [`crate::parse_report`] uses too.

use serde_json::Value;

use super::report::Tally;
use crate::trace::calls::{SUMMARY_CHARS, shorten, summarize};
use crate::trace::{Ending, Object, Shared, session_id, string};

/// The events so far, of OpenCode or a fork named `cli`.
#[derive(Debug)]
pub(crate) struct Reader {
    cli: &'static str,
    tally: Tally,
}

impl Reader {
    /// A reader of the output of `cli` (its program name, for the failure of an output that
    /// stops early).
    pub(crate) fn new(cli: &'static str) -> Self {
        Self {
            cli,
            tally: Tally::default(),
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
        _model: Option<&str>,
    ) {
        if self.tally.event(event).is_none() {
            return;
        }
        if let Some(id) = session_id(string(event, "sessionID")) {
            shared.session_id = Some(id);
        }
        if event.get("type").and_then(Value::as_str) == Some("tool_use")
            && let Some(part) = event.get("part").and_then(Value::as_object)
        {
            tool(part, at_ms, shared);
        }
    }

    fn finish(self: Box<Self>, model: Option<&str>, no_result: &dyn Fn() -> String) -> Ending {
        if !self.tally.recognised {
            return Ending {
                reply: None,
                report: crate::usage::Report::default(),
                failure: Some(no_result()),
            };
        }
        let stopped = (!self.tally.ended())
            .then(|| format!("{} stopped before its last step finished", self.cli));
        let report = self.tally.report(model.unwrap_or("unknown"));
        Ending {
            reply: report.summary.clone(),
            failure: report.failed.clone().or(stopped),
            report,
        }
    }
}

/// Records a finished call, started as long before `at_ms` as OpenCode says it took.
fn tool(part: &Object, at_ms: u64, shared: &mut Shared) {
    let Some(name) = string(part, "tool") else {
        return;
    };
    let state = part.get("state").and_then(Value::as_object);
    let input = state
        .and_then(|state| state.get("input"))
        .and_then(Value::as_object);
    let error = state.and_then(|state| string(state, "status")) == Some("error");
    let took = state
        .and_then(|state| state.get("time"))
        .and_then(Value::as_object)
        .map(|time| {
            let at = |key| time.get(key).and_then(Value::as_u64).unwrap_or(0);
            at("end").saturating_sub(at("start"))
        })
        .unwrap_or(0);
    let summary = summary(name, input);
    match string(part, "callID") {
        Some(id) => {
            let calls = &mut shared.calls;
            calls.start(Some(id), name, summary, at_ms.saturating_sub(took));
            calls.finish(id, at_ms, error, String::new());
        }
        None => shared.calls.record(None, name, summary, at_ms, error),
    }
}

/// The one line that says what a call works on.
fn summary(tool: &str, input: Option<&Object>) -> String {
    let Some(input) = input else {
        return String::new();
    };
    if tool == "apply_patch"
        && let Some(patch) = string(input, "patchText")
    {
        return shorten(&patched_files(patch), SUMMARY_CHARS);
    }
    let keys: &[&str] = match tool {
        "bash" => &["command"],
        "read" | "write" | "edit" => &["filePath"],
        "grep" | "glob" => &["pattern"],
        "webfetch" => &["url"],
        "websearch" | "codesearch" => &["query"],
        "task" => &["description"],
        "skill" => &["name"],
        _ => &[
            "command",
            "filePath",
            "path",
            "pattern",
            "query",
            "url",
            "description",
        ],
    };
    summarize(input, keys)
}

/// The files an `apply_patch` adds, updates or deletes, as its `*** … File:` lines name them.
fn patched_files(patch: &str) -> String {
    let files: Vec<&str> = patch
        .lines()
        .filter_map(|line| {
            ["*** Add File: ", "*** Update File: ", "*** Delete File: "]
                .iter()
                .find_map(|prefix| line.strip_prefix(prefix))
        })
        .map(str::trim)
        .take(20)
        .collect();
    files.join(", ")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::summary;

    #[test]
    fn each_tool_is_summed_up_by_what_it_works_on() {
        let cases = [
            (
                "bash",
                json!({"command": "ls -la", "description": "List"}),
                "ls -la",
            ),
            (
                "edit",
                json!({"filePath": "/w/a.rs", "oldString": "x"}),
                "/w/a.rs",
            ),
            (
                "grep",
                json!({"pattern": "fn main", "path": "/w"}),
                "fn main",
            ),
            (
                "task",
                json!({"description": "Review", "prompt": "…"}),
                "Review",
            ),
            (
                "apply_patch",
                json!({"patchText": "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** Update File: b.rs\n@@\n*** End Patch"}),
                "a.txt, b.rs",
            ),
            ("github_get_issue", json!({"owner": "o", "number": 3}), "o"),
            ("todowrite", json!({"todos": []}), ""),
        ];
        for (tool, input, expected) in cases {
            assert_eq!(summary(tool, input.as_object()), expected, "{tool}");
        }
        assert_eq!(summary("bash", None), "");
    }
}
