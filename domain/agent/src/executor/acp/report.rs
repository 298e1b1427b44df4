//! The `gatehouse-acp` shim's output (its schema: adapters/acp/src/output.rs): usage, the
//! failure and the reply.
//!
//! ```json
//! {"type":"session","sessionId":"ses_…","agent":{"name":"OpenCode","version":"1.18.33"},"protocolVersion":1,"loaded":false,"replayed":0}
//! {"type":"prompt"}
//! {"type":"update","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Done."}}}
//! {"type":"result","stopReason":"end_turn","usage":{"inputTokens":10,"outputTokens":5,"totalTokens":15},"meta":{}}
//! ```
//!
//! The run ends in a `result` or an `error` line. A stop reason other than `end_turn` is a
//! failure (`cancelled`, `max_tokens`, `max_turn_requests`, `refusal`); an `error` line's
//! message is one.
//!
//! Usage is what the agent says, which varies (survey finding 4): the prompt's `usage`
//! (`inputTokens`, `outputTokens`, `cachedReadTokens`, `cachedWriteTokens`; the turn's sum
//! for Claude and Copilot, the last model call only for OpenCode, Kilo and goose, the whole
//! session for Vibe), Gemini's `_meta.quota.model_usage` (per model) or nothing (Qwen,
//! codex-acp). The gateway meters the truth; this is what the agent showed. Usage names no
//! model except Gemini's, so it goes under the role's. Whether `inputTokens` holds the
//! cached tokens is told by `totalTokens`: when the total is input + output (+ thought)
//! without the cache counts, the cache is inside the input and is taken out of it, so each
//! token falls under one price.
//!
//! The reply is the agent's last message: the text of the `agent_message_chunk` updates
//! after the prompt was sent and after the last tool call or thought (a new `messageId`
//! starts a new message too).

use serde_json::Value;

use crate::parse::{Object, count, objects, string};
use crate::usage::{ModelUsage, Report};

/// How much of a reply is kept, in bytes: its start, then `…`.
const MAX_REPLY_BYTES: usize = 256 * 1024;

/// The report of the shim's output, or `None` when it has no `result` or `error` line.
pub(crate) fn report(text: &str, model: &str) -> Option<Report> {
    let mut reply = Reply::default();
    let mut ending = None;
    for line in objects(text) {
        match string(&line, "type") {
            Some("prompt") => reply = Reply::default(),
            Some("update") => {
                if let Some(update) = line.get("update").and_then(Value::as_object) {
                    reply.update(update);
                }
            }
            Some("permission") => reply.interrupt(),
            Some("result" | "error") => ending = Some(line),
            _ => {}
        }
    }
    let ending = ending?;
    let (usage, failed) = ended(&ending, model);
    Some(Report {
        usage,
        reported_cost_usd: None,
        failed,
        summary: reply.take(),
    })
}

/// The usage and failure of a `result` or `error` line.
fn ended(line: &Object, model: &str) -> (Vec<ModelUsage>, Option<String>) {
    if string(line, "type") == Some("error") {
        let message = string(line, "message").unwrap_or("gatehouse-acp failed");
        return (Vec::new(), Some(message.to_owned()));
    }
    let failed = match string(line, "stopReason") {
        Some("end_turn") => None,
        Some("cancelled") => Some("the agent's prompt was cancelled".to_owned()),
        Some("max_tokens") => {
            Some("the agent stopped at its output token limit (stop reason max_tokens)".to_owned())
        }
        Some("max_turn_requests") => Some(
            "the agent stopped at its limit of model requests in one turn (stop reason \
             max_turn_requests)"
                .to_owned(),
        ),
        Some("refusal") => Some("the agent refused to go on (stop reason refusal)".to_owned()),
        Some(other) => Some(format!(
            "the agent stopped with reason {:?}",
            other.chars().take(60).collect::<String>()
        )),
        None => Some("the agent's prompt returned without a stop reason".to_owned()),
    };
    (usage(line, model), failed)
}

/// The prompt's usage, else Gemini's per-model quota, else none.
fn usage(line: &Object, model: &str) -> Vec<ModelUsage> {
    if let Some(usage) = line.get("usage").and_then(Value::as_object) {
        let usage = acp_usage(usage, model);
        return if usage.has_tokens() {
            vec![usage]
        } else {
            Vec::new()
        };
    }
    let quota = line
        .get("meta")
        .and_then(|meta| meta.get("quota"))
        .and_then(Value::as_object);
    let Some(quota) = quota else {
        return Vec::new();
    };
    let per_model: Vec<ModelUsage> = quota
        .get("model_usage")
        .and_then(Value::as_array)
        .map(|models| {
            models
                .iter()
                .filter_map(|entry| {
                    let entry = entry.as_object()?;
                    let tokens = entry.get("token_count")?.as_object()?;
                    Some(gemini_usage(
                        tokens,
                        string(entry, "model").unwrap_or(model),
                    ))
                })
                .filter(ModelUsage::has_tokens)
                .collect()
        })
        .unwrap_or_default();
    if !per_model.is_empty() {
        return per_model;
    }
    quota
        .get("token_count")
        .and_then(Value::as_object)
        .map(|tokens| gemini_usage(tokens, model))
        .filter(ModelUsage::has_tokens)
        .into_iter()
        .collect()
}

