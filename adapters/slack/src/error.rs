//! What can go wrong at each boundary with Slack, kept apart so ingest can answer a forged
//! request differently from a malformed one, and the notifier can tell "try later" from
//! "never".

/// Why a request was not accepted as coming from Slack.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// No `X-Slack-Request-Timestamp` header.
    #[error("the request has no X-Slack-Request-Timestamp header")]
    MissingTimestamp,
    /// No `X-Slack-Signature` header.
    #[error("the request has no X-Slack-Signature header")]
    MissingSignature,
    /// The timestamp header is not a whole number of seconds.
    #[error("X-Slack-Request-Timestamp `{0}` is not a Unix time in seconds")]
    BadTimestamp(String),
    /// The timestamp is too far from now: a replay, or a badly wrong clock.
    #[error(
        "the request was signed at {timestamp}, {skew} s away from now ({now}); \
         more than 300 s is refused as a possible replay"
    )]
    Stale {
        /// The request's timestamp.
        timestamp: i64,
        /// Our clock.
        now: i64,
        /// How far apart they are, in seconds.
        skew: i64,
    },
    /// The signature header is not `v0=` followed by a hex SHA-256 digest.
    #[error("X-Slack-Signature is not `v0=` followed by 64 hex digits")]
    Malformed,
    /// The signature does not match the body: forged, altered, or a different secret.
    #[error("X-Slack-Signature does not match the body (wrong signing secret, or altered body)")]
    Mismatch,
}

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
