//! Traces and reports of Kilo's `run --format json` output, read by OpenCode's readers:
//! real runs of the command line Gatehouse generates, against a stand-in provider
//! (tests/fixtures/kilo_*.jsonl, see SOURCES.txt).

use gatehouse_agent::{Executor, ModelUsage, Trace, parse_report};

#[macro_use]
mod support;

use support::{table, trace_of};

const MODEL: &str = "fake-model";
const SESSION: &str = "ses_db1b59739ffe37VHcQ70HKA1Vy";
const REPLY: &str = "Done: I wrote hello.txt with the greeting.";

fn trace(text: &str) -> Trace {
    trace_of(Executor::Kilo, MODEL, text)
}

#[test]
fn a_run_that_writes_a_file_is_one_write_call() {
    let trace = trace(fixture!("kilo_write_file.jsonl"));
    assert_eq!(trace.session_id.as_deref(), Some(SESSION));
    insta::assert_snapshot!(table(&trace), @"  1913    87 ok    write /work/wt/native-c-scratch/work/kilo/hello.txt");
    // 10 in and 20 out to call the tool, 10 in and 5 out to answer.
    assert_eq!(trace.usage, [usage(20, 25)]);
    assert_eq!(trace.reply.as_deref(), Some(REPLY));
    assert_eq!(trace.failure, None);
}

#[test]
fn a_turn_over_responses_continues_the_session() {
    let trace = trace(fixture!("kilo_resumed_responses.jsonl"));
    assert_eq!(trace.session_id.as_deref(), Some(SESSION));
    assert_eq!(trace.usage, [usage(20, 25)]);
    insta::assert_snapshot!(table(&trace), @"  1918    82 ok    write /work/wt/native-c-scratch/work/kilo/hello.txt");
    assert_eq!(trace.reply.as_deref(), Some(REPLY));
    assert_eq!(trace.failure, None);
}

#[test]
fn a_server_error_fails_after_the_retries_the_role_allows() {
    let trace = trace(fixture!("kilo_server_error.jsonl"));
    assert_eq!(trace.failure.as_deref(), Some("stand-in: HTTP 500"));
    assert!(trace.tools.is_empty() && trace.usage.is_empty() && trace.reply.is_none());
}

#[test]
fn a_cut_output_names_kilo_and_the_tail_agrees() {
    let full = fixture!("kilo_write_file.jsonl");
    let cut: Vec<&str> = full.lines().take(3).collect();
    let stopped = trace(&cut.join("\n"));
    assert_eq!(
        stopped.failure.as_deref(),
        Some("kilo stopped before its last step finished")
    );
    for text in [
        full,
        fixture!("kilo_resumed_responses.jsonl"),
        fixture!("kilo_server_error.jsonl"),
    ] {
        let report = parse_report(Executor::Kilo, Some(MODEL), text.as_bytes());
        assert_eq!(report, Ok(trace(text).report()));
    }
    assert!(parse_report(Executor::Kilo, Some(MODEL), b"kilo: command not found").is_err());
}

fn usage(input: u64, output: u64) -> ModelUsage {
    ModelUsage {
        model: MODEL.to_owned(),
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
    }
}
