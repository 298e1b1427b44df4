//! The sandboxes this process runs nodes in: local processes always, Docker when a profile
//! asks for it. What a crash left behind is cleaned up here, before any job runs.

use std::path::Path;

use anyhow::Context;
use gatehouse_sandbox::{DockerSandbox, ProcessSandbox, SandboxKind, Sandboxes};

use crate::config::Config;

/// The process sandbox (with its crash registry under `data_dir`, per runner id) and, when a profile uses
/// Docker, the Docker sandbox. A Docker profile whose engine or image is missing stops the
/// start with a message: a node would otherwise fail later for a reason known now.
pub async fn sandboxes(config: &Config, data_dir: &Path) -> anyhow::Result<Sandboxes> {
    let id = &config.runner.id;
    let process = ProcessSandbox::with_registry(data_dir.join("process-groups").join(id));
    match process.reap_orphans() {
        Ok(0) => {}
        Ok(n) => tracing::warn!(
            killed = n,
            "stopped scripts left running by a previous crash"
        ),
        Err(e) => tracing::warn!(error = %e, "checking for scripts left running failed"),
    }
    let Some(docker) = docker(config, data_dir, id).await? else {
        return Ok(Sandboxes::process_only(process));
    };
    match docker.reap_orphans().await {
        Ok(0) => {}
        Ok(n) => tracing::warn!(
            removed = n,
            "removed sandbox containers left running by a previous crash"
        ),
        Err(e) => tracing::warn!(error = %e, "checking for sandbox containers left running failed"),
    }
    Ok(Sandboxes::new(process, Ok(docker)))
}

/// The same sandboxes for `gatehouse doctor`'s checks, beside a runner that may be serving
/// from the same data directory: under an owner of their own (`doctor_id`), so nothing the
/// serving runner has running is taken for a crash's leftovers and reaped.
pub async fn sandboxes_for_checks(
    config: &Config,
    data_dir: &Path,
    doctor_id: &str,
) -> anyhow::Result<Sandboxes> {
    let process = ProcessSandbox::default();
    Ok(match docker(config, data_dir, doctor_id).await? {
        Some(docker) => Sandboxes::new(process, Ok(docker)),
        None => Sandboxes::process_only(process),
    })
}

/// The Docker sandbox, when a profile uses Docker, with every profile's image checked.
async fn docker(
    config: &Config,
    data_dir: &Path,
    id: &str,
) -> anyhow::Result<Option<DockerSandbox>> {
    let docker_profiles: Vec<(&String, &str)> = config
        .sandbox
        .profiles
        .iter()
        .filter(|(_, p)| p.kind == SandboxKind::Docker)
        .map(|(name, p)| (name, p.image.as_deref().unwrap_or_default()))
        .collect();
    if docker_profiles.is_empty() {
        return Ok(None);
    }
    // The data directory and the runner's id name its containers: a restart finds its own,
    // never those of another runner on the same engine.
    let docker = DockerSandbox::connect(format!("{}#{id}", data_dir.display()))
        .await
        .with_context(|| {
            format!(
                "sandbox profile `{}` uses Docker, but the Docker engine is not reachable",
                docker_profiles[0].0
            )
        })?;
    for (name, image) in &docker_profiles {
        docker
            .check_image(image)
            .await
            .with_context(|| format!("sandbox profile `{name}`"))?;
    }
    Ok(Some(docker))
}
