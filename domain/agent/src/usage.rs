//! What an agent attempt used and said, read from its CLI's stdout.

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::executor::Executor;

/// Tokens one model used in an attempt, split the way prices are: each token is counted in
/// exactly one of the four fields, so [`crate::cost`] prices it once.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ModelUsage {
    /// As the CLI names it (Claude Code reports dated ids such as
    /// `claude-sonnet-4-5-20250929`), or the role's model when the CLI names none.
    pub model: String,
    /// Input tokens neither read from nor written to a prompt cache.
    pub input_tokens: u64,
    /// Output tokens, reasoning included.
    pub output_tokens: u64,
    /// Input tokens read from a prompt cache.
    pub cache_read_tokens: u64,
    /// Input tokens written to a prompt cache.
    pub cache_write_tokens: u64,
}

impl ModelUsage {
    /// Whether any token was counted; a CLI that failed before its first request reports
    /// zeros, which are not usage.
    pub(crate) fn has_tokens(&self) -> bool {
        [
            self.input_tokens,
            self.output_tokens,
            self.cache_read_tokens,
            self.cache_write_tokens,
        ]
        .iter()
        .any(|&n| n > 0)
    }
}

/// What the runner learns from an attempt's stdout besides its exit status.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Report {
    /// One entry per model the CLI reports (Claude Code may use several in one attempt);
    /// empty when the output reports none.
    pub usage: Vec<ModelUsage>,
    /// What the CLI itself says the attempt cost (Claude Code's `total_cost_usd`). Kept for
    /// reference; Gatehouse bills from its own price table.
    pub reported_cost_usd: Option<f64>,
    /// The CLI reported a failed result: its message.
    pub failed: Option<String>,
    /// The agent's final message.
    pub summary: Option<String>,
}

/// Why an attempt's stdout could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ParseError {
    /// A Claude Code or Codex run printed nothing that reads as its result or events,
    /// typically because the CLI failed before it started (not installed, bad flag).
    #[error("{executor} printed no result that Gatehouse recognises; {}", quoted_excerpt(.excerpt))]
    NoResult {
        executor: Executor,
        /// The start of the output.
        excerpt: String,
    },
    /// A `command` executor's `gatehouse_usage` line does not have the documented shape.
    #[error("the last `gatehouse_usage` line is malformed ({reason}); the line: {line:?}")]
    CommandUsage {
        reason: String,
        /// The line, shortened.
        line: String,
    },
}

/// How an error message shows an excerpt.
fn quoted_excerpt(excerpt: &str) -> String {
    if excerpt.trim().is_empty() {
        "its stdout was empty (did it start at all?)".to_owned()
    } else {
        format!("its stdout begins: {excerpt:?}")
    }
}
