//! The script a test gives a fake provider: one [`Turn`] per answer of a conversation, each
//! with the usage figures the provider reports, and the [`Fault`]s it can be told to commit.

use std::time::Duration;

use serde_json::Value;

/// Token figures a turn reports, in Anthropic's terms: `input` excludes the cached tokens.
/// The OpenAI formats report `input + cache_read` as their input tokens, with `cache_read`
/// as the cached part, as OpenAI does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    /// Part of `output` spent reasoning (OpenAI formats only).
    pub reasoning: u64,
}

impl Tokens {
    /// What a script's turns report in all, each turn answered once: what a test expects
    /// metered.
    pub fn total(turns: &[Turn]) -> Self {
        turns.iter().fold(Self::default(), |sum, turn| Self {
            input: sum.input + turn.tokens.input,
            output: sum.output + turn.tokens.output,
            cache_read: sum.cache_read + turn.tokens.cache_read,
            cache_write: sum.cache_write + turn.tokens.cache_write,
            reasoning: sum.reasoning + turn.tokens.reasoning,
        })
    }
}

/// What the model answers.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    /// A final text answer.
    Text(String),
    /// A tool (function) call with its JSON input, e.g. `Write {file_path, content}`.
    Tool { name: String, input: Value },
}

/// How [`Turn::offered_tool`] marks a name to be chosen from the request's tools.
pub(crate) const OFFERED: &str = "\u{0}offered:";

/// One answer of the script.
#[derive(Clone, Debug, PartialEq)]
pub struct Turn {
    pub reply: Reply,
    pub tokens: Tokens,
}

impl Turn {
    /// A final text answer, with a small default usage.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            reply: Reply::Text(text.into()),
            tokens: Tokens {
                input: 10,
                output: 5,
                ..Tokens::default()
            },
        }
    }

    /// A call of whichever tool the request offers whose name ends with `suffix` (an MCP
    /// tool each CLI names its own way: `mcp__everything__echo`, `everything_echo`,
    /// `everything-echo`), with a small default usage. When the request offers none, the
    /// call names `suffix` itself, which the CLI will refuse.
    pub fn offered_tool(suffix: impl Into<String>, input: Value) -> Self {
        Self::tool(format!("{OFFERED}{}", suffix.into()), input)
    }

    /// A tool call, with a small default usage.
    pub fn tool(name: impl Into<String>, input: Value) -> Self {
        Self {
            reply: Reply::Tool {
                name: name.into(),
                input,
            },
            tokens: Tokens {
                input: 10,
                output: 20,
                ..Tokens::default()
            },
        }
    }

    /// The same turn reporting these figures.
    pub fn tokens(mut self, tokens: Tokens) -> Self {
        self.tokens = tokens;
        self
    }
}

/// A fault the fake commits on one request (queued with `FakeProvider::push_fault`).
#[derive(Clone, Debug, PartialEq)]
pub enum Fault {
    /// Answer this status in the provider's error shape (e.g. 500, 503, 529).
    Status(u16),
    /// Answer 429 with `retry-after: <seconds>`.
    RateLimited { retry_after: u64 },
    /// Never answer.
    Hang,
    /// Send this many events of the stream, then cut the connection.
    Cut { after: usize },
    /// Wait this long before each event of the stream.
    Slow(Duration),
    /// Send this many events, wait, then send the rest at once.
    Pause { after: usize, pause: Duration },
}
