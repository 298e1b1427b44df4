//! Traces of the gatehouse-acp shim's output: real runs of OpenCode 1.18.33 and Gemini CLI
//! 0.61.0 through the shim (tests/fixtures/acp_*.jsonl, see SOURCES.txt), and the edge
//! cases built from its schema.

use gatehouse_agent::{Executor, ModelUsage, Trace, parse_report};

#[macro_use]
mod support;

use support::{table, trace_of};

fn trace(text: &str) -> Trace {
    trace_of(Executor::Acp, "fake-model", text)
}

fn usage(model: &str, input: u64, output: u64) -> ModelUsage {
    ModelUsage {
        model: model.to_owned(),
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
    }
}

const REPLY: &str = "Done: I wrote hello.txt with the greeting.";

#[test]
fn opencode_writes_a_file_and_replies() {
    let trace = trace(fixture!("acp_opencode_write.jsonl"));
    // Started pending at line 4, in progress at 5 (the title still the tool's), completed
    // at 6 with the path as its title.
    insta::assert_snapshot!(table(&trace), @"  4000  2000 ok    edit work/wt/acp-scratch/work/hello.txt");
    assert_eq!(
        trace.session_id.as_deref(),
        Some("ses_db1bf70dfffe5q5c2rCyKkGgWn")
    );
    assert_eq!(trace.reply.as_deref(), Some(REPLY));
    // OpenCode's usage is its last model call's only (the gateway meters both).
    assert_eq!(trace.usage, [usage("fake-model", 10, 5)]);
    assert_eq!(trace.failure, None);
    assert_eq!(trace.unparsed_lines, 0);
}

#[test]
fn a_resumed_opencode_session_is_traced_as_a_new_one() {
    let trace = trace(fixture!("acp_opencode_resume.jsonl"));
    assert_eq!(
        trace.session_id.as_deref(),
        Some("ses_db1bf70dfffe5q5c2rCyKkGgWn")
    );
    assert_eq!(trace.tools.len(), 1);
    assert_eq!(trace.reply.as_deref(), Some(REPLY));
    assert_eq!(trace.failure, None);
}

#[test]
fn a_cancelled_prompt_fails_with_its_aborted_call() {
    let trace = trace(fixture!("acp_opencode_cancelled.jsonl"));
    insta::assert_snapshot!(table(&trace), @"  4000  1000 error edit write");
    assert_eq!(
        trace.failure.as_deref(),
        Some("the agent's prompt was cancelled")
    );
    assert_eq!(trace.reply, None);
    // All zero: no usage.
    assert_eq!(trace.usage, []);
}

#[test]
fn gemini_asks_permission_before_it_reports_the_call() {
    let trace = trace(fixture!("acp_gemini_permission.jsonl"));
    // The permission line (4) starts the call; the completed update (5) ends it.
    insta::assert_snapshot!(table(&trace), @"  4000  1000 ok    edit Writing to hello.txt");
    assert_eq!(
        trace.session_id.as_deref(),
        Some("1ad5d69f-1c10-4831-b578-298aafbddbdd")
    );
    assert_eq!(trace.reply.as_deref(), Some(REPLY));
    // Gemini names its model in `_meta.quota`.
    assert_eq!(trace.usage, [usage("gemini-2.5-flash", 20, 25)]);
}

#[test]
fn a_session_gemini_cannot_load_goes_on_in_a_new_one_without_its_mode_message() {
    let trace = trace(fixture!("acp_gemini_resume_fallback.jsonl"));
    // The new session's id, for the next turn.
    assert_eq!(
        trace.session_id.as_deref(),
        Some("428e03e0-3b9d-4208-98aa-9f6899c788b7")
    );
    insta::assert_snapshot!(table(&trace), @"  6000  1000 ok    edit Writing to hello.txt");
    // "[MODE_UPDATE] yolo", a message chunk before the prompt, is not part of the reply.
    assert_eq!(trace.reply.as_deref(), Some(REPLY));
    assert_eq!(trace.failure, None);
}

