//! What an agent attempt used and said, read from its CLI's stdout.

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::parse;
use crate::role::Executor;

/// The model name recorded when neither the CLI's output nor the role names one.
pub(crate) const UNKNOWN_MODEL: &str = "unknown";

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
    #[error("{executor} printed no result that Gatehouse recognises; {}", parse::quoted_excerpt(.excerpt))]
    NoResult {
        /// The role's executor.
        executor: Executor,
        /// The start of the output.
        excerpt: String,
    },
    /// A `command` executor's `gatehouse_usage` line does not have the documented shape.
    #[error("the last `gatehouse_usage` line is malformed ({reason}); the line: {line:?}")]
    CommandUsage {
        /// What is wrong with it.
        reason: String,
        /// The line, shortened.
        line: String,
    },
}

/// Reads usage, the failure message and the final message from the tail of a CLI's stdout.
///
/// The tail may start mid-line: lines that are not JSON are skipped. `model` is the role's
/// model, recorded for usage whose output does not name the model (Codex never does).
/// Only a Claude Code or Codex output with no recognisable result at all is an error.
pub fn parse_report(
    executor: Executor,
    model: Option<&str>,
    stdout: &[u8],
) -> Result<Report, ParseError> {
    let text = String::from_utf8_lossy(stdout);
    let model = model.unwrap_or(UNKNOWN_MODEL);
    let report = match executor {
        Executor::ClaudeCode => parse::claude::report(&text, model),
        Executor::Codex => parse::codex::report(&text, model),
        Executor::Command => return parse::command::report(&text),
    };
    report.ok_or_else(|| ParseError::NoResult {
        executor,
        excerpt: parse::excerpt(&text),
    })
}
