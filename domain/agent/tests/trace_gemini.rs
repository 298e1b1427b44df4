//! Traces of Gemini CLI `--output-format stream-json` output: real runs of 0.61.0 against
//! the survey's stand-in provider (tests/fixtures/gemini_*.jsonl, see SOURCES.txt).

use gatehouse_agent::{Executor, ModelUsage, Trace, TraceParser, parse_report};

#[macro_use]
mod support;

use support::{table, trace_of};

fn trace(text: &str) -> Trace {
    trace_of(Executor::Gemini, "gemini-2.5-flash", text)
}

fn flash(input: u64, output: u64) -> ModelUsage {
    ModelUsage {
        model: "gemini-2.5-flash".to_owned(),
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
    }
}

#[test]
fn a_run_that_writes_a_file_is_one_write_file_call_then_the_reply() {
    let trace = trace(fixture!("gemini_write_file.jsonl"));
    insta::assert_snapshot!(table(&trace), @"  3000  1000 ok    write_file /work/wt/native-a-scratch/work/hello.txt");
    assert_eq!(
        trace.session_id.as_deref(),
        Some("c47de0cb-8b48-498c-ac34-a7cfece53676")
    );
    // Two deltas of one message, concatenated.
    assert_eq!(
        trace.reply.as_deref(),
        Some("Done: I wrote hello.txt with the greeting.")
    );
    assert_eq!(trace.usage, [flash(20, 25)]);
    assert_eq!(trace.failure, None);
    assert_eq!(trace.unparsed_lines, 0);
}

#[test]
fn a_resumed_session_keeps_its_id_and_counts_only_its_own_tokens() {
    let trace = trace(fixture!("gemini_resumed.jsonl"));
    assert_eq!(
        trace.session_id.as_deref(),
        Some("c47de0cb-8b48-498c-ac34-a7cfece53676")
    );
    assert_eq!(trace.tools.len(), 1);
    assert_eq!(trace.usage, [flash(20, 25)]);
}

#[test]
fn a_provider_refusal_is_the_failure_without_usage() {
    for (text, status) in [
        (fixture!("gemini_401.jsonl"), "401"),
        (fixture!("gemini_500.jsonl"), "500"),
    ] {
        let trace = trace(text);
        let failure = trace.failure.clone().unwrap_or_default();
        assert!(
            failure.starts_with("[API Error: ")
                && failure.contains(&format!("stand-in error {status}")),
            "{failure}"
        );
        assert!(trace.usage.is_empty());
        assert!(trace.tools.is_empty());
        assert_eq!(trace.reply, None);
        assert!(trace.session_id.is_some());
    }
}

#[test]
fn an_output_cut_before_its_result_says_so_and_keeps_the_running_call() {
    let lines: Vec<&str> = fixture!("gemini_write_file.jsonl").lines().collect();
    let mut parser = TraceParser::new(Executor::Gemini, None);
    for (i, line) in lines[..3].iter().enumerate() {
        parser.feed(line, i as u64 * 1000);
    }
    assert_eq!(
        parser.progress().running.map(|call| call.tool.as_str()),
        Some("write_file")
    );
    let trace = parser.finish(5_000);
    assert_eq!(trace.tools[0].duration_ms, None);
    assert_eq!(
        trace.failure.as_deref(),
        Some("Gemini CLI stopped before printing its result")
    );
}

#[test]
fn text_before_a_tool_call_is_not_the_reply() {
    let text = concat!(
        r#"{"type":"init","session_id":"5132a22f-712a-4f15-b9e7-a5392557591c","model":"gemini-2.5-pro"}"#,
        "\n",
        r#"{"type":"message","role":"assistant","content":"Let me look.","delta":true}"#,
        "\n",
        r#"{"type":"tool_use","tool_name":"run_shell_command","tool_id":"t1","parameters":{"command":"false"}}"#,
        "\n",
        r#"{"type":"tool_result","tool_id":"t1","status":"error","output":"exit 1"}"#,
        "\n",
        r#"{"type":"message","role":"assistant","content":"It ","delta":true}"#,
        "\n",
        r#"{"type":"message","role":"assistant","content":"failed.","delta":true}"#,
        "\n",
        r#"{"type":"result","status":"success","stats":{"models":{}}}"#,
        "\n",
    );
    let trace = trace(text);
    insta::assert_snapshot!(table(&trace), @"  3000  1000 error run_shell_command false");
    assert_eq!(trace.reply.as_deref(), Some("It failed."));
    assert!(trace.usage.is_empty());
}

#[test]
fn the_report_of_the_tail_agrees_with_the_trace() {
    for text in [
        fixture!("gemini_write_file.jsonl"),
        fixture!("gemini_401.jsonl"),
    ] {
        let trace = trace(text);
        let report = parse_report(Executor::Gemini, Some("gemini-2.5-flash"), text.as_bytes())
            .expect("a report");
        assert_eq!(report, trace.report());
    }
    assert!(parse_report(Executor::Gemini, None, b"Error: bad flag\n").is_err());
}
