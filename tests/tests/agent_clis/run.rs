//! Running a CLI as a host process: a clean environment, a time limit, its output kept.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::process::Command;

/// How long one CLI run may take; the job takes a few seconds, so this only bounds a CLI
/// stuck in its own retries.
const PATIENCE: Duration = Duration::from_secs(120);

/// What a CLI run left.
pub struct Output {
    pub status: std::process::ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    /// The JSON lines of stdout (`stream-json`, `--json`), other lines skipped.
    pub fn events(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect()
    }

    /// Everything, for a failure message.
    pub fn describe(&self) -> String {
        format!(
            "{}\n--- stdout\n{}\n--- stderr\n{}",
            self.status, self.stdout, self.stderr
        )
    }
}

/// The environment every CLI gets besides its provider's: `PATH` (Codex's launcher is a
/// Node script) and a `HOME` of its own, so no user configuration leaks in.
pub fn base_environment(home: &Path) -> Vec<(String, String)> {
    vec![
        (
            "PATH".to_owned(),
            std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".to_owned()),
        ),
        ("HOME".to_owned(), home.display().to_string()),
    ]
}

/// Runs `program` with exactly `environment` in `dir`, stdin closed, and waits for it.
pub async fn run(
    program: &Path,
    args: &[String],
    environment: &[(String, String)],
    dir: &Path,
) -> Output {
    let child = Command::new(program)
        .args(args)
        .env_clear()
        .envs(environment.iter().map(|(k, v)| (k, v)))
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("start {}: {e}", program.display()));
    let output = tokio::time::timeout(PATIENCE, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("{} ran over {PATIENCE:?}", program.display()))
        .expect("wait for the CLI");
    Output {
        status: output.status,
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}
