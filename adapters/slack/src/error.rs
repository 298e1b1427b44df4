//! What can go wrong at each boundary with Slack, kept apart so ingest can answer a forged
//! request differently from a malformed one, and the notifier can tell "try later" from
//! "never".

/// A Slack payload that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum PayloadError {
    /// The body (or the form's `payload` field) is not JSON.
    #[error("the {what} is not JSON: {source}")]
    NotJson {
        /// Which body.
        what: &'static str,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// An interactivity body without its `payload` form field.
    #[error("the interaction body is not a form with a `payload` field")]
    NoPayload,
    /// JSON that lacks a field Gatehouse needs, or has it with the wrong type.
    #[error("the {what} is not valid: {source}")]
    Invalid {
        /// Which payload.
        what: &'static str,
        /// serde's account, which names the field.
        #[source]
        source: serde_json::Error,
    },
    /// A `block_actions` payload with no action in it.
    #[error("the block_actions payload has no actions")]
    NoAction,
}

/// A Web API call that did not succeed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SlackError {
    /// Slack answered `ok: false`: it refused for good (`channel_not_found`,
    /// `not_in_channel`, `invalid_auth`, ...); retrying will not help.
    #[error("Slack refused {method}: {error}")]
    Api {
        /// The Web API method.
        method: String,
        /// Slack's error code.
        error: String,
    },
    /// Slack could not be reached, failed, or kept rate-limiting us beyond the retry
    /// budget: try again later.
    #[error("Slack is unavailable: {0}")]
    Unavailable(String),
    /// The client is configured wrongly (API URL, TLS roots): fix the configuration.
    #[error("Slack client setup: {0}")]
    Setup(String),
}
