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
        backend: crate::backend::Backend,
        /// What sqlx found wrong.
        #[source]
        source: sqlx::Error,
    },
    /// The database did not answer within the retry budget.
    #[error("{backend} at {target} is unreachable after {attempts} attempts: {source}")]
    Unreachable {
        backend: crate::backend::Backend,
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
    /// A value given to the store that it refuses to keep; the message says why.
    #[error("refused: {0}")]
    Invalid(String),
    /// What is stored cannot be read back as what it should be.
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    /// A query failed.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
}

impl StoreError {
    /// Whether the database could not be reached or went away (connection refused or
    /// lost, pool timeout, server shutting down): worth retrying the same write later,
    /// unlike a query the database refused.
    pub fn is_unavailable(&self) -> bool {
        match self {
            Self::Unreachable { .. } => true,
            Self::Database(err) => match err {
                sqlx::Error::Io(_)
                | sqlx::Error::PoolTimedOut
                | sqlx::Error::Protocol(_)
                | sqlx::Error::Tls(_) => true,
                // SQLSTATE class 08: connection exception; 57P01-03: the server is
                // shutting down or starting; SQLite 5/6: busy, locked.
                sqlx::Error::Database(db) => db.code().is_some_and(|code| {
                    code.starts_with("08")
                        || ["57P01", "57P02", "57P03", "5", "6"].contains(&&*code)
                }),
                _ => false,
            },
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lost_connections_are_unavailable_and_refused_queries_are_not() {
        let lost = StoreError::Database(sqlx::Error::Io(std::io::Error::from(
            std::io::ErrorKind::ConnectionReset,
        )));
        assert!(lost.is_unavailable());
        assert!(StoreError::Database(sqlx::Error::PoolTimedOut).is_unavailable());
        assert!(!StoreError::Database(sqlx::Error::RowNotFound).is_unavailable());
        assert!(!StoreError::Pending(vec![1]).is_unavailable());
    }
}
