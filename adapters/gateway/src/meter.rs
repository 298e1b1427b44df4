//! Reading token usage from providers' answers as they pass, without holding them back:
//! server-sent events line by line (Anthropic `message_start` and `message_delta`, OpenAI
//! Responses `response.completed`, Chat Completions' final usage chunk, Gemini's
//! `usageMetadata` on every chunk), and non-streamed JSON from a bounded copy read at the
//! end.

use serde_json::Value;

use crate::usage::Usage;

/// The longest SSE line kept while waiting for its end; a longer one (a huge final
/// response object) is skipped rather than held.
const MAX_LINE: usize = 16 << 20;

enum Mode {
    /// `text/event-stream`: the unfinished line so far, and whether it overflowed.
    Events { line: Vec<u8>, overflowed: bool },
    /// JSON: a copy of the body, up to a bound; `None` once past it.
    Json { copy: Option<Vec<u8>>, limit: usize },
    /// Anything else passes unread.
    Opaque,
}

/// The usage seen so far in one answer.
pub(crate) struct Meter {
    mode: Mode,
    usage: Usage,
}

impl Meter {
    /// A meter for an answer of this content type; `model` is the one the request asked for.
    pub(crate) fn new(content_type: &str, model: Option<String>, json_limit: usize) -> Self {
        let mode = if content_type.starts_with("text/event-stream") {
            Mode::Events {
                line: Vec::new(),
                overflowed: false,
            }
        } else if content_type.starts_with("application/json") {
            Mode::Json {
                copy: Some(Vec::new()),
                limit: json_limit,
            }
        } else {
            Mode::Opaque
        };
        Self {
            mode,
            usage: Usage {
                model,
                ..Usage::default()
            },
        }
    }

    /// Reads a chunk of the answer as it passes.
    pub(crate) fn feed(&mut self, chunk: &[u8]) {
        match &mut self.mode {
            Mode::Events { line, overflowed } => {
                let mut rest = chunk;
                while let Some(end) = rest.iter().position(|b| *b == b'\n') {
                    if !*overflowed {
                        line.extend_from_slice(&rest[..end]);
                        read_line(line, &mut self.usage);
                    }
                    line.clear();
                    *overflowed = false;
                    rest = &rest[end + 1..];
                }
                if !*overflowed {
                    line.extend_from_slice(rest);
                    if line.len() > MAX_LINE {
                        line.clear();
                        *overflowed = true;
                    }
                }
            }
            Mode::Json { copy, limit } => {
                if let Some(bytes) = copy {
                    if bytes.len() + chunk.len() > *limit {
                        *copy = None;
                    } else {
                        bytes.extend_from_slice(chunk);
                    }
                }
            }
            Mode::Opaque => {}
        }
    }

    /// The usage of the whole answer, or of what was seen of it.
    pub(crate) fn finish(mut self) -> Usage {
        match &mut self.mode {
            Mode::Events { line, overflowed } if !*overflowed => {
                read_line(line, &mut self.usage);
            }
            Mode::Json {
                copy: Some(bytes), ..
            } => {
                if let Ok(value) = serde_json::from_slice::<Value>(bytes) {
                    read_object(&value, &mut self.usage);
                }
            }
            _ => {}
        }
        self.usage
    }
}

