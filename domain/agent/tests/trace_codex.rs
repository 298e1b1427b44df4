//! Traces of Codex `exec --json` output: real samples and one built from Codex's event
//! schema (tests/fixtures/, see SOURCES.txt).

use gatehouse_agent::{Executor, ModelUsage, ToolCall, Trace, TraceParser};

#[macro_use]
mod support;

use support::{table, trace_of};

fn trace(text: &str) -> Trace {
    trace_of(Executor::Codex, "gpt-5-codex", text)
}

fn usage(input: u64, output: u64, cache_read: u64) -> ModelUsage {
    ModelUsage {
        model: "gpt-5-codex".to_owned(),
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens: cache_read,
        cache_write_tokens: 0,
    }
}

#[test]
fn a_listing_run_is_one_command_without_its_shell_wrapper() {
    assert_eq!(
        trace(fixture!("codex_zsh_ls.jsonl")),
        Trace {
            session_id: Some("019a2d7b-7fb8-78e1-8cfa-5bdbe274a3aa".to_owned()),
            tools: vec![ToolCall {
                tool: "command_execution".to_owned(),
                summary: "ls".to_owned(),
                started_ms: 4000,
                duration_ms: Some(1000),
                error: false,
            }],
            tools_truncated: false,
            reply: Some(
                "Found 1 text file `hello.txt`, 5 JSONL logs `stream-output-{1..5}.jsonl`, and \
                 `test.js`. There was also a harmless `ps` permission warning from Homebrew’s \
                 shellenv script while listing."
                    .to_owned()
            ),
            // 6086 input tokens, 2944 of them cached.
            usage: vec![usage(3142, 223, 2944)],
            reported_cost_usd: None,
            failure: None,
            unparsed_lines: 0,
            elapsed_ms: 8500,
            retry: None,
        }
    );
}

#[test]
fn a_file_change_reported_only_when_done_took_no_visible_time() {
    let trace = trace(fixture!("codex_add_file.jsonl"));
    insta::assert_snapshot!(table(&trace), @"  4000     0 ok    file_change /private/tmp/codex-research-test/hello.txt");
    assert_eq!(
        trace.reply.as_deref(),
        Some("Created `hello.txt` containing `Hello from Codex`.")
    );
    assert_eq!(trace.usage, [usage(1912, 51, 4096)]);
}

#[test]
fn every_tool_item_type_is_a_call_and_plans_and_notices_are_not() {
    let trace = trace(fixture!("codex_schema_tools.jsonl"));
    insta::assert_snapshot!(table(&trace), @r"
      4000  1000 error command_execution cargo test -p demo
      6000  1000 ok    web_search rust str is_char_boundary
      8000  1000 error mcp_tool_call docs.search
     12000  1000 ok    file_change /work/demo/src/parse.rs, /work/demo/tests/empty.rs
     14000  1000 ok    command_execution cargo test -p demo
    ");
    assert_eq!(
        trace.session_id.as_deref(),
        Some("019b4c1e-7a2d-7c30-9f1e-5d2a8c6b4e01")
    );
    assert!(
        trace
            .reply
            .as_deref()
            .is_some_and(|reply| reply.starts_with("Fixed the char-boundary bug"))
    );
    assert_eq!(trace.usage, [usage(7250, 1322, 40960)]);
    assert_eq!(trace.failure, None);
}

#[test]
fn a_stream_cut_off_before_any_item_keeps_its_session_and_says_it_stopped() {
    let trace = trace(fixture!("codex_cut_off.jsonl"));
    assert_eq!(
        trace.session_id.as_deref(),
        Some("019a2d7b-c0ed-75a0-8908-de832785d47f")
    );
    assert!(trace.tools.is_empty());
    assert_eq!(trace.reply, None);
    assert!(trace.usage.is_empty());
    assert_eq!(
        trace.failure.as_deref(),
        Some("Codex stopped before its turn completed")
    );
}

#[test]
fn a_stream_cut_off_mid_command_leaves_the_command_without_duration() {
    let lines: Vec<&str> = fixture!("codex_zsh_ls.jsonl").lines().collect();
    let mut parser = TraceParser::new(Executor::Codex, None);
    for (i, line) in lines[..4].iter().enumerate() {
        parser.feed(line, i as u64 * 1000);
    }
    let running = parser.progress().running.map(|call| call.summary.clone());
    assert_eq!(running.as_deref(), Some("ls"));
    let trace = parser.finish(9_000);
    assert_eq!(trace.tools.len(), 1);
    assert_eq!(trace.tools[0].duration_ms, None);
    assert_eq!(
        trace.failure.as_deref(),
        Some("Codex stopped before its turn completed")
    );
}

#[test]
fn parallel_commands_finishing_out_of_order_get_their_own_durations() {
    let lines = [
        r#"{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"/usr/bin/bash -lc 'cat a.txt'","status":"in_progress"}}"#,
        r#"{"type":"item.started","item":{"id":"item_2","type":"command_execution","command":"/usr/bin/bash -lc 'cat b.txt'","status":"in_progress"}}"#,
        r#"{"type":"item.completed","item":{"id":"item_2","type":"command_execution","command":"/usr/bin/bash -lc 'cat b.txt'","aggregated_output":"cat: b.txt: No such file or directory\n","exit_code":1,"status":"failed"}}"#,
        r#"{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"/usr/bin/bash -lc 'cat a.txt'","aggregated_output":"a\n","exit_code":0,"status":"completed"}}"#,
    ];
    let mut parser = TraceParser::new(Executor::Codex, None);
    for (line, at) in lines.iter().zip([100, 150, 400, 900]) {
        parser.feed(line, at);
    }
    insta::assert_snapshot!(table(&parser.finish(1_000)), @r"
       100   800 ok    command_execution cat a.txt
       150   250 error command_execution cat b.txt
    ");
}

#[test]
fn a_failed_turn_is_the_failure_and_a_recovered_error_is_not() {
    let failed = trace(include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/codex/turn_failed.jsonl"
    )));
    assert!(
        failed
            .failure
            .as_deref()
            .is_some_and(|failure| failure.starts_with("stream disconnected before completion"))
    );
    let recovered = trace(concat!(
        r#"{"type":"thread.started","thread_id":"t"}"#,
        "\n",
        r#"{"type":"error","message":"Reconnecting... 1/5"}"#,
        "\n",
        r#"{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":0,"output_tokens":2}}"#,
    ));
    assert_eq!(recovered.failure, None);
    assert_eq!(recovered.usage, [usage(10, 2, 0)]);
}
