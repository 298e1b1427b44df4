//! The store handle: pools, connection with retries, migrations, transactions.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use sqlx::Connection;
use sqlx::postgres::{PgConnection, PgPool, PgPoolOptions};
use sqlx::sqlite::{SqliteConnection, SqlitePool, SqlitePoolOptions};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};

use crate::backend::Backend;
use crate::bus::{IdleTakers, RelayHere, Wake};
use crate::error::StoreError;
use crate::sop_cache::Definitions;
use crate::url::ConnectOptions;
use crate::wal::WalCheckpoints;

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

/// [`with_pool!`] for a statement that writes: on SQLite it first waits its turn among
/// this process's writers ([`Store::write_turn`]), and counts towards the next checkpoint
/// of the log (`wal.rs`).
macro_rules! with_writer {
    ($store:expr, $conn:ident => $body:expr) => {{
        let _turn = $store.write_turn().await;
        let written = $crate::store::with_pool!($store, $conn => $body);
        $store.wal_written();
        written
    }};
}
pub(crate) use with_writer;

/// At most this many ids in one statement's `IN (...)`.
pub(crate) const IDS_PER_QUERY: usize = 500;

/// `$first, $first+1, ...`: one placeholder per id.
pub(crate) fn marks(first: usize, n: usize) -> String {
    (first..first + n)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Rows of `$row` for every id of `$ids`, read in chunks of [`IDS_PER_QUERY`] ids so no
/// statement outgrows either database's limit on parameters: `$sql` is called with the
/// placeholder list (`$1, $2, …`) and returns the statement text.
macro_rules! rows_for_ids {
    ($store:expr, $ids:expr, $row:ty, $sql:expr) => {{
        let mut out: Vec<$row> = Vec::new();
        for chunk in $ids.chunks($crate::store::IDS_PER_QUERY) {
            let sql: String = $sql($crate::store::marks(1, chunk.len()));
            let rows: Vec<$row> = $crate::store::with_pool!($store, pool => {
                let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql));
                for id in chunk {
                    query = query.bind(*id);
                }
                query.fetch_all(pool).await?
            });
            out.extend(rows);
        }
        out
    }};
}
pub(crate) use rows_for_ids;

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
    /// This process's relay, to which transactions hand the outbox rows they commit
    /// (see `bus/handover.rs`).
    pub(crate) relay_here: RelayHere,
    /// Subscriptions of this process waiting for jobs, to which transactions hand the jobs
    /// they queue (see `bus/job_takers.rs`).
    pub(crate) idle_takers: IdleTakers,
    /// Bumped whenever a transaction that wanted a chat message commits, so a notifier in
    /// this process posts it at once instead of at its next poll (replies the scheduler
    /// and ingest write, progress the runner writes).
    pub(crate) chat_wanted: Arc<watch::Sender<u64>>,
    /// Set by [`Store::publish_in_place`]: transactions put their events onto the
    /// in-process bus's tables themselves.
    in_place: Arc<AtomicBool>,
    /// Per consumer of the in-process bus, bumped whenever this process commits messages
    /// for it, so its subscriptions look at once instead of at their next poll (and the
    /// others do not look at all); see `bus/wakes.rs`.
    pub(crate) queue_wakers: Arc<Mutex<HashMap<String, watch::Sender<Wake>>>>,
    /// Transactions open at once in this process. A transaction holds a connection and
    /// often reads through the pool meanwhile; if every connection were held by an open
    /// transaction (or, on SQLite, by one waiting for the single write lock), those reads
    /// would wait for each other until timeouts broke the knot. Waiting here holds none.
    pub(crate) tx_slots: Arc<Semaphore>,
    /// SOP definitions parsed once per process (see `sop_cache.rs`).
    pub(crate) definitions: Arc<Definitions>,
    /// SQLite's log, checkpointed beside the writers (see `wal.rs`).
    pub(crate) wal: WalCheckpoints,
}

/// Connections in a Postgres pool; half of them at most are held by transactions.
const POSTGRES_CONNECTIONS: u32 = 16;
/// How long a write outside a transaction waits for its turn on SQLite before it goes
/// ahead anyway (see [`Store::write_turn`]).
const WRITE_TURN_WAIT: Duration = Duration::from_secs(10);
/// Connections in a SQLite pool (readers are concurrent under WAL). Few: each is a thread
/// of its own and a page cache, and the pool hands out the connection idle longest, so
/// with many every statement wakes a cold thread. One held by the open transaction leaves
/// five for reads, each a matter of microseconds. Against 32, in one run of the `peers`
/// benchmark: 10 % less memory, the same latency, a lower p99.
const SQLITE_CONNECTIONS: u32 = 6;

