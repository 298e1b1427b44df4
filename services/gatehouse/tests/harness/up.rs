//! One `gatehouse up` of a test's own, on a free port and a directory of its own: built
//! with [`Up::builder`], then started, probed, driven through the CLI, restarted, stopped
//! and killed by its verbs.

use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{ChildStderr, Command, ExitStatus, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

use super::cli;
use super::http;
use super::process::{Process, gatehouse};

/// Where the process's standard error goes.
enum Stderr {
    Null,
    /// Appended to this file of the directory, across restarts.
    File(String),
    Piped,
}

/// How a [`Up`] is started; [`UpBuilder::start`] or [`UpBuilder::spawn`] starts it.
pub struct UpBuilder {
    dir: Option<tempfile::TempDir>,
    config: Option<String>,
    sops: Vec<(String, String)>,
    env: Vec<(String, String)>,
    env_remove: Vec<String>,
    data_dir_flag: bool,
    stderr: Stderr,
}

impl UpBuilder {
    /// Runs in `dir` (which may hold SOPs, stand-ins and more) instead of a fresh one.
    pub fn dir(mut self, dir: tempfile::TempDir) -> Self {
        self.dir = Some(dir);
        self
    }

    /// `text` as `gatehouse.toml`. Without it there is no configuration file at all.
    pub fn config(mut self, text: &str) -> Self {
        self.config = Some(text.to_owned());
        self
    }

    /// `sops/<name>.yaml` for each SOP (the configuration names `sops` in `sop_dirs`).
    pub fn sops(mut self, sops: &[(&str, &str)]) -> Self {
        self.sops.extend(
            sops.iter()
                .map(|(name, text)| ((*name).to_owned(), (*text).to_owned())),
        );
        self
    }

    /// `key` set to `value` in the process's environment (secrets come from here;
    /// `GATEHOUSE_LOG` is `warn` unless set so).
    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.to_owned(), value.to_owned()));
        self
    }

    /// Each pair of `env` set in the process's environment.
    pub fn envs(mut self, env: impl IntoIterator<Item = (String, String)>) -> Self {
        self.env.extend(env);
        self
    }

    /// `key` taken out of the environment the process inherits from the test.
    pub fn env_remove(mut self, key: &str) -> Self {
        self.env_remove.push(key.to_owned());
        self
    }

    /// No `--data-dir`: the data goes where README's `gatehouse up` puts it,
    /// `./.gatehouse`.
    pub fn readme_data_dir(mut self) -> Self {
        self.data_dir_flag = false;
        self
    }

    /// The process's standard error appended to `name` in its directory, and shown when it
    /// does not become ready.
    pub fn stderr_to(mut self, name: &str) -> Self {
        self.stderr = Stderr::File(name.to_owned());
        self
    }

    /// The process's standard error on a pipe, for [`Up::take_stderr`].
    pub fn stderr_piped(mut self) -> Self {
        self.stderr = Stderr::Piped;
        self
    }

    /// Starts it and waits until `/readyz` answers 200.
    pub fn start(self) -> Up {
        let up = self.spawn();
        up.wait_ready();
        up
    }

    /// Starts it without waiting for anything.
    pub fn spawn(self) -> Up {
        let dir = match self.dir {
            Some(dir) => dir,
            None => tempfile::tempdir().unwrap(),
        };
        if let Some(config) = &self.config {
            std::fs::write(dir.path().join("gatehouse.toml"), config).unwrap();
        }
        if !self.sops.is_empty() {
            std::fs::create_dir_all(dir.path().join("sops")).unwrap();
        }
        for (name, text) in &self.sops {
            std::fs::write(dir.path().join(format!("sops/{name}.yaml")), text).unwrap();
        }
        let mut up = Up {
            dir,
            port: gatehouse_tests::private_nats::free_port(),
            data_dir_flag: self.data_dir_flag,
            env: self.env,
            env_remove: self.env_remove,
            stderr: self.stderr,
            process: None,
        };
        up.spawn();
        up
    }
}

/// A `gatehouse up` on a free port, in a temporary directory (or the test's), killed when
/// dropped.
pub struct Up {
    /// First, so that it is killed before its directory goes.
    process: Option<Process>,
    dir: tempfile::TempDir,
    port: u16,
    /// Whether `--data-dir` is passed (else README's `./.gatehouse`).
    data_dir_flag: bool,
    env: Vec<(String, String)>,
    env_remove: Vec<String>,
    stderr: Stderr,
}

impl Up {
    /// Nothing configured yet: a fresh directory, no configuration file, data in `data/`.
    pub fn builder() -> UpBuilder {
        UpBuilder {
            dir: None,
            config: None,
            sops: Vec::new(),
            env: Vec::new(),
            env_remove: Vec::new(),
            data_dir_flag: true,
            stderr: Stderr::Null,
        }
    }

    /// Its working directory.
    pub fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// Its port on loopback.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its base URL.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Its data directory.
    pub fn data_dir(&self) -> PathBuf {
        if self.data_dir_flag {
            self.dir.path().join("data")
        } else {
            self.dir.path().join(".gatehouse")
        }
    }

