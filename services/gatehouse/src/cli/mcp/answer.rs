//! What a tool call returns: a short summary for a person and the API's answer as JSON
//! text for the model, or a tool error that says what went wrong and what to change.

use rmcp::model::{CallToolResult, ContentBlock};
use serde::Serialize;

use crate::cli::client::ApiFailure;

/// A tool's result, success or tool error.
pub(crate) struct Answer {
    summary: String,
    json: Option<String>,
    error: bool,
}

/// Why a call failed before or at the API.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Failure {
    /// The arguments do not fit: nothing was sent.
    #[error("{0}")]
    Arguments(String),
    /// The API refused or failed, or could not be reached.
    #[error(transparent)]
    Api(#[from] anyhow::Error),
    /// What the API answered cannot be shown (an artifact that is not text).
    #[error("{0}")]
    Refused(String),
}

/// A tool's outcome.
pub(crate) type Outcome = Result<Answer, Failure>;

impl Answer {
    /// A success: `summary` for people, `value` as pretty JSON for the model.
    pub(crate) fn with_json(summary: String, value: &impl Serialize) -> Self {
        Self {
            summary,
            json: Some(
                serde_json::to_string_pretty(value)
                    .unwrap_or_else(|e| format!("{{\"error\": \"cannot show it as JSON: {e}\"}}")),
            ),
            error: false,
        }
    }

    /// A success that is text only (an artifact's content, a log).
    pub(crate) fn text(text: String) -> Self {
        Self {
            summary: text,
            json: None,
            error: false,
        }
    }

    /// A tool error saying why the call failed: the API's own message (which names a
    /// missing scope, an unknown id or a refused decision) with its status, or what is
    /// wrong with the arguments.
    pub(crate) fn failed(failure: &Failure) -> Self {
        let summary = match failure {
            Failure::Arguments(why) => format!("invalid arguments: {why}"),
            Failure::Refused(why) => why.clone(),
            Failure::Api(error) => match error.downcast_ref::<ApiFailure>() {
                Some(refusal) => refusal_text(refusal),
                None => format!("Gatehouse could not be asked: {}", chain(error)),
            },
        };
        Self {
            summary,
            json: None,
            error: true,
        }
    }

    /// As MCP has it: the summary, then the JSON, as text blocks.
    pub(crate) fn into_result(self) -> CallToolResult {
        let mut content = vec![ContentBlock::text(self.summary)];
        if let Some(json) = self.json {
            content.push(ContentBlock::text(json));
        }
        if self.error {
            CallToolResult::error(content)
        } else {
            CallToolResult::success(content)
        }
    }
}

/// A refusal by the API, with what to do about the commonest ones.
fn refusal_text(refusal: &ApiFailure) -> String {
    let hint = match refusal.status {
        401 => " (the token is unknown, revoked or expired: give `gatehouse mcp` a valid --token)",
        403 if refusal.message.contains("scope") => {
            " (create a token with that scope: `gatehouse token create --scope ...`)"
        }
        _ => "",
    };
    format!(
        "Gatehouse refused this ({} {}): {}{hint}",
        refusal.status,
        reason(refusal.status),
        refusal.message
    )
}

fn reason(status: u16) -> &'static str {
    reqwest::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("")
}

/// An error and its causes on one line.
pub(crate) fn chain(error: &anyhow::Error) -> String {
    error
        .chain()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(": ")
}
