use thiserror::Error;

/// Why a storage operation failed.
#[derive(Debug, Error)]
pub enum StoreError {
    /// The URL names neither Postgres nor SQLite.
    #[error(
        "unsupported database URL `{0}`: expected postgres://user@host/db or sqlite:path/to/file.db"
    )]
    UnsupportedUrl(String),
    /// The URL has the right scheme but does not parse.
    #[error("invalid {backend} URL: {source}")]
    InvalidUrl {
        /// Which backend the scheme named.
        backend: crate::Backend,
        /// What sqlx found wrong.
        #[source]
        source: sqlx::Error,
    },
    /// The database did not answer within the retry budget.
    #[error("{backend} at {target} is unreachable after {attempts} attempts: {source}")]
    Unreachable {
        /// Which backend.
        backend: crate::Backend,
        /// Host/database or file, without credentials.
        target: String,
        /// How many connection attempts were made.
        attempts: usize,
        /// The last error.
        #[source]
        source: sqlx::Error,
    },
    /// Migrations this build needs are not applied yet (`gatehouse migrate`).
    #[error("migrations not applied yet: {0:?} (run `gatehouse migrate`)")]
    Pending(Vec<i64>),
    /// Applying migrations failed.
    #[error("applying migrations failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// An envelope could not be serialised for the outbox.
    #[error(transparent)]
    Event(#[from] gatehouse_events::EventError),
    /// A query failed.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
}
