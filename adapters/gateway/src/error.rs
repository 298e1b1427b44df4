//! What can go wrong setting the gateway up or granting access; refusals of single requests
//! are answers to the CLI instead (`refusal.rs`).

/// An error of the gateway. None of them carries a key.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    #[error("no provider named `{0}`")]
    UnknownProvider(String),
    #[error("provider `{0}` is configured twice")]
    DuplicateProvider(String),
    #[error("provider name `{0}` is not usable in a URL path: use letters, digits, `-` and `_`")]
    BadProviderName(String),
    #[error("provider `{provider}` has a bad base URL `{url}`: {reason}")]
    BadBaseUrl {
        provider: String,
        url: String,
        reason: &'static str,
    },
    #[error("the key of provider `{0}` is empty or not a valid HTTP header value")]
    BadKey(String),
    #[error("MCP server `{server}`: {reason}")]
    BadMcpServer {
        server: String,
        reason: &'static str,
    },
    #[error("the gateway's TLS client could not be set up: {0}")]
    Tls(#[from] rustls::Error),
}
