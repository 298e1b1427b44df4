//! The OpenAI Responses API (`POST /v1/responses`): a turn as OpenAI streams it
//! (`response.created` … `response.completed`) or answers it as one response object, and
//! OpenAI's error shape (shared with Chat Completions).

use serde_json::{Value, json};

use crate::anthropic::pieces;
use crate::script::{Reply, Turn};
use crate::sse::Event;

/// Which turn a request asks for: the assistant messages and function calls already in its
/// input, or one past the turn of `previous_response_id` (given by `previous`).
pub(crate) fn turn_index(body: &Value, previous: impl Fn(&str) -> Option<usize>) -> usize {
    if let Some(index) = body["previous_response_id"].as_str().and_then(previous) {
        return index + 1;
    }
    body["input"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter(|i| i["role"] == "assistant" || i["type"] == "function_call")
                .count()
        })
        .unwrap_or(0)
}

pub(crate) fn response_id(id: u64) -> String {
    format!("resp_fake{id:08}")
}

fn usage(turn: &Turn) -> Value {
    let t = turn.tokens;
    json!({
        "input_tokens": t.input + t.cache_read,
        "input_tokens_details": {"cached_tokens": t.cache_read},
        "output_tokens": t.output,
        "output_tokens_details": {"reasoning_tokens": t.reasoning},
        "total_tokens": t.input + t.cache_read + t.output,
    })
}

fn item(turn: &Turn, id: u64, done: bool) -> Value {
    let status = if done { "completed" } else { "in_progress" };
    match &turn.reply {
        Reply::Text(text) => json!({
            "id": format!("msg_fake{id:08}"), "type": "message", "status": status, "role": "assistant",
            "content": if done { json!([{"type": "output_text", "annotations": [], "text": text}]) } else { json!([]) },
        }),
        Reply::Tool { name, input } => json!({
            "id": format!("fc_fake{id:08}"), "type": "function_call", "status": status,
            "call_id": format!("call_fake{id:08}"), "name": name,
            "arguments": if done { input.to_string() } else { String::new() },
        }),
    }
}

fn response(turn: &Turn, model: &str, id: u64, done: bool) -> Value {
    json!({
        "id": response_id(id), "object": "response", "created_at": 1_700_000_000u64,
        "status": if done { "completed" } else { "in_progress" },
        "model": model,
        "output": if done { json!([item(turn, id, true)]) } else { json!([]) },
        "usage": if done { usage(turn) } else { Value::Null },
    })
}

/// The streamed answer, event by event, numbered as OpenAI numbers them.
pub(crate) fn stream(turn: &Turn, model: &str, id: u64) -> Vec<Event> {
    let mut bodies: Vec<(&str, Value)> = vec![
        (
            "response.created",
            json!({"response": response(turn, model, id, false)}),
        ),
        (
            "response.in_progress",
            json!({"response": response(turn, model, id, false)}),
        ),
        (
            "response.output_item.added",
            json!({"output_index": 0, "item": item(turn, id, false)}),
        ),
    ];
    let item_id = item(turn, id, false)["id"].clone();
    match &turn.reply {
        Reply::Text(text) => {
            let part = |text: &str| json!({"type": "output_text", "annotations": [], "text": text});
            bodies.push((
                "response.content_part.added",
                json!({"item_id": item_id, "output_index": 0, "content_index": 0, "part": part("")}),
            ));
            for piece in pieces(text) {
                bodies.push((
                    "response.output_text.delta",
                    json!({"item_id": item_id, "output_index": 0, "content_index": 0, "delta": piece}),
                ));
            }
            bodies.push((
                "response.output_text.done",
                json!({"item_id": item_id, "output_index": 0, "content_index": 0, "text": text}),
            ));
            bodies.push((
                "response.content_part.done",
                json!({"item_id": item_id, "output_index": 0, "content_index": 0, "part": part(text)}),
            ));
        }
        Reply::Tool { input, .. } => {
            let arguments = input.to_string();
            for piece in pieces(&arguments) {
                bodies.push((
                    "response.function_call_arguments.delta",
                    json!({"item_id": item_id, "output_index": 0, "delta": piece}),
                ));
            }
            bodies.push((
                "response.function_call_arguments.done",
                json!({"item_id": item_id, "output_index": 0, "arguments": arguments}),
            ));
        }
    }
    bodies.push((
        "response.output_item.done",
        json!({"output_index": 0, "item": item(turn, id, true)}),
    ));
    bodies.push((
        "response.completed",
        json!({"response": response(turn, model, id, true)}),
    ));
    bodies
        .into_iter()
        .enumerate()
        .map(|(n, (name, mut body))| {
            body["type"] = json!(name);
            body["sequence_number"] = json!(n);
            Event::named(name, &body)
        })
        .collect()
}

/// The answer as one response object (`stream` absent or false).
pub(crate) fn object(turn: &Turn, model: &str, id: u64) -> Value {
    response(turn, model, id, true)
}

/// OpenAI's error body for a status.
pub(crate) fn error(status: u16, message: &str) -> Value {
    let (kind, code) = match status {
        401 => ("invalid_request_error", json!("invalid_api_key")),
        429 => ("requests", json!("rate_limit_exceeded")),
        s if s >= 500 => ("server_error", Value::Null),
        _ => ("invalid_request_error", Value::Null),
    };
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}