/// Reads one SSE line: only `data:` lines that mention usage are parsed.
fn read_line(line: &[u8], usage: &mut Usage) {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let Some(data) = line.strip_prefix(b"data:") else {
        return;
    };
    if !contains(data, b"usage") {
        return;
    }
    if let Ok(event) = serde_json::from_slice::<Value>(data) {
        read_event(&event, usage);
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn set(target: &mut u64, value: &Value) {
    if let Some(n) = value.as_u64() {
        *target = n;
    }
}

fn set_model(usage: &mut Usage, value: &Value) {
    if let Some(model) = value.as_str() {
        usage.model = Some(model.to_owned());
    }
}

/// Anthropic's usage object: input excludes the cache figures.
fn read_anthropic(u: &Value, usage: &mut Usage) {
    set(&mut usage.input, &u["input_tokens"]);
    set(&mut usage.output, &u["output_tokens"]);
    set(&mut usage.cache_read, &u["cache_read_input_tokens"]);
    set(&mut usage.cache_write, &u["cache_creation_input_tokens"]);
}

/// OpenAI's usage objects, whose input includes the cached part.
fn read_openai(u: &Value, input: &str, output: &str, details: &str, usage: &mut Usage) {
    let Some(total_input) = u[input].as_u64() else {
        return;
    };
    let cached = u[details]["cached_tokens"].as_u64().unwrap_or(0);
    usage.input = total_input.saturating_sub(cached);
    usage.cache_read = cached;
    set(&mut usage.output, &u[output]);
}

/// Reads one streamed event.
fn read_event(event: &Value, usage: &mut Usage) {
    match event["type"].as_str() {
        Some("message_start") => {
            set_model(usage, &event["message"]["model"]);
            read_anthropic(&event["message"]["usage"], usage);
        }
        // Cumulative figures: output always, the others in newer API versions.
        Some("message_delta") => read_anthropic(&event["usage"], usage),
        Some("response.completed" | "response.incomplete" | "response.failed") => {
            set_model(usage, &event["response"]["model"]);
            read_responses(&event["response"]["usage"], usage);
        }
        _ if event["object"] == "chat.completion.chunk" => {
            set_model(usage, &event["model"]);
            read_chat(&event["usage"], usage);
        }
        _ if event["usageMetadata"].is_object() => read_gemini(event, usage),
        _ => {}
    }
}

/// A Gemini `GenerateContentResponse`: each streamed chunk carries the figures so far, so
/// the last one seen stands. The prompt count includes the cached part; thinking is
/// billed as output.
fn read_gemini(response: &Value, usage: &mut Usage) {
    set_model(usage, &response["modelVersion"]);
    let u = &response["usageMetadata"];
    let count = |name: &str| u[name].as_u64().unwrap_or(0);
    let cached = count("cachedContentTokenCount");
    let prompt = count("promptTokenCount") + count("toolUsePromptTokenCount");
    usage.input = prompt.saturating_sub(cached);
    usage.cache_read = cached;
    usage.output = count("candidatesTokenCount") + count("thoughtsTokenCount");
}

fn read_responses(u: &Value, usage: &mut Usage) {
    read_openai(
        u,
        "input_tokens",
        "output_tokens",
        "input_tokens_details",
        usage,
    );
}

fn read_chat(u: &Value, usage: &mut Usage) {
    read_openai(
        u,
        "prompt_tokens",
        "completion_tokens",
        "prompt_tokens_details",
        usage,
    );
}

/// Reads a whole non-streamed answer (Gemini's stream without `alt=sse` is an array of
/// chunks: the last one's figures stand).
fn read_object(object: &Value, usage: &mut Usage) {
    if let Some(chunks) = object.as_array() {
        for chunk in chunks {
            read_object(chunk, usage);
        }
    } else if object["usageMetadata"].is_object() {
        read_gemini(object, usage);
    } else if object["type"] == "message" {
        set_model(usage, &object["model"]);
        read_anthropic(&object["usage"], usage);
    } else if object["object"] == "response" {
        set_model(usage, &object["model"]);
        read_responses(&object["usage"], usage);
    } else if object["object"] == "chat.completion" {
        set_model(usage, &object["model"]);
        read_chat(&object["usage"], usage);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meter_events(chunks: &[&str]) -> Usage {
        let mut meter = Meter::new("text/event-stream", Some("asked".to_owned()), 1024);
        for chunk in chunks {
            meter.feed(chunk.as_bytes());
        }
        meter.finish()
    }

    #[test]
    fn anthropic_events_split_anywhere_give_their_figures() {
        let stream = concat!(
            "event: message_start\n",
            "data: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-x\",\"usage\":",
            "{\"input_tokens\":25,\"cache_creation_input_tokens\":7,\"cache_read_input_tokens\":3,\"output_tokens\":1}}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"text\":\"usage\"}}\n\n",
            "event: message_delta\n",
            "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":15}}\n\n",
        );
        for split in [1, 7, 40, 100, stream.len() - 1] {
            let usage = meter_events(&[&stream[..split], &stream[split..]]);
            assert_eq!(
                usage,
                Usage {
                    model: Some("claude-x".to_owned()),
                    input: 25,
                    output: 15,
                    cache_read: 3,
                    cache_write: 7,
                },
                "split at {split}"
            );
        }
    }

    #[test]
    fn openai_input_excludes_the_cached_part() {
        let usage = meter_events(&[
            "data: {\"type\":\"response.completed\",\"response\":{\"model\":\"gpt-x\",\"usage\":",
            "{\"input_tokens\":130,\"input_tokens_details\":{\"cached_tokens\":30},\"output_tokens\":20}}}\r\n\r\n",
        ]);
        assert_eq!((usage.input, usage.cache_read, usage.output), (100, 30, 20));
        let mut meter = Meter::new("application/json", None, 1024);
        meter.feed(br#"{"object":"chat.completion","model":"m","usage":{"prompt_tokens":9,"completion_tokens":4}}"#);
        let usage = meter.finish();
        assert_eq!((usage.input, usage.output), (9, 4));
        assert_eq!(usage.model.as_deref(), Some("m"));
    }

    #[test]
    fn gemini_chunks_carry_figures_so_far_and_the_last_stands() {
        let usage = meter_events(&[
            "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hel\"}]}}],\"usageMetadata\":{\"promptTokenCount\":130},\"modelVersion\":\"gemini-x\"}\r\n\r\n",
            "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"lo\"}]},\"finishReason\":\"STOP\"}],",
            "\"usageMetadata\":{\"promptTokenCount\":130,\"cachedContentTokenCount\":30,\"candidatesTokenCount\":15,\"thoughtsTokenCount\":5},\"modelVersion\":\"gemini-x\"}\r\n\r\n",
        ]);
        assert_eq!((usage.input, usage.cache_read, usage.output), (100, 30, 20));
        assert_eq!(usage.model.as_deref(), Some("gemini-x"));
        let mut meter = Meter::new("application/json", None, 1024);
        meter.feed(br#"[{"usageMetadata":{"promptTokenCount":3}},{"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":4}}]"#);
        let usage = meter.finish();
        assert_eq!((usage.input, usage.output), (9, 4));
    }

    #[test]
    fn a_json_body_past_the_bound_is_not_read() {
        let mut meter = Meter::new("application/json", None, 10);
        meter.feed(br#"{"type":"message","usage":{"input_tokens":9}}"#);
        assert_eq!(meter.finish().input, 0);
    }
}
