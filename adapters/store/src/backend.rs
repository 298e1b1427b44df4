//! The two databases the store runs on.

use std::fmt;

/// Which database a [`crate::Store`] talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// PostgreSQL: production and distributed mode.
    Postgres,
    /// SQLite: the embedded single-process default.
    Sqlite,
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Postgres => "Postgres",
            Self::Sqlite => "SQLite",
        })
    }
}
