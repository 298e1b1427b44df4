//! The local-process sandbox.

use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Instant;

use async_trait::async_trait;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::Command;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::groups::Registry;
use crate::{Exit, ExitStatus, Job, LogLine, Sandbox, SandboxError, Stream};

/// `PATH` for scripts that do not declare their own: the system directories only.
const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";
/// How long output is still read after the job's processes are killed.
const PIPE_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// Runs jobs as local processes, each in a process group of its own so a timeout or a
/// cancel kills everything the script started.
#[derive(Debug, Clone, Default)]
pub struct ProcessSandbox {
    registry: Option<Registry>,
}

impl ProcessSandbox {
    /// A sandbox that records the process groups it starts in `dir`, so that
    /// [`ProcessSandbox::reap_orphans`] after a crash can stop what was left running.
    pub fn with_registry(dir: PathBuf) -> Self {
        Self {
            registry: Some(Registry::new(dir)),
        }
    }

    /// Kills the process groups a previous sandbox on the same registry started and did
    /// not see end (its process was killed). Returns how many it killed. Call it before
    /// running jobs.
    pub fn reap_orphans(&self) -> std::io::Result<usize> {
        self.registry.as_ref().map_or(Ok(0), Registry::reap)
    }
}

#[async_trait]
impl Sandbox for ProcessSandbox {
    async fn run(
        &self,
        job: &Job,
        logs: mpsc::Sender<LogLine>,
        cancel: CancellationToken,
    ) -> Result<Exit, SandboxError> {
        for (what, path) in [
            ("workspace", &job.workspace),
            ("artifact directory", &job.artifacts),
        ] {
            tokio::fs::create_dir_all(path)
                .await
                .map_err(|source| SandboxError::Prepare {
                    what,
                    path: path.clone(),
                    source,
                })?;
        }
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(&job.script)
            .env_clear()
            .env("PATH", DEFAULT_PATH)
            .env("HOME", &job.workspace)
            .envs(&job.env)
            .current_dir(&job.workspace)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let started = Instant::now();
        let mut child = command.spawn().map_err(SandboxError::Spawn)?;
        // The group id is the child's pid (process_group(0)).
        let group = child.id().and_then(|id| i32::try_from(id).ok());
        if let (Some(registry), Some(group)) = (&self.registry, group)
            && let Err(e) = registry.record(group)
        {
            tracing::warn!(error = %e, "recording a process group failed");
        }
        let stdout = child
            .stdout
            .take()
            .map(|s| forward(s, Stream::Stdout, logs.clone()));
        let stderr = child
            .stderr
            .take()
            .map(|s| forward(s, Stream::Stderr, logs));
        let timeout = async {
            match job.timeout {
                Some(limit) => tokio::time::sleep(limit).await,
                None => std::future::pending().await,
            }
        };
        let status = tokio::select! {
            waited = child.wait() => match waited {
                Ok(s) => match s.code() {
                    Some(code) => ExitStatus::Exited(code),
                    None => ExitStatus::Signalled(s.signal().unwrap_or(0)),
                },
                Err(e) => {
                    tracing::warn!(error = %e, "waiting for the script failed");
                    ExitStatus::Signalled(0)
                }
            },
            () = timeout => ExitStatus::TimedOut,
            () = cancel.cancelled() => ExitStatus::Cancelled,
        };
        // Whatever the script left behind (background jobs) goes with it.
        if let Some(group) = group {
            let _ = killpg(Pid::from_raw(group), Signal::SIGKILL);
            if let Some(registry) = &self.registry {
                registry.forget(group);
            }
        }
        let _ = child.wait().await;
        // The readers end once every process holding the pipes is gone; one that left the
        // group (setsid) could hold them open, so the wait is bounded.
        for reader in [stdout, stderr].into_iter().flatten() {
            let abort = reader.abort_handle();
            if tokio::time::timeout(PIPE_GRACE, reader).await.is_err() {
                tracing::warn!(
                    "a process outside the job's group kept its output open; stopped reading"
                );
                abort.abort();
            }
        }
        Ok(Exit {
            status,
            duration: started.elapsed(),
        })
    }
}

fn forward(
    pipe: impl AsyncRead + Unpin + Send + 'static,
    stream: Stream,
    logs: mpsc::Sender<LogLine>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut lines = BufReader::new(pipe).split(b'\n');
        while let Ok(Some(bytes)) = lines.next_segment().await {
            let line = String::from_utf8_lossy(&bytes)
                .trim_end_matches('\r')
                .to_owned();
            if logs.send(LogLine { stream, line }).await.is_err() {
                // Nobody is listening; keep draining so the script never blocks on a pipe.
                continue;
            }
        }
    })
}
