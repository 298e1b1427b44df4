//! OpenAI Chat Completions (`POST /v1/chat/completions`), as openai-compatible providers
//! serve it: `chat.completion.chunk` events, a final usage chunk when
//! `stream_options.include_usage` is set, `[DONE]`; or one `chat.completion` object.

use serde_json::{Value, json};

use crate::anthropic::pieces;
use crate::script::{Reply, Turn};
use crate::sse::Event;

/// Which turn a request asks for: the assistant messages already in it.
pub(crate) fn turn_index(body: &Value) -> usize {
    body["messages"]
        .as_array()
        .map(|messages| messages.iter().filter(|m| m["role"] == "assistant").count())
        .unwrap_or(0)
}

fn usage(turn: &Turn) -> Value {
    let t = turn.tokens;
    json!({
        "prompt_tokens": t.input + t.cache_read,
        "completion_tokens": t.output,
        "total_tokens": t.input + t.cache_read + t.output,
        "prompt_tokens_details": {"cached_tokens": t.cache_read},
        "completion_tokens_details": {"reasoning_tokens": t.reasoning},
    })
}

fn finish_reason(turn: &Turn) -> &'static str {
    match turn.reply {
        Reply::Text(_) => "stop",
        Reply::Tool { .. } => "tool_calls",
    }
}

/// The streamed answer, chunk by chunk, `[DONE]` last.
pub(crate) fn stream(turn: &Turn, model: &str, id: u64, include_usage: bool) -> Vec<Event> {
    let chunk = |choices: Value, usage: Value| {
        let mut chunk = json!({
            "id": format!("chatcmpl-fake{id:08}"), "object": "chat.completion.chunk",
            "created": 1_700_000_000u64, "model": model, "choices": choices,
        });
        if include_usage {
            chunk["usage"] = usage;
        }
        Event::data(chunk.to_string())
    };
    let delta = |delta: Value, finish: Value| json!([{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]);
    let mut events = vec![chunk(
        delta(json!({"role": "assistant", "content": ""}), Value::Null),
        Value::Null,
    )];
    match &turn.reply {
        Reply::Text(text) => {
            for piece in pieces(text) {
                events.push(chunk(
                    delta(json!({"content": piece}), Value::Null),
                    Value::Null,
                ));
            }
        }
        Reply::Tool { name, input } => {
            events.push(chunk(
                delta(
                    json!({"tool_calls": [{"index": 0, "id": format!("call_fake{id:08}"), "type": "function",
                        "function": {"name": name, "arguments": ""}}]}),
                    Value::Null,
                ),
                Value::Null,
            ));
            for piece in pieces(&input.to_string()) {
                events.push(chunk(
                    delta(
                        json!({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}),
                        Value::Null,
                    ),
                    Value::Null,
                ));
            }
        }
    }
    events.push(chunk(
        delta(json!({}), json!(finish_reason(turn))),
        Value::Null,
    ));
    if include_usage {
        events.push(chunk(json!([]), usage(turn)));
    }
    events.push(Event::data("[DONE]"));
    events
}

/// The answer as one `chat.completion` object.
pub(crate) fn object(turn: &Turn, model: &str, id: u64) -> Value {
    let message = match &turn.reply {
        Reply::Text(text) => json!({"role": "assistant", "content": text}),
        Reply::Tool { name, input } => json!({"role": "assistant", "content": null,
            "tool_calls": [{"id": format!("call_fake{id:08}"), "type": "function",
                "function": {"name": name, "arguments": input.to_string()}}]}),
    };
    json!({
        "id": format!("chatcmpl-fake{id:08}"), "object": "chat.completion",
        "created": 1_700_000_000u64, "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish_reason(turn)}],
        "usage": usage(turn),
    })
}
