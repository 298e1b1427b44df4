//! NATS or Postgres going away and coming back: nothing committed to the outbox is lost and
//! nothing is applied twice. Each test runs a private server (the machine's binaries on a
//! free port with their own storage), so restarting it disturbs no other test.

use std::collections::BTreeSet;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use gatehouse_bus::{
    Bus, Consumer, ConsumerOptions, ConsumerSpec, Handler, HandlerError, JetStreamBus, RelayOptions,
};
use gatehouse_events::{Envelope, Event, NodeProgress, Prefix};
use gatehouse_fleet::Fleet;
use gatehouse_store::{Store, Tx};
use gatehouse_tests::private_nats::{PrivateNats, free_port, wait_for_port};
use gatehouse_tests::{Backend, TestDb, quick_retry};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

#[derive(Default)]
struct Applied(Mutex<Vec<String>>);

#[async_trait]
impl Handler for Applied {
    async fn handle(&self, _tx: &mut Tx, event: &Envelope) -> Result<(), HandlerError> {
        let Event::NodeProgress(p) = event.decode()? else {
            return Err("unexpected event".into());
        };
        self.0.lock().unwrap().push(p.message);
        Ok(())
    }
}

/// A relay and a consumer that records what it applies, as a service runs them.
struct Pipeline {
    store: Store,
    fleet: Fleet,
    applied: Arc<Applied>,
}

impl Pipeline {
    fn start(store: &Store, bus: Arc<dyn Bus>) -> Self {
        let applied = Arc::new(Applied::default());
        let consumer = {
            let spec = ConsumerSpec {
                ack_wait: Duration::from_secs(2),
                ..ConsumerSpec::new("survivor", "node.progress")
            };
            let options = ConsumerOptions {
                retry_delay: Duration::from_millis(200),
                ..ConsumerOptions::new(spec)
            };
            let consumer = Consumer::new(bus.clone(), store.clone(), options);
            let applied = applied.clone();
            move |stop| async move { consumer.run(&*applied, stop).await }
        };
        let fleet = Fleet::builder(store.clone(), bus)
            .relay(RelayOptions {
                retry_delay: Duration::from_millis(200),
                poll: Duration::from_millis(100),
                ..RelayOptions::default()
            })
            .task(consumer)
            .spawn(CancellationToken::new());
        Self {
            store: store.clone(),
            fleet,
            applied,
        }
    }

    /// Commits five events labelled `label` to the outbox.
    async fn emit_five(&self, label: &str) {
        for i in 0..5 {
            let event = Event::NodeProgress(NodeProgress {
                run_id: Uuid::now_v7(),
                node: "n".into(),
                attempt: 1,
                message: format!("{label} {i}"),
            });
            let mut tx = self.store.begin().await.unwrap();
            tx.append_outbox(&Envelope::new("restart-test", &event, None).unwrap())
                .await
                .unwrap();
            tx.commit().await.unwrap();
        }
    }

