//! One container's life: attached, started, waited on or killed, and removed.

use std::time::{Duration, Instant};

use bollard::errors::Error as DockerError;
use bollard::query_parameters::{
    AttachContainerOptions, KillContainerOptions, RemoveContainerOptions, WaitContainerOptions,
};
use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::oom::OomWatch;
use super::pids::PidsWatch;
use super::{DockerSandbox, attach, refused};
use crate::output::Output;
use crate::sink::log_sink;
use crate::{Exit, ExitStatus, Job, LogLine, SandboxError};

/// How long output is still read after the container stopped.
const OUTPUT_GRACE: Duration = Duration::from_secs(5);
/// How long a SIGKILL exit waits for the container's `oom` event.
const OOM_EVENT_WAIT: Duration = Duration::from_secs(2);

impl DockerSandbox {
    /// Removes a container whatever its state; one already gone is fine.
    pub(super) async fn remove_container(&self, container: &str) -> Result<(), SandboxError> {
        let options = RemoveContainerOptions {
            force: true,
            ..RemoveContainerOptions::default()
        };
        match self.docker.remove_container(container, Some(options)).await {
            Ok(())
            | Err(DockerError::DockerResponseServerError {
                status_code: 404, ..
            }) => Ok(()),
            Err(e) => Err(SandboxError::docker("removing the container", e)),
        }
    }

    /// Runs the created container to its end; the caller removes it.
    pub(super) async fn run_container(
        &self,
        id: &str,
        job: &Job,
        logs: mpsc::Sender<LogLine>,
        cancel: CancellationToken,
    ) -> Result<Exit, SandboxError> {
        // Attached before start, so no output is lost.
        let options = AttachContainerOptions {
            stream: true,
            stdout: true,
            stderr: true,
            ..AttachContainerOptions::default()
        };
        let attached = self
            .docker
            .attach_container(id, Some(options))
            .await
            .map_err(|e| SandboxError::docker("attaching to the container", e))?;
        let (sink, forwarder) = log_sink(logs);
        let stop_reading = CancellationToken::new();
        // However this returns (an error, or the future dropped), the reader stops.
        let _stop_reading_on_return = stop_reading.clone().drop_guard();
        let mut reader = attach::read(
            attached.output,
            Output::new(sink, job.stdout_tail),
            stop_reading.clone(),
        );

        let oom = job
            .profile
            .memory
            .map(|_| OomWatch::start(&self.docker, id));
        let started = Instant::now();
        self.docker
            .start_container(id, None)
            .await
            .map_err(refused)?;
        let pids = job
            .profile
            .pids
            .map(|limit| PidsWatch::start(&self.docker, id, limit));
        let timeout = async {
            match job.timeout {
                Some(limit) => tokio::time::sleep(limit).await,
                None => std::future::pending().await,
            }
        };
        let status = tokio::select! {
            code = self.wait(id) => ExitStatus::Exited(code?),
            () = timeout => ExitStatus::TimedOut,
            () = cancel.cancelled() => ExitStatus::Cancelled,
        };
        if !matches!(status, ExitStatus::Exited(_)) {
            self.kill(id).await?;
            self.wait(id).await?;
        }
        let duration = started.elapsed();
        let pids_limit_reached = pids.as_ref().is_some_and(PidsWatch::reached);

        // The stream ends when the container stops; it is bounded in case Docker keeps
        // it open.
        let stdout_tail = match tokio::time::timeout(OUTPUT_GRACE, &mut reader).await {
            Ok(tail) => tail.unwrap_or_default(),
            Err(_) => {
                tracing::warn!("the container's output stayed open after it stopped");
                stop_reading.cancel();
                reader.await.unwrap_or_default()
            }
        };
        // Every line read reaches the channel before the job is reported done.
        forwarder.drain().await;

        let status = match (status, oom.as_ref()) {
            (ExitStatus::Exited(code), Some(oom))
                if code != 0 && self.oom_killed(id, code, oom).await? =>
            {
                ExitStatus::OutOfMemory
            }
            (status, _) => status,
        };
        Ok(Exit {
            status,
            duration,
            pids_limit_reached,
            stdout_tail,
        })
    }

    /// Waits until the container is not running; its exit code.
    async fn wait(&self, id: &str) -> Result<i32, SandboxError> {
        let options = WaitContainerOptions {
            condition: "not-running".into(),
        };
        let code = match self.docker.wait_container(id, Some(options)).next().await {
            Some(Ok(response)) => response.status_code,
            // bollard reports a nonzero exit as an error; it is the script's exit code.
            Some(Err(DockerError::DockerContainerWaitError { code, .. })) => code,
            Some(Err(e)) => return Err(SandboxError::docker("waiting for the container", e)),
            None => {
                let e = DockerError::DockerStreamError {
                    error: "the wait ended without an exit code".into(),
                };
                return Err(SandboxError::docker("waiting for the container", e));
            }
        };
        Ok(i32::try_from(code).unwrap_or(i32::MAX))
    }

    /// Kills everything in the container (the init and all its children).
    async fn kill(&self, id: &str) -> Result<(), SandboxError> {
        let options = KillContainerOptions {
            signal: "KILL".into(),
        };
        match self.docker.kill_container(id, Some(options)).await {
            // Already stopped (409) or gone (404): there is nothing left to kill.
            Ok(())
            | Err(DockerError::DockerResponseServerError {
                status_code: 404 | 409,
                ..
            }) => Ok(()),
            Err(e) => Err(SandboxError::docker("killing the container", e)),
        }
    }

    /// Whether the kernel killed a process in the container for lack of memory: Docker's
    /// flag, or the container's `oom` event. A SIGKILL exit (137) waits a moment for the
    /// event, which may arrive after the exit.
    async fn oom_killed(&self, id: &str, code: i32, oom: &OomWatch) -> Result<bool, SandboxError> {
        let inspected = self
            .docker
            .inspect_container(id, None)
            .await
            .map_err(|e| SandboxError::docker("inspecting the container", e))?;
        if inspected
            .state
            .and_then(|state| state.oom_killed)
            .unwrap_or(false)
        {
            return Ok(true);
        }
        let patience = if code == 137 {
            OOM_EVENT_WAIT
        } else {
            Duration::ZERO
        };
        Ok(oom.killed(patience).await)
    }
}
