//! The store handle: pools, connection with retries, migrations, transactions.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use sqlx::Connection;
use sqlx::postgres::{PgConnection, PgPool, PgPoolOptions};
use sqlx::sqlite::{SqliteConnection, SqlitePool, SqlitePoolOptions};
use tokio::sync::watch;

use crate::url::ConnectOptions;
use crate::{Backend, StoreError, Tx};

/// Runs `$body` with `$conn` bound to the backend's pool; the body is compiled once per
/// backend, so one query text serves both.
macro_rules! with_pool {
    ($store:expr, $conn:ident => $body:expr) => {
        match &$store.pool {
            $crate::store::Pool::Postgres($conn) => $body,
            $crate::store::Pool::Sqlite($conn) => $body,
        }
    };
}
pub(crate) use with_pool;

/// The two kinds of pool behind a [`Store`].
#[derive(Clone)]
pub(crate) enum Pool {
    Postgres(PgPool),
    Sqlite(SqlitePool),
}

/// Handle to Gatehouse's database. Cheap to clone; clones share the pool.
#[derive(Clone)]
pub struct Store {
    pub(crate) pool: Pool,
    target: Arc<str>,
    /// Bumped whenever a transaction that appended to the outbox commits, so an in-process
    /// relay publishes at once instead of at its next poll.
    pub(crate) outbox_written: Arc<watch::Sender<u64>>,
}

impl Store {
    /// Connects to the database the URL names, retrying with `retry` while it is
    /// unreachable (not when it refuses us: a wrong password is final).
    pub async fn connect(url: &str, retry: ExponentialBuilder) -> Result<Self, StoreError> {
        let options = ConnectOptions::parse(url)?;
        let backend = options.backend();
        let target = options.target();
        if let ConnectOptions::Sqlite(o) = &options {
            // SQLite creates the file but not its directory.
            if let Some(dir) = o
                .get_filename()
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
            {
                std::fs::create_dir_all(dir).map_err(|e| StoreError::Database(e.into()))?;
            }
        }
        let attempts = AtomicUsize::new(0);
        // Probe with a single connection first: the pool retries refused connections
        // internally until its acquire timeout, which would hide both the attempts and
        // the error behind a long wait.
        let probe = || async {
            attempts.fetch_add(1, Ordering::Relaxed);
            match &options {
                ConnectOptions::Postgres(o) => PgConnection::connect_with(o).await?.close().await,
                ConnectOptions::Sqlite(o) => SqliteConnection::connect_with(o).await?.close().await,
            }
        };
        probe
            .retry(retry)
            .when(is_transient)
            .notify(|err, delay| {
                tracing::warn!(%backend, %target, error = %err, retry_in = ?delay,
                    "database unreachable, retrying");
            })
            .await
            .map_err(|source| match source {
                source if is_transient(&source) => StoreError::Unreachable {
                    backend,
                    target: target.clone(),
                    attempts: attempts.load(Ordering::Relaxed),
                    source,
                },
                other => StoreError::Database(other),
            })?;
        let pool = match options {
            ConnectOptions::Postgres(o) => PgPoolOptions::new()
                .max_connections(16)
                .acquire_timeout(Duration::from_secs(10))
                .connect_with(o)
                .await
                .map(Pool::Postgres)?,
            // SQLite has one writer: every transaction waiting for the write lock holds a
            // connection meanwhile, so the pool must be larger than the number of writers
            // that can wait at once (each service's consumers and loops), or the lock
            // holder could not get a connection for a read and would wait on the waiters.
            ConnectOptions::Sqlite(o) => SqlitePoolOptions::new()
                .max_connections(32)
                .acquire_timeout(Duration::from_secs(30))
                .connect_with(o)
                .await
                .map(Pool::Sqlite)?,
        };
        tracing::debug!(%backend, %target, "connected to the database");
        Ok(Self {
            pool,
            target: target.into(),
            outbox_written: Arc::new(watch::channel(0).0),
        })
    }

    /// Which backend this store runs on.
    pub fn backend(&self) -> Backend {
        match self.pool {
            Pool::Postgres(_) => Backend::Postgres,
            Pool::Sqlite(_) => Backend::Sqlite,
        }
    }

    /// Where the store is, for messages: host, port and database, or the SQLite file;
    /// never credentials.
    pub fn target(&self) -> &str {
        &self.target
    }

    /// Applies every pending migration of this backend. Safe to run concurrently from
    /// several replicas: Postgres migrations take an advisory lock.
    pub async fn migrate(&self) -> Result<(), StoreError> {
        match &self.pool {
            Pool::Postgres(pool) => {
                sqlx::migrate!("../../migrations/postgres")
                    .run(pool)
                    .await?
            }
            Pool::Sqlite(pool) => sqlx::migrate!("../../migrations/sqlite").run(pool).await?,
        }
        Ok(())
    }

    /// Whether the database answers and every migration this build knows is applied: what
    /// a service needs before it takes work (`/readyz`). The error says which.
    pub async fn check_ready(&self) -> Result<(), StoreError> {
        let (migrator, applied): (sqlx::migrate::Migrator, Vec<i64>) = match &self.pool {
            Pool::Postgres(pool) => (
                sqlx::migrate!("../../migrations/postgres"),
                sqlx::query_scalar("SELECT version FROM _sqlx_migrations WHERE success")
                    .fetch_all(pool)
                    .await?,
            ),
            Pool::Sqlite(pool) => (
                sqlx::migrate!("../../migrations/sqlite"),
                sqlx::query_scalar("SELECT version FROM _sqlx_migrations WHERE success")
                    .fetch_all(pool)
                    .await?,
            ),
        };
        let pending: Vec<i64> = migrator
            .iter()
            .map(|m| m.version)
            .filter(|v| !applied.contains(v))
            .collect();
        if pending.is_empty() {
            Ok(())
        } else {
            Err(StoreError::Pending(pending))
        }
    }

    /// Starts a transaction. On SQLite it takes the write lock up front (`BEGIN
    /// IMMEDIATE`): a deferred transaction that reads and then writes fails at once when
    /// another writer got in between, instead of waiting for it.
    pub async fn begin(&self) -> Result<Tx, StoreError> {
        Ok(match &self.pool {
            Pool::Postgres(pool) => Tx::postgres(pool.begin().await?, self.clone()),
            Pool::Sqlite(pool) => {
                Tx::sqlite(pool.begin_with("BEGIN IMMEDIATE").await?, self.clone())
            }
        })
    }

    /// Closes every connection; pending queries finish first.
    pub async fn close(&self) {
        with_pool!(self, pool => pool.close().await)
    }

    /// A receiver that changes whenever outbox rows are committed by this process.
    pub fn watch_outbox(&self) -> watch::Receiver<u64> {
        self.outbox_written.subscribe()
    }
}

/// Errors worth retrying at connect time: the server is not there (yet), not that it
/// refused us.
fn is_transient(err: &sqlx::Error) -> bool {
    matches!(
        err,
        sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::Tls(_)
    ) || matches!(err, sqlx::Error::Database(db) if db.code().as_deref() == Some("57P03"))
}
