//! The run's directories on disk, and artifact bookkeeping.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use uuid::Uuid;

/// Where one run's files live under the data directory.
pub(crate) struct RunDirs {
    data_dir: PathBuf,
    run: Uuid,
}

impl RunDirs {
    pub(crate) fn new(data_dir: &Path, run: Uuid) -> Self {
        Self {
            data_dir: data_dir.to_owned(),
            run,
        }
    }

    /// Shared by all the run's nodes, kept across them.
    pub(crate) fn workspace(&self) -> PathBuf {
        self.data_dir.join(format!("runs/{}/workspace", self.run))
    }

    /// One attempt's artifact directory, relative to the data directory (as stored).
    pub(crate) fn artifacts_location(&self, node: &str, attempt: u32) -> String {
        format!("runs/{}/artifacts/{node}/{attempt}", self.run)
    }

    /// A stored location made absolute.
    pub(crate) fn resolve(&self, location: &str) -> PathBuf {
        self.data_dir.join(location)
    }

    /// The workspace as it was when `node` first started.
    pub(crate) fn checkpoint(&self, node: &str) -> PathBuf {
        self.data_dir
            .join(format!("runs/{}/checkpoints/{node}.tar", self.run))
    }

    /// One attempt's inputs: a copy of each upstream node's artifacts.
    pub(crate) fn inputs(&self, node: &str, attempt: u32) -> PathBuf {
        self.data_dir
            .join(format!("runs/{}/inputs/{node}/{attempt}", self.run))
    }
}

/// Hex SHA-256 and size of a file's contents.
pub(crate) fn digest(bytes: &[u8]) -> (String, u64) {
    let hash = Sha256::digest(bytes);
    let hex = hash.iter().map(|b| format!("{b:02x}")).collect();
    (hex, bytes.len() as u64)
}
