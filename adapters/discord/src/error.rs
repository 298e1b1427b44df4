//! What can go wrong, per concern: a request's signature, a payload's shape, a call to Discord.

/// Why an interaction request is not trusted. Every variant means "answer 401".
#[derive(Debug, thiserror::Error)]
pub enum SignatureError {
    /// The configured public key is not 32 bytes of hex, or not a valid Ed25519 point.
    #[error("the Discord public key is not valid: {0}")]
    BadKey(String),
    /// No `X-Signature-Ed25519` header.
    #[error("the request has no X-Signature-Ed25519 header")]
    MissingSignature,
    /// No `X-Signature-Timestamp` header.
    #[error("the request has no X-Signature-Timestamp header")]
    MissingTimestamp,
    /// The timestamp header is not Unix seconds.
    #[error("the X-Signature-Timestamp header `{0}` is not a Unix time")]
    BadTimestamp(String),
    /// The timestamp is too far from now: an old request replayed, or a wrong clock.
    #[error(
        "the request's timestamp {timestamp} is {skew} s from now ({now}); more than 5 minutes is refused as a possible replay"
    )]
    Stale {
        /// The request's timestamp.
        timestamp: i64,
        /// Our clock.
        now: i64,
        /// How far apart they are, in seconds.
        skew: i64,
    },
    /// The signature header is not 64 bytes of hex.
    #[error("the X-Signature-Ed25519 header is not a hex Ed25519 signature")]
    BadHex,
    /// The signature does not match the timestamp and body under the key.
    #[error("the signature does not match the request")]
    Mismatch,
}

/// Why a payload from Discord could not be read.
#[derive(Debug, thiserror::Error)]
pub enum PayloadError {
    /// Not JSON, or JSON of the wrong shape.
    #[error("the payload is not a Discord interaction: {0}")]
    Malformed(#[from] serde_json::Error),
    /// A field the interaction's type requires is absent.
    #[error("the interaction has no {0}")]
    Missing(&'static str),
}

/// Why a call to Discord failed, sorted by what the caller should do about it.
#[derive(Debug, thiserror::Error)]
pub enum DiscordError {
    /// Discord refused the request for good (4xx other than 429): retrying will not help.
    #[error("Discord refused the request ({status}): {message}")]
    Api {
        /// The HTTP status.
        status: u16,
        /// Discord's message, with its error code when it sent one.
        message: String,
    },
    /// Discord could not be reached, failed (5xx) or rate limited us: try again later.
    #[error("Discord is unavailable: {0}")]
    Unavailable(String),
    /// The configuration cannot work (URL, token, ids): fix it and restart.
    #[error("the Discord configuration cannot work: {0}")]
    Setup(String),
}
