//! Traces of a `command` executor's plain stdout.

use gatehouse_agent::{Executor, ModelUsage, Trace, TraceParser, parse_report};

fn trace(text: &str) -> Trace {
    let mut parser = TraceParser::new(Executor::Command, Some("ignored"));
    for (i, line) in text.lines().enumerate() {
        parser.feed(line, i as u64 * 10);
    }
    parser.finish(1_000)
}

#[test]
fn stdout_is_the_reply_and_the_usage_line_is_usage() {
    let wrapper = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/command/wrapper.txt"
    ));
    assert_eq!(
        trace(wrapper),
        Trace {
            reply: Some(
                "my-agent 0.3.1: reading /in/.agent/prompt.md\nwrote src/lib.rs".to_owned()
            ),
            usage: vec![ModelUsage {
                model: "my-model".to_owned(),
                input_tokens: 1200,
                output_tokens: 340,
                cache_read_tokens: 8000,
                cache_write_tokens: 0,
            }],
            elapsed_ms: 1_000,
            ..Trace::default()
        }
    );
}

#[test]
fn the_last_usage_line_wins_and_other_json_is_reply() {
    let text = concat!(
        "{\"gatehouse_usage\": {\"model\": \"a\", \"input_tokens\": 1}}\n",
        "{\"result\": \"json the program printed\"}\n",
        "\n",
        "  done  \n",
        "{\"gatehouse_usage\": {\"model\": \"b\", \"output_tokens\": 2}}\n",
    );
    let trace = trace(text);
    assert_eq!(
        trace.reply.as_deref(),
        Some("{\"result\": \"json the program printed\"}\n\n  done")
    );
    let models: Vec<&str> = trace.usage.iter().map(|u| u.model.as_str()).collect();
    assert_eq!(models, ["b"]);
    assert!(trace.tools.is_empty());
    assert_eq!(trace.session_id, None);
}

#[test]
fn a_malformed_usage_line_is_the_failure_a_report_gives() {
    let text = "working\n{\"gatehouse_usage\": {\"model\": \"m\", \"input_tokns\": 5}}\n";
    let expected = parse_report(Executor::Command, None, text.as_bytes())
        .err()
        .map(|error| error.to_string());
    assert!(expected.is_some());
    let trace = trace(text);
    assert_eq!(trace.failure, expected);
    assert_eq!(trace.reply.as_deref(), Some("working"));
    assert!(trace.usage.is_empty());
}

#[test]
fn no_output_is_no_reply_and_no_failure() {
    assert_eq!(
        trace(""),
        Trace {
            elapsed_ms: 1_000,
            ..Trace::default()
        }
    );
}
