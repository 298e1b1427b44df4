//! The run's directories on disk, and artifact bookkeeping.

use std::path::{Path, PathBuf};

use uuid::Uuid;

use crate::checkpoint::Place;

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

    /// Everything of the run: its workspace and, beside it, what only the runner writes.
    pub(crate) fn run_dir(&self) -> PathBuf {
        self.data_dir.join(format!("runs/{}", self.run))
    }

    /// Shared by all the run's nodes, kept across them.
    pub(crate) fn workspace(&self) -> PathBuf {
        self.run_dir().join("workspace")
    }

    /// How the workspace's repositories were checked out (see
    /// [`crate::deliver::checkouts`]), written once they all were.
    pub(crate) fn checkouts(&self) -> PathBuf {
        self.run_dir().join("checkouts.json")
    }

    /// Where the runner's short-lived git directories go (clones being prepared, the
    /// index a tree is computed with, a merge): beside the workspace, never inside it.
    pub(crate) fn scratch(&self) -> PathBuf {
        self.run_dir().join("scratch")
    }

    /// One attempt's artifact directory, relative to the data directory (as stored).
    pub(crate) fn artifacts_location(&self, node: &str, attempt: u32) -> String {
        format!("runs/{}/artifacts/{node}/{attempt}", self.run)
    }

    /// A stored location made absolute.
    pub(crate) fn resolve(&self, location: &str) -> PathBuf {
        self.data_dir.join(location)
    }

    /// What this runner knows of its copy of the workspace: the checkpoint it matches
    /// (see [`crate::checkpoint::Local`]).
    pub(crate) fn local(&self) -> PathBuf {
        self.run_dir().join("checkpoint.json")
    }

    /// Present while an attempt works in the workspace: found at the next attempt's start,
    /// it says the last one here was cut short and the copy cannot be trusted.
    pub(crate) fn unfinished(&self) -> PathBuf {
        self.run_dir().join("attempt-unfinished")
    }

    /// The run's workspace on this runner's disk, as checkpoints take and restore it.
    pub(crate) fn place(&self) -> Place {
        Place {
            workspace: self.workspace(),
            checkouts: Some(self.checkouts()),
            local: self.local(),
            scratch: self.scratch(),
        }
    }

    /// One agent attempt's home: the CLI's own state (sessions, caches), outside the
    /// workspace, removed when the attempt ends.
    pub(crate) fn home(&self, node: &str, attempt: u32) -> PathBuf {
        self.data_dir
            .join(format!("runs/{}/homes/{node}/{attempt}", self.run))
    }

    /// One attempt's inputs: a copy of each upstream node's artifacts.
    pub(crate) fn inputs(&self, node: &str, attempt: u32) -> PathBuf {
        self.data_dir
            .join(format!("runs/{}/inputs/{node}/{attempt}", self.run))
    }
}
