//! Untrusted output: garbage, huge and truncated lines, missing fields and cut-off streams
//! never panic and never spoil the rest of a trace.

use gatehouse_agent::{Executor, ParseError, Trace, TraceParser};

#[macro_use]
mod support;

fn feed_all(format: Executor, lines: &[&str]) -> Trace {
    let mut parser = TraceParser::new(format, None);
    for (i, line) in lines.iter().enumerate() {
        parser.feed(line, (i as u64 + 1) * 1000);
    }
    parser.finish(1_000_000)
}

/// Lines no CLI prints, 7 of them not blank.
fn garbage() -> Vec<String> {
    vec![
        String::new(),
        "   ".to_owned(),
        "Warning: something on stdout".to_owned(),
        "{broken json".to_owned(),
        "[1, 2, 3]".to_owned(),
        "\u{0}\u{1b}[31m binary".to_owned(),
        format!("{}1{}", "[".repeat(10_000), "]".repeat(10_000)),
        format!("{{\"deep\": {}1{}}}", "[".repeat(10_000), "]".repeat(10_000)),
        format!("{{\"type\":\"assistant\",\"huge\":\"{}", "x".repeat(17 * 1024 * 1024)),
        r#"{"type":"some_future_event","payload":{"tool_use_id":"toolu_01BeipFBP3sUY3EAwVg3qQnE"}}"#
            .to_owned(),
    ]
}

/// `text` with all of [`garbage`] before each of its lines, timed so that its own lines
/// arrive when they would without the garbage.
fn interleaved(format: Executor, text: &str) -> Trace {
    let mut parser = TraceParser::new(format, None);
    let garbage = garbage();
    for (i, line) in text.lines().enumerate() {
        let at = (i as u64 + 1) * 1000;
        for junk in &garbage {
            parser.feed(junk, at);
        }
        parser.feed(line, at);
    }
    parser.finish(1_000_000)
}

fn clean(format: Executor, text: &str) -> Trace {
    let lines: Vec<&str> = text.lines().collect();
    feed_all(format, &lines)
}

#[test]
fn garbage_between_claude_events_is_counted_and_changes_nothing_else() {
    for text in [
        fixture!("claude_stream_ls.jsonl"),
        fixture!("claude_stream_edit_retries.jsonl"),
    ] {
        let format = Executor::ClaudeCode;
        let noisy = interleaved(format, text);
        let lines = text.lines().count() as u64;
        assert_eq!(noisy.unparsed_lines, 7 * lines);
        assert_eq!(
            Trace {
                unparsed_lines: 0,
                ..noisy
            },
            clean(format, text)
        );
    }
}

#[test]
fn garbage_between_codex_events_is_counted_and_changes_nothing_else() {
    for text in [
        fixture!("codex_zsh_ls.jsonl"),
        fixture!("codex_schema_tools.jsonl"),
    ] {
        let format = Executor::Codex;
        let noisy = interleaved(format, text);
        assert_eq!(noisy.unparsed_lines, 7 * text.lines().count() as u64);
        assert_eq!(
            Trace {
                unparsed_lines: 0,
                ..noisy
            },
            clean(format, text)
        );
    }
}

#[test]
fn events_missing_their_fields_are_skipped_without_panicking() {
    let claude = feed_all(
        Executor::ClaudeCode,
        &[
            r#"{"type":"assistant"}"#,
            r#"{"type":"assistant","message":"text"}"#,
            r#"{"type":"assistant","message":{"content":"text"}}"#,
            r#"{"type":"assistant","message":{"content":[1,null,{"type":7},{"type":"tool_use"}]}}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"a","name":"Bash","input":"ls"}]}}"#,
            r#"{"type":"user","message":{"content":[{"type":"tool_result"},{"type":"tool_result","tool_use_id":"nobody"}]}}"#,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"a","is_error":"yes"}]}}"#,
            r#"{"type":"system","session_id":42}"#,
            r#"{"type":"result"}"#,
        ],
    );
    let calls: Vec<(&str, &str, Option<u64>, bool)> = claude
        .tools
        .iter()
        .map(|c| (c.tool.as_str(), c.summary.as_str(), c.duration_ms, c.error))
        .collect();
    assert_eq!(
        calls,
        [
            ("tool_use", "", None, false),
            ("Bash", "", Some(2000), false)
        ]
    );
    assert_eq!(claude.session_id, None);
    assert_eq!(claude.failure, None);

    let codex = feed_all(
        Executor::Codex,
        &[
            r#"{"type":"thread.started"}"#,
            r#"{"type":"item.started"}"#,
            r#"{"type":"item.started","item":[]}"#,
            r#"{"type":"item.started","item":{"type":"command_execution"}}"#,
            r#"{"type":"item.completed","item":{"type":"command_execution","exit_code":"1"}}"#,
            r#"{"type":"item.completed","item":{"id":"x","type":"agent_message"}}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":-5,"output_tokens":"many"}}"#,
        ],
    );
    assert_eq!(codex.tools.len(), 2);
    assert_eq!(codex.tools[1].duration_ms, Some(0));
    assert_eq!(codex.reply, None);
    assert!(codex.usage.is_empty());
    assert_eq!(codex.failure, None);
}

