//! What the benchmarks measure, reachable from outside the crate: preparing a run's
//! workspace exactly as a node's attempt does (`benches/workspace.rs`), and checkpointing
//! and restoring it as runners do between nodes (`benches/checkpoint.rs`). Not an API.

use std::path::Path;

use gatehouse_events::RepositoryCheckout;

use crate::deliver::Deliverer;
use crate::deliver::checkouts;
use crate::deliver::prepare::Layout;

/// Checks `repositories` out into `run_dir/workspace` (the run's directory layout), with
/// `auto` repositories on `branch`. `Err`: the reason a node would fail with.
pub async fn prepare_workspace(
    deliverer: &Deliverer,
    run_dir: &Path,
    repositories: &[RepositoryCheckout],
    branch: &str,
) -> Result<(), String> {
    let planned = checkouts::plan(repositories, branch)?;
    let (workspace, record, scratch) = (
        run_dir.join("workspace"),
        run_dir.join("checkouts.json"),
        run_dir.join("scratch"),
    );
    let local = run_dir.join("checkpoint.json");
    let layout = Layout {
        workspace: &workspace,
        record: &record,
        scratch: &scratch,
        local: &local,
    };
    let mut log = Vec::new();
    deliverer
        .prepare(&planned, &layout, &mut log)
        .await
        .map(drop)
}

/// A run's workspace under `run_dir/workspace`, checkpointed and restored exactly as a
/// runner does it between nodes (`benches/checkpoint.rs`).
pub struct CheckpointedWorkspace {
    checkpoints: crate::checkpoint::Checkpoints,
    place: crate::checkpoint::Place,
}

/// What one checkpoint cost.
#[derive(Debug, Clone)]
pub struct CheckpointCost {
    /// The manifest's digest, for [`CheckpointedWorkspace::restore`].
    pub manifest: String,
    /// Bytes of file contents the workspace holds.
    pub bytes: u64,
    /// Bytes of contents this checkpoint uploaded.
    pub uploaded: u64,
}

impl CheckpointedWorkspace {
    /// The workspace of a run under the data directory `data_dir`, its checkpoints in
    /// `blobs`.
    pub fn new(blobs: gatehouse_blobs::Blobs, data_dir: &Path) -> Self {
        let dirs = crate::files::RunDirs::new(data_dir, uuid::Uuid::nil());
        Self {
            checkpoints: crate::checkpoint::Checkpoints::new(blobs, crate::checkpoint::PACK_LIMIT),
            place: dirs.place(),
        }
    }

    /// Where a node works.
    pub fn path(&self) -> &Path {
        &self.place.workspace
    }

    /// Checkpoints the workspace, uploading what the last checkpoint here did not hold.
    pub async fn checkpoint(&self) -> Result<CheckpointCost, String> {
        let taken = self
            .checkpoints
            .take(&self.place)
            .await
            .map_err(|e| e.to_string())?;
        Ok(CheckpointCost {
            manifest: taken.manifest.as_str().to_owned(),
            bytes: taken.bytes,
            uploaded: taken.uploaded,
        })
    }

    /// Replaces the workspace with checkpoint `manifest`; the bytes fetched.
    pub async fn restore(&self, manifest: &str) -> Result<u64, String> {
        let digest = manifest.parse().map_err(|e| format!("{e}"))?;
        self.checkpoints
            .restore(&digest, &self.place)
            .await
            .map(|r| r.fetched)
            .map_err(|e| e.to_string())
    }
}