    async fn wait_for(&self, n: usize) {
        for _ in 0..1500 {
            if self.applied.0.lock().unwrap().len() >= n {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!(
            "only {:?} applied, expected {n}",
            self.applied.0.lock().unwrap()
        );
    }

    /// Waits for `expected` events, stops, and checks each was applied exactly once and
    /// nothing is left in the outbox.
    async fn finish(self, expected: usize) {
        self.wait_for(expected).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        self.fleet.stop().await;
        let applied = self.applied.0.lock().unwrap().clone();
        let unique: BTreeSet<_> = applied.iter().collect();
        assert_eq!(
            applied.len(),
            expected,
            "applied exactly once each: {applied:?}"
        );
        assert_eq!(unique.len(), expected);
        assert_eq!(self.store.outbox_backlog().await.unwrap(), 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nats_restart_loses_nothing_and_repeats_nothing() {
    let mut nats = PrivateNats::start();
    let db = TestDb::new(Backend::Postgres).await;
    // The server is private, so the default prefix collides with nobody.
    let bus: Arc<dyn Bus> = Arc::new(
        JetStreamBus::connect(&nats.url(), Prefix::default(), quick_retry())
            .await
            .unwrap(),
    );

    let pipeline = Pipeline::start(&db.store, bus);
    pipeline.emit_five("before").await;
    pipeline.wait_for(5).await;

    nats.kill();
    pipeline.emit_five("during").await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        db.store.outbox_backlog().await.unwrap() > 0,
        "nothing can be relayed while NATS is down"
    );
    nats.restart();
    pipeline.emit_five("after").await;
    pipeline.finish(15).await;
    db.cleanup().await;
}

/// A Postgres cluster of this test's own, run as the `postgres` user when the test runs as
/// root (Postgres refuses root).
struct PrivatePostgres {
    port: u16,
    dir: tempfile::TempDir,
}

impl PrivatePostgres {
    fn bin(tool: &str) -> String {
        let dir = std::env::var("GATEHOUSE_TEST_PG_BIN").unwrap_or_else(|_| {
            let mut found: Vec<_> = std::fs::read_dir("/usr/lib/postgresql")
                .expect("Postgres server binaries under /usr/lib/postgresql")
                .map(|e| e.unwrap().path().join("bin"))
                .collect();
            found.sort();
            found.pop().unwrap().display().to_string()
        });
        format!("{dir}/{tool}")
    }

    fn pg(&self, tool: &str, args: &[&str]) {
        let as_root = std::env::var("USER").map(|u| u == "root").unwrap_or(false)
            || Command::new("id")
                .arg("-u")
                .output()
                .map(|o| o.stdout == b"0\n")
                .unwrap_or(false);
        let mut command = if as_root {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--", &Self::bin(tool)]);
            c
        } else {
            Command::new(Self::bin(tool))
        };
        let out = command.args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{tool} {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn data(&self) -> String {
        self.dir.path().join("data").display().to_string()
    }

    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        // The server user must reach its directory.
        Command::new("chmod")
            .args(["0777"])
            .arg(dir.path())
            .status()
            .unwrap();
        let pg = Self {
            port: free_port(),
            dir,
        };
        pg.pg(
            "initdb",
            &["-D", &pg.data(), "-A", "trust", "-U", "root", "--no-sync"],
        );
        pg.restart();
        pg
    }

    fn restart(&self) {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            self.port,
            self.dir.path().display()
        );
        let log = self.dir.path().join("log").display().to_string();
        self.pg(
            "pg_ctl",
            &[
                "-D",
                &self.data(),
                "-o",
                &options,
                "-l",
                &log,
                "-w",
                "start",
            ],
        );
        wait_for_port(self.port);
    }

    /// Stops like a crash: no checkpoint, clients cut off.
    fn kill(&self) {
        self.pg("pg_ctl", &["-D", &self.data(), "-m", "immediate", "stop"]);
    }

    fn url(&self) -> String {
        format!("postgres://root@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        let _ = std::panic::catch_unwind(|| self.kill());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_restart_loses_nothing_and_repeats_nothing() {
    let postgres = PrivatePostgres::start();
    let store = Store::connect(&postgres.url(), quick_retry())
        .await
        .unwrap();
    store.migrate().await.unwrap();
    let bus: Arc<dyn Bus> = Arc::new(gatehouse_bus::InProcessBus::new(store.clone()));

    let pipeline = Pipeline::start(&store, bus);
    pipeline.emit_five("before").await;
    pipeline.wait_for(5).await;

    // A short outage: writes made during it wait for the pool to reconnect and succeed.
    postgres.kill();
    let postgres = Arc::new(postgres);
    let restart = tokio::task::spawn_blocking({
        let postgres = postgres.clone();
        move || {
            std::thread::sleep(Duration::from_millis(500));
            postgres.restart();
        }
    });
    pipeline.emit_five("during").await;
    restart.await.unwrap();
    pipeline.emit_five("after").await;
    pipeline.finish(15).await;
}
