//! `gatehouse serve`: each service in its own process on Postgres and NATS JetStream —
//! two schedulers, two runners, ingest and the notifier — driven through the CLI as an
//! operator would: a service started before `gatehouse migrate` waits (503 on `/readyz`),
//! runs go through gates decided by a reviewer, every service answers its probes and
//! metrics, and SIGTERM stops each one cleanly.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use gatehouse_tests::{Backend, TestDb, TestNats, nats_url};
use serde_json::Value;

/// The processes of one deployment, on one database schema and NATS prefix.
struct Fleet {
    dir: tempfile::TempDir,
    db_url: String,
    prefix: String,
    ports: BTreeMap<&'static str, u16>,
    children: BTreeMap<&'static str, Child>,
}

impl Fleet {
    fn new(db_url: &str, prefix: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("gatehouse.toml"),
            "[server]\nsop_dirs = [\"sops\"]\n[runner]\nlease = \"2s\"\n[[people]]\nid = \"ana\"\ngroups = [\"leads\"]\n[[people]]\nid = \"admin\"\ngroups = [\"leads\"]\n",
        )
        .unwrap();
        Self {
            dir,
            db_url: db_url.to_owned(),
            prefix: prefix.to_owned(),
            ports: BTreeMap::new(),
            children: BTreeMap::new(),
        }
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn gatehouse(&self) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_gatehouse"));
        command
            .current_dir(self.dir.path())
            .env("GATEHOUSE_DATABASE_URL", &self.db_url)
            .env("GATEHOUSE_NATS_URL", nats_url())
            .env("GATEHOUSE_NATS_PREFIX", &self.prefix)
            .env("GATEHOUSE_DATA_DIR", self.data_dir())
            .env("GATEHOUSE_LOG", "warn")
            .env_remove("GATEHOUSE_TOKEN");
        command
    }

    /// Starts `service` as the process `name` on a free port.
    fn start(&mut self, name: &'static str, service: &str) {
        let port = *self.ports.entry(name).or_insert_with(|| {
            std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port()
        });
        let child = self
            .gatehouse()
            .args(["serve", service, "--listen", &format!("127.0.0.1:{port}")])
            .env("GATEHOUSE_RUNNER__ID", name)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.children.insert(name, child);
    }

    /// Status line and body of a GET to `name`'s listener (empty when it does not answer).
    fn get(&self, name: &str, path: &str) -> (u16, String) {
        let port = self.ports[name];
        let out = Command::new("bash")
            .args(["-c", &format!("exec 3<>/dev/tcp/127.0.0.1/{port} && printf 'GET {path} HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3")])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let status = text
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let body = text
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_owned())
            .unwrap_or_default();
        (status, body)
    }

    fn wait_ready(&self, name: &str) {
        for _ in 0..600 {
            if self.get(name, "/readyz").0 == 200 {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("{name} never became ready: {:?}", self.get(name, "/readyz"));
    }

    /// A CLI verb against ingest, with `--json`; panics on failure.
    fn cli(&self, args: &[&str]) -> Value {
        let out: Output = self
            .gatehouse()
            .args(args)
            .args([
                "--json",
                "--server",
                &format!("http://127.0.0.1:{}", self.ports["ingest"]),
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    fn wait_status(&self, run: &str, status: &str) {
        for _ in 0..600 {
            if self.cli(&["run", "show", run])["status"] == status {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "run {run} never became {status}: {:#}",
            self.cli(&["run", "show", run])
        );
    }

    /// SIGTERM to `name`; its exit status once it has stopped.
    fn terminate(&mut self, name: &str) -> std::process::ExitStatus {
        let mut child = self.children.remove(name).unwrap();
        let pid = child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        for _ in 0..200 {
            if let Some(status) = child.try_wait().unwrap() {
                return status;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        panic!("{name} did not stop within 10 s of SIGTERM");
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for child in self.children.values_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_services_run_as_separate_processes() {
    let db = TestDb::unmigrated(Backend::Postgres).await;
    let nats = TestNats::new();
    let mut fleet = Fleet::new(&db.url, nats.prefix.as_str());

    // Started before the migrations: alive, not ready, waiting.
    fleet.start("scheduler-1", "scheduler");
    let mut waiting = (0, String::new());
    for _ in 0..200 {
        waiting = fleet.get("scheduler-1", "/readyz");
        if waiting.0 == 503 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(waiting.0, 503, "{waiting:?}");
    assert!(waiting.1.starts_with("database: "), "{waiting:?}");
    assert_eq!(fleet.get("scheduler-1", "/healthz"), (200, "ok\n".into()));
    let migrated = fleet.gatehouse().arg("migrate").output().unwrap();
    assert!(
        migrated.status.success(),
        "{}",
        String::from_utf8_lossy(&migrated.stderr)
    );
    fleet.wait_ready("scheduler-1");

    for (name, service) in [
        ("ingest", "ingest"),
        ("scheduler-2", "scheduler"),
        ("runner-1", "runner"),
        ("runner-2", "runner"),
        ("notifier", "notifier"),
    ] {
        fleet.start(name, service);
    }
    for name in ["ingest", "scheduler-2", "runner-1", "runner-2", "notifier"] {
        fleet.wait_ready(name);
    }

    let reviewer = fleet.cli(&["token", "create", "ana"])["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let runs: Vec<String> = (0..6)
        .map(|_| {
            fleet.cli(&["run", "start", "platform-check"])["run_id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    for run in &runs {
        fleet.wait_status(run, "waiting");
        fleet.cli(&[
            "gate",
            "approve",
            &format!("{run}/confirm"),
            "--token",
            &reviewer,
        ]);
    }
    for run in &runs {
        fleet.wait_status(run, "succeeded");
        let shown = fleet.cli(&["run", "show", run]);
        let attempts = shown["attempts"].as_array().unwrap();
        assert!(
            attempts
                .iter()
                .all(|a| a["attempt"] == 1 && a["status"] == "succeeded"),
            "{shown:#}"
        );
    }

    let (status, metrics) = fleet.get("runner-1", "/metrics");
    assert_eq!(status, 200);
    assert!(
        metrics.is_empty() || metrics.contains("gatehouse_"),
        "{metrics}"
    );
    for name in [
        "ingest",
        "scheduler-1",
        "scheduler-2",
        "runner-1",
        "runner-2",
        "notifier",
    ] {
        let status = fleet.terminate(name);
        assert!(
            status.success(),
            "{name} exited with {status} after SIGTERM"
        );
    }
    drop(fleet);
    db.cleanup().await;
    nats.cleanup().await;
}