impl Store {
    /// Connects to the database the URL names, retrying with `retry` while it is
    /// unreachable (not when it refuses us: a wrong password is final).
    pub async fn connect(url: &str, retry: ExponentialBuilder) -> Result<Self, StoreError> {
        let options = ConnectOptions::parse(url)?;
        let backend = options.backend();
        let target = options.target();
        create_sqlite_dir(&options)?;
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
            ConnectOptions::Postgres(o) => {
                postgres_pool().connect_with(o).await.map(Pool::Postgres)?
            }
            ConnectOptions::Sqlite(o) => sqlite_pool().connect_with(o).await.map(Pool::Sqlite)?,
        };
        tracing::debug!(%backend, %target, "connected to the database");
        Ok(Self::over(pool, target))
    }

    /// A store that connects on first use instead of now: for a service that must start,
    /// and answer its probes, while its database is still unreachable. Until the database
    /// answers, queries fail and [`Store::check_ready`] says why. Only a malformed URL is
    /// an error here.
    pub fn connect_lazy(url: &str) -> Result<Self, StoreError> {
        let options = ConnectOptions::parse(url)?;
        create_sqlite_dir(&options)?;
        let target = options.target();
        let pool = match options {
            ConnectOptions::Postgres(o) => Pool::Postgres(postgres_pool().connect_lazy_with(o)),
            ConnectOptions::Sqlite(o) => Pool::Sqlite(sqlite_pool().connect_lazy_with(o)),
        };
        Ok(Self::over(pool, target))
    }

    fn over(pool: Pool, target: String) -> Self {
        // SQLite has a single writer, and every transaction here writes (`BEGIN
        // IMMEDIATE`): more than one open at once would only queue inside SQLite's busy
        // handler, holding connections and retrying by sleeps instead of in order.
        let tx_slots = match pool {
            Pool::Postgres(_) => POSTGRES_CONNECTIONS as usize / 2,
            Pool::Sqlite(_) => 1,
        };
        Self {
            pool,
            target: target.into(),
            outbox_written: Arc::new(watch::channel(0).0),
            relay_here: RelayHere::default(),
            idle_takers: IdleTakers::default(),
            chat_wanted: Arc::new(watch::channel(0).0),
            in_place: Arc::default(),
            queue_wakers: Arc::default(),
            tx_slots: Arc::new(Semaphore::new(tx_slots)),
            definitions: Arc::default(),
            wal: WalCheckpoints::default(),
        }
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

    /// On SQLite, this process's turn to write outside a transaction, taken in order with
    /// the transactions' ([`Store::begin`]): SQLite has one writer at a time, and a write
    /// that finds the lock taken sleeps in SQLite's busy handler (a millisecond and
    /// up) instead of going next. Nothing to wait for on Postgres. A task that holds a
    /// transaction and writes beside it would wait for itself: after [`WRITE_TURN_WAIT`]
    /// the write goes ahead without its turn (and SQLite's busy timeout decides).
    pub(crate) async fn write_turn(&self) -> Option<OwnedSemaphorePermit> {
        let Pool::Sqlite(_) = self.pool else {
            return None;
        };
        match tokio::time::timeout(WRITE_TURN_WAIT, self.tx_slots.clone().acquire_owned()).await {
            Ok(Ok(turn)) => Some(turn),
            Ok(Err(_)) => None,
            Err(_) => {
                tracing::warn!(
                    waited = ?WRITE_TURN_WAIT,
                    "no turn to write came; writing without one"
                );
                None
            }
        }
    }

    /// Closes every connection; pending queries finish first.
    pub async fn close(&self) {
        with_pool!(self, pool => pool.close().await)
    }

    /// A receiver that changes whenever outbox rows are committed by this process.
    pub fn watch_outbox(&self) -> watch::Receiver<u64> {
        self.outbox_written.subscribe()
    }

    /// Tells this process's relay there are outbox rows to claim.
    pub(crate) fn wake_relay(&self) {
        self.outbox_written.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Makes every transaction of this store put the events it appends straight onto the
    /// in-process bus's tables, in the same commit, instead of leaving them in the outbox
    /// for the relay. An event then costs its producer's commit and nothing more before a
    /// consumer can take it: no relay publish and mark-sent, and no hop to the relay.
    ///
    /// SQLite only, where writers take turns and messages are numbered in commit order;
    /// on Postgres, concurrent transactions could commit out of numbering order, so the
    /// relay stays. Returns whether it is on. Other processes on the same database keep
    /// using the outbox, and a relay publishes what they write.
    pub fn publish_in_place(&self) -> bool {
        let sqlite = matches!(self.pool, Pool::Sqlite(_));
        self.in_place.store(sqlite, Ordering::Relaxed);
        sqlite
    }

    /// Whether `other` is this store or a clone of it (one pool, one database).
    pub fn is(&self, other: &Store) -> bool {
        Arc::ptr_eq(&self.queue_wakers, &other.queue_wakers)
    }

    pub(crate) fn publishes_in_place(&self) -> bool {
        self.in_place.load(Ordering::Relaxed)
    }

    /// Notes a write to SQLite, towards the next checkpoint of its log (see `wal.rs`).
    /// Nothing on Postgres.
    pub(crate) fn wal_written(&self) {
        let Pool::Sqlite(pool) = &self.pool else {
            return;
        };
        if self.wal.written() {
            let (store, pool) = (self.clone(), pool.clone());
            tokio::spawn(async move { store.wal.run(&pool, store.write_turn()).await });
        }
    }

    /// A receiver that changes whenever wanted chat messages are committed by this process.
    pub fn watch_chat(&self) -> watch::Receiver<u64> {
        self.chat_wanted.subscribe()
    }

    /// Tells a notifier of this process there are chat messages to post.
    pub(crate) fn wake_chat(&self) {
        self.chat_wanted.send_modify(|n| *n = n.wrapping_add(1));
    }
}

/// SQLite creates its file but not the file's directory. Both are this user's alone: the
/// directory is created 0700 and the database 0600 (SQLite gives its `-wal` and `-shm`
/// files the database's mode), and an existing database readable by others is narrowed
/// to 0600, so tokens, deliveries and logs in it are not readable by every local user.
fn create_sqlite_dir(options: &ConnectOptions) -> Result<(), StoreError> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
    let ConnectOptions::Sqlite(o) = options else {
        return Ok(());
    };
    let file = o.get_filename();
    if file.as_os_str().is_empty() || file.as_os_str() == ":memory:" {
        return Ok(());
    }
    let io = |e: std::io::Error| StoreError::Database(e.into());
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(io)?;
    }
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(file)
    {
        Ok(_) => return Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io(e)),
    }
    for suffix in ["", "-wal", "-shm"] {
        let path = format!("{}{suffix}", file.display());
        if let Ok(meta) = std::fs::metadata(&path)
            && meta.permissions().mode() & 0o077 != 0
        {
            match std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)) {
                Ok(()) => tracing::info!(%path, "narrowed the database file to mode 0600"),
                Err(e) => {
                    tracing::warn!(%path, error = %e, "the database file is readable by others and could not be narrowed to 0600")
                }
            }
        }
    }
    Ok(())
}

fn postgres_pool() -> PgPoolOptions {
    PgPoolOptions::new()
        .max_connections(POSTGRES_CONNECTIONS)
        .acquire_timeout(Duration::from_secs(10))
}

fn sqlite_pool() -> SqlitePoolOptions {
    SqlitePoolOptions::new()
        .max_connections(SQLITE_CONNECTIONS)
        .acquire_timeout(Duration::from_secs(30))
        // A connection to a file cannot have been hung up on, and the default check
        // before handing one out is a round trip to its thread, on every statement
        // outside a transaction and every `begin`.
        .test_before_acquire(false)
}

/// Errors worth retrying at connect time: the server is not there (yet), not that it
/// refused us.
fn is_transient(err: &sqlx::Error) -> bool {
    matches!(
        err,
        sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::Tls(_)
    ) || matches!(err, sqlx::Error::Database(db) if db.code().as_deref() == Some("57P03"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn one_mark_per_id() {
        assert_eq!(super::marks(1, 3), "$1, $2, $3");
        assert_eq!(super::marks(4, 1), "$4");
    }
}