#[test]
fn the_shims_error_is_the_failure() {
    let trace = trace(fixture!("acp_gemini_not_acp.jsonl"));
    assert_eq!(
        trace.failure.as_deref(),
        Some(
            "agent `gemini -m gemini-2.5-flash` did not answer `initialize` within 10 s; it \
             printed nothing — is `gemini -m gemini-2.5-flash` the agent's ACP mode (e.g. \
             `gemini --acp`, `opencode acp`, `goose acp`)?; if it is slow to start, raise \
             `--timeout`"
        )
    );
    assert_eq!(trace.session_id, None);
    assert_eq!(trace.usage, []);
}

#[test]
fn the_trace_and_the_report_agree() {
    for text in [
        fixture!("acp_opencode_write.jsonl"),
        fixture!("acp_opencode_cancelled.jsonl"),
        fixture!("acp_gemini_permission.jsonl"),
        fixture!("acp_gemini_resume_fallback.jsonl"),
        fixture!("acp_gemini_not_acp.jsonl"),
    ] {
        let report = parse_report(Executor::Acp, Some("fake-model"), text.as_bytes()).unwrap();
        assert_eq!(trace(text).report(), report);
    }
}

#[test]
fn stop_reasons_other_than_end_turn_are_failures() {
    let cases = [
        (
            "max_tokens",
            "the agent stopped at its output token limit (stop reason max_tokens)",
        ),
        (
            "max_turn_requests",
            "the agent stopped at its limit of model requests in one turn (stop reason \
             max_turn_requests)",
        ),
        (
            "refusal",
            "the agent refused to go on (stop reason refusal)",
        ),
        ("paused", "the agent stopped with reason \"paused\""),
    ];
    for (reason, failure) in cases {
        let text = format!(
            "{{\"type\":\"session\",\"sessionId\":\"s1\"}}\n{{\"type\":\"result\",\"stopReason\":\"{reason}\",\"usage\":null}}\n"
        );
        assert_eq!(trace(&text).failure.as_deref(), Some(failure), "{reason}");
    }
}

#[test]
fn an_output_cut_before_the_result_is_a_failure_and_garbage_is_not_recognised() {
    let text = fixture!("acp_gemini_permission.jsonl");
    let cut: Vec<&str> = text.lines().take(4).collect();
    let stopped = trace(&cut.join("\n"));
    assert_eq!(
        stopped.failure.as_deref(),
        Some("gatehouse-acp stopped before the agent's prompt returned")
    );
    // The permission started the call; its result never came.
    insta::assert_snapshot!(table(&stopped), @"  4000     - ok    edit Writing to hello.txt");
    assert!(parse_report(Executor::Acp, None, cut.join("\n").as_bytes()).is_err());

    let garbage = trace("sh: 1: gatehouse-acp: not found\n{\"type\":\"weird\"}\n");
    assert_eq!(
        garbage.failure.as_deref(),
        Some(
            "acp printed no result that Gatehouse recognises; its stdout begins: \"sh: 1: \
             gatehouse-acp: not found\\n{\\\"type\\\":\\\"weird\\\"}\""
        )
    );
}

#[test]
fn cached_tokens_and_bad_session_ids_are_read_with_care() {
    let text = "{\"type\":\"session\",\"sessionId\":\"$(reboot)\"}\n\
                {\"type\":\"result\",\"stopReason\":\"end_turn\",\"usage\":{\"inputTokens\":100,\"outputTokens\":7,\"cachedReadTokens\":80,\"cachedWriteTokens\":15,\"totalTokens\":107}}\n";
    let trace = trace(text);
    assert_eq!(trace.session_id, None);
    assert_eq!(
        trace.usage,
        [ModelUsage {
            model: "fake-model".to_owned(),
            input_tokens: 5,
            output_tokens: 7,
            cache_read_tokens: 80,
            cache_write_tokens: 15,
        }]
    );
}
