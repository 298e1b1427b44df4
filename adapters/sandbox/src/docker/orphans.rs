//! What a runner left in Docker: finding it, and removing what a dead runner left running.

use bollard::query_parameters::{ListContainersOptions, RemoveContainerOptions};

use super::DockerSandbox;
use super::names::{job_labels, owner_filter};
use crate::{JobLabels, SandboxError};

impl DockerSandbox {
    /// Removes this owner's containers left by a runner that died (force remove, they are
    /// from a dead process); returns how many. Their attempts are then reported as
    /// interrupted by the runner's job lease, which is how they fail deterministically.
    /// Call it at start, before running jobs: it would also remove containers of jobs this
    /// sandbox is running.
    pub async fn reap_orphans(&self) -> Result<usize, SandboxError> {
        let mut removed = 0;
        for id in self.owned().await?.into_iter().filter_map(|c| c.id) {
            let options = RemoveContainerOptions {
                force: true,
                ..RemoveContainerOptions::default()
            };
            match self.docker.remove_container(&id, Some(options)).await {
                Ok(()) => removed += 1,
                // Gone meanwhile (removal already in progress): nothing left to reap.
                Err(bollard::errors::Error::DockerResponseServerError {
                    status_code: 404 | 409,
                    ..
                }) => {}
                Err(e) => return Err(SandboxError::docker("removing an orphaned container", e)),
            }
        }
        Ok(removed)
    }

    /// Containers of this owner currently present, with the node attempts they belong
    /// to: what [`DockerSandbox::reap_orphans`] would remove.
    pub async fn containers(&self) -> Result<Vec<JobLabels>, SandboxError> {
        Ok(self
            .owned()
            .await?
            .into_iter()
            .filter_map(|c| job_labels(&c.labels.unwrap_or_default()))
            .collect())
    }

    async fn owned(&self) -> Result<Vec<bollard::models::ContainerSummary>, SandboxError> {
        let options = ListContainersOptions {
            all: true,
            filters: Some(owner_filter(&self.owner)),
            ..ListContainersOptions::default()
        };
        self.docker
            .list_containers(Some(options))
            .await
            .map_err(|e| SandboxError::docker("listing containers", e))
    }
}
