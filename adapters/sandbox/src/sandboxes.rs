//! Picking the sandbox a job's profile asks for.

use async_trait::async_trait;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::{
    DockerSandbox, Exit, Job, LogLine, ProcessSandbox, Sandbox, SandboxError, SandboxKind,
};

/// The sandboxes a runner has, so one runner serves process and docker profiles alike; a
/// Docker engine that was away at start only fails the jobs that need it.
#[derive(Debug, Clone)]
pub struct Sandboxes {
    process: ProcessSandbox,
    /// The Docker sandbox, or why connecting to the engine failed; `None` when no profile
    /// used Docker at start.
    docker: Option<Result<DockerSandbox, String>>,
}

impl Sandboxes {
    /// The process sandbox and whatever connecting to Docker gave
    /// ([`DockerSandbox::connect`]); a failure is kept and told to each docker job.
    pub fn new(process: ProcessSandbox, docker: Result<DockerSandbox, SandboxError>) -> Self {
        Self {
            process,
            docker: Some(docker.map_err(|e| e.to_string())),
        }
    }

    /// Only the process sandbox: no profile used Docker when the runner started.
    pub fn process_only(process: ProcessSandbox) -> Self {
        Self {
            process,
            docker: None,
        }
    }

    /// The Docker sandbox, when the runner has one.
    pub fn docker(&self) -> Option<&DockerSandbox> {
        self.docker.as_ref().and_then(|docker| docker.as_ref().ok())
    }
}

#[async_trait]
impl Sandbox for Sandboxes {
    async fn run(
        &self,
        job: &Job,
        logs: mpsc::Sender<LogLine>,
        cancel: CancellationToken,
    ) -> Result<Exit, SandboxError> {
        match job.profile.kind {
            SandboxKind::Process => self.process.run(job, logs, cancel).await,
            SandboxKind::Docker => match &self.docker {
                Some(Ok(docker)) => docker.run(job, logs, cancel).await,
                Some(Err(why)) => Err(SandboxError::DockerNotConfigured(why.clone())),
                None => Err(SandboxError::NoDockerAtStart),
            },
        }
    }

    fn isolates_network(&self, profile: &crate::Profile) -> bool {
        match profile.kind {
            SandboxKind::Process => self.process.isolates_network(profile),
            // A container has a network namespace of its own.
            SandboxKind::Docker => true,
        }
    }

    async fn run_ended(&self, run: &str) -> Result<(), SandboxError> {
        match self.docker() {
            Some(docker) => docker.run_ended(run).await,
            None => Ok(()),
        }
    }
}
