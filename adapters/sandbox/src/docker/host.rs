//! The host side of a container: the job's directories and mounts, resolved and handed to
//! the container's user.

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use super::spec::{HostPaths, HostRelay};
use super::user::chown_tree;
use crate::profile::exposes_docker_socket;
use crate::{Job, ProfileError, Relay, SandboxError};

/// Creates the job's directories and resolves every host path Docker will mount.
pub(super) async fn prepare(job: &Job) -> Result<(PathBuf, HostPaths), SandboxError> {
    let workspace = directory("workspace", &job.workspace).await?;
    let artifacts = directory("artifact directory", &job.artifacts).await?;
    let inputs = directory("input directory", &job.inputs).await?;
    let home = match &job.home {
        Some(home) => Some(directory("home directory", home).await?),
        None => None,
    };
    let mut mounts = Vec::new();
    for mount in &job.profile.mounts {
        let source = tokio::fs::canonicalize(&mount.source)
            .await
            .map_err(|source| SandboxError::Prepare {
                what: "mount source",
                path: mount.source.clone(),
                source,
            })?;
        // Checked again once symlinks are resolved: a link to the socket is the socket.
        if exposes_docker_socket(&source) || exposes_engine_socket(&source) {
            return Err(ProfileError::DockerSocket(mount.source.clone()).into());
        }
        mounts.push((source, mount.target.clone()));
    }
    let relay = match &job.relay {
        Some(relay) => Some(host_relay(relay).await?),
        None => None,
    };
    let paths = HostPaths {
        artifacts,
        inputs,
        home,
        mounts,
        relay,
    };
    Ok((workspace, paths))
}

/// The relay's binary and sockets, checked and resolved: a missing socket is a clear
/// error now rather than a relay failing in the container.
async fn host_relay(relay: &Relay) -> Result<HostRelay, SandboxError> {
    relay.check()?;
    let binary = existing("relay binary", &relay.binary, "file", |t| t.is_file()).await?;
    let mut sockets = Vec::with_capacity(relay.forwards.len());
    for forward in &relay.forwards {
        let socket = existing("relay socket", &forward.socket, "Unix socket", |t| {
            t.is_socket()
        })
        .await?;
        // A relay to the engine's socket would hand the script the host.
        if exposes_docker_socket(&socket) || exposes_engine_socket(&socket) {
            return Err(ProfileError::DockerSocket(forward.socket.clone()).into());
        }
        sockets.push(socket);
    }
    Ok(HostRelay { binary, sockets })
}

/// The absolute form of `path`, which must exist and be `expected` (`right_type`).
async fn existing(
    what: &'static str,
    path: &Path,
    expected: &'static str,
    right_type: impl Fn(std::fs::FileType) -> bool,
) -> Result<PathBuf, SandboxError> {
    let prepare = |source| SandboxError::Prepare {
        what,
        path: path.to_owned(),
        source,
    };
    let resolved = tokio::fs::canonicalize(path).await.map_err(prepare)?;
    let meta = tokio::fs::metadata(&resolved).await.map_err(prepare)?;
    if !right_type(meta.file_type()) {
        return Err(prepare(std::io::Error::other(format!("not a {expected}"))));
    }
    Ok(resolved)
}

/// Creates `path` if missing; its absolute form, which Docker needs.
async fn directory(what: &'static str, path: &Path) -> Result<PathBuf, SandboxError> {
    let prepare = |source| SandboxError::Prepare {
        what,
        path: path.to_owned(),
        source,
    };
    tokio::fs::create_dir_all(path).await.map_err(prepare)?;
    tokio::fs::canonicalize(path).await.map_err(prepare)
}

/// Whether `source` is or holds the socket of the engine this sandbox talks to, wherever
/// `DOCKER_HOST` puts it.
fn exposes_engine_socket(source: &Path) -> bool {
    std::env::var("DOCKER_HOST")
        .ok()
        .and_then(|host| host.strip_prefix("unix://").map(PathBuf::from))
        .map(|socket| std::fs::canonicalize(&socket).unwrap_or(socket))
        .is_some_and(|socket| socket.starts_with(source))
}

/// Gives the job's directories to the container's user (the runner is root, the
/// container is not, and it must write its workspace and artifacts).
pub(super) async fn hand_over(
    workspace: &Path,
    paths: &HostPaths,
    uid: u32,
    gid: Option<u32>,
) -> Result<(), SandboxError> {
    let dirs = [
        ("workspace", Some(workspace)),
        ("artifact directory", Some(paths.artifacts.as_path())),
        ("input directory", Some(paths.inputs.as_path())),
        ("home directory", paths.home.as_deref()),
    ];
    for (what, dir) in dirs
        .into_iter()
        .filter_map(|(what, dir)| Some((what, dir?)))
    {
        let owned = dir.to_owned();
        tokio::task::spawn_blocking(move || chown_tree(&owned, uid, gid))
            .await
            .map_err(std::io::Error::other)
            .and_then(|done| done)
            .map_err(|source| SandboxError::Prepare {
                what,
                path: dir.to_owned(),
                source,
            })?;
    }
    Ok(())
}
