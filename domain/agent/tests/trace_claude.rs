//! Traces of real Claude Code `stream-json` output (tests/fixtures/, see SOURCES.txt).

use gatehouse_agent::{Executor, ModelUsage, ToolCall, Trace, TraceParser};

#[macro_use]
mod support;

use support::{table, trace_of};

fn trace(text: &str) -> Trace {
    trace_of(Executor::ClaudeCode, "opus", text)
}

#[test]
fn a_listing_run_is_one_bash_call_with_session_reply_and_usage() {
    assert_eq!(
        trace(fixture!("claude_stream_ls.jsonl")),
        Trace {
            session_id: Some("40e7b02d-c0f9-4876-9010-f514d4eb0603".to_owned()),
            tools: vec![ToolCall {
                tool: "Bash".to_owned(),
                summary: "ls -la".to_owned(),
                started_ms: 2000,
                duration_ms: Some(1000),
                error: false,
            }],
            tools_truncated: false,
            reply: Some("Here are the files in the current directory.".to_owned()),
            usage: vec![ModelUsage {
                model: "claude-opus-4-5-20251101".to_owned(),
                input_tokens: 38,
                output_tokens: 765,
                cache_read_tokens: 28775,
                cache_write_tokens: 31159,
            }],
            reported_cost_usd: Some(0.24722425),
            failure: None,
            unparsed_lines: 0,
            elapsed_ms: 4500,
            retry: None,
        }
    );
}

#[test]
fn a_call_lasts_from_its_request_line_to_its_result_line() {
    let lines: Vec<&str> = fixture!("claude_stream_ls.jsonl").lines().collect();
    let mut parser = TraceParser::new(Executor::ClaudeCode, None);
    for (line, at) in lines.iter().zip([0, 1_250, 4_000, 4_100]) {
        parser.feed(line, at);
    }
    let trace = parser.finish(4_200);
    assert_eq!(trace.tools[0].started_ms, 1_250);
    assert_eq!(trace.tools[0].duration_ms, Some(2_750));
}

