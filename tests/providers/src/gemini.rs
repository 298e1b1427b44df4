//! Google's Gemini API (`POST /v1beta/models/{model}:generateContent` and
//! `:streamGenerateContent?alt=sse`), as the Gemini CLI's SDK calls it: a turn streamed as
//! `GenerateContentResponse` chunks (text in pieces, a function call whole, the usage on the
//! last) or answered as one, and Google's error shape.

use serde_json::{Value, json};

use crate::anthropic::pieces;
use crate::script::{Reply, Turn};
use crate::sse::Event;

/// The model and the method a Gemini path names: `/v1beta/models/gemini-2.5-pro:streamGenerateContent`
/// gives `("gemini-2.5-pro", "streamGenerateContent")`.
pub(crate) fn route(path: &str) -> Option<(&str, &str)> {
    let rest = path
        .strip_prefix("/v1beta/models/")
        .or_else(|| path.strip_prefix("/v1/models/"))?;
    let (model, method) = rest.split_once(':')?;
    (!model.is_empty() && !model.contains('/')).then_some((model, method))
}

/// Which turn a request asks for: the model's turns already in its `contents`.
pub(crate) fn turn_index(body: &Value) -> usize {
    body["contents"]
        .as_array()
        .map(|contents| contents.iter().filter(|c| c["role"] == "model").count())
        .unwrap_or(0)
}

/// Gemini's usage: the prompt count includes the cached part, and thinking is counted
/// apart from the answer.
fn usage(turn: &Turn) -> Value {
    let t = turn.tokens;
    let prompt = t.input + t.cache_read;
    let candidates = t.output.saturating_sub(t.reasoning);
    let mut usage = json!({
        "promptTokenCount": prompt,
        "candidatesTokenCount": candidates,
        "totalTokenCount": prompt + t.output,
    });
    if t.cache_read > 0 {
        usage["cachedContentTokenCount"] = json!(t.cache_read);
    }
    if t.reasoning > 0 {
        usage["thoughtsTokenCount"] = json!(t.reasoning);
    }
    usage
}

fn chunk(parts: Value, finish: bool, usage: Value, model: &str, id: u64) -> Value {
    let mut candidate = json!({"content": {"parts": parts, "role": "model"}, "index": 0});
    if finish {
        candidate["finishReason"] = json!("STOP");
    }
    json!({
        "candidates": [candidate],
        "usageMetadata": usage,
        "modelVersion": model,
        "responseId": format!("fake{id:08}"),
    })
}

fn call(name: &str, input: &Value) -> Value {
    json!([{"functionCall": {"name": name, "args": input}}])
}

/// The streamed answer: text in pieces (each chunk with the prompt count so far, as Gemini
/// sends it), the last chunk with the finish reason and the whole usage.
pub(crate) fn stream(turn: &Turn, model: &str, id: u64) -> Vec<Event> {
    let partial = json!({"promptTokenCount": turn.tokens.input + turn.tokens.cache_read});
    match &turn.reply {
        Reply::Text(text) => {
            let pieces = pieces(text);
            let last = pieces.len() - 1;
            pieces
                .into_iter()
                .enumerate()
                .map(|(n, piece)| {
                    let done = n == last;
                    let usage = if done { usage(turn) } else { partial.clone() };
                    Event::data(chunk(json!([{"text": piece}]), done, usage, model, id).to_string())
                })
                .collect()
        }
        Reply::Tool { name, input } => {
            vec![Event::data(
                chunk(call(name, input), true, usage(turn), model, id).to_string(),
            )]
        }
    }
}

/// The answer as one `GenerateContentResponse`.
pub(crate) fn object(turn: &Turn, model: &str, id: u64) -> Value {
    let parts = match &turn.reply {
        Reply::Text(text) => json!([{"text": text}]),
        Reply::Tool { name, input } => call(name, input),
    };
    chunk(parts, true, usage(turn), model, id)
}

/// Google's error shape.
pub(crate) fn error(status: u16, message: &str) -> Value {
    let code = match status {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        429 => "RESOURCE_EXHAUSTED",
        503 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        s if s >= 500 => "INTERNAL",
        _ => "FAILED_PRECONDITION",
    };
    json!({"error": {"code": status, "message": message, "status": code}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_name_the_model_and_the_method() {
        assert_eq!(
            route("/v1beta/models/gemini-2.5-pro:streamGenerateContent"),
            Some(("gemini-2.5-pro", "streamGenerateContent"))
        );
        assert_eq!(route("/v1beta/models/x/y:generateContent"), None);
        assert_eq!(route("/v1/messages"), None);
    }
}
