//! What a sandbox is asked to run and what it reports.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// One node attempt to run.
#[derive(Debug, Clone)]
pub struct Job {
    /// The script, run with `sh -c` in `workspace`.
    pub script: String,
    /// The complete environment: declared env, secrets, and the `GATEHOUSE_*` variables.
    /// Nothing else from the host reaches the script.
    pub env: BTreeMap<String, String>,
    /// The run's workspace, shared by its nodes and kept across them.
    pub workspace: PathBuf,
    /// Where the node writes its artifacts (`$GATEHOUSE_ARTIFACTS`); created if missing.
    pub artifacts: PathBuf,
    /// Wall-clock limit; the whole process group is killed when it passes.
    pub timeout: Option<Duration>,
}

/// Which output a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// One line of output, without its newline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    /// Where it came from.
    pub stream: Stream,
    /// The text (invalid UTF-8 replaced).
    pub line: String,
}

/// How a job ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// The script exited with this code.
    Exited(i32),
    /// The script was killed by this signal (from outside the sandbox).
    Signalled(i32),
    /// The timeout passed and the job was killed.
    TimedOut,
    /// Cancelled from outside and killed.
    Cancelled,
}

/// The end of a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exit {
    /// How it ended.
    pub status: ExitStatus,
    /// Wall-clock time from start to end.
    pub duration: Duration,
}

impl Exit {
    /// Exit code 0.
    pub fn succeeded(&self) -> bool {
        self.status == ExitStatus::Exited(0)
    }
}