/// ACP's `usage` object.
fn acp_usage(usage: &Object, model: &str) -> ModelUsage {
    let input = count(usage, "inputTokens");
    let output = count(usage, "outputTokens");
    let thought = count(usage, "thoughtTokens");
    let read = count(usage, "cachedReadTokens");
    let written = count(usage, "cachedWriteTokens");
    let total = usage.get("totalTokens").and_then(Value::as_u64);
    let cache_inside_input = (read > 0 || written > 0)
        && total == Some(input.saturating_add(output).saturating_add(thought));
    let input = if cache_inside_input {
        input.saturating_sub(read).saturating_sub(written)
    } else {
        input
    };
    ModelUsage {
        model: model.to_owned(),
        input_tokens: input,
        output_tokens: output.saturating_add(thought),
        cache_read_tokens: read,
        cache_write_tokens: written,
    }
}

/// Gemini's `token_count` (`input_tokens` holds the cached ones, as in its API).
fn gemini_usage(tokens: &Object, model: &str) -> ModelUsage {
    let cached = count(tokens, "cached_tokens").max(count(tokens, "cached_content_tokens"));
    ModelUsage {
        model: model.chars().take(200).collect(),
        input_tokens: count(tokens, "input_tokens").saturating_sub(cached),
        output_tokens: count(tokens, "output_tokens"),
        cache_read_tokens: cached,
        cache_write_tokens: 0,
    }
}

/// The agent's last message so far.
#[derive(Debug, Default)]
pub(crate) struct Reply {
    text: String,
    message_id: Option<String>,
    /// Something other than the message came since its last chunk: the next chunk starts
    /// a new message.
    closed: bool,
    cut: bool,
}

impl Reply {
    /// One `session/update`'s update.
    pub(crate) fn update(&mut self, update: &Object) {
        match string(update, "sessionUpdate") {
            Some("agent_message_chunk") => self.chunk(update),
            Some("tool_call" | "tool_call_update" | "agent_thought_chunk" | "plan") => {
                self.interrupt();
            }
            _ => {}
        }
    }

    /// A tool call or a permission request came between messages.
    pub(crate) fn interrupt(&mut self) {
        self.closed = true;
    }

    fn chunk(&mut self, update: &Object) {
        let Some(content) = update.get("content").and_then(Value::as_object) else {
            return;
        };
        // Not `string`, which trims: chunks split a message anywhere, spaces included.
        let text = content.get("text").and_then(Value::as_str);
        let Some(text) = text.filter(|_| string(content, "type") == Some("text")) else {
            return;
        };
        let id = string(update, "messageId");
        if self.closed || (id.is_some() && id != self.message_id.as_deref()) {
            self.text.clear();
            self.cut = false;
            self.closed = false;
        }
        self.message_id = id.map(str::to_owned);
        if self.cut {
            return;
        }
        let room = MAX_REPLY_BYTES.saturating_sub(self.text.len());
        if text.len() <= room {
            self.text.push_str(text);
        } else {
            let mut end = room;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            self.text.push_str(&text[..end]);
            self.cut = true;
        }
    }

    /// The message, `None` when there was none.
    pub(crate) fn take(self) -> Option<String> {
        let text = self.text.trim();
        match (text.is_empty(), self.cut) {
            (true, _) => None,
            (false, false) => Some(text.to_owned()),
            (false, true) => Some(format!("{text}…")),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{Object, Reply, acp_usage};
    use crate::usage::ModelUsage;

    fn object(value: serde_json::Value) -> Object {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn the_cache_comes_out_of_the_input_only_when_the_total_says_it_is_inside() {
        let usage = |value| acp_usage(&object(value), "m");
        let expected = |input, read| ModelUsage {
            model: "m".to_owned(),
            input_tokens: input,
            output_tokens: 5,
            cache_read_tokens: read,
            cache_write_tokens: 0,
        };
        // Apart: the total counts the cache on top of the input.
        assert_eq!(
            usage(
                json!({"inputTokens": 10, "outputTokens": 5, "cachedReadTokens": 90, "totalTokens": 105})
            ),
            expected(10, 90)
        );
        // Inside: the total is input + output.
        assert_eq!(
            usage(
                json!({"inputTokens": 100, "outputTokens": 5, "cachedReadTokens": 90, "totalTokens": 105})
            ),
            expected(10, 90)
        );
        assert_eq!(
            usage(json!({"inputTokens": "many", "outputTokens": 5})),
            expected(0, 0)
        );
    }

    #[test]
    fn the_reply_is_the_last_message() {
        let mut reply = Reply::default();
        let chunk = |id: Option<&str>, text: &str| {
            object(
                json!({"sessionUpdate": "agent_message_chunk", "messageId": id,
                "content": {"type": "text", "text": text}}),
            )
        };
        reply.update(&chunk(None, "Let me look."));
        reply.update(&object(
            json!({"sessionUpdate": "tool_call", "toolCallId": "1"}),
        ));
        reply.update(&chunk(Some("a"), "Done: "));
        reply.update(&chunk(Some("a"), "all good."));
        reply.update(&object(json!({"sessionUpdate": "usage_update", "used": 1})));
        assert_eq!(reply.take().as_deref(), Some("Done: all good."));

        let mut reply = Reply::default();
        reply.update(&chunk(Some("a"), "First."));
        reply.update(&chunk(Some("b"), "Second."));
        reply.update(&object(json!({"sessionUpdate": "agent_message_chunk",
            "content": {"type": "image", "data": "…"}})));
        assert_eq!(reply.take().as_deref(), Some("Second."));
    }

    #[test]
    fn a_huge_reply_keeps_its_start() {
        let mut reply = Reply::default();
        let chunk = object(json!({"sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "é".repeat(100_000)}}));
        for _ in 0..3 {
            reply.update(&chunk);
        }
        let text = reply.take().unwrap_or_default();
        assert!(text.ends_with('…'));
        assert!(text.len() <= super::MAX_REPLY_BYTES + '…'.len_utf8());
    }
}
