//! Sandboxes: where script (and later agent) nodes run.
//!
//! A [`Sandbox`] runs one node attempt: a shell script in the run's workspace, with an
//! environment made only of what the node declared, its output streamed line by line to a
//! [`LogLine`] channel, a wall-clock limit, and cancellation. [`ProcessSandbox`] runs it as a
//! local process group (the embedded default); a Docker sandbox comes with its own issue.

mod groups;
mod job;
mod process;

pub use job::{Exit, ExitStatus, Job, LogLine, Stream};
pub use process::ProcessSandbox;

use async_trait::async_trait;
use thiserror::Error;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Why a sandbox could not run a job at all (as opposed to the job failing).
#[derive(Debug, Error)]
pub enum SandboxError {
    /// The workspace or artifact directory could not be prepared.
    #[error("preparing {what} at {path}: {source}")]
    Prepare {
        /// Which directory.
        what: &'static str,
        /// Where.
        path: std::path::PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The shell could not be started.
    #[error("starting the shell: {0}")]
    Spawn(#[source] std::io::Error),
}

/// Runs node attempts.
#[async_trait]
pub trait Sandbox: Send + Sync {
    /// Runs `job` to its end, its timeout, or `cancel`. Output lines go to `logs` while it
    /// runs; when the returned future completes, no process of the job is left.
    async fn run(
        &self,
        job: &Job,
        logs: mpsc::Sender<LogLine>,
        cancel: CancellationToken,
    ) -> Result<Exit, SandboxError>;
}
