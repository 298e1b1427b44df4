//! Why a sandbox could not run a job at all.

use std::path::PathBuf;

use thiserror::Error;

use crate::{ProfileError, RelayError, SandboxKind};

/// Why a sandbox could not run a job at all (as opposed to the job failing).
#[derive(Debug, Error)]
pub enum SandboxError {
    /// The workspace, artifact or input directory could not be prepared.
    #[error("preparing {what} at {path}: {source}")]
    Prepare {
        /// Which directory.
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The shell could not be started.
    #[error("starting the shell: {0}")]
    Spawn(#[source] std::io::Error),
    /// The job's profile is invalid (a config check should have caught it first).
    #[error("invalid sandbox profile: {0}")]
    Profile(#[from] ProfileError),
    /// The job's relay is invalid.
    #[error("invalid relay: {0}")]
    Relay(#[from] RelayError),
    /// The job was handed to a sandbox of another kind than its profile asks for.
    #[error("a {kind} profile cannot run in the {sandbox} sandbox")]
    WrongSandbox {
        /// What the profile asks for.
        kind: SandboxKind,
        /// The sandbox it was given to.
        sandbox: SandboxKind,
    },
    /// The profile's image is not on the Docker host (images are never pulled).
    #[error(
        "image `{image}` is not on this Docker host; build it with deploy/sandbox/build-images.sh or pull it"
    )]
    ImageMissing {
        /// The image reference.
        image: String,
    },
    /// Docker refused to create or start the container, for example for limits the host
    /// cannot meet; the message is Docker's.
    #[error("Docker refused the container: {message}")]
    Refused {
        /// Docker's explanation.
        message: String,
    },
    /// The Docker engine could not be reached.
    #[error("the Docker engine is not reachable: {0}")]
    Unreachable(#[source] bollard::errors::Error),
    /// The Docker engine answered with an error while the job was being run.
    #[error("Docker failed {doing}: {source}")]
    Docker {
        /// What the sandbox was doing.
        doing: &'static str,
        #[source]
        source: bollard::errors::Error,
    },
    /// A job's profile uses docker, but there is no Docker sandbox.
    #[error("profile uses docker but the Docker engine was not reachable at start: {0}")]
    DockerNotConfigured(String),
    /// A job's profile uses docker, but none did when the runner started, so it has no
    /// Docker sandbox.
    #[error("profile uses docker, but no profile did when this runner started: restart it")]
    NoDockerAtStart,
}

impl SandboxError {
    /// Sorts a Docker client error: the engine being away is said as such, so an operator
    /// looks at the daemon rather than at the job.
    pub(crate) fn docker(doing: &'static str, source: bollard::errors::Error) -> Self {
        use bollard::errors::Error as E;
        match source {
            E::SocketNotFoundError(_)
            | E::HyperLegacyError { .. }
            | E::HyperResponseError { .. }
            | E::IOError { .. }
            | E::RequestTimeoutError => SandboxError::Unreachable(source),
            source => SandboxError::Docker { doing, source },
        }
    }
}
