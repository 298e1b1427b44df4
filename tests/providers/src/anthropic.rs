//! The Anthropic Messages API (`POST /v1/messages`): a turn as Anthropic streams it
//! (`message_start` … `message_stop`) or answers it as one JSON message, and its error shape.

use serde_json::{Value, json};

use crate::script::{Reply, Turn};
use crate::sse::Event;

/// Which turn a request asks for: the number of assistant messages already in it.
pub(crate) fn turn_index(body: &Value) -> usize {
    body["messages"]
        .as_array()
        .map(|messages| messages.iter().filter(|m| m["role"] == "assistant").count())
        .unwrap_or(0)
}

fn usage(turn: &Turn, output: u64) -> Value {
    json!({
        "input_tokens": turn.tokens.input,
        "cache_creation_input_tokens": turn.tokens.cache_write,
        "cache_read_input_tokens": turn.tokens.cache_read,
        "output_tokens": output,
    })
}

fn stop_reason(turn: &Turn) -> &'static str {
    match turn.reply {
        Reply::Text(_) => "end_turn",
        Reply::Tool { .. } => "tool_use",
    }
}

/// The streamed answer, event by event.
pub(crate) fn stream(turn: &Turn, model: &str, id: u64) -> Vec<Event> {
    let mut events = vec![Event::named(
        "message_start",
        &json!({"type": "message_start", "message": {
            "id": format!("msg_fake{id:08}"), "type": "message", "role": "assistant",
            "model": model, "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": usage(turn, 1),
        }}),
    )];
    let (block, deltas) = match &turn.reply {
        Reply::Text(text) => (
            json!({"type": "text", "text": ""}),
            pieces(text)
                .into_iter()
                .map(|p| json!({"type": "text_delta", "text": p}))
                .collect::<Vec<_>>(),
        ),
        Reply::Tool { name, input } => (
            json!({"type": "tool_use", "id": format!("toolu_fake{id:08}"), "name": name, "input": {}}),
            pieces(&input.to_string())
                .into_iter()
                .map(|p| json!({"type": "input_json_delta", "partial_json": p}))
                .collect(),
        ),
    };
    events.push(Event::named(
        "content_block_start",
        &json!({"type": "content_block_start", "index": 0, "content_block": block}),
    ));
    events.push(Event::named("ping", &json!({"type": "ping"})));
    for delta in deltas {
        events.push(Event::named(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        ));
    }
    events.push(Event::named(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": 0}),
    ));
    events.push(Event::named(
        "message_delta",
        &json!({"type": "message_delta",
            "delta": {"stop_reason": stop_reason(turn), "stop_sequence": null},
            "usage": {"output_tokens": turn.tokens.output}}),
    ));
    events.push(Event::named(
        "message_stop",
        &json!({"type": "message_stop"}),
    ));
    events
}

/// The answer as one JSON message (`stream` absent or false).
pub(crate) fn message(turn: &Turn, model: &str, id: u64) -> Value {
    let content = match &turn.reply {
        Reply::Text(text) => json!([{"type": "text", "text": text}]),
        Reply::Tool { name, input } => json!([{
            "type": "tool_use", "id": format!("toolu_fake{id:08}"), "name": name, "input": input,
        }]),
    };
    json!({
        "id": format!("msg_fake{id:08}"), "type": "message", "role": "assistant", "model": model,
        "content": content, "stop_reason": stop_reason(turn), "stop_sequence": null,
        "usage": usage(turn, turn.tokens.output),
    })
}

/// Anthropic's error body for a status.
pub(crate) fn error(status: u16, message: &str) -> Value {
    let kind = match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    };
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

/// Splits a text into a few pieces, as a model streams it.
pub(crate) fn pieces(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return vec![String::new()];
    }
    chars.chunks(12).map(|c| c.iter().collect()).collect()
}
