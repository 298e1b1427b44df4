//! aider's stdout (`--no-pretty --no-stream`), plain lines as a person would read them:
//!
//! ~~~text
//! Aider v0.86.2
//! Model: openai/fake-model with whole edit format
//! Git repo: none
//! Repo-map: disabled
//!
//! hello.txt
//! ```
//! hello from the fake provider
//! ```
//!
//! Tokens: 10 sent, 5 received. Cost: $0.00011 message, $0.00011 session.
//!
//! hello.txt
//! Applied edit to hello.txt
//! ~~~
//!
//! - Each model answer is printed whole, then its `Tokens:` line. The reply is the text
//!   between the banner (or the previous `Tokens:` line) and the last `Tokens:` line.
//! - `Tokens: N sent[, W cache write][, H cache hit], M received.` counts one answer (`2.3k`,
//!   `12k`: aider rounds to thousands). "sent" includes the cache's tokens, which are taken
//!   out of the input. The lines are summed: aider asks again when an edit did not apply.
//!   Usage is the role's model's, or else the model of the `Model:` banner line.
//! - `Applied edit to <file>` is a tool call `edit` on that file (no duration: aider applies
//!   edits at once, after the answer).
//! - A failed model request prints litellm's error (`litellm.AuthenticationError: …`) over
//!   several lines up to a blank one, then either `Retrying in 2.0 seconds...` (a retry)
//!   or nothing: aider exits 0. The last error not followed by an answer is the failure.
//! - After an answer the session is [`super::SESSION`], which makes a turn restore the
//!   chat history.

use crate::trace::calls::{SUMMARY_CHARS, shorten};
use crate::trace::{Ending, Retry, Shared, session_id};
use crate::usage::{ModelUsage, Report};

/// How much of the reply is kept, in bytes: its end.
const MAX_REPLY_BYTES: usize = 64 * 1024;

/// How much of an error the failure keeps, in characters.
const FAILURE_CHARS: usize = 500;

/// How much of an error a retry shows, in characters.
const RETRY_ERROR_CHARS: usize = 160;

/// The starts of aider's banner and notice lines, which are not the model's.
const NOTICES: [&str; 8] = [
    "Aider v",
    "Weak model: ",
    "Editor model: ",
    "Git repo: ",
    "Repo-map: ",
    "Restored previous conversation history.",
    "Analytics have been permanently disabled.",
    "HTTPSConnectionPool(host='raw.githubusercontent.com'",
];

/// A banner or notice line: [`NOTICES`], or a file the command line added to the chat
/// (`Added src/a.rs to the chat.`, `… to the chat (read-only).`).
fn is_notice(line: &str) -> bool {
    NOTICES.iter().any(|notice| line.starts_with(notice))
        || (line.starts_with("Added ")
            && (line.ends_with(" to the chat.") || line.ends_with(" to the chat (read-only).")))
}

/// aider's output so far.
#[derive(Debug, Default)]
pub(crate) struct Reader {
    /// The model the banner names (`openai/fake-model`).
    banner_model: Option<String>,
    /// Lines since the banner or the last `Tokens:` line: the answer being printed.
    answer: String,
    reply: Option<String>,
    usage: ModelUsage,
    /// The last `Cost: … $X session.`.
    cost_usd: Option<f64>,
    /// An answer came (a `Tokens:` line).
    answered: bool,
    /// The banner, an answer or an error was seen: this is aider's output.
    recognised: bool,
    /// The last error, and whether its lines are still coming.
    error: Option<String>,
    error_open: bool,
    retries: u32,
}

impl crate::trace::Events for Reader {
    fn line(&mut self, line: &str, at_ms: u64, shared: &mut Shared, _model: Option<&str>) -> bool {
        let line = line.trim_end();
        if let Some(delay) = line
            .strip_prefix("Retrying in ")
            .and_then(|rest| rest.strip_suffix(" seconds..."))
            && delay.parse::<f64>().is_ok()
        {
            self.error_open = false;
            self.retries = self.retries.saturating_add(1);
            shared.retried(Retry {
                attempt: self.retries,
                max_retries: None,
                status: None,
                error: shorten(self.error.as_deref().unwrap_or_default(), RETRY_ERROR_CHARS),
                at_ms,
            });
            return true;
        }
        if self.error_open {
            match (&mut self.error, line.is_empty()) {
                (Some(error), false) if error.len() < 4 * FAILURE_CHARS => {
                    error.push(' ');
                    error.push_str(line);
                }
                (_, true) => self.error_open = false,
                _ => {}
            }
            return true;
        }
        if line.starts_with("litellm.") && line.contains("Error") {
            self.recognised = true;
            self.error = Some(line.to_owned());
            self.error_open = true;
            return true;
        }
        if let Some(tokens) = line.strip_prefix("Tokens: ")
            && self.tokens(tokens)
        {
            self.recognised = true;
            self.answered = true;
            self.error = None;
            shared.retrying = false;
            shared.session_id = session_id(Some(super::SESSION));
            let answer = std::mem::take(&mut self.answer);
            let answer = answer.trim();
            self.reply = (!answer.is_empty()).then(|| answer.to_owned());
            return true;
        }
        if let Some(file) = line.strip_prefix("Applied edit to ") {
            shared
                .calls
                .record(None, "edit", shorten(file, SUMMARY_CHARS), at_ms, false);
            return true;
        }
        if let Some(model) = line
            .strip_prefix("Model: ")
            .filter(|m| m.contains(" with "))
        {
            self.recognised = true;
            self.answer.clear();
            self.banner_model = model
                .split(" with ")
                .next()
                .filter(|model| !model.is_empty())
                .map(|model| shorten(model, SUMMARY_CHARS));
            return true;
        }
        if is_notice(line) {
            self.recognised |= line.starts_with("Aider v");
            self.answer.clear();
            return true;
        }
        self.answer.push_str(line);
        self.answer.push('\n');
        if self.answer.len() > 2 * MAX_REPLY_BYTES {
            let mut start = self.answer.len() - MAX_REPLY_BYTES;
            while !self.answer.is_char_boundary(start) {
                start += 1;
            }
            self.answer.drain(..start);
        }
        true
    }