#[test]
fn a_longer_run_has_parallel_reads_refused_edits_and_two_models() {
    let trace = trace(fixture!("claude_stream_edit_retries.jsonl"));
    // The first four calls were requested together; each result arrived 4 lines later.
    insta::assert_snapshot!(table(&trace), @r"
      2000  4000 ok    Read C:/Users/Human/Desktop/prjx/sqlite2json/ai-coder/PHILOSOPHY.md
      3000  4000 ok    Read C:/Users/Human/Desktop/prjx/sqlite2json/README.md
      4000  4000 ok    Read C:/Users/Human/Desktop/prjx/sqlite2json/reqs/03_json-output-format.md
      5000  4000 ok    Glob specs/*.md
     10000  1000 ok    Read C:/Users/Human/Desktop/prjx/sqlite2json/specs/behavior.md
     13000  1000 error Edit C:/Users/Human/Desktop/prjx/sqlite2json/reqs/03_json-output-format.md
     15000  1000 ok    Read C:/Users/Human/Desktop/prjx/sqlite2json/reqs/03_json-output-format.md
     17000  1000 error Edit C:/Users/Human/Desktop/prjx/sqlite2json/reqs/03_json-output-format.md
     19000  1000 ok    Read C:/Users/Human/Desktop/prjx/sqlite2json/reqs/03_json-output-format.md
     21000  1000 error Edit C:/Users/Human/Desktop/prjx/sqlite2json/reqs/03_json-output-format.md
     23000  1000 ok    Bash cat /c/Users/Human/Desktop/prjx/sqlite2json/reqs/03_json-output-format.md
     25000  1000 error Write C:/Users/Human/Desktop/prjx/sqlite2json/reqs/03_json-output-format.md
     27000  1000 ok    Read C:/Users/Human/Desktop/prjx/sqlite2json/reqs/03_json-output-format.md
     29000  1000 error Write C:/Users/Human/Desktop/prjx/sqlite2json/reqs/03_json-output-format.md
     31000  1000 error Edit C:/Users/Human/Desktop/prjx/sqlite2json/reqs/03_json-output-format.md
     34000  1000 ok    Bash cd /c/Users/Human/Desktop/prjx/sqlite2json && cat > reqs/03_json-output-format.md << 'ENDOFFILE' # JSON Output Format D…
     36000  1000 ok    Bash cat /c/Users/Human/Desktop/prjx/sqlite2json/reqs/03_json-output-format.md
    ");
    assert_eq!(
        trace.session_id.as_deref(),
        Some("45bbe60f-6271-4029-beab-d05c6fdcca4b")
    );
    assert!(
        trace
            .reply
            .as_deref()
            .is_some_and(|reply| reply.starts_with("Fixed two inaccuracies"))
    );
    let models: Vec<(&str, u64)> = trace
        .usage
        .iter()
        .map(|u| (u.model.as_str(), u.output_tokens))
        .collect();
    assert_eq!(
        models,
        [
            ("claude-haiku-4-5-20251001", 372),
            ("claude-opus-4-5-20251101", 4463)
        ]
    );
    assert!(
        trace
            .reported_cost_usd
            .is_some_and(|cost| (cost - 0.4571764).abs() < 1e-12)
    );
    assert_eq!(trace.failure, None);
}

#[test]
fn a_multi_line_heredoc_is_summed_up_on_one_line_of_120_characters() {
    let trace = trace(fixture!("claude_stream_edit_retries.jsonl"));
    let heredoc = &trace.tools[15].summary;
    assert_eq!(heredoc.chars().count(), 120);
    assert!(heredoc.ends_with('…'));
    assert!(!heredoc.contains('\n'));
}

#[test]
fn an_aborted_run_is_a_failure_with_its_errors_and_no_usage() {
    let trace = trace(fixture!("claude_stream_aborted.jsonl"));
    assert_eq!(
        trace.session_id.as_deref(),
        Some("0d710a1b-676a-4c93-8e96-a66648bd5360")
    );
    assert!(trace.tools.is_empty());
    assert_eq!(trace.reply, None);
    assert!(trace.usage.is_empty());
    assert!(trace.failure.as_deref().is_some_and(|failure| {
        failure.starts_with("only prompt commands are supported in streaming mode; AbortError")
    }));
}

#[test]
fn progress_shows_the_call_requested_last_while_it_runs() {
    let lines: Vec<&str> = fixture!("claude_stream_edit_retries.jsonl")
        .lines()
        .collect();
    let mut parser = TraceParser::new(Executor::ClaudeCode, None);
    assert_eq!(parser.progress().running, None);
    // The init event and the four requests made together.
    for (i, line) in lines[..5].iter().enumerate() {
        parser.feed(line, i as u64 * 10);
    }
    let progress = parser.progress();
    assert_eq!(
        progress.session_id,
        Some("45bbe60f-6271-4029-beab-d05c6fdcca4b")
    );
    assert_eq!(progress.tools.len(), 4);
    assert_eq!(
        progress
            .running
            .map(|call| (call.tool.as_str(), call.summary.as_str())),
        Some(("Glob", "specs/*.md"))
    );
    // Their four results: nothing runs while the model thinks.
    for line in &lines[5..9] {
        parser.feed(line, 100);
    }
    assert_eq!(parser.progress().running, None);
    assert!(
        parser
            .progress()
            .tools
            .iter()
            .all(|call| call.duration_ms.is_some())
    );
}

#[test]
fn sub_agent_and_server_tool_calls_are_traced_too() {
    let lines = [
        r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_task","name":"Task","input":{"description":"Find the parser","prompt":"Look for…","subagent_type":"Explore"}}]},"parent_tool_use_id":null,"session_id":"s"}"#,
        r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_grep","name":"Grep","input":{"pattern":"fn parse","path":"src"}}]},"parent_tool_use_id":"toolu_task","session_id":"s"}"#,
        r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_grep","content":[{"type":"text","text":"src/parse.rs"}]}]},"parent_tool_use_id":"toolu_task","session_id":"s"}"#,
        r#"{"type":"assistant","message":{"content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"serde flatten"}},{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":{"type":"web_search_tool_result_error","error_code":"unavailable"}}]},"session_id":"s"}"#,
        r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_mcp","name":"mcp__github__get_issue","input":{"number":7}}]},"session_id":"s"}"#,
        r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_task","content":"Found it.","is_error":false}]},"session_id":"s"}"#,
    ];
    let mut parser = TraceParser::new(Executor::ClaudeCode, None);
    for (i, line) in lines.iter().enumerate() {
        parser.feed(line, i as u64 * 100);
    }
    let trace = parser.finish(1_000);
    insta::assert_snapshot!(table(&trace), @r"
     0   500 ok    Task Find the parser
   100   100 ok    Grep fn parse
   300     0 error web_search serde flatten
   400     - ok    mcp__github__get_issue github.get_issue
    ");
    assert_eq!(
        trace.failure.as_deref(),
        Some("Claude Code stopped before printing its result")
    );
}

#[test]
fn mcp_servers_that_did_not_connect_are_traced_once_as_failed_calls() {
    let init = r#"{"type":"system","subtype":"init","session_id":"s","mcp_servers":[{"name":"gatehouse","status":"connected","source":"dynamic"},{"name":"dead","status":"failed","source":"dynamic"},{"name":"slow","status":"pending"},{"name":"wiki","status":"needs-auth"},{"name":"evil\n`x`    name","status":"failed"},{"status":"failed"},"junk"]}"#;
    let mut parser = TraceParser::new(Executor::ClaudeCode, None);
    parser.feed(init, 10);
    // A second init (a resumed session) adds nothing.
    parser.feed(init, 20);
    let trace = parser.finish(100);
    insta::assert_snapshot!(table(&trace), @r"
    10     0 error mcp_server MCP server dead failed to start
    10     0 error mcp_server MCP server wiki: needs-auth
    10     0 error mcp_server MCP server evil `x` name failed to start
    ");
}