    /// The admin token it wrote at its first start.
    pub fn admin_token(&self) -> String {
        std::fs::read_to_string(self.data_dir().join("admin.token"))
            .unwrap()
            .trim()
            .to_owned()
    }

    fn spawn(&mut self) {
        let mut command = gatehouse();
        command.args(["up", "--listen", &format!("127.0.0.1:{}", self.port)]);
        if self.data_dir_flag {
            command.arg("--data-dir").arg(self.data_dir());
        }
        command
            .current_dir(self.dir.path())
            .env("GATEHOUSE_LOG", "warn")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::null())
            .stderr(self.stderr());
        for key in &self.env_remove {
            command.env_remove(key);
        }
        self.process = Some(Process::spawn("gatehouse up", &mut command));
    }

    fn stderr(&self) -> Stdio {
        match &self.stderr {
            Stderr::Null => Stdio::null(),
            Stderr::Piped => Stdio::piped(),
            Stderr::File(name) => std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(self.dir.path().join(name))
                .unwrap()
                .into(),
        }
    }

    /// What it logged so far, when its standard error goes to a file.
    pub fn log(&self) -> String {
        match &self.stderr {
            Stderr::File(name) => {
                std::fs::read_to_string(self.dir.path().join(name)).unwrap_or_default()
            }
            _ => String::new(),
        }
    }

    /// Waits until `/readyz` answers 200.
    pub fn wait_ready(&self) {
        http::wait_ready(self.port, "gatehouse up", || {
            format!("in {}\n{}", self.dir.path().display(), self.log())
        });
    }

    /// Starts it again on the same port, directory and environment, and waits until it
    /// is ready.
    pub fn restart(&mut self) {
        self.spawn();
        self.wait_ready();
    }

    /// SIGKILL: no shutdown, no flush.
    pub fn kill_9(&mut self) {
        if let Some(process) = self.process.take() {
            process.kill_9();
        }
    }

    /// SIGTERM; its exit status once stopped, which must be `within` the given time.
    pub fn terminate(&mut self, within: Duration) -> ExitStatus {
        self.process_mut().terminate(within)
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.process.as_ref().expect("running").id()
    }

    /// Its standard error, when started with [`UpBuilder::stderr_piped`].
    pub fn take_stderr(&mut self) -> ChildStderr {
        self.process_mut().take_stderr().expect("a piped stderr")
    }

    fn process_mut(&mut self) -> &mut Process {
        self.process.as_mut().expect("running")
    }

    /// A raw connection to its listener, read with a 30 s timeout.
    pub fn connect(&self) -> TcpStream {
        let stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        stream
    }

    /// Status and body of a GET, with `token` as the bearer.
    pub fn get(&self, path: &str, token: Option<&str>) -> std::io::Result<(u16, String)> {
        http::get(self.port, path, token)
    }

    /// The body of an unauthenticated GET.
    pub fn http_get(&self, path: &str) -> String {
        self.get(path, None).unwrap().1
    }

    /// Whether `/readyz` answers 200.
    pub fn ready(&self) -> bool {
        http::ready(self.port)
    }

    /// A CLI command against it: its server and data directory, no token from the test's
    /// environment.
    pub fn gatehouse(&self) -> Command {
        let mut command = gatehouse();
        command
            .current_dir(self.dir.path())
            .env_remove("GATEHOUSE_TOKEN");
        command
    }

    /// Runs a CLI verb against it.
    pub fn cli(&self, args: &[&str]) -> Output {
        self.gatehouse()
            .args(args)
            .args(["--server", &self.url(), "--data-dir"])
            .arg(self.data_dir())
            .output()
            .unwrap()
    }

    /// Runs a CLI verb with `--json` and parses its output; panics on failure.
    pub fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        cli::json(args, &self.cli(&all))
    }

    /// Runs a CLI verb expected to fail; returns its error line.
    pub fn fails(&self, args: &[&str]) -> String {
        let out = self.cli(args);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{args:?} should fail: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8_lossy(&out.stderr).trim().to_owned()
    }

    /// A token for `person`, made with the admin token.
    pub fn token(&self, person: &str) -> String {
        self.json(&["token", "create", person])["token"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// Starts a run of `sop`; its id.
    pub fn start_run(&self, sop: &str) -> String {
        self.json(&["run", "start", sop])["run_id"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// `run show --json`.
    pub fn show(&self, run: &str) -> Value {
        self.json(&["run", "show", run])
    }

    /// Waits until the run has `status`; what `run show` showed then.
    pub fn wait(&self, run: &str, status: &str) -> Value {
        cli::wait_status(run, status, || self.show(run))
    }

    /// `node` of a shown run.
    pub fn node<'a>(shown: &'a Value, node: &str) -> &'a Value {
        shown["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["node"] == node)
            .unwrap()
    }

    /// The text of an artifact in the data directory.
    pub fn artifact(&self, run: &str, node: &str, attempt: u32, name: &str) -> String {
        std::fs::read_to_string(
            self.data_dir()
                .join(format!("runs/{run}/artifacts/{node}/{attempt}/{name}")),
        )
        .unwrap()
    }
}
