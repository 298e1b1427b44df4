//! Sandboxes: where script and agent nodes run.
//!
//! A [`Sandbox`] runs one node attempt: a shell script in the run's workspace, with an
//! environment made only of what the node declared, its output streamed line by line to a
//! [`LogLine`] channel, a wall-clock limit, and cancellation. The job's [`Profile`] says
//! where: [`ProcessSandbox`] runs it as a local process group (the embedded default),
//! [`DockerSandbox`] in a fresh, locked-down container; [`Sandboxes`] picks by profile.
//! What a node leaves behind is read back only through [`untrusted`].

mod docker;
mod error;
mod groups;
mod isolation;
mod job;
mod lines;
mod output;
mod process;
mod profile;
mod relay;
mod sandboxes;
mod sink;
mod tail;
pub mod untrusted;

pub use docker::DockerSandbox;
pub use error::SandboxError;
pub use job::{Exit, ExitStatus, Job, JobLabels, LogLine, Stream};
pub use lines::cut_line;
pub use process::ProcessSandbox;
pub use profile::{Mount, Profile, ProfileError, SandboxKind};
pub use relay::{Forward, Relay, RelayError};
pub use sandboxes::Sandboxes;

use async_trait::async_trait;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Runs node attempts.
#[async_trait]
pub trait Sandbox: Send + Sync {
    /// Runs `job` to its end, its timeout, or `cancel`. Output lines go to `logs` while it
    /// runs, never holding the job up: lines are dropped (and the loss reported in a line)
    /// while the receiver is megabytes behind. When the returned future completes, no
    /// process of the job is left and every kept line has been sent, unless the receiver
    /// took no line for 5 seconds after the job ended (then the rest is dropped).
    async fn run(
        &self,
        job: &Job,
        logs: mpsc::Sender<LogLine>,
        cancel: CancellationToken,
    ) -> Result<Exit, SandboxError>;

    /// Whether a job in `profile` runs in a network of its own with only loopback, so a
    /// [`Job::relay`] is its way to the runner's sockets. Otherwise it shares the runner's
    /// network and reaches the runner's loopback listeners directly.
    fn isolates_network(&self, _profile: &Profile) -> bool {
        false
    }

    /// Lets go of what the sandbox kept for a run across its nodes (Docker: the run's
    /// workspace volume; the files on the host stay). The runner calls it when a run ends.
    async fn run_ended(&self, _run: &str) -> Result<(), SandboxError> {
        Ok(())
    }
}