#[test]
fn a_claude_stream_cut_off_mid_tool_keeps_the_call_without_duration() {
    let lines: Vec<&str> = fixture!("claude_stream_ls.jsonl").lines().take(2).collect();
    let trace = feed_all(Executor::ClaudeCode, &lines);
    assert_eq!(trace.tools.len(), 1);
    assert_eq!(trace.tools[0].summary, "ls -la");
    assert_eq!(trace.tools[0].duration_ms, None);
    assert_eq!(trace.reply, None);
    assert!(trace.usage.is_empty());
    assert_eq!(
        trace.failure.as_deref(),
        Some("Claude Code stopped before printing its result")
    );
    assert_eq!(
        trace.session_id.as_deref(),
        Some("40e7b02d-c0f9-4876-9010-f514d4eb0603")
    );
}

#[test]
fn a_last_line_cut_in_the_middle_is_an_unparsed_line() {
    let text = fixture!("claude_stream_ls.jsonl");
    let result = text.lines().last().unwrap_or_default();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.pop();
    lines.push(&result[..result.len() / 2]);
    let trace = feed_all(Executor::ClaudeCode, &lines);
    assert_eq!(trace.unparsed_lines, 1);
    assert_eq!(trace.tools[0].duration_ms, Some(1000));
    assert_eq!(
        trace.failure.as_deref(),
        Some("Claude Code stopped before printing its result")
    );
}

#[test]
fn output_with_no_event_at_all_fails_as_a_report_would_quoting_its_start() {
    for (format, executor) in [
        (Executor::ClaudeCode, Executor::ClaudeCode),
        (Executor::Codex, Executor::Codex),
    ] {
        let lines = [
            "",
            "error: unknown option '--verbose'",
            "(Did you mean --version?)",
        ];
        let trace = feed_all(format, &lines);
        let expected = ParseError::NoResult {
            executor,
            excerpt: "error: unknown option '--verbose'\n(Did you mean --version?)".to_owned(),
        };
        assert_eq!(trace.failure, Some(expected.to_string()));
        assert_eq!(trace.unparsed_lines, 2);
        let silent = feed_all(format, &[]);
        assert!(
            silent
                .failure
                .as_deref()
                .is_some_and(|failure| failure.contains("stdout was empty"))
        );
    }
}

#[test]
fn a_feed_may_hold_several_lines_or_crlf_endings() {
    let text = fixture!("claude_stream_ls.jsonl").replace('\n', "\r\n");
    let mut parser = TraceParser::new(Executor::ClaudeCode, None);
    parser.feed(&text, 5);
    let trace = parser.finish(10);
    assert_eq!(trace.tools.len(), 1);
    assert_eq!(trace.tools[0].duration_ms, Some(0));
    assert_eq!(trace.unparsed_lines, 0);
    assert_eq!(trace.failure, None);
}

#[test]
fn a_summary_is_cut_on_a_character_boundary() {
    let command = "é".repeat(500);
    let line = format!(
        r#"{{"type":"assistant","message":{{"content":[{{"type":"tool_use","id":"a","name":"Bash","input":{{"command":"{command}"}}}}]}}}}"#
    );
    let trace = feed_all(Executor::ClaudeCode, &[&line]);
    let summary = &trace.tools[0].summary;
    assert_eq!(summary.chars().count(), 120);
    assert_eq!(summary.strip_suffix('…'), Some("é".repeat(119).as_str()));
}

#[test]
fn a_runaway_agent_fills_the_trace_up_to_its_cap() {
    let mut parser = TraceParser::new(Executor::ClaudeCode, None);
    for i in 0..5_010 {
        parser.feed(
            &format!(
                r#"{{"type":"assistant","message":{{"content":[{{"type":"tool_use","id":"t{i}","name":"Read","input":{{"file_path":"f{i}"}}}}]}}}}"#
            ),
            i,
        );
    }
    let trace = parser.finish(6_000);
    assert_eq!(trace.tools.len(), 5_000);
    assert!(trace.tools_truncated);
    assert_eq!(trace.tools[4_999].summary, "f4999");
}

#[test]
fn a_clock_that_steps_back_gives_a_zero_duration() {
    let lines: Vec<&str> = fixture!("codex_zsh_ls.jsonl").lines().collect();
    let mut parser = TraceParser::new(Executor::Codex, None);
    for (line, at) in lines.iter().zip([50, 60, 70, 80, 20, 90, 95, 99]) {
        parser.feed(line, at);
    }
    assert_eq!(parser.finish(100).tools[0].duration_ms, Some(0));
}
