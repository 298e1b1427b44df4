//! A plain HTTP client reads the fake's answers in each wire format: the events and fields
//! real clients rely on, the usage figures of the script, the key check, the turn order and
//! the faults.

use std::time::{Duration, Instant};

use bytes::Bytes;
use gatehouse_fake_providers::sse::{self, Event};
use gatehouse_fake_providers::{FakeProvider, Fault, Tokens, Turn};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};

const KEY: &str = "sk-fake-provider-test-key";

fn client() -> Client<HttpConnector, Full<Bytes>> {
    Client::builder(TokioExecutor::new()).build_http()
}

fn script() -> Vec<Turn> {
    vec![
        Turn::tool(
            "Write",
            json!({"file_path": "hello.txt", "content": "hello\n"}),
        )
        .tokens(Tokens {
            input: 100,
            output: 20,
            cache_read: 30,
            cache_write: 40,
            reasoning: 5,
        }),
        Turn::text("done"),
    ]
}

async fn post(
    fake: &FakeProvider,
    path: &str,
    auth: (&str, String),
    body: Value,
) -> hyper::Response<Incoming> {
    let request = hyper::Request::post(format!("{}{path}", fake.url()))
        .header("content-type", "application/json")
        .header(auth.0, auth.1)
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("request");
    client().request(request).await.expect("answer")
}

fn anthropic_key(key: &str) -> (&'static str, String) {
    ("x-api-key", key.to_owned())
}

fn bearer(key: &str) -> (&'static str, String) {
    ("authorization", format!("Bearer {key}"))
}

async fn events(response: hyper::Response<Incoming>) -> Vec<Event> {
    let body = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    sse::parse(&body)
}

async fn json(response: hyper::Response<Incoming>) -> Value {
    let body = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    serde_json::from_slice(&body).expect("json")
}

#[tokio::test]
async fn anthropic_streams_a_tool_call_then_the_final_text() {
    let fake = FakeProvider::start(KEY, script()).await;
    let first = json!({"model": "claude-test", "stream": true, "max_tokens": 100,
        "messages": [{"role": "user", "content": "write hello.txt"}]});
    let response = post(&fake, "/v1/messages", anthropic_key(KEY), first).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let events = events(response).await;
    let names: Vec<_> = events.iter().filter_map(|e| e.event.clone()).collect();
    assert_eq!(names.first().map(String::as_str), Some("message_start"));
    assert_eq!(names.last().map(String::as_str), Some("message_stop"));
    for name in [
        "content_block_start",
        "ping",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
    ] {
        assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
    }
    let start = events[0].json().expect("json");
    assert_eq!(start["type"], "message_start");
    assert_eq!(start["message"]["model"], "claude-test");
    assert_eq!(
        start["message"]["usage"],
        json!({"input_tokens": 100, "cache_creation_input_tokens": 40,
            "cache_read_input_tokens": 30, "output_tokens": 1})
    );
    let block = events[1].json().expect("json");
    assert_eq!(block["content_block"]["type"], "tool_use");
    assert_eq!(block["content_block"]["name"], "Write");
    let input: String = events
        .iter()
        .filter_map(Event::json)
        .filter(|e| e["delta"]["type"] == "input_json_delta")
        .map(|e| {
            e["delta"]["partial_json"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    let input: Value = serde_json::from_str(&input).expect("tool input");
    assert_eq!(
        input,
        json!({"file_path": "hello.txt", "content": "hello\n"})
    );
    let delta = events
        .iter()
        .filter_map(Event::json)
        .find(|e| e["type"] == "message_delta")
        .expect("message_delta");
    assert_eq!(delta["delta"]["stop_reason"], "tool_use");
    assert_eq!(delta["usage"]["output_tokens"], 20);

    let second = json!({"model": "claude-test", "stream": false, "max_tokens": 100, "messages": [
        {"role": "user", "content": "write hello.txt"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "Write", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]},
    ]});
    let message = json(post(&fake, "/v1/messages", anthropic_key(KEY), second).await).await;
    assert_eq!(
        message["content"][0],
        json!({"type": "text", "text": "done"})
    );
    assert_eq!(message["stop_reason"], "end_turn");
    assert_eq!(message["usage"]["output_tokens"], 5);

    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].path, "/v1/messages");
    assert_eq!(requests[0].header("x-api-key"), Some(KEY));
    assert_eq!(requests[0].body["model"], "claude-test");
    assert_eq!(requests[0].sent.len(), events.len());
}

