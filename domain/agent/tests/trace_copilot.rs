//! Traces of Copilot CLI `--output-format json` output with the usage lines Gatehouse's
//! command line prints after it: real runs of 1.0.102 against the survey's stand-in
//! provider (tests/fixtures/copilot_*.jsonl, see SOURCES.txt).

use gatehouse_agent::{Executor, ModelUsage, Trace, TraceParser, parse_report};

#[macro_use]
mod support;

use support::{table, trace_of};

fn trace(text: &str) -> Trace {
    trace_of(Executor::Copilot, "fake-model", text)
}

fn fake(input: u64, output: u64) -> ModelUsage {
    ModelUsage {
        model: "fake-model".to_owned(),
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
    }
}

#[test]
fn a_run_that_writes_a_file_is_one_create_call_then_the_reply_and_the_file_s_usage() {
    let trace = trace(fixture!("copilot_write_file.jsonl"));
    insta::assert_snapshot!(table(&trace), @" 18000  3000 ok    create /work/wt/native-a-scratch/work/hello.txt");
    assert_eq!(
        trace.session_id.as_deref(),
        Some("6bf7bb26-cdab-4d22-9ddc-a4cab42df5b3")
    );
    assert_eq!(
        trace.reply.as_deref(),
        Some("Done: I wrote hello.txt with the greeting.")
    );
    assert_eq!(trace.usage, [fake(20, 25)]);
    assert_eq!(trace.failure, None);
    assert_eq!(trace.unparsed_lines, 0);
}

#[test]
fn a_resumed_session_s_usage_is_the_file_minus_the_turn_before() {
    let text = fixture!("copilot_resumed.jsonl");
    // The file counts both calls of the session: 40 in, 50 out.
    assert!(text.contains("\"inputTokens\": 40"));
    let trace = trace(text);
    assert_eq!(
        trace.session_id.as_deref(),
        Some("6bf7bb26-cdab-4d22-9ddc-a4cab42df5b3")
    );
    assert_eq!(trace.tools.len(), 1);
    assert_eq!(trace.usage, [fake(20, 25)]);
    // Without the line of the turn before, the session's whole usage.
    let whole: String = text
        .lines()
        .filter(|line| !line.contains("gatehouse.copilot_usage_before"))
        .map(|line| format!("{line}\n"))
        .collect();
    assert_eq!(self::trace(&whole).usage, [fake(40, 50)]);
}

#[test]
fn a_provider_refusal_is_the_session_error_and_its_retries_are_traced() {
    let trace = trace(fixture!("copilot_401.jsonl"));
    assert_eq!(
        trace.failure.as_deref(),
        Some(
            "Authentication failed with provider at ****** (HTTP 401).\n  Check your \
             COPILOT_PROVIDER_API_KEY, COPILOT_PROVIDER_API_KEY_COMMAND, or \
             COPILOT_PROVIDER_BEARER_TOKEN."
        )
    );
    assert!(trace.usage.is_empty());
    assert_eq!(trace.reply, None);
    let retry = trace.retry.clone().expect("a retry");
    assert_eq!(
        (retry.attempt, retry.status, retry.error.as_str()),
        (2, Some(401), "transient_auth_error")
    );

    let trace = self::trace(fixture!("copilot_500.jsonl"));
    let failure = trace.failure.clone().unwrap_or_default();
    assert!(
        failure.starts_with("Failed to get response from the AI model; retried 5 times"),
        "{failure}"
    );
    assert_eq!(
        trace.retry.map(|r| (r.attempt, r.status)),
        Some((5, Some(500)))
    );
}

#[test]
fn an_output_cut_before_its_result_says_so() {
    let text = fixture!("copilot_write_file.jsonl");
    let cut: Vec<&str> = text
        .lines()
        .take_while(|line| !line.contains("\"tool.execution_complete\""))
        .collect();
    let mut parser = TraceParser::new(Executor::Copilot, None);
    for (i, line) in cut.iter().enumerate() {
        parser.feed(line, i as u64 * 1000);
    }
    assert_eq!(
        parser.progress().running.map(|call| call.tool.as_str()),
        Some("create")
    );
    let trace = parser.finish(60_000);
    assert_eq!(trace.session_id, None);
    assert_eq!(
        trace.failure.as_deref(),
        Some("Copilot CLI stopped before printing its result")
    );
}

#[test]
fn the_report_of_the_tail_agrees_with_the_trace() {
    for text in [
        fixture!("copilot_write_file.jsonl"),
        fixture!("copilot_resumed.jsonl"),
        fixture!("copilot_500.jsonl"),
    ] {
        let trace = trace(text);
        let report =
            parse_report(Executor::Copilot, Some("fake-model"), text.as_bytes()).expect("a report");
        assert_eq!(report, trace.report());
    }
    // `--resume` of a session the home lacks prints nothing on stdout.
    assert!(parse_report(Executor::Copilot, None, b"").is_err());
}
