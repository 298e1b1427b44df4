//! The processes of one distributed deployment, for the tests that run `gatehouse serve`:
//! each service started, probed, stopped or killed as an operator would.

#![allow(dead_code)] // each test binary uses a part

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

/// The processes of one deployment, on one database schema and NATS prefix.
pub struct Deployment {
    /// Holds gatehouse.toml (which `extra` extends), `sops/` and `data/`.
    pub dir: tempfile::TempDir,
    db_url: String,
    nats_url: String,
    prefix: String,
    ports: BTreeMap<&'static str, u16>,
    children: BTreeMap<&'static str, Child>,
    /// Where each process's output goes (`<name>.log`, appended), when set.
    logs: Option<PathBuf>,
}

impl Deployment {
    /// A deployment on `db_url`, NATS at `nats_url` under `prefix`, with `extra` appended
    /// to its configuration file.
    pub fn new(db_url: &str, nats_url: &str, prefix: &str, extra: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("sops")).unwrap();
        std::fs::write(
            dir.path().join("gatehouse.toml"),
            format!("[server]\nsop_dirs = [\"sops\"]\n[runner]\nlease = \"2s\"\n[[people]]\nid = \"ana\"\ngroups = [\"leads\"]\n[[people]]\nid = \"admin\"\ngroups = [\"leads\"]\n{extra}"),
        )
        .unwrap();
        Self {
            dir,
            db_url: db_url.to_owned(),
            nats_url: nats_url.to_owned(),
            prefix: prefix.to_owned(),
            ports: BTreeMap::new(),
            children: BTreeMap::new(),
            logs: None,
        }
    }

    /// Keeps the output of every process started from now on in `dir/<name>.log`
    /// (appended across restarts) instead of discarding it.
    pub fn log_to(&mut self, dir: PathBuf) {
        std::fs::create_dir_all(&dir).unwrap();
        self.logs = Some(dir);
    }

    /// The data directory of process `name`. Every process has its own, as on a machine
    /// of its own: nothing passes between them on disk (blobs are in NATS).
    pub fn data_dir(&self, name: &str) -> PathBuf {
        self.dir.path().join("data").join(name)
    }

    /// A `gatehouse` command with this deployment's environment; its data directory is
    /// the first ingest's, where the admin token is.
    pub fn gatehouse(&self) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_gatehouse"));
        command
            .current_dir(self.dir.path())
            .env("GATEHOUSE_DATABASE_URL", &self.db_url)
            .env("GATEHOUSE_NATS_URL", &self.nats_url)
            .env("GATEHOUSE_NATS_PREFIX", &self.prefix)
            .env("GATEHOUSE_DATA_DIR", self.data_dir("ingest"))
            .env("GATEHOUSE_LOG", "warn")
            .env_remove("GATEHOUSE_TOKEN");
        command
    }

    /// Starts `service` as the process `name` on a free port.
    pub fn start(&mut self, name: &'static str, service: &str) {
        let port = *self
            .ports
            .entry(name)
            .or_insert_with(gatehouse_tests::private_nats::free_port);
        let child = self
            .gatehouse()
            .args(["serve", service, "--listen", &format!("127.0.0.1:{port}")])
            .env("GATEHOUSE_RUNNER__ID", name)
            .env("GATEHOUSE_DATA_DIR", self.data_dir(name))
            .stdout(Stdio::null())
            .stderr(self.log_file(name))
            .spawn()
            .unwrap();
        self.children.insert(name, child);
    }

    /// Where `name`'s output goes.
    fn log_file(&self, name: &str) -> Stdio {
        match &self.logs {
            Some(dir) => std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(dir.join(format!("{name}.log")))
                .unwrap()
                .into(),
            None => Stdio::null(),
        }
    }

    /// The base URL of `name`'s listener.
    pub fn url(&self, name: &str) -> String {
        format!("http://127.0.0.1:{}", self.ports[name])
    }

    /// Status line and body of a GET to `name`'s listener (empty when it does not answer).
    pub fn get(&self, name: &str, path: &str) -> (u16, String) {
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

    /// Waits until `name` answers `/readyz` with 200.
    pub fn wait_ready(&self, name: &str) {
        for _ in 0..600 {
            if self.get(name, "/readyz").0 == 200 {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("{name} never became ready: {:?}", self.get(name, "/readyz"));
    }

    /// A CLI verb against ingest, with `--json`; panics on failure.
    pub fn cli(&self, args: &[&str]) -> Value {
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

    /// Waits until the run has `status`.
    pub fn wait_status(&self, run: &str, status: &str) {
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
    pub fn terminate(&mut self, name: &str) -> ExitStatus {
        let mut child = self.children.remove(name).unwrap();
        terminate(&mut child, name, Duration::from_secs(10))
    }
}

/// SIGTERM to `child` (`name` in the message); its exit status once it has stopped, which
/// must be `within` the given time (else it is killed and the test fails).
pub fn terminate(child: &mut Child, name: &str, within: Duration) -> ExitStatus {
    let pid = child.id().to_string();
    Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    let start = std::time::Instant::now();
    while start.elapsed() < within {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    let _ = child.kill();
    panic!("{name} did not stop within {within:?} of SIGTERM");
}

impl Deployment {
    /// SIGKILL to `name`: no shutdown at all.
    pub fn kill_9(&mut self, name: &str) {
        if let Some(mut child) = self.children.remove(name) {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Whether `name` is running.
    pub fn running(&self, name: &str) -> bool {
        self.children.contains_key(name)
    }

    /// Whether `name`'s process is still alive (it has not exited by itself).
    pub fn alive(&mut self, name: &str) -> bool {
        self.children
            .get_mut(name)
            .is_some_and(|child| child.try_wait().unwrap().is_none())
    }
}

impl Drop for Deployment {
    fn drop(&mut self) {
        for child in self.children.values_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
