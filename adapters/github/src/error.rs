//! Why a GitHub call failed.

use http::StatusCode;
use thiserror::Error;

/// Why a GitHub call failed.
#[derive(Debug, Error)]
pub enum GithubError {
    /// GitHub answered with an error status that retrying will not fix.
    #[error("GitHub answered {status}: {message}")]
    Api {
        status: StatusCode,
        /// GitHub's message.
        message: String,
    },
    /// Still failing (5xx, rate limit, transport) after every attempt.
    #[error("GitHub is unavailable: {0}")]
    Unavailable(String),
    /// The configured `api_url` or token cannot be used.
    #[error("GitHub client: {0}")]
    Setup(String),
}
