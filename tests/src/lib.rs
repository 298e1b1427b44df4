//! Test support shared by the end-to-end suites and benchmarks: a fresh database per test
//! on the machine's Postgres or in a temporary SQLite file, and a fresh subject prefix per
//! test on the machine's NATS, each cleaned up afterwards so suites run in parallel and
//! reruns start clean.
//!
//! `GATEHOUSE_TEST_POSTGRES` and `GATEHOUSE_TEST_NATS` override the default addresses.

pub mod agents_image;
pub mod captured;
pub mod fake_discord;
pub mod fake_slack;
pub mod gatehouse;
pub mod latencies;
pub mod private_nats;
pub mod proxy;
pub mod repos;

pub use gatehouse::{Gatehouse, GatehouseBuilder, actor, person};

use std::sync::Arc;
use std::time::Duration;

use backon::ExponentialBuilder;
use gatehouse_bus::{Bus, InProcessBus, JetStreamBus};
use gatehouse_events::{Prefix, StreamKind};
use gatehouse_store::Store;
use uuid::Uuid;

/// The machine's Postgres, as an admin URL.
pub fn postgres_url() -> String {
    std::env::var("GATEHOUSE_TEST_POSTGRES")
        .unwrap_or_else(|_| "postgres://root@127.0.0.1:5432/test".to_owned())
}

/// The machine's NATS.
pub fn nats_url() -> String {
    std::env::var("GATEHOUSE_TEST_NATS").unwrap_or_else(|_| "nats://127.0.0.1:4222".to_owned())
}

/// A short retry policy: tests talk to local services that are up or not.
pub fn quick_retry() -> ExponentialBuilder {
    ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(10))
        .with_max_delay(Duration::from_millis(50))
        .with_max_times(2)
}

/// A database backend under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// A fresh schema on the machine's Postgres.
    Postgres,
    /// A fresh file in a temporary directory.
    Sqlite,
}

/// A migrated store on a database nobody else uses.
pub struct TestDb {
    /// URL of the database, for child processes.
    pub url: String,
    /// The store, connected and migrated.
    pub store: Store,
    schema: Option<String>,
    _dir: Option<tempfile::TempDir>,
}

impl TestDb {
    /// Creates the database and applies migrations.
    pub async fn new(backend: Backend) -> Self {
        let db = Self::unmigrated(backend).await;
        db.store.migrate().await.expect("migrate");
        db
    }

    /// Creates the database without applying migrations (for `gatehouse migrate` to do).
    pub async fn unmigrated(backend: Backend) -> Self {
        let (url, schema, dir) = match backend {
            Backend::Postgres => {
                let schema = format!("t_{}", Uuid::now_v7().simple());
                admin_sql(&format!("CREATE SCHEMA {schema}")).await;
                let url = format!("{}?options%5Bsearch_path%5D={schema}", postgres_url());
                (url, Some(schema), None)
            }
            Backend::Sqlite => {
                let dir = tempfile::tempdir().expect("temp dir");
                let url = format!("sqlite:{}", dir.path().join("gatehouse.db").display());
                (url, None, Some(dir))
            }
        };
        let store = Store::connect(&url, quick_retry()).await.expect("connect");
        Self {
            url,
            store,
            schema,
            _dir: dir,
        }
    }

    /// Drops the Postgres schema (the SQLite directory goes with `self`). A test that
    /// panics before calling this still cleans up, in `Drop`.
    pub async fn cleanup(mut self) {
        self.store.close().await;
        if let Some(schema) = self.schema.take() {
            drop_schema(&schema).await;
        }
    }
}

