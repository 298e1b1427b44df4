//! `parse_report` on real CLI output (fixtures/, see fixtures/SOURCES.txt) and on fake-CLI
//! output written in the same formats.

use gatehouse_agent::{Executor, ModelUsage, ParseError, Report, parse_report};

macro_rules! fixture {
    ($path:literal) => {
        include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/", $path)).as_slice()
    };
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

fn claude(stdout: &[u8]) -> Result<Report, ParseError> {
    parse_report(Executor::ClaudeCode, Some("opus"), stdout)
}

fn codex(stdout: &[u8]) -> Result<Report, ParseError> {
    parse_report(Executor::Codex, Some("gpt-5-codex"), stdout)
}

/// A pretty-printed fixture on one line, the way `claude -p --output-format json` prints it,
/// keys in their order (the fixtures have no line breaks inside strings).
fn one_line(pretty: &[u8]) -> String {
    let pretty = std::str::from_utf8(pretty).expect("fixture is UTF-8");
    let mut line: String = pretty.lines().map(str::trim).collect();
    line.push('\n');
    line
}

// Claude Code

#[test]
fn claude_success_reads_model_usage_not_the_usage_total() {
    assert_eq!(
        claude(fixture!("claude/success.json")),
        Ok(Report {
            usage: vec![usage("claude-opus-4-5-20251101", 38, 765, 28775, 31159)],
            reported_cost_usd: Some(0.24722425),
            failed: None,
            summary: Some("Here are the files in the current directory.".to_owned()),
        })
    );
}

#[test]
fn claude_reports_every_model_it_used() {
    assert_eq!(
        claude(fixture!("claude/two_models.json")),
        Ok(Report {
            usage: vec![
                usage("claude-haiku-4-5-20251001", 0, 407, 0, 0),
                usage("claude-sonnet-4-5-20250929", 0, 774, 0, 0),
            ],
            reported_cost_usd: Some(0.013645),
            failed: None,
            summary: Some("The current directory contains...".to_owned()),
        })
    );
}

#[test]
fn claude_error_subtype_is_a_failure_even_without_is_error() {
    assert_eq!(
        claude(fixture!("claude/max_turns.json")),
        Ok(Report {
            usage: vec![
                usage("claude-haiku-4-5-20251001", 0, 353, 0, 0),
                usage("claude-sonnet-4-5-20250929", 0, 11043, 0, 0),
            ],
            reported_cost_usd: Some(0.16741),
            failed: Some("Claude Code stopped at its turn limit (error_max_turns)".to_owned()),
            summary: None,
        })
    );
}

#[test]
fn claude_without_model_usage_falls_back_to_usage_under_the_roles_model() {
    let expected = |model: &str| {
        Ok(Report {
            usage: vec![usage(model, 8, 32, 17004, 192)],
            reported_cost_usd: Some(0.34641974999999997),
            failed: None,
            summary: Some(
                "I need permission to edit the test-file.txt. Please grant write access to \
                 this file so I can add the comment at the top."
                    .to_owned(),
            ),
        })
    };
    assert_eq!(claude(fixture!("claude/usage_only.json")), expected("opus"));
    assert_eq!(
        parse_report(
            Executor::ClaudeCode,
            None,
            fixture!("claude/usage_only.json")
        ),
        expected("unknown")
    );
}

#[test]
fn claude_is_error_result_is_the_failure_message() {
    assert_eq!(
        claude(fixture!("claude/invalid_api_key.json")),
        Ok(Report {
            usage: Vec::new(),
            reported_cost_usd: None,
            failed: Some("Invalid API key · Fix external API key".to_owned()),
            summary: None,
        })
    );
}

#[test]
fn claude_is_error_with_zero_usage_and_errors_list() {
    // The shape of a run refused before any API call, as fake CLIs in tests print it.
    let stdout = br#"{"type":"result","subtype":"error_during_execution","is_error":true,"duration_ms":371,"num_turns":1,"total_cost_usd":0,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0},"modelUsage":{},"permission_denials":[],"errors":["Reached maximum budget ($0.02)"]}"#;
    assert_eq!(
        claude(stdout),
        Ok(Report {
            usage: Vec::new(),
            reported_cost_usd: Some(0.0),
            failed: Some("Reached maximum budget ($0.02)".to_owned()),
            summary: None,
        })
    );
}

#[test]
fn claude_one_line_output_after_other_lines() {
    let stdout = format!(
        "Update available: run claude update\n{}",
        one_line(fixture!("claude/success.json"))
    );
    let report = claude(stdout.as_bytes());
    assert_eq!(report, claude(fixture!("claude/success.json")));
}

#[test]
fn claude_tail_cut_inside_the_result_line_still_bills_its_usage() {
    let line = one_line(fixture!("claude/two_models.json"));
    // The tail starts in the middle of the agent's final message.
    let cut = line.find("directory contains").expect("fixture text");
    assert_eq!(
        claude(&line.as_bytes()[cut..]),
        Ok(Report {
            usage: vec![
                usage("claude-haiku-4-5-20251001", 0, 407, 0, 0),
                usage("claude-sonnet-4-5-20250929", 0, 774, 0, 0),
            ],
            reported_cost_usd: Some(0.013645),
            failed: None,
            summary: None,
        })
    );
}

#[test]
fn claude_pretty_printed_tail_cut_mid_line_reads_the_same() {
    let full = fixture!("claude/success.json");
    // Cut inside `"is_error": false,`: the object's opening brace and first fields are gone.
    let cut = &full[52..];
    assert!(cut.starts_with(b"error\": false,"));
    assert_eq!(claude(cut), claude(full));
}

#[test]
fn claude_usage_named_inside_the_agents_text_is_not_taken_for_the_real_one() {
    let stdout = concat!(
        r#"ted","result":"I set \"modelUsage\": {\"x\": {\"inputTokens\": 999}} and \"total_cost_usd\": 5","#,
        r#""total_cost_usd":0.5,"usage":{"input_tokens":1,"output_tokens":2},"modelUsage":{"claude-sonnet-4-5":{"inputTokens":1,"outputTokens":2,"cacheReadInputTokens":3,"cacheCreationInputTokens":4}}}"#,
        "\n"
    );
    let report = claude(stdout.as_bytes());
    assert_eq!(
        report.map(|r| (r.usage, r.reported_cost_usd)),
        Ok((vec![usage("claude-sonnet-4-5", 1, 2, 3, 4)], Some(0.5)))
    );
}

#[test]
fn claude_without_a_result_is_an_error_quoting_the_output() {
    assert_eq!(
        claude(b"").map_err(|e| e.to_string()),
        Err(
            "claude-code printed no result that Gatehouse recognises; its stdout was empty \
             (did it start at all?)"
                .to_owned()
        )
    );
    let crash = format!(
        "node:internal/modules/cjs/loader:1228\n{}",
        "  throw err;\n".repeat(40)
    );
    let error = claude(crash.as_bytes());
    let Err(ParseError::NoResult { executor, excerpt }) = &error else {
        panic!("{error:?}");
    };
    assert_eq!(*executor, Executor::ClaudeCode);
    assert_eq!(excerpt.chars().count(), 201);
    assert!(excerpt.starts_with("node:internal/modules/cjs/loader:1228\n  throw err;"));
    // Stream events without their result line are not a result either.
    let stream = br#"{"type":"system","subtype":"init","session_id":"s"}
{"type":"assistant","message":{"content":[{"type":"text","text":"Working"}]}}
"#;
    assert!(matches!(claude(stream), Err(ParseError::NoResult { .. })));
}

// Codex

#[test]
fn codex_docs_sample_subtracts_cached_input() {
    assert_eq!(
        codex(fixture!("codex/readme_lookup.jsonl")),
        Ok(Report {
            usage: vec![usage("gpt-5-codex", 24763 - 24448, 122, 24448, 0)],
            reported_cost_usd: None,
            failed: None,
            summary: Some("Yep — there’s a `README.md` in the repository root.".to_owned()),
        })
    );
}

#[test]
fn codex_file_change_run() {
    assert_eq!(
        parse_report(Executor::Codex, None, fixture!("codex/write_file.jsonl")),
        Ok(Report {
            usage: vec![usage("unknown", 6015 - 2944, 65, 2944, 0)],
            reported_cost_usd: None,
            failed: None,
            summary: Some(
                "Created `new.txt` with the requested content. Next, you might spot-check it \
                 with `cat new.txt` if needed."
                    .to_owned()
            ),
        })
    );
}

#[test]
fn codex_turn_failed_is_the_failure_message() {
    assert_eq!(
        codex(fixture!("codex/turn_failed.jsonl")),
        Ok(Report {
            usage: Vec::new(),
            reported_cost_usd: None,
            failed: Some(
                "stream disconnected before completion: error sending request for url \
                 (https://api.openai.com/v1/responses)"
                    .to_owned()
            ),
            summary: None,
        })
    );
}

#[test]
fn codex_sums_turns_and_recovers_from_transient_errors() {
    // Two turns (as after `codex exec resume`), a reconnect Codex recovered from, and the
    // cache-write and reasoning counts newer Codex versions add to `usage`.
    let stdout = br#"{"type":"thread.started","thread_id":"t"}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"First."}}
{"type":"turn.completed","usage":{"input_tokens":1000,"cached_input_tokens":600,"output_tokens":50}}
{"type":"turn.started"}
{"type":"error","message":"Reconnecting... 1/5"}
{"type":"item.completed","item":{"id":"item_1","type":"error","message":"Skill descriptions were shortened."}}
{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"Second."}}
{"type":"turn.completed","usage":{"input_tokens":2000,"cached_input_tokens":1500,"cache_write_input_tokens":300,"output_tokens":70,"reasoning_output_tokens":40}}
"#;
    assert_eq!(
        codex(stdout),
        Ok(Report {
            usage: vec![usage("gpt-5-codex", 400 + 200, 120, 2100, 300)],
            reported_cost_usd: None,
            failed: None,
            summary: Some("Second.".to_owned()),
        })
    );
}

