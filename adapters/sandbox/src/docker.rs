//! The Docker sandbox: each node attempt in a fresh, locked-down container, the run's
//! workspace in a volume its nodes share.

mod attach;
mod container;
mod host;
mod names;
mod oom;
mod orphans;
mod pids;
mod spec;
mod user;

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use async_trait::async_trait;
use bollard::Docker;
use bollard::errors::Error as DockerError;
use bollard::models::VolumeCreateRequest;
use bollard::query_parameters::{CreateContainerOptions, RemoveVolumeOptions};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use self::host::{hand_over, prepare};
use self::names::{container_labels, container_name, volume_labels, volume_name};
pub(crate) use self::spec::INPUTS;
use self::spec::container_body;
use self::user::ContainerUser;
use crate::{Exit, ExitStatus, Job, LogLine, ProfileError, Sandbox, SandboxError, SandboxKind};

/// Runs jobs in Docker containers on the local engine, for scripts and agents the operator
/// does not trust with the host: no capabilities, no new privileges, an unprivileged user,
/// a read-only root, the profile's network and limits, and only the job's directories.
#[derive(Debug, Clone)]
pub struct DockerSandbox {
    docker: Docker,
    owner: String,
}

impl DockerSandbox {
    /// Connects to the local Docker engine (DOCKER_HOST honoured) and negotiates the API
    /// version. `owner` names this runner (stable across its restarts, e.g. its data dir);
    /// every container and volume it makes carries the label `gatehouse.owner=<owner>`, so
    /// reaping after a crash touches only its own.
    pub async fn connect(owner: impl Into<String>) -> Result<Self, SandboxError> {
        let docker = Docker::connect_with_local_defaults()
            .map_err(SandboxError::Unreachable)?
            .negotiate_version()
            .await
            .map_err(SandboxError::Unreachable)?;
        Ok(Self {
            docker,
            owner: owner.into(),
        })
    }

    /// Whether the image exists locally (used at start so a missing image is a clear error,
    /// never a hang: images are never pulled).
    pub async fn check_image(&self, image: &str) -> Result<(), SandboxError> {
        match self.docker.inspect_image(image).await {
            Ok(_) => Ok(()),
            Err(DockerError::DockerResponseServerError {
                status_code: 404, ..
            }) => Err(SandboxError::ImageMissing {
                image: image.into(),
            }),
            Err(e) => Err(SandboxError::docker("inspecting the image", e)),
        }
    }

    /// The name of this runner's workspace volume for `run` (`docker volume inspect` it).
    pub fn run_volume(&self, run: &str) -> String {
        volume_name(&self.owner, run)
    }

    /// Removes the run's workspace volume (the runner calls it when a run ends; the host
    /// directory stays).
    pub async fn remove_run_volume(&self, run: &str) -> Result<(), SandboxError> {
        match self
            .docker
            .remove_volume(&volume_name(&self.owner, run), None::<RemoveVolumeOptions>)
            .await
        {
            Ok(())
            | Err(DockerError::DockerResponseServerError {
                status_code: 404, ..
            }) => Ok(()),
            Err(e) => Err(SandboxError::docker("removing the run's volume", e)),
        }
    }

    /// The run's workspace volume: the host directory bound through Docker's local driver,
    /// so the runner sees the files the containers write. Creating it again is harmless.
    async fn ensure_volume(&self, run: &str, workspace: &Path) -> Result<String, SandboxError> {
        let name = volume_name(&self.owner, run);
        let request = VolumeCreateRequest {
            name: Some(name.clone()),
            driver: Some("local".into()),
            driver_opts: Some(HashMap::from([
                ("type".into(), "none".into()),
                ("o".into(), "bind".into()),
                ("device".into(), workspace.display().to_string()),
            ])),
            labels: Some(volume_labels(&self.owner, run)),
            ..VolumeCreateRequest::default()
        };
        self.docker
            .create_volume(request)
            .await
            .map_err(|e| SandboxError::docker("creating the workspace volume", e))?;
        Ok(name)
    }
}

#[async_trait]
impl Sandbox for DockerSandbox {
    /// A container always has a network namespace of its own; the relay is its way to
    /// the runner.
    fn isolates_network(&self, _profile: &crate::Profile) -> bool {
        true
    }

    async fn run(
        &self,
        job: &Job,
        logs: mpsc::Sender<LogLine>,
        cancel: CancellationToken,
    ) -> Result<Exit, SandboxError> {
        if job.profile.kind != SandboxKind::Docker {
            return Err(SandboxError::WrongSandbox {
                kind: job.profile.kind,
                sandbox: SandboxKind::Docker,
            });
        }
        job.profile.check()?;
        let image = job
            .profile
            .image
            .as_deref()
            .ok_or(ProfileError::MissingImage)?;
        self.check_image(image).await?;
        let (workspace, paths) = prepare(job).await?;
        let user = ContainerUser::choose(job.profile.user.as_deref());
        if let Some((uid, gid)) = user.chown {
            hand_over(&workspace, &paths, uid, gid).await?;
        }
        if cancel.is_cancelled() {
            return Ok(Exit {
                status: ExitStatus::Cancelled,
                duration: Duration::ZERO,
                pids_limit_reached: false,
                stdout_tail: Vec::new(),
            });
        }
        let volume = self.ensure_volume(&job.labels.run, &workspace).await?;
        let name = container_name(&job.labels);
        // A container of this very attempt can only be a leftover of an earlier try.
        self.remove_container(&name).await?;
        let body = container_body(
            job,
            image,
            &volume,
            &user.spec,
            &paths,
            container_labels(&self.owner, &job.labels),
        );
        let options = CreateContainerOptions {
            name: Some(name),
            ..CreateContainerOptions::default()
        };
        let created = self
            .docker
            .create_container(Some(options), body)
            .await
            .map_err(|e| match e {
                // Removed since it was checked.
                DockerError::DockerResponseServerError {
                    status_code: 404,
                    ref message,
                } if message.contains("No such image") => SandboxError::ImageMissing {
                    image: image.into(),
                },
                e => refused(e),
            })?;
        let result = self.run_container(&created.id, job, logs, cancel).await;
        // No container of the job outlives `run` (except when the future is dropped: that
        // is what `reap_orphans` is for).
        let removed = self.remove_container(&created.id).await;
        let exit = result?;
        removed?;
        Ok(exit)
    }

    async fn run_ended(&self, run: &str) -> Result<(), SandboxError> {
        self.remove_run_volume(run).await
    }
}

/// Docker turning the container down: its message, which says what is wrong (limits
/// the host cannot meet, a network that does not exist, a bad mount).
fn refused(e: DockerError) -> SandboxError {
    match e {
        DockerError::DockerResponseServerError { message, .. } => SandboxError::Refused { message },
        e => SandboxError::docker("creating the container", e),
    }
}
