//! The run's directories on disk, and artifact bookkeeping.

use std::io;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use uuid::Uuid;

/// Where one run's files live under the data directory.
pub(crate) struct RunDirs {
    root: PathBuf,
}

impl RunDirs {
    pub(crate) fn new(data_dir: &Path, run: Uuid) -> Self {
        Self {
            root: data_dir.join("runs").join(run.to_string()),
        }
    }

    /// Shared by all the run's nodes, kept across them.
    pub(crate) fn workspace(&self) -> PathBuf {
        self.root.join("workspace")
    }

    /// One attempt's artifacts.
    pub(crate) fn artifacts(&self, node: &str, attempt: u32) -> PathBuf {
        self.root
            .join("artifacts")
            .join(node)
            .join(attempt.to_string())
    }

    /// One attempt's inputs: a copy of each upstream node's artifacts.
    pub(crate) fn inputs(&self, node: &str, attempt: u32) -> PathBuf {
        self.root
            .join("inputs")
            .join(node)
            .join(attempt.to_string())
    }
}

/// Copies a directory tree (a missing source is an empty one).
pub(crate) fn copy_tree(from: &Path, to: &Path) -> io::Result<()> {
    std::fs::create_dir_all(to)?;
    let entries = match std::fs::read_dir(from) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}

/// Hex SHA-256 and size of a file.
pub(crate) fn digest(path: &Path) -> io::Result<(String, u64)> {
    let bytes = std::fs::read(path)?;
    let hash = Sha256::digest(&bytes);
    let hex = hash.iter().map(|b| format!("{b:02x}")).collect();
    Ok((hex, bytes.len() as u64))
}
