//! What can go wrong, per concern: a request's signature, a payload's shape, a call to Discord.

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