    fn finish(self: Box<Self>, model: Option<&str>, no_result: &dyn Fn() -> String) -> Ending {
        if !self.recognised {
            return Ending {
                reply: None,
                report: Report::default(),
                failure: Some(no_result()),
            };
        }
        let report = self.report(model);
        Ending {
            reply: report.summary.clone(),
            failure: report.failed.clone(),
            report,
        }
    }
}

impl Reader {
    /// Adds a `Tokens:` line's counts (what follows `Tokens: `); `false` when it is not one.
    fn tokens(&mut self, text: &str) -> bool {
        let (counts, cost) = match text.split_once(". Cost: ") {
            Some((counts, cost)) => (counts, Some(cost)),
            None => (text.trim_end_matches('.'), None),
        };
        let mut usage = ModelUsage::default();
        let mut sent = None;
        let mut received = None;
        for part in counts.split(", ") {
            let Some((number, what)) = part.split_once(' ') else {
                return false;
            };
            let Some(number) = count(number) else {
                return false;
            };
            match what {
                "sent" => sent = Some(number),
                "received" => received = Some(number),
                "cache write" => usage.cache_write_tokens = number,
                "cache hit" => usage.cache_read_tokens = number,
                _ => return false,
            }
        }
        let (Some(sent), Some(received)) = (sent, received) else {
            return false;
        };
        let total = &mut self.usage;
        total.input_tokens = total.input_tokens.saturating_add(
            sent.saturating_sub(usage.cache_write_tokens)
                .saturating_sub(usage.cache_read_tokens),
        );
        total.output_tokens = total.output_tokens.saturating_add(received);
        total.cache_read_tokens = total
            .cache_read_tokens
            .saturating_add(usage.cache_read_tokens);
        total.cache_write_tokens = total
            .cache_write_tokens
            .saturating_add(usage.cache_write_tokens);
        if let Some(session) = cost
            .and_then(|cost| cost.split(", ").nth(1))
            .and_then(|session| session.strip_prefix('$'))
            .and_then(|session| session.strip_suffix(" session."))
            .and_then(|session| session.parse::<f64>().ok())
            .filter(|cost| cost.is_finite() && *cost >= 0.0)
        {
            self.cost_usd = Some(session);
        }
        true
    }

    /// What the output concluded, `model` being the role's.
    fn report(self, model: Option<&str>) -> Report {
        let failure = match (self.error, self.answered) {
            (Some(error), _) => Some(shorten(&error, FAILURE_CHARS)),
            (None, false) => Some("aider ended before the model answered".to_owned()),
            (None, true) => None,
        };
        let mut usage = self.usage;
        usage.model = model
            .map(str::to_owned)
            .or(self.banner_model)
            .unwrap_or_else(|| "aider".to_owned());
        Report {
            usage: if usage.has_tokens() {
                vec![usage]
            } else {
                Vec::new()
            },
            reported_cost_usd: self.cost_usd,
            failed: failure,
            summary: self.reply,
        }
    }
}

/// `26`, `2.3k`, `12k`, `1.2M` as a number of tokens.
fn count(text: &str) -> Option<u64> {
    let (digits, scale) = match text.as_bytes().last()? {
        b'k' => (&text[..text.len() - 1], 1_000.0),
        b'M' => (&text[..text.len() - 1], 1_000_000.0),
        _ => return text.parse().ok(),
    };
    let value: f64 = digits.parse().ok()?;
    // `as` saturates: a huge or negative printed value cannot wrap.
    (value.is_finite() && value >= 0.0).then(|| (value * scale).round() as u64)
}

/// The report of a whole output (or its tail); `None` when it is not aider's.
pub(super) fn report(text: &str, model: &str) -> Option<Report> {
    let mut reader = Reader::default();
    let mut shared = Shared::default();
    for line in text.lines() {
        crate::trace::Events::line(&mut reader, line, 0, &mut shared, Some(model));
    }
    reader.recognised.then(|| reader.report(Some(model)))
}

#[cfg(test)]
mod tests {
    use super::count;

    #[test]
    fn token_counts_read_as_aider_rounds_them() {
        assert_eq!(count("26"), Some(26));
        assert_eq!(count("2.3k"), Some(2_300));
        assert_eq!(count("12k"), Some(12_000));
        assert_eq!(count("1.5M"), Some(1_500_000));
        assert_eq!(count("k"), None);
        assert_eq!(count("-1k"), None);
        assert_eq!(count("lots"), None);
    }
}
