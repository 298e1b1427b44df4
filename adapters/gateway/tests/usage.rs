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

/// Runs the two-turn conversation through `provider`, each turn a request to its path with
/// its body, and returns what the sink recorded and the grant's totals. The token goes
/// where the provider's clients put it (for Gemini as `?key=` when `key_in_query`).
async fn converse(
    provider: &str,
    turns: [(&str, Value); 2],
    key_in_query: bool,
) -> (Vec<Metered>, gatehouse_gateway::Totals, Scene) {
    let scene = Scene::start(script()).await;
    let sink = Arc::new(Sink::default());
    let mut granted = spec(provider);
    granted.sink = Some(sink.clone());
    let grant = scene.gateway.grant(granted).expect("grant");
    let token = grant.token().expose_secret().to_owned();
    let bearer = format!("Bearer {token}");
    let auth: Vec<(&str, &str)> = match provider {
        _ if key_in_query => Vec::new(),
        "anthropic" => vec![("x-api-key", &token)],
        "gemini" => vec![("x-goog-api-key", &token)],
        _ => vec![("authorization", &bearer)],
    };
    for (path, body) in turns {
        let mut url = format!("{}/{provider}{path}", scene.url);
        if key_in_query {
            url.push_str(&format!(
                "{}key={token}",
                if url.contains('?') { "&" } else { "?" }
            ));
        }
        let (status, _, _) = read(post(&url, &auth, &body).await).await;
        assert_eq!(status, 200);
    }
    let records = sink.wait_for(2).await;
    (records, grant.usage(), scene)
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
        let (records, totals, _) = converse(
            "anthropic",
            [
                ("/v1/messages", messages(first, 0)),
                ("/v1/messages", messages(second, 1)),
            ],
            false,
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
        let (records, totals, _) = converse(
            "openai",
            [
                ("/v1/responses", responses(first, 0)),
                ("/v1/responses", responses(second, 1)),
            ],
            false,
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
        let (records, totals, _) = converse(
            "local",
            [
                ("/v1/chat/completions", chat(first, 0)),
                ("/v1/chat/completions", chat(second, 1)),
            ],
            false,
        )
        .await;
        check(&records, totals, "local-model");
    }
}

fn gemini(stream: bool, turn: usize) -> (&'static str, Value) {
    let mut contents = vec![json!({"role": "user", "parts": [{"text": "write a.txt"}]})];
    if turn > 0 {
        contents.push(
            json!({"role": "model", "parts": [{"functionCall": {"name": "Write", "args": {}}}]}),
        );
        contents.push(json!({"role": "user", "parts": [{"functionResponse": {"name": "Write", "response": {"ok": true}}}]}));
    }
    let path = if stream {
        "/v1beta/models/gemini-test:streamGenerateContent?alt=sse"
    } else {
        "/v1beta/models/gemini-test:generateContent"
    };
    (path, json!({"contents": contents}))
}

/// Gemini names its model in the path and its key in `x-goog-api-key` or `?key=`; the
/// token in the query never reaches the provider.
#[tokio::test]
async fn gemini_streamed_and_not_with_the_key_in_a_header_or_the_query() {
    for ((first, second), in_query) in [((true, false), false), ((false, true), true)] {
        let (records, totals, scene) =
            converse("gemini", [gemini(first, 0), gemini(second, 1)], in_query).await;
        check(&records, totals, "gemini-test");
        for request in scene.fake.requests() {
            assert!(!request.path.contains("key="), "{}", request.path);
            assert!(!request.path.contains("gh-gw-"), "{}", request.path);
        }
    }
}
