//! The CLI retrying a model request it could not get answered: shown as the attempt's
//! progress ("model API unreachable, retry 4/10") while it waits, and named in the failure
//! when it gives up, so a node never sits "running" through minutes of silent back-off.
//!
//! - Claude Code (stream-json) prints, before each retry,
//!   `{"type":"system","subtype":"api_retry","attempt":1,"max_retries":3,"retry_delay_ms":520,"error_status":503,"error":"server_error"}`
//!   (`error_status` is null for a connection error without an HTTP answer).
//! - Codex (`exec --json`) prints `{"type":"error","message":"Reconnecting... 2/5 (…)"}`
//!   before each new attempt of a stream.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Object, string};

/// How much of the CLI's error text a retry keeps.
const ERROR_CHARS: usize = 160;

/// One retry the CLI announced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Retry {
    /// Which retry this is, from 1.
    pub attempt: u32,
    /// The most retries the CLI makes; `None` when it did not say.
    pub max_retries: Option<u32>,
    /// The provider's HTTP status; `None` for a connection error or when not said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The CLI's word for the error (`server_error`, `overloaded`, a message), cut short.
    pub error: String,
    /// When the line arrived, in milliseconds since the attempt started.
    pub at_ms: u64,
}

impl Retry {
    /// `model API unreachable, retry 4/10 (503 server_error)`: the progress while the CLI
    /// waits to try again.
    pub fn progress(&self) -> String {
        let of = self
            .max_retries
            .map_or_else(String::new, |max| format!("/{max}"));
        let mut text = format!("model API unreachable, retry {}{of}", self.attempt);
        let cause = self.cause();
        if !cause.is_empty() {
            text.push_str(&format!(" ({cause})"));
        }
        text
    }

    /// `503 server_error`, `connection error`: what the provider (or the way to it) said.
    pub fn cause(&self) -> String {
        match (self.status, self.error.is_empty()) {
            (Some(status), false) if self.error.contains(&status.to_string()) => self.error.clone(),
            (Some(status), false) => format!("{status} {}", self.error),
            (Some(status), true) => status.to_string(),
            (None, false) => self.error.clone(),
            (None, true) => String::new(),
        }
    }

    /// `after 3 retries (last: 503 server_error)`: appended to the failure of an attempt
    /// whose CLI retried.
    pub fn summary(&self) -> String {
        let retries = if self.attempt == 1 {
            "1 retry".to_owned()
        } else {
            format!("{} retries", self.attempt)
        };
        let cause = self.cause();
        if cause.is_empty() {
            format!("after {retries} of the model request")
        } else {
            format!("after {retries} of the model request (last: {cause})")
        }
    }
}

/// Claude Code's `api_retry` system event.
pub(crate) fn claude(event: &Object, at_ms: u64) -> Option<Retry> {
    if string(event, "subtype") != Some("api_retry") {
        return None;
    }
    let number = |key: &str| {
        event
            .get(key)
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok())
    };
    let status = event
        .get("error_status")
        .and_then(Value::as_u64)
        .and_then(|n| u16::try_from(n).ok());
    let error = match event.get("error") {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Object(object)) => string(object, "message")
            .or_else(|| string(object, "type"))
            .unwrap_or_default()
            .to_owned(),
        _ if status.is_none() => "connection error".to_owned(),
        _ => String::new(),
    };
    Some(Retry {
        attempt: number("attempt")?,
        max_retries: number("max_retries"),
        status,
        error: cut(&error),
        at_ms,
    })
}

/// Codex's `Reconnecting... 2/5 (…)` error event.
pub(crate) fn codex(event: &Object, at_ms: u64) -> Option<Retry> {
    let message = string(event, "message")?;
    let rest = message
        .trim_start()
        .strip_prefix("Reconnecting...")?
        .trim_start();
    let (counts, cause) = match rest.split_once(char::is_whitespace) {
        Some((counts, cause)) => (counts, cause.trim()),
        None => (rest, ""),
    };
    let (attempt, max) = counts.split_once('/')?;
    let attempt = attempt.trim().parse().ok()?;
    let max_retries = max.trim().parse().ok();
    let cause = cause
        .strip_prefix('(')
        .and_then(|c| c.strip_suffix(')'))
        .unwrap_or(cause);
    Some(Retry {
        attempt,
        max_retries,
        status: status_in(cause),
        error: cut(cause),
        at_ms,
    })
}