#[test]
fn codex_tail_starting_mid_line() {
    let full = fixture!("codex/readme_lookup.jsonl");
    let cut = &full[40..];
    assert!(!cut.starts_with(b"{"));
    assert_eq!(codex(cut), codex(full));
}

#[test]
fn codex_without_events_is_an_error() {
    let error = codex(
        b"error: unexpected argument '--jsn' found\n\nUsage: codex exec [OPTIONS] [PROMPT]\n",
    );
    assert_eq!(
        error.map_err(|e| e.to_string()),
        Err("codex printed no result that Gatehouse recognises; its stdout begins: \
             \"error: unexpected argument '--jsn' found\\n\\nUsage: codex exec [OPTIONS] [PROMPT]\\n\""
            .to_owned())
    );
}

// Command

#[test]
fn command_reads_the_gatehouse_usage_line() {
    assert_eq!(
        parse_report(
            Executor::Command,
            Some("ignored"),
            fixture!("command/wrapper.txt")
        ),
        Ok(Report {
            usage: vec![usage("my-model", 1200, 340, 8000, 0)],
            ..Report::default()
        })
    );
}

#[test]
fn command_without_a_usage_line_has_no_usage() {
    assert_eq!(
        parse_report(Executor::Command, None, b"done\n{\"other\":1}\n"),
        Ok(Report::default())
    );
    assert_eq!(
        parse_report(Executor::Command, None, b""),
        Ok(Report::default())
    );
}

