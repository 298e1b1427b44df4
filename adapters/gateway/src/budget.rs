//! The budget hook: the runner decides what a request may cost, the gateway asks it.

use crate::usage::Usage;

/// A spending limit the gateway consults around each request of a grant. Prices and
/// dollars are the runner's business; the gateway only asks and reports tokens.
///
/// When [`Budget::admit`] refuses, the CLI gets **403** in the provider's error shape
/// (`permission_error` for Anthropic, `insufficient_quota` for OpenAI) carrying the
/// budget's message. 403 because the CLIs (Claude Code, Codex and the SDKs under them)
/// retry 429 and 5xx, which would hammer a budget that will not refill in seconds, but show
/// a 403 at once and stop, with its message.
pub trait Budget: Send + Sync {
    /// Whether one more request may go; `Err` carries the message the CLI shows, e.g.
    /// "budget of project api reached: $20.00 today".
    fn admit(&self) -> Result<(), String>;
    /// What a request cost, once it ended (also when cut off: what was seen).
    fn charge(&self, usage: &Usage);
}
