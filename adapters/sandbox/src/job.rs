//! What a sandbox is asked to run and what it reports.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::{Profile, Relay};

/// One node attempt to run.
#[derive(Debug, Clone)]
pub struct Job {
    /// The script, run with `sh -c` in the workspace.
    pub script: String,
    /// Declared env and secrets and Gatehouse's variables, but NOT the three path
    /// variables: each sandbox sets `GATEHOUSE_WORKSPACE`, `GATEHOUSE_ARTIFACTS` and
    /// `GATEHOUSE_INPUTS` itself, as the script sees those directories (host paths for a
    /// process, `/workspace`, `/gatehouse/artifacts`, `/gatehouse/inputs` in a container).
    /// Nothing else from the host reaches the script.
    pub env: BTreeMap<String, String>,
    /// The run's workspace on the host, shared by its nodes and kept across them.
    pub workspace: PathBuf,
    /// Where the node writes its artifacts, on the host; created if missing.
    pub artifacts: PathBuf,
    /// The artifacts of earlier nodes this one reads, on the host; created if missing,
    /// read-only in a container.
    pub inputs: PathBuf,
    /// Wall-clock limit; everything the job started is killed when it passes.
    pub timeout: Option<Duration>,
    /// Which sandbox runs it and with what limits.
    pub profile: Profile,
    /// Which node attempt this is.
    pub labels: JobLabels,
    /// Keep up to this many bytes of the END of stdout in [`Exit::stdout_tail`] (agent
    /// CLIs print their usage report last); 0 keeps nothing.
    pub stdout_tail: usize,
    /// The only way out for a script without a network: loopback ports forwarded to the
    /// runner's Unix sockets (see [`Relay`]). `None` leaves the network as the profile
    /// has it.
    pub relay: Option<Relay>,
    /// The CLI's own state directory on the host (`HOME`: Claude Code's `.claude/`,
    /// Codex's `.codex/`, with unmasked tool output), kept outside the workspace so it is
    /// neither checkpointed nor delivered; `None`: `HOME` is the workspace for a process,
    /// `/tmp` in a container (unless the job's environment sets it).
    pub home: Option<PathBuf>,
}

impl Job {
    /// The job's inputs directory as its script sees it (where an agent's prompt file is
    /// read from): the host path for a process, a fixed path in a container.
    pub fn inputs_seen(&self) -> String {
        match self.profile.kind {
            crate::SandboxKind::Process => self.inputs.display().to_string(),
            crate::SandboxKind::Docker => crate::docker::INPUTS.to_owned(),
        }
    }
}

/// Which node attempt a job is; Docker labels carry it so a restarted runner can find what
/// it left behind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobLabels {
    pub run: String,
    /// The node's name in the SOP.
    pub node: String,
    pub attempt: u32,
}

/// Which output a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// One line of output, without its newline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
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
    /// The container ran out of memory and the kernel killed a process in it (Docker's
    /// `State.OOMKilled`), and the script failed.
    OutOfMemory,
}

/// The end of a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exit {
    pub status: ExitStatus,
    /// Wall-clock time from start to end.
    pub duration: Duration,
    /// The profile's pids limit was reached while the job ran (forks failed), which
    /// explains failures that the exit code alone does not.
    pub pids_limit_reached: bool,
    /// The last [`Job::stdout_tail`] bytes of stdout, as written.
    pub stdout_tail: Vec<u8>,
}

impl Exit {
    /// Exit code 0.
    pub fn succeeded(&self) -> bool {
        self.status == ExitStatus::Exited(0)
    }
}
