//! Why a blob operation failed.
//!
//! The variants separate what a caller reacts to differently: a blob that is not there
//! ([`BlobError::NotFound`]: restore from elsewhere, or report a missing artifact), a blob
//! that is there but must not be used ([`BlobError::Corrupt`], [`BlobError::Refused`]: never
//! hand its bytes on), a request the caller should not have made
//! ([`BlobError::TooLarge`], [`BlobError::InvalidDigest`]), and the store being unwell
//! ([`BlobError::Io`], [`BlobError::Nats`]: retry later, fail `/readyz`).

use thiserror::Error;

use crate::Digest;

/// Why a blob operation failed.
#[derive(Debug, Error)]
pub enum BlobError {
    /// The store holds no blob with this digest.
    #[error("blob {0} not found")]
    NotFound(Digest),
    /// The stored bytes do not hash to the digest they are stored under: they were changed
    /// on disk or written under a wrong name. Nothing of them was handed on.
    #[error("blob {digest} is corrupt: its contents hash to {actual}")]
    Corrupt {
        /// The digest that was asked for.
        digest: Digest,
        /// What the stored bytes actually hash to.
        actual: Digest,
    },
    /// The blob is larger than the caller was willing to hold in memory.
    #[error("blob {digest} is {size} bytes, over the limit of {limit}")]
    TooLarge {
        /// The blob asked for.
        digest: Digest,
        /// Its size, or the bytes read before giving up when the size was not known.
        size: u64,
        /// The caller's limit.
        limit: u64,
    },
    /// What is stored under the digest's name is not a plain file (a symbolic link, a
    /// directory, a FIFO...): someone tampered with the store, and it is not read.
    #[error("blob {digest} refused: {reason}")]
    Refused {
        /// The blob asked for.
        digest: Digest,
        /// What was found instead of a regular file.
        reason: String,
    },
    /// A filesystem operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done, naming the file.
        context: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A NATS JetStream object store request failed.
    #[error("NATS object store: {operation} failed: {message}")]
    Nats {
        /// What was being done.
        operation: &'static str,
        /// The client's error text (its source chain included).
        message: String,
    },
    /// A string that is not a lower-case hex SHA-256 was offered as a digest. It is shown
    /// escaped and shortened: it may come from an untrusted manifest.
    #[error("invalid blob digest {0:?}: want 64 lower-case hex characters")]
    InvalidDigest(String),
    /// A NATS object store bucket name the server would refuse.
    #[error("invalid object store bucket name {0:?}: use ASCII letters, digits, `_` or `-`")]
    InvalidBucket(String),
}

impl BlobError {
    /// An [`BlobError::Io`] maker for `map_err`, with what was being done.
    pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Self {
        let context = context.into();
        move |source| Self::Io { context, source }
    }

    /// A [`BlobError::Nats`] maker for `map_err`, with what was being done.
    pub(crate) fn nats<E: std::fmt::Display>(operation: &'static str) -> impl FnOnce(E) -> Self {
        move |err| Self::Nats {
            operation,
            message: err.to_string(),
        }
    }
}