impl TestDb {
    /// Everything the database holds, as bytes to search: `pg_dump` of the test's schema
    /// for Postgres, the database file and its log for SQLite. For "a secret appears
    /// nowhere" checks, which must not depend on knowing every table.
    pub async fn dump(&self) -> Vec<u8> {
        match &self.schema {
            Some(schema) => {
                let url = postgres_url();
                let output = tokio::process::Command::new("pg_dump")
                    .args(["--data-only", "--schema", schema, "--dbname", &url])
                    .output()
                    .await
                    .expect("pg_dump");
                assert!(
                    output.status.success(),
                    "pg_dump: {}",
                    String::from_utf8_lossy(&output.stderr)
                );
                output.stdout
            }
            None => {
                let dir = self._dir.as_ref().expect("the SQLite directory");
                let mut bytes = Vec::new();
                for entry in std::fs::read_dir(dir.path()).expect("the SQLite directory") {
                    bytes.extend(std::fs::read(entry.expect("entry").path()).unwrap_or_default());
                }
                bytes
            }
        }
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        if let Some(schema) = self.schema.take() {
            block_on_own_thread(async move { drop_schema(&schema).await });
        }
    }
}

/// Drops a test's schema, even when a connection of the test's still holds locks in it.
/// A test that aborts a service's tasks stands in for kill -9, but the pool they shared
/// lives on: a task cut off inside a transaction can leave its connection in the pool
/// with that transaction open, where the kernel would have closed the dead process's
/// socket and Postgres rolled it back. Those backends are ended here, as the kernel would.
async fn drop_schema(schema: &str) {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(&postgres_url())
        .await
        .expect("connect to the machine's Postgres");
    sqlx::raw_sql("SET lock_timeout = '5s'")
        .execute(&mut conn)
        .await
        .expect("SET lock_timeout");
    let drop = format!("DROP SCHEMA IF EXISTS {schema} CASCADE");
    for _ in 0..5 {
        if sqlx::raw_sql(sqlx::AssertSqlSafe(drop.as_str()))
            .execute(&mut conn)
            .await
            .is_ok()
        {
            return;
        }
        sqlx::query(
            "SELECT pg_terminate_backend(l.pid) FROM pg_locks l
               JOIN pg_class c ON c.oid = l.relation
               JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = $1 AND l.pid <> pg_backend_pid()",
        )
        .bind(schema)
        .execute(&mut conn)
        .await
        .expect("ending the backends that hold the schema's locks");
    }
    panic!("could not drop schema {schema}");
}

/// Runs async cleanup from `Drop`, which may be inside a runtime that cannot block.
fn block_on_own_thread(cleanup: impl std::future::Future<Output = ()> + Send + 'static) {
    let _ = std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("cleanup runtime")
            .block_on(cleanup)
    })
    .join();
}

async fn admin_sql(sql: &str) {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(&postgres_url())
        .await
        .expect("connect to the machine's Postgres");
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
        .execute(&mut conn)
        .await
        .expect(sql);
}

/// A subject prefix of its own on the machine's NATS.
pub struct TestNats {
    /// The prefix; streams are `<PREFIX>_EVENTS` and `<PREFIX>_JOBS`.
    pub prefix: Prefix,
    cleaned: bool,
}

impl TestNats {
    /// A fresh prefix.
    pub fn new() -> Self {
        let id = Uuid::now_v7().simple().to_string();
        Self {
            prefix: Prefix::new(&format!("t{}", &id[id.len() - 16..])).expect("valid prefix"),
            cleaned: false,
        }
    }

    /// Deletes this prefix's streams. A test that panics before calling this still cleans
    /// up, in `Drop`.
    pub async fn cleanup(mut self) {
        self.cleaned = true;
        delete_streams(self.prefix.clone()).await;
    }
}

async fn delete_streams(prefix: Prefix) {
    let Ok(client) = async_nats::connect(nats_url()).await else {
        return;
    };
    let js = async_nats::jetstream::new(client);
    for kind in [StreamKind::Events, StreamKind::Jobs] {
        let _ = js.delete_stream(prefix.stream_name(kind)).await;
    }
    let _ = js.delete_object_store(prefix.blob_bucket()).await;
}

impl Drop for TestNats {
    fn drop(&mut self) {
        if !self.cleaned {
            block_on_own_thread(delete_streams(self.prefix.clone()));
        }
    }
}

impl Default for TestNats {
    fn default() -> Self {
        Self::new()
    }
}

/// Which bus a contract test runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BusKind {
    /// JetStream with a Postgres store (distributed mode).
    JetStream,
    /// The in-process bus on SQLite (`gatehouse up`).
    InProcessSqlite,
    /// The in-process bus on Postgres.
    InProcessPostgres,
}

