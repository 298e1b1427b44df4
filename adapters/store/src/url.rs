//! Choosing a backend from a database URL.

use std::str::FromStr;

use sqlx::postgres::PgConnectOptions;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};

use crate::backend::Backend;
use crate::error::StoreError;

/// Parsed connection options for either backend.
pub(crate) enum ConnectOptions {
    Postgres(PgConnectOptions),
    Sqlite(SqliteConnectOptions),
}

impl ConnectOptions {
    /// Parses a URL, refusing anything that is not clearly Postgres or SQLite.
    pub(crate) fn parse(url: &str) -> Result<Self, StoreError> {
        let scheme = url.split_once(':').map(|(s, _)| s).unwrap_or_default();
        match scheme {
            "postgres" | "postgresql" => PgConnectOptions::from_str(url)
                .map(Self::Postgres)
                .map_err(|source| StoreError::InvalidUrl {
                    backend: Backend::Postgres,
                    source,
                }),
            "sqlite" => SqliteConnectOptions::from_str(url)
                .map(|o| {
                    // WAL lets readers run beside the writer; NORMAL sync in WAL mode keeps
                    // every committed transaction across a process crash. No automatic
                    // checkpoints: they would run inside a commit (see `wal.rs`).
                    Self::Sqlite(
                        o.create_if_missing(true)
                            .journal_mode(SqliteJournalMode::Wal)
                            .synchronous(SqliteSynchronous::Normal)
                            .foreign_keys(true)
                            .busy_timeout(std::time::Duration::from_secs(10))
                            .pragma("wal_autocheckpoint", "0"),
                    )
                })
                .map_err(|source| StoreError::InvalidUrl {
                    backend: Backend::Sqlite,
                    source,
                }),
            _ => Err(StoreError::UnsupportedUrl(redact(url))),
        }
    }

    pub(crate) fn backend(&self) -> Backend {
        match self {
            Self::Postgres(_) => Backend::Postgres,
            Self::Sqlite(_) => Backend::Sqlite,
        }
    }

    /// Where it connects, for messages: never the password.
    pub(crate) fn target(&self) -> String {
        match self {
            Self::Postgres(o) => format!(
                "{}:{}/{}",
                o.get_host(),
                o.get_port(),
                o.get_database().unwrap_or_default()
            ),
            Self::Sqlite(o) => o.get_filename().display().to_string(),
        }
    }
}

/// Strips credentials from a URL we could not parse, so the error can quote it.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            format!("{}://***{}", &url[..scheme_end], &url[at..])
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_the_backend_from_the_scheme() {
        let pg = ConnectOptions::parse("postgres://root@127.0.0.1:5432/test").unwrap();
        assert_eq!(pg.backend(), Backend::Postgres);
        assert_eq!(pg.target(), "127.0.0.1:5432/test");
        let lite = ConnectOptions::parse("sqlite:/tmp/x.db").unwrap();
        assert_eq!(lite.backend(), Backend::Sqlite);
        assert_eq!(lite.target(), "/tmp/x.db");
    }

    #[test]
    fn refuses_other_urls_without_echoing_passwords() {
        for url in [
            "mysql://u:secret@h/db",
            "",
            "not a url",
            "/var/lib/gatehouse.db",
        ] {
            let err = ConnectOptions::parse(url).err().unwrap();
            assert!(matches!(err, StoreError::UnsupportedUrl(_)), "{url}");
            assert!(!err.to_string().contains("secret"));
        }
    }

    #[test]
    fn reports_a_malformed_postgres_url() {
        let err = ConnectOptions::parse("postgres://root@host:notaport/db")
            .err()
            .unwrap();
        assert!(matches!(
            err,
            StoreError::InvalidUrl {
                backend: Backend::Postgres,
                ..
            }
        ));
    }
}