/// The first three-digit number from 400 to 599 in the text: the HTTP status Codex quotes
/// (`unexpected status 503 Service Unavailable: …`).
fn status_in(text: &str) -> Option<u16> {
    text.split(|c: char| !c.is_ascii_digit())
        .filter(|word| word.len() == 3)
        .filter_map(|word| word.parse::<u16>().ok())
        .find(|n| (400..600).contains(n))
}

/// The text on one line, at most [`ERROR_CHARS`] characters.
fn cut(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= ERROR_CHARS {
        return line;
    }
    let mut cut: String = line.chars().take(ERROR_CHARS - 1).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(line: &str) -> Object {
        serde_json::from_str(line).expect("an object")
    }

    #[test]
    fn claude_code_retries_are_read_with_their_status() {
        let retry = claude(
            &object(
                r#"{"type":"system","subtype":"api_retry","attempt":4,"max_retries":10,"retry_delay_ms":4000,"error_status":503,"error":"server_error","session_id":"s"}"#,
            ),
            900,
        )
        .expect("a retry");
        assert_eq!(
            retry.progress(),
            "model API unreachable, retry 4/10 (503 server_error)"
        );
        assert_eq!(
            retry.summary(),
            "after 4 retries of the model request (last: 503 server_error)"
        );
        let unreachable = claude(
            &object(
                r#"{"type":"system","subtype":"api_retry","attempt":1,"max_retries":3,"error_status":null,"error":"unknown"}"#,
            ),
            0,
        )
        .expect("a retry");
        assert_eq!(
            unreachable.progress(),
            "model API unreachable, retry 1/3 (unknown)"
        );
        assert!(claude(&object(r#"{"type":"system","subtype":"init"}"#), 0).is_none());
        assert!(
            claude(&object(r#"{"type":"system","subtype":"api_retry"}"#), 0).is_none(),
            "no attempt, no retry"
        );
    }

    #[test]
    fn codex_reconnects_are_read_and_the_status_found() {
        let retry = codex(
            &object(
                r#"{"type":"error","message":"Reconnecting... 2/5 (unexpected status 503 Service Unavailable: the fake provider failed)"}"#,
            ),
            10,
        )
        .expect("a retry");
        assert_eq!((retry.attempt, retry.max_retries), (2, Some(5)));
        assert_eq!(retry.status, Some(503));
        assert!(
            retry
                .progress()
                .starts_with("model API unreachable, retry 2/5 (unexpected status 503 Service")
        );
        assert!(codex(&object(r#"{"type":"error","message":"boom"}"#), 0).is_none());
        let long = format!(
            r#"{{"type":"error","message":"Reconnecting... 1/5 ({})"}}"#,
            "x".repeat(500)
        );
        let cut = codex(&object(&long), 0).expect("a retry");
        assert_eq!(cut.error.chars().count(), ERROR_CHARS);
    }

    #[test]
    fn progress_shows_a_retry_until_the_cli_moves_on_and_the_trace_keeps_it() {
        use crate::executor::Executor;
        use crate::trace::TraceParser;
        let mut parser = TraceParser::new(Executor::ClaudeCode, None);
        parser.feed(r#"{"type":"system","subtype":"init","session_id":"s1"}"#, 0);
        assert!(parser.progress().retry.is_none());
        parser.feed(
            r#"{"type":"system","subtype":"api_retry","attempt":2,"max_retries":3,"error_status":503,"error":"server_error"}"#,
            100,
        );
        assert_eq!(parser.progress().retry.map(|r| r.attempt), Some(2));
        parser.feed(
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":"hi"}]}}"#,
            200,
        );
        assert!(parser.progress().retry.is_none(), "past the wait");
        let trace = parser.finish(300);
        assert_eq!(
            trace.retry.map(|r| r.attempt),
            Some(2),
            "kept for the failure"
        );
    }
}