/// A bus with its store, torn down by [`TestBus::cleanup`].
pub struct TestBus {
    /// The bus under test.
    pub bus: Arc<dyn Bus>,
    /// The store its outbox, inbox and dead letters live in.
    pub db: TestDb,
    nats: Option<TestNats>,
}

impl TestBus {
    /// Sets up `kind` on fresh resources.
    pub async fn new(kind: BusKind) -> Self {
        match kind {
            BusKind::JetStream => {
                let db = TestDb::new(Backend::Postgres).await;
                let nats = TestNats::new();
                let bus = JetStreamBus::connect(&nats_url(), nats.prefix.clone(), quick_retry())
                    .await
                    .expect("connect to JetStream");
                Self {
                    bus: Arc::new(bus),
                    db,
                    nats: Some(nats),
                }
            }
            BusKind::InProcessSqlite | BusKind::InProcessPostgres => {
                let backend = if kind == BusKind::InProcessSqlite {
                    Backend::Sqlite
                } else {
                    Backend::Postgres
                };
                let db = TestDb::new(backend).await;
                Self {
                    bus: Arc::new(InProcessBus::new(db.store.clone())),
                    db,
                    nats: None,
                }
            }
        }
    }

    /// A second handle on the same bus, as another process would open it.
    pub async fn reopen(&self) -> Arc<dyn Bus> {
        match &self.nats {
            Some(nats) => Arc::new(
                JetStreamBus::connect(&nats_url(), nats.prefix.clone(), quick_retry())
                    .await
                    .expect("connect to JetStream"),
            ),
            None => Arc::new(InProcessBus::new(self.db.store.clone())),
        }
    }

    /// The blob store every process of this deployment reaches: the JetStream object
    /// store under the bus's prefix (removed with its streams), or for the in-process bus,
    /// a directory standing in for one (`dir`).
    pub async fn blobs(&self, dir: &std::path::Path) -> gatehouse_blobs::Blobs {
        match &self.nats {
            Some(nats) => {
                let client = async_nats::connect(nats_url())
                    .await
                    .expect("connect to NATS");
                Arc::new(
                    gatehouse_blobs::NatsBlobs::new(
                        async_nats::jetstream::new(client),
                        nats.prefix.blob_bucket(),
                    )
                    .expect("a valid bucket name"),
                )
            }
            None => Arc::new(gatehouse_blobs::LocalBlobs::new(dir)),
        }
    }

    /// Releases the database and the NATS streams.
    pub async fn cleanup(self) {
        drop(self.bus);
        self.db.cleanup().await;
        if let Some(nats) = self.nats {
            nats.cleanup().await;
        }
    }
}

/// Generates, for each `NAME`, `mod NAME` with one test per case, each calling
/// `async fn NAME(ARG)`: the one body behind [`on_both_backends!`], [`on_every_bus!`] and
/// [`on_in_process_buses!`].
#[doc(hidden)]
#[macro_export]
macro_rules! each_case {
    (@mod $name:ident [$($case:ident => $arg:expr),* $(,)?]) => {
        mod $name {$(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                super::$name($arg).await
            }
        )*}
    };
    ($cases:tt $(,)?) => {};
    ($cases:tt, $name:ident $(, $rest:ident)* $(,)?) => {
        $crate::each_case!(@mod $name $cases);
        $crate::each_case!($cases $(, $rest)*);
    };
}

/// Generates `mod NAME { postgres, sqlite }` tests calling `async fn NAME(Backend)`, so one
/// suite runs unchanged against both backends.
#[macro_export]
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        $crate::each_case!([
            postgres => $crate::Backend::Postgres,
            sqlite => $crate::Backend::Sqlite,
        ] $(, $name)*);
    };
}

/// Generates `mod NAME { jetstream, in_process_sqlite, in_process_postgres }` tests calling
/// `async fn NAME(BusKind)`, so one contract suite runs against every bus.
#[macro_export]
macro_rules! on_every_bus {
    ($($name:ident),* $(,)?) => {
        $crate::each_case!([
            jetstream => $crate::BusKind::JetStream,
            in_process_sqlite => $crate::BusKind::InProcessSqlite,
            in_process_postgres => $crate::BusKind::InProcessPostgres,
        ] $(, $name)*);
    };
}

