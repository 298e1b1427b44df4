//! A trace and a report of the same complete output agree: the runner may bill from either.

use gatehouse_agent::{Executor, Report, TraceParser, parse_report};

macro_rules! report_fixture {
    ($path:literal) => {
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/", $path))
    };
}

macro_rules! trace_fixture {
    ($path:literal) => {
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/",
            $path
        ))
    };
}

fn both(executor: Executor, text: &str) -> (Report, Report) {
    let model = Some("the-role-model");
    let mut parser = TraceParser::new(executor, model);
    for line in text.lines() {
        parser.feed(line, 0);
    }
    let report = parse_report(executor, model, text.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    (parser.finish(0).report(), report)
}

/// A pretty-printed fixture on one line, as `claude -p --output-format json` prints it (the
/// fixtures have no line breaks inside strings).
fn one_line(pretty: &str) -> String {
    pretty.lines().map(str::trim).collect()
}

#[test]
fn on_claude_code_json_results() {
    for pretty in [
        report_fixture!("claude/success.json"),
        report_fixture!("claude/two_models.json"),
        report_fixture!("claude/max_turns.json"),
        report_fixture!("claude/usage_only.json"),
        report_fixture!("claude/invalid_api_key.json"),
    ] {
        let (trace, report) = both(Executor::ClaudeCode, &one_line(pretty));
        assert_eq!(trace, report, "{pretty}");
    }
}

#[test]
fn on_claude_code_streams() {
    for text in [
        trace_fixture!("claude_stream_ls.jsonl"),
        trace_fixture!("claude_stream_edit_retries.jsonl"),
        trace_fixture!("claude_stream_aborted.jsonl"),
    ] {
        let (trace, report) = both(Executor::ClaudeCode, text);
        assert_eq!(trace, report);
    }
}

#[test]
fn on_codex_streams() {
    for text in [
        report_fixture!("codex/readme_lookup.jsonl"),
        report_fixture!("codex/write_file.jsonl"),
        report_fixture!("codex/turn_failed.jsonl"),
        trace_fixture!("codex_zsh_ls.jsonl"),
        trace_fixture!("codex_add_file.jsonl"),
        trace_fixture!("codex_schema_tools.jsonl"),
    ] {
        let (trace, report) = both(Executor::Codex, text);
        assert_eq!(trace, report);
    }
}

#[test]
fn on_a_command_wrapper() {
    let (trace, report) = both(Executor::Command, report_fixture!("command/wrapper.txt"));
    // A report has no reply for a `command`; the trace's is its stdout.
    assert_eq!(
        Report {
            summary: None,
            ..trace
        },
        report
    );
}

#[test]
fn except_that_a_trace_calls_a_codex_stream_without_its_turn_end_a_failure() {
    let text = trace_fixture!("codex_cut_off.jsonl");
    let (trace, report) = both(Executor::Codex, text);
    assert_eq!(report.failed, None);
    assert_eq!(
        trace.failed.as_deref(),
        Some("Codex stopped before its turn completed")
    );
}
