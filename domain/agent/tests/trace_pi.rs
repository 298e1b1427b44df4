//! Traces and reports of pi's `-p --mode json` output: real runs of the command line
//! Gatehouse generates, against a stand-in provider (tests/fixtures/pi_*.jsonl, see
//! SOURCES.txt).

use gatehouse_agent::{Executor, ModelUsage, Retry, ToolCall, Trace, parse_report};

#[macro_use]
mod support;

use support::{table, trace_of};

const MODEL: &str = "fake-model";
const REPLY: &str = "Done: I wrote hello.txt with the greeting.";

fn trace(text: &str) -> Trace {
    trace_of(Executor::Pi, MODEL, text)
}

fn usage(model: &str, input: u64, output: u64, cache_read: u64, cache_write: u64) -> ModelUsage {
    ModelUsage {
        model: model.to_owned(),
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens: cache_read,
        cache_write_tokens: cache_write,
    }
}

/// The 500 answer, as pi quotes it (its status, then the body).
const SERVER_ERROR: &str =
    r#"500 {"type":"error","error":{"type":"api_error","message":"stand-in: HTTP 500"}}"#;

#[test]
fn a_run_that_writes_a_file_is_one_write_call() {
    assert_eq!(
        trace(fixture!("pi_write_file.jsonl")),
        Trace {
            session_id: Some("01a24e3f-7583-77f2-acd3-30da9e001197".to_owned()),
            tools: vec![ToolCall {
                tool: "write".to_owned(),
                summary: "/work/wt/native-b-scratch/work/pi/hello.txt".to_owned(),
                started_ms: 19000,
                duration_ms: Some(1000),
                error: false,
            }],
            tools_truncated: false,
            reply: Some(REPLY.to_owned()),
            usage: vec![usage(MODEL, 20, 25, 0, 0)],
            reported_cost_usd: None,
            failure: None,
            unparsed_lines: 0,
            elapsed_ms: 34500,
            retry: None,
        }
    );
}

#[test]
fn a_resumed_session_over_responses_keeps_its_id() {
    let trace = trace(fixture!("pi_resumed_responses.jsonl"));
    assert_eq!(
        trace.session_id.as_deref(),
        Some("01a24e3f-7583-77f2-acd3-30da9e001197")
    );
    insta::assert_snapshot!(table(&trace), @" 19000  1000 ok    write /work/wt/native-b-scratch/work/pi/hello.txt");
    assert_eq!(trace.usage, [usage(MODEL, 20, 25, 0, 0)]);
    assert_eq!(trace.reply.as_deref(), Some(REPLY));
    assert_eq!(trace.failure, None);
}

#[test]
fn a_server_error_is_retried_three_times_then_fails_though_pi_exits_0() {
    let trace = trace(fixture!("pi_server_error.jsonl"));
    assert_eq!(trace.failure.as_deref(), Some(SERVER_ERROR));
    assert_eq!(
        trace.retry,
        Some(Retry {
            attempt: 3,
            max_retries: Some(3),
            status: Some(500),
            error: SERVER_ERROR.to_owned(),
            at_ms: 24000,
        })
    );
    assert!(trace.tools.is_empty() && trace.usage.is_empty() && trace.reply.is_none());
}

#[test]
fn a_refused_request_fails_at_once() {
    let trace = trace(fixture!("pi_refused.jsonl"));
    assert_eq!(
        trace.failure.as_deref(),
        Some(
            r#"401 {"type":"error","error":{"type":"authentication_error","message":"stand-in: HTTP 401"}}"#
        )
    );
    assert_eq!(trace.retry, None);
}

#[test]
fn an_output_cut_before_agent_end_stopped_early_and_the_tail_agrees() {
    let full = fixture!("pi_write_file.jsonl");
    let cut: Vec<&str> = full.lines().take(20).collect();
    let stopped = trace(&cut.join("\n"));
    assert_eq!(
        stopped.failure.as_deref(),
        Some("pi stopped before its run ended")
    );
    assert_eq!(stopped.tools[0].duration_ms, Some(1000));
    for text in [
        full,
        fixture!("pi_server_error.jsonl"),
        fixture!("pi_resumed_responses.jsonl"),
    ] {
        let report = parse_report(Executor::Pi, Some(MODEL), text.as_bytes());
        assert_eq!(report, Ok(trace(text).report()));
    }
    assert!(parse_report(Executor::Pi, Some(MODEL), b"pi: command not found").is_err());
}

#[test]
fn usage_is_per_model_and_a_later_success_clears_a_failure() {
    let text = r#"{"type":"session","id":"01a2"}
{"type":"message_end","message":{"role":"assistant","content":[],"model":"small","usage":{"input":0,"output":0},"stopReason":"error","errorMessage":"529 overloaded"}}
{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"A."},{"type":"toolCall","id":"t"},{"type":"text","text":"B."}],"model":"big","usage":{"input":3,"output":4,"cacheRead":500,"cacheWrite":60,"cost":{"total":0.5}},"stopReason":"toolUse"}}
{"type":"message_end","message":{"role":"assistant","content":[{"type":"toolCall","id":"u"}],"usage":{"input":1,"output":2,"cacheRead":7,"cacheWrite":0,"cost":{"total":0.25}},"stopReason":"toolUse"}}
{"type":"agent_end","messages":[]}
"#;
    let trace = trace(text);
    assert_eq!(
        trace.usage,
        [usage("big", 3, 4, 500, 60), usage(MODEL, 1, 2, 7, 0)]
    );
    assert_eq!(trace.reported_cost_usd, Some(0.75));
    assert_eq!(trace.reply.as_deref(), Some("A.\n\nB."));
    assert_eq!(trace.failure, None);
    assert_eq!(trace.session_id.as_deref(), Some("01a2"));
}
