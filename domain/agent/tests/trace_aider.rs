//! Traces and reports of aider's plain-text output (`--no-pretty --no-stream`): real runs
//! of the command line Gatehouse generates, against a stand-in provider
//! (tests/fixtures/aider_*.txt, see SOURCES.txt).

use gatehouse_agent::{Executor, ModelUsage, Retry, ToolCall, Trace, parse_report};

#[macro_use]
mod support;

use support::trace_of;

const MODEL: &str = "fake-model";

fn trace(text: &str) -> Trace {
    trace_of(Executor::Aider, MODEL, text)
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

/// An `edit` of hello.txt, applied when line `line` (from 1) arrived.
fn edit(line: u64) -> ToolCall {
    ToolCall {
        tool: "edit".to_owned(),
        summary: "hello.txt".to_owned(),
        started_ms: line * 1000,
        duration_ms: Some(0),
        error: false,
    }
}

#[test]
fn a_whole_file_answer_is_the_reply_and_its_edit_a_call() {
    assert_eq!(
        trace(fixture!("aider_whole.txt")),
        Trace {
            session_id: Some("aider".to_owned()),
            tools: vec![edit(19)],
            tools_truncated: false,
            reply: Some("hello.txt\n\n```\nhello from the fake provider\n\n```".to_owned()),
            usage: vec![usage(MODEL, 10, 5, 0, 0)],
            reported_cost_usd: None,
            failure: None,
            unparsed_lines: 0,
            elapsed_ms: 19500,
            retry: None,
        }
    );
}

#[test]
fn a_turn_restores_the_history_and_keeps_the_session() {
    let trace = trace(fixture!("aider_resumed.txt"));
    assert_eq!(trace.session_id.as_deref(), Some("aider"));
    assert_eq!(trace.tools, [edit(20)]);
    assert_eq!(trace.usage, [usage(MODEL, 10, 5, 0, 0)]);
    assert_eq!(trace.reply.as_deref(), Some("hello.txt\n\n```diff\n\n```"));
    assert_eq!(trace.failure, None);
}

#[test]
fn a_refused_request_is_the_failure_though_aider_exits_0() {
    let trace = trace(fixture!("aider_refused.txt"));
    assert_eq!(
        trace.failure.as_deref(),
        Some(
            r#"litellm.AuthenticationError: AnthropicException - {"type": "error", "error": {"type": "authentication_error", "message": "stand-in: HTTP 401"}} The API provider is not able to authenticate you. Check your API key."#
        )
    );
    assert_eq!(trace.session_id, None);
    assert_eq!(trace.retry, None);
    assert!(trace.tools.is_empty() && trace.usage.is_empty() && trace.reply.is_none());
}

#[test]
fn a_server_error_is_retried_until_aider_gives_up() {
    let trace = trace(fixture!("aider_server_error.txt"));
    let error = r#"litellm.InternalServerError: AnthropicException - {"type": "error", "error": {"type": "api_error", "message": "stand-in: HTTP 500"}}. Handle with `litellm.InternalServerError`. The API provider's servers are down or overloaded."#;
    assert_eq!(trace.failure.as_deref(), Some(error));
    let retry = trace.retry.expect("retries announced");
    assert_eq!(retry.attempt, 8);
    assert_eq!(retry.max_retries, None);
    assert!(retry.error.starts_with("litellm.InternalServerError"));
    assert!(trace.usage.is_empty() && trace.reply.is_none() && trace.session_id.is_none());
}

#[test]
fn usage_sums_the_answers_and_a_later_answer_clears_an_error() {
    let text = "Aider v0.86.2
Model: anthropic/claude-sonnet-4-5 with diff edit format, infinite output
Weak model: anthropic/claude-haiku-4-5
Git repo: none
Repo-map: disabled
Added src/a.rs to the chat.
Added docs/it's.md to the chat (read-only).
litellm.APIConnectionError: connection refused
of the gateway

Retrying in 0.2 seconds...
First try.
Tokens: 2.3k sent, 300 cache write, 1.5k cache hit, 26 received. Cost: $0.01 message, $0.01 session.
src/a.rs
Applied edit to src/a.rs
Model: said this too.
The edit is fixed.
Tokens: 12k sent, 1.2k received. Cost: $0.04 message, $0.05 session.
Applied edit to src/b.rs
";
    let trace = trace_of(Executor::Aider, MODEL, text);
    assert_eq!(trace.failure, None);
    assert_eq!(trace.usage, [usage(MODEL, 12_500, 1_226, 1_500, 300)]);
    assert_eq!(trace.reported_cost_usd, Some(0.05));
    assert_eq!(
        trace.reply.as_deref(),
        Some("src/a.rs\nModel: said this too.\nThe edit is fixed.")
    );
    let files: Vec<_> = trace
        .tools
        .iter()
        .map(|call| call.summary.as_str())
        .collect();
    assert_eq!(files, ["src/a.rs", "src/b.rs"]);
    assert_eq!(
        trace.retry,
        Some(Retry {
            attempt: 1,
            max_retries: None,
            status: None,
            error: "litellm.APIConnectionError: connection refused of the gateway".to_owned(),
            at_ms: 11000,
        })
    );
    let first = text.split("Model: said").next().unwrap_or_default();
    let first = trace_of(Executor::Aider, MODEL, first);
    assert_eq!(first.reply.as_deref(), Some("First try."));
    // Without a role's model, the banner's.
    let own = gatehouse_agent::TraceParser::new(Executor::Aider, None);
    let mut own = own;
    for line in text.lines() {
        own.feed(line, 0);
    }
    assert_eq!(own.finish(0).usage[0].model, "anthropic/claude-sonnet-4-5");
}

#[test]
fn an_output_with_no_answer_fails_and_the_tail_agrees() {
    let banner_only = "Aider v0.86.2\nModel: openai/x with whole edit format\n";
    assert_eq!(
        trace(banner_only).failure.as_deref(),
        Some("aider ended before the model answered")
    );
    assert!(
        trace("aider: command not found")
            .failure
            .is_some_and(|failure| failure.contains("aider printed no result"))
    );
    for text in [
        fixture!("aider_whole.txt"),
        fixture!("aider_resumed.txt"),
        fixture!("aider_refused.txt"),
        fixture!("aider_server_error.txt"),
    ] {
        let report = parse_report(Executor::Aider, Some(MODEL), text.as_bytes());
        assert_eq!(report, Ok(trace(text).report()));
    }
    assert!(parse_report(Executor::Aider, Some(MODEL), b"aider: command not found").is_err());
}