#[test]
fn command_takes_the_last_line_and_lists() {
    let stdout = br#"{"gatehouse_usage": {"model": "early", "input_tokens": 1}}
{"gatehouse_usage": [{"model": "big", "input_tokens": 900, "output_tokens": 300, "cache_write_tokens": 5}, {"model": "small", "output_tokens": 40}]}
bye
"#;
    assert_eq!(
        parse_report(Executor::Command, None, stdout),
        Ok(Report {
            usage: vec![usage("big", 900, 300, 0, 5), usage("small", 0, 40, 0, 0)],
            ..Report::default()
        })
    );
}

#[test]
fn command_malformed_usage_line_says_what_is_wrong() {
    let misspelt = br#"{"gatehouse_usage": {"model": "m", "input_token": 5}}"#;
    let error = parse_report(Executor::Command, None, misspelt).map_err(|e| e.to_string());
    assert!(
        error.as_ref().is_err_and(|e| e.starts_with(
            "the last `gatehouse_usage` line is malformed (unknown field `input_token`"
        )),
        "{error:?}"
    );
    let no_model = br#"{"gatehouse_usage": {"input_tokens": 5}}"#;
    assert!(matches!(
        parse_report(Executor::Command, None, no_model),
        Err(ParseError::CommandUsage { reason, .. }) if reason.contains("missing field `model`")
    ));
    let number = br#"{"gatehouse_usage": 5}"#;
    assert_eq!(
        parse_report(Executor::Command, None, number),
        Err(ParseError::CommandUsage {
            reason: "`gatehouse_usage` must be an object or a list of objects".to_owned(),
            line: r#"{"gatehouse_usage":5}"#.to_owned(),
        })
    );
}
