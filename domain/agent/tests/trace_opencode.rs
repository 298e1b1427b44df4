//! Traces and reports of OpenCode's `run --format json` output: real runs of the command
//! line Gatehouse generates, against a stand-in provider (tests/fixtures/opencode_*.jsonl,
//! see SOURCES.txt).

use gatehouse_agent::{Executor, ModelUsage, ToolCall, Trace, parse_report};

#[macro_use]
mod support;

use support::{table, trace_of};

const MODEL: &str = "fake-model";

fn trace(text: &str) -> Trace {
    trace_of(Executor::Opencode, MODEL, text)
}

fn usage(input: u64, output: u64, cache_read: u64, cache_write: u64) -> ModelUsage {
    ModelUsage {
        model: MODEL.to_owned(),
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens: cache_read,
        cache_write_tokens: cache_write,
    }
}

const REPLY: &str = "Done: I wrote hello.txt with the greeting.";

#[test]
fn a_run_that_writes_a_file_is_one_write_call_and_two_steps_of_usage() {
    assert_eq!(
        trace(fixture!("opencode_write_file.jsonl")),
        Trace {
            session_id: Some("ses_db1c539dbffeYYwAn7OBH3C6W7".to_owned()),
            tools: vec![ToolCall {
                tool: "write".to_owned(),
                summary: "/work/wt/native-b-scratch/work/opencode/hello.txt".to_owned(),
                // OpenCode's own duration (37 ms), ending when the line arrived.
                started_ms: 1963,
                duration_ms: Some(37),
                error: false,
            }],
            tools_truncated: false,
            reply: Some(REPLY.to_owned()),
            // 10 in and 20 out to call the tool, 10 in and 5 out to answer.
            usage: vec![usage(20, 25, 0, 0)],
            reported_cost_usd: None,
            failure: None,
            unparsed_lines: 0,
            elapsed_ms: 6500,
            retry: None,
        }
    );
}

#[test]
fn a_resumed_session_keeps_its_id_and_responses_read_the_same() {
    let resumed = trace(fixture!("opencode_resumed.jsonl"));
    assert_eq!(
        resumed.session_id.as_deref(),
        Some("ses_db1c539dbffeYYwAn7OBH3C6W7")
    );
    insta::assert_snapshot!(table(&resumed), @"  1972    28 ok    write /work/wt/native-b-scratch/work/opencode/hello.txt");
    let responses = trace(fixture!("opencode_responses.jsonl"));
    assert_eq!(responses.tools.len(), 1);
    assert_eq!(responses.tools[0].tool, "write");
    assert_eq!(responses.usage, [usage(20, 25, 0, 0)]);
    assert_eq!(responses.reply.as_deref(), Some(REPLY));
    assert_eq!(responses.failure, None);
}

#[test]
fn a_refused_request_and_a_server_error_fail_with_the_provider_message() {
    for (text, message) in [
        (fixture!("opencode_refused.jsonl"), "stand-in: HTTP 401"),
        (
            fixture!("opencode_server_error.jsonl"),
            "stand-in: HTTP 500",
        ),
    ] {
        let trace = trace(text);
        assert_eq!(trace.failure.as_deref(), Some(message));
        assert!(trace.tools.is_empty() && trace.usage.is_empty() && trace.reply.is_none());
        assert!(trace.session_id.is_some());
    }
}

#[test]
fn an_output_cut_after_a_tool_step_stopped_early() {
    let full = fixture!("opencode_write_file.jsonl");
    let cut: Vec<&str> = full.lines().take(3).collect();
    let trace = trace(&cut.join("\n"));
    assert_eq!(
        trace.failure.as_deref(),
        Some("opencode stopped before its last step finished")
    );
    assert_eq!(trace.tools.len(), 1);
    assert_eq!(trace.usage, [usage(10, 20, 0, 0)]);
    assert_eq!(trace.reply, None);
}

#[test]
fn reasoning_is_output_caches_are_kept_apart_and_cost_is_summed() {
    let text = r#"{"type":"step_start","sessionID":"ses_a","part":{}}
{"type":"text","sessionID":"ses_a","part":{"text":"Looking."}}
{"type":"tool_use","sessionID":"ses_a","part":{"tool":"bash","callID":"c1","state":{"status":"error","input":{"command":"cargo test"},"error":"exit 101","time":{"start":10,"end":2}}}}
{"type":"step_finish","sessionID":"ses_a","part":{"reason":"tool-calls","tokens":{"input":100,"output":50,"reasoning":20,"cache":{"read":1000,"write":200}},"cost":0.25}}
{"type":"step_start","sessionID":"ses_a","part":{}}
{"type":"text","sessionID":"ses_a","part":{"text":"First part."}}
{"type":"text","sessionID":"ses_a","part":{"text":"Second part."}}
{"type":"step_finish","sessionID":"ses_a","part":{"reason":"stop","tokens":{"input":5,"output":7,"reasoning":0,"cache":{"read":1300,"write":0}},"cost":0.5}}
"#;
    let trace = trace(text);
    assert_eq!(trace.usage, [usage(105, 77, 2300, 200)]);
    assert_eq!(trace.reported_cost_usd, Some(0.75));
    assert_eq!(trace.reply.as_deref(), Some("First part.\n\nSecond part."));
    // A clock that runs backwards gives no time, not a panic.
    insta::assert_snapshot!(table(&trace), @"  3000     0 error bash cargo test");
    assert_eq!(trace.failure, None);
    assert_eq!(
        parse_report(Executor::Opencode, Some(MODEL), text.as_bytes()),
        Ok(trace.report())
    );
}

#[test]
fn the_report_of_the_tail_agrees_with_the_trace() {
    for text in [
        fixture!("opencode_write_file.jsonl"),
        fixture!("opencode_refused.jsonl"),
        fixture!("opencode_responses.jsonl"),
    ] {
        let report = parse_report(Executor::Opencode, Some(MODEL), text.as_bytes());
        assert_eq!(report, Ok(trace(text).report()));
    }
    let nothing = parse_report(Executor::Opencode, Some(MODEL), b"Error: no such flag\n");
    assert!(nothing.is_err());
    assert!(trace("Error: no such flag").failure.is_some());
}
