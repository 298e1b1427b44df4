//! The processes of one distributed deployment, for the tests that run `gatehouse serve`:
//! each service started, probed, stopped or killed as an operator would.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};

use serde_json::Value;

use super::cli;
use super::http;
use super::process::{Process, gatehouse};

/// The processes of one deployment, on one database schema and NATS prefix.
pub struct Deployment {
    /// First, so that they are killed before their directory goes.
    processes: BTreeMap<&'static str, Process>,
    /// Holds gatehouse.toml (which `extra` extends), `sops/` and `data/`.
    pub dir: tempfile::TempDir,
    db_url: String,
    nats_url: String,
    prefix: String,
    ports: BTreeMap<&'static str, u16>,
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
            processes: BTreeMap::new(),
            dir,
            db_url: db_url.to_owned(),
            nats_url: nats_url.to_owned(),
            prefix: prefix.to_owned(),
            ports: BTreeMap::new(),
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
        let mut command = gatehouse();
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
        let process = Process::spawn(
            name,
            self.gatehouse()
                .args(["serve", service, "--listen", &format!("127.0.0.1:{port}")])
                .env("GATEHOUSE_RUNNER__ID", name)
                .env("GATEHOUSE_DATA_DIR", self.data_dir(name))
                .stdout(Stdio::null())
                .stderr(self.log_file(name)),
        );
        self.processes.insert(name, process);
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

    /// Status and body of a GET to `name`'s listener (status 0 and no body when it does
    /// not answer).
    pub fn get(&self, name: &str, path: &str) -> (u16, String) {
        http::get(self.ports[name], path, None).unwrap_or_default()
    }

    /// Waits until `name` answers `/readyz` with 200.
    pub fn wait_ready(&self, name: &str) {
        http::wait_ready(self.ports[name], name, String::new);
    }

    /// A CLI verb against ingest, with `--json`; panics on failure.
    pub fn cli(&self, args: &[&str]) -> Value {
        let out = self
            .gatehouse()
            .args(args)
            .args(["--json", "--server", &self.url("ingest")])
            .output()
            .unwrap();
        cli::json(args, &out)
    }

    /// Waits until the run has `status`.
    pub fn wait_status(&self, run: &str, status: &str) {
        cli::wait_status(run, status, || self.cli(&["run", "show", run]));
    }

    /// SIGTERM to `name`; its exit status once it has stopped (within 10 s).
    pub fn terminate(&mut self, name: &str) -> ExitStatus {
        let mut process = self.processes.remove(name).unwrap();
        process.terminate(std::time::Duration::from_secs(10))
    }

    /// SIGKILL to `name`: no shutdown at all.
    pub fn kill_9(&mut self, name: &str) {
        if let Some(process) = self.processes.remove(name) {
            process.kill_9();
        }
    }

    /// Whether `name` is running.
    pub fn running(&self, name: &str) -> bool {
        self.processes.contains_key(name)
    }

    /// Whether `name`'s process is still alive (it has not exited by itself).
    pub fn alive(&mut self, name: &str) -> bool {
        self.processes.get_mut(name).is_some_and(Process::alive)
    }
}