/// Generates `mod NAME { in_process_sqlite, in_process_postgres }` tests calling
/// `async fn NAME(BusKind)`, for what only the in-process bus has (its delivery rows).
#[macro_export]
macro_rules! on_in_process_buses {
    ($($name:ident),* $(,)?) => {
        $crate::each_case!([
            in_process_sqlite => $crate::BusKind::InProcessSqlite,
            in_process_postgres => $crate::BusKind::InProcessPostgres,
        ] $(, $name)*);
    };
}

/// Requests `count` runs of `sop` as the API does (`run.requested` events in the outbox, 500
/// to a transaction), asked for by `person`, with no requirement; returns their ids.
pub async fn request_runs(store: &Store, sop: &str, count: usize, person: &str) -> Vec<uuid::Uuid> {
    use gatehouse_events::{Envelope, Event, RunRequested};
    let mut ids = Vec::with_capacity(count);
    for chunk in (0..count).collect::<Vec<_>>().chunks(500) {
        let mut tx = store.begin().await.expect("begin");
        for _ in chunk {
            let run_id = uuid::Uuid::now_v7();
            let event = Event::RunRequested(RunRequested {
                run_id,
                sop: sop.into(),
                params: std::collections::BTreeMap::new(),
                requirement_id: None,
                requested_by: actor(person),
                schedule: None,
                parent: None,
                workspace: None,
            });
            tx.append_outbox(&Envelope::new("test", &event, None).expect("envelope"))
                .await
                .expect("append");
            ids.push(run_id);
        }
        tx.commit().await.expect("commit");
    }
    ids
}

/// The fakes here (Slack, Discord) are served the way the fake forge's GitHub is.
pub use gatehouse_fake_forge::serve_fake;

/// Serves `routes` (ingest's) on a free loopback port until `stop`, through the same
/// listener and limits as `gatehouse up`; returns its URL.
pub async fn serve_routes(
    routes: axum::Router,
    stop: tokio_util::sync::CancellationToken,
) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(gatehouse_fleet::serve(
        listener,
        routes,
        gatehouse_fleet::Limits::default(),
        "main",
        stop,
    ));
    url
}

/// Whether a process has ended (a zombie not yet reaped by init counts as ended), waiting up
/// to two seconds for it.
pub fn process_gone(pid: &str) -> bool {
    for _ in 0..100 {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return true,
            Ok(stat)
                if stat
                    .rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z') =>
            {
                return true;
            }
            Ok(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    false
}

/// The process id a test script wrote to `file` (`echo $$ > file`), waiting up to ten
/// seconds for it. Waits for a whole number, not just the file: the shell creates the
/// file before it writes to it.
pub fn script_pid(file: &std::path::Path) -> String {
    for _ in 0..400 {
        if let Ok(text) = std::fs::read_to_string(file)
            && text.ends_with('\n')
            && text.trim().parse::<u32>().is_ok()
        {
            return text.trim().to_owned();
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("no process id was written to {}", file.display());
}

/// The static sandbox relay: `SANDBOX_RELAY` when set (CI builds it once), else built with
/// deploy/sandbox/build-relay.sh (quick when up to date).
pub fn relay_binary() -> std::path::PathBuf {
    static BINARY: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    BINARY
        .get_or_init(|| {
            if let Some(path) = std::env::var_os("SANDBOX_RELAY") {
                return path.into();
            }
            let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../deploy/sandbox/build-relay.sh");
            let output = std::process::Command::new("bash")
                .arg(&script)
                .stderr(std::process::Stdio::inherit())
                .output()
                .expect("running build-relay.sh");
            assert!(output.status.success(), "build-relay.sh failed");
            let stdout = String::from_utf8(output.stdout).expect("a path");
            // The directory holding the relay and the ACP shim.
            let dir = std::path::PathBuf::from(stdout.lines().last().expect("a path").trim());
            dir.join("gatehouse-relay")
        })
        .clone()
}