#[tokio::test]
async fn responses_stream_numbered_events_and_usage_on_completion() {
    let fake = FakeProvider::start(KEY, script()).await;
    let body = json!({"model": "gpt-test", "stream": true, "input": "write hello.txt"});
    let events = events(post(&fake, "/v1/responses", bearer(KEY), body).await).await;
    let names: Vec<_> = events.iter().filter_map(|e| e.event.clone()).collect();
    for name in [
        "response.created",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.output_item.done",
        "response.completed",
    ] {
        assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
    }
    for (n, event) in events.iter().enumerate() {
        let data = event.json().expect("json");
        assert_eq!(data["type"].as_str(), event.event.as_deref());
        assert_eq!(data["sequence_number"], n);
    }
    let completed = events.last().and_then(Event::json).expect("completed");
    assert_eq!(
        completed["response"]["usage"],
        json!({"input_tokens": 130, "input_tokens_details": {"cached_tokens": 30},
            "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 5},
            "total_tokens": 150})
    );
    assert_eq!(completed["response"]["output"][0]["type"], "function_call");

    // The next turn, by previous_response_id or by the history in the input.
    let id = completed["response"]["id"].as_str().expect("id").to_owned();
    let chained = json!({"model": "gpt-test", "previous_response_id": id, "input": []});
    let object = json(post(&fake, "/v1/responses", bearer(KEY), chained).await).await;
    assert_eq!(object["output"][0]["content"][0]["text"], "done");
    let history = json!({"model": "gpt-test", "input": [
        {"role": "user", "content": "write hello.txt"},
        {"type": "function_call", "call_id": "c", "name": "Write", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c", "output": "ok"},
    ]});
    let object = json(post(&fake, "/v1/responses", bearer(KEY), history).await).await;
    assert_eq!(object["output"][0]["type"], "message");
    assert_eq!(object["usage"]["output_tokens"], 5);
}

#[tokio::test]
async fn chat_completions_end_with_a_usage_chunk_when_asked() {
    let fake = FakeProvider::start(KEY, vec![Turn::text("done")]).await;
    let body = json!({"model": "local", "stream": true, "stream_options": {"include_usage": true},
        "messages": [{"role": "user", "content": "hi"}]});
    let chunks = events(post(&fake, "/v1/chat/completions", bearer(KEY), body).await).await;
    assert_eq!(chunks.last(), Some(&Event::data("[DONE]")));
    let usage = chunks[chunks.len() - 2].json().expect("usage chunk");
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(usage["usage"]["prompt_tokens"], 10);
    assert_eq!(usage["usage"]["completion_tokens"], 5);
    let text: String = chunks
        .iter()
        .filter_map(Event::json)
        .filter_map(|e| {
            e["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(text, "done");

    let plain = json!({"model": "local", "stream": true, "messages": []});
    let chunks = events(post(&fake, "/v1/chat/completions", bearer(KEY), plain).await).await;
    assert!(
        chunks
            .iter()
            .filter_map(Event::json)
            .all(|e| e.get("usage").is_none())
    );
}

#[tokio::test]
async fn a_wrong_key_gets_401_in_the_providers_shape() {
    let fake = FakeProvider::start(KEY, script()).await;
    let body = json!({"model": "m", "messages": []});
    let response = post(
        &fake,
        "/v1/messages",
        anthropic_key("sk-wrong"),
        body.clone(),
    )
    .await;
    assert_eq!(response.status(), 401);
    assert_eq!(
        json(response).await["error"]["type"],
        "authentication_error"
    );
    // Anthropic's header does not open OpenAI's door.
    let response = post(&fake, "/v1/responses", anthropic_key(KEY), body).await;
    assert_eq!(response.status(), 401);
    assert_eq!(json(response).await["error"]["code"], "invalid_api_key");
    assert_eq!(fake.requests()[1].status, 401);
}

#[tokio::test]
async fn faults_come_once_each_in_order() {
    let fake = FakeProvider::start(KEY, script()).await;
    fake.push_fault(Fault::Status(529));
    fake.push_fault(Fault::RateLimited { retry_after: 7 });
    let body = json!({"model": "m", "messages": []});
    let response = post(&fake, "/v1/messages", anthropic_key(KEY), body.clone()).await;
    assert_eq!(response.status(), 529);
    assert_eq!(json(response).await["error"]["type"], "overloaded_error");
    let response = post(&fake, "/v1/messages", anthropic_key(KEY), body.clone()).await;
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["retry-after"], "7");
    let response = post(&fake, "/v1/messages", anthropic_key(KEY), body).await;
    assert_eq!(response.status(), 200);
}

#[tokio::test]
async fn a_cut_stream_ends_in_an_error_after_the_events_sent() {
    let fake = FakeProvider::start(KEY, script()).await;
    fake.push_fault(Fault::Cut { after: 2 });
    let body = json!({"model": "m", "stream": true, "messages": []});
    let response = post(&fake, "/v1/messages", anthropic_key(KEY), body).await;
    let mut body = response.into_body();
    let mut reader = sse::Reader::default();
    let mut seen = Vec::new();
    let ended = loop {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref() {
                    seen.extend(reader.push(data));
                }
            }
            Some(Err(error)) => break Err(error),
            None => break Ok(()),
        }
    };
    assert!(ended.is_err(), "the stream was cut");
    assert_eq!(seen.len(), 2);
    assert_eq!(fake.requests()[0].sent.len(), 2);
}

#[tokio::test]
async fn a_paused_stream_sends_its_first_event_at_once() {
    let fake = FakeProvider::start(KEY, script()).await;
    fake.push_fault(Fault::Pause {
        after: 1,
        pause: Duration::from_millis(300),
    });
    let body = json!({"model": "m", "stream": true, "messages": []});
    let started = Instant::now();
    let response = post(&fake, "/v1/messages", anthropic_key(KEY), body).await;
    let mut body = response.into_body();
    let mut reader = sse::Reader::default();
    let first = loop {
        let frame = body.frame().await.expect("frame").expect("data");
        if let Some(event) = frame
            .data_ref()
            .and_then(|d| reader.push(d).into_iter().next())
        {
            break event;
        }
    };
    assert_eq!(first.event.as_deref(), Some("message_start"));
    assert!(started.elapsed() < Duration::from_millis(250));
    while body.frame().await.is_some() {}
    assert!(started.elapsed() >= Duration::from_millis(300));
    let sent = &fake.requests()[0].sent;
    assert!(sent[1].at - sent[0].at >= Duration::from_millis(300));
}

#[tokio::test]
async fn a_hanging_provider_never_answers() {
    let fake = FakeProvider::start(KEY, script()).await;
    fake.push_fault(Fault::Hang);
    let body = json!({"model": "m", "messages": []});
    let answer = tokio::time::timeout(
        Duration::from_millis(300),
        post(&fake, "/v1/messages", anthropic_key(KEY), body),
    )
    .await;
    assert!(answer.is_err());
}
