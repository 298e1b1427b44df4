//! Short-lived directories the runner works in beside a workspace (clones being prepared,
//! packs being built, a read-only copy), gone with everything in them once dropped.

use std::path::{Path, PathBuf};

use uuid::Uuid;

/// A directory of its own under `parent`, removed with everything in it when dropped,
/// whatever happened meanwhile.
pub(crate) struct Scratch(PathBuf);

impl Scratch {
    pub(crate) fn new(parent: &Path, prefix: &str) -> std::io::Result<Self> {
        std::fs::create_dir_all(parent)?;
        let path = parent.join(format!("{prefix}-{}", Uuid::new_v4().simple()));
        std::fs::create_dir(&path)?;
        Ok(Self(path))
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.0)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(path = %self.0.display(), error = %e, "removing a scratch directory failed");
        }
    }
}
