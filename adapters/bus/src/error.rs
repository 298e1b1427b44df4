use thiserror::Error;

/// Why a bus operation failed.
#[derive(Debug, Error)]
pub enum BusError {
    /// NATS did not answer within the retry budget at start.
    #[error("NATS at {url} is unreachable after {attempts} attempts: {source}")]
    Unreachable {
        /// The server URL, its password hidden.
        url: String,
        /// Connection attempts made.
        attempts: usize,
        /// The last error.
        #[source]
        source: async_nats::ConnectError,
    },
    /// A JetStream request (stream, consumer, publish, ack) failed.
    #[error("JetStream {operation} failed: {message}")]
    JetStream {
        /// What was being done.
        operation: &'static str,
        /// The client's error text.
        message: String,
    },
    /// The in-process bus's tables failed.
    #[error(transparent)]
    Store(#[from] gatehouse_store::StoreError),
    /// A consumer name that NATS would reject.
    #[error("invalid consumer name `{0}`: use ASCII letters, digits, `_` or `-`")]
    InvalidConsumerName(String),
    /// The subscription ended (the connection was closed for good).
    #[error("the subscription `{0}` was closed")]
    Closed(String),
}

impl BusError {
    pub(crate) fn jetstream(operation: &'static str, err: impl std::fmt::Display) -> Self {
        Self::JetStream {
            operation,
            message: err.to_string(),
        }
    }
}
