use thiserror::Error;

/// Everything that can be wrong with bytes claiming to be a Gatehouse event.
///
/// Consumers park such messages in the dead-letter table with this error's text as the
/// reason, so each variant says precisely what was wrong.
#[derive(Debug, Error)]
pub enum EventError {
    /// The bytes are not a JSON envelope at all.
    #[error("malformed envelope: {0}")]
    Malformed(#[source] serde_json::Error),
    /// The envelope was written by a newer Gatehouse than this one.
    #[error("envelope schema version {found} is newer than the supported version {supported}")]
    FutureSchema {
        /// Version found in the envelope.
        found: u32,
        /// Highest version this build understands.
        supported: u32,
    },
    /// The envelope names an event type this build does not know.
    #[error("unknown event type `{0}`")]
    UnknownType(String),
    /// The type is known but its payload does not match the contract.
    #[error("invalid payload for `{event_type}`: {source}")]
    Payload {
        /// The envelope's type.
        event_type: String,
        /// What serde found wrong.
        #[source]
        source: serde_json::Error,
    },
    /// A subject prefix that NATS cannot use in stream or subject names.
    #[error(
        "invalid subject prefix `{0}`: use 1-32 ASCII letters, digits, `_` or `-`, starting with a letter"
    )]
    InvalidPrefix(String),
    /// A `traceparent` value that is not W3C Trace Context version 00.
    #[error("invalid traceparent `{0}`")]
    InvalidTraceParent(String),
}
