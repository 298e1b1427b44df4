//! The gateway's metered usage equals what the provider reported, in every wire format,
//! streamed or not, per request (the sink) and in total (the grant).

mod scene;

use std::sync::Arc;

use gatehouse_fake_providers::{Tokens, Turn};
use gatehouse_gateway::Metered;
use secrecy::ExposeSecret;
use serde_json::{Value, json};

use scene::{Scene, Sink, post, read, spec};

const FIRST: Tokens = Tokens {
    input: 1200,
    output: 310,
    cache_read: 800,
    cache_write: 450,
    reasoning: 0,
};
const SECOND: Tokens = Tokens {
    input: 35,
    output: 7,
    cache_read: 2000,
    cache_write: 0,
    reasoning: 0,
};

fn script() -> Vec<Turn> {
    vec![
        Turn::tool("Write", json!({"file_path": "a.txt", "content": "a\n"})).tokens(FIRST),
        Turn::text("done").tokens(SECOND),
    ]
}

/// Runs the two-turn conversation through `provider` at `path`, the first turn streamed or
/// not as `stream` says, and returns what the sink recorded and the grant's totals.
async fn converse(
    provider: &str,
    path: &str,
    first: Value,
    second: Value,
) -> (Vec<Metered>, gatehouse_gateway::Totals) {
    let scene = Scene::start(script()).await;
    let sink = Arc::new(Sink::default());
    let mut granted = spec(provider);
    granted.sink = Some(sink.clone());
    let grant = scene.gateway.grant(granted).expect("grant");
    let token = grant.token().expose_secret().to_owned();
    let bearer = format!("Bearer {token}");
    let auth: (&str, &str) = if provider == "anthropic" {
        ("x-api-key", &token)
    } else {
        ("authorization", &bearer)
    };
    let url = format!("{}/{provider}{path}", scene.url);
    for body in [first, second] {
        let (status, _, _) = read(post(&url, &[auth], &body).await).await;
        assert_eq!(status, 200);
    }
    let records = sink.wait_for(2).await;
    (records, grant.usage())
}

fn check(records: &[Metered], totals: gatehouse_gateway::Totals, model: &str) {
    assert_eq!(records.len(), 2, "{records:?}");
    for (record, tokens) in records.iter().zip([FIRST, SECOND]) {
        assert!(record.complete);
        assert_eq!(record.status, 200);
        assert_eq!(record.label, "attempt-1");
        let usage = &record.usage;
        assert_eq!(usage.model.as_deref(), Some(model));
        assert_eq!(
            (usage.input, usage.output, usage.cache_read),
            (tokens.input, tokens.output, tokens.cache_read),
            "{record:?}"
        );
    }
    assert_eq!(totals.requests, 2);
    assert_eq!(totals.input, FIRST.input + SECOND.input);
    assert_eq!(totals.output, FIRST.output + SECOND.output);
    assert_eq!(totals.cache_read, FIRST.cache_read + SECOND.cache_read);
}

fn messages(stream: bool, turn: usize) -> Value {
    let mut messages = vec![json!({"role": "user", "content": "write a.txt"})];
    if turn > 0 {
        messages.push(json!({"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "Write", "input": {}}]}));
        messages.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]}));
    }
    json!({"model": "claude-test", "max_tokens": 64, "stream": stream, "messages": messages})
}

#[tokio::test]
async fn anthropic_streamed_and_not() {
    for (first, second) in [(true, false), (false, true)] {
        let (records, totals) = converse(
            "anthropic",
            "/v1/messages",
            messages(first, 0),
            messages(second, 1),
        )
        .await;
        check(&records, totals, "claude-test");
        // Anthropic reports cache writes; OpenAI does not.
        assert_eq!(records[0].usage.cache_write, FIRST.cache_write);
        assert_eq!(totals.cache_write, FIRST.cache_write);
    }
}

fn responses(stream: bool, turn: usize) -> Value {
    let mut input = vec![json!({"role": "user", "content": "write a.txt"})];
    if turn > 0 {
        input.push(
            json!({"type": "function_call", "call_id": "c", "name": "Write", "arguments": "{}"}),
        );
        input.push(json!({"type": "function_call_output", "call_id": "c", "output": "ok"}));
    }
    json!({"model": "gpt-test", "stream": stream, "input": input})
}

#[tokio::test]
async fn openai_responses_streamed_and_not() {
    for (first, second) in [(true, false), (false, true)] {
        let (records, totals) = converse(
            "openai",
            "/v1/responses",
            responses(first, 0),
            responses(second, 1),
        )
        .await;
        check(&records, totals, "gpt-test");
    }
}

fn chat(stream: bool, turn: usize) -> Value {
    let mut messages = vec![json!({"role": "user", "content": "write a.txt"})];
    if turn > 0 {
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": []}));
        messages.push(json!({"role": "tool", "tool_call_id": "c", "content": "ok"}));
    }
    let mut body = json!({"model": "local-model", "stream": stream, "messages": messages});
    if stream {
        body["stream_options"] = json!({"include_usage": true});
    }
    body
}

#[tokio::test]
async fn chat_completions_streamed_and_not() {
    for (first, second) in [(true, false), (false, true)] {
        let (records, totals) = converse(
            "local",
            "/v1/chat/completions",
            chat(first, 0),
            chat(second, 1),
        )
        .await;
        check(&records, totals, "local-model");
    }
}
