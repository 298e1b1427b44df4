//! Workspace checkpoints in the blob store, so a run's workspace follows it from runner to
//! runner with no shared disk.
//!
//! A checkpoint is a [manifest](manifest::Manifest) (every entry with its mode and owner,
//! files by content digest) plus the packs holding the contents. Taking one after another
//! is incremental: files are hashed only when their `stat` changed
//! ([`walk`]), and only contents no earlier pack of the chain holds go into the new pack —
//! git's objects once, then each node's changes. When the packs hold more than twice what
//! the workspace still uses, the next checkpoint repacks everything into one.
//!
//! Beside the workspace the runner keeps what it knows of it ([`Local`]): the manifest it
//! matches and each file as last seen. The caller decides when the workspace may be
//! trusted to match it (see `nodes/follow.rs`).

pub(crate) mod archive;
mod manifest;
mod pack;
mod restore;
#[cfg(test)]
mod tests;
mod walk;

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};

use gatehouse_blobs::{BlobError, Blobs, Digest};

use serde::{Deserialize, Serialize};

pub(crate) use archive::{restore as restore_archive, take as take_archive};
use manifest::{Kind, Manifest, Pack};
use walk::SeenFiles;

/// The largest manifest a runner reads back.
const MANIFEST_LIMIT: u64 = 256 * 1024 * 1024;

/// The largest pack a runner writes or fetches unless configured otherwise
/// (`storage.checkpoint_pack_limit`).
pub(crate) const PACK_LIMIT: u64 = 4 * 1024 * 1024 * 1024;

/// Where one workspace lives on this runner's disk.
#[derive(Debug, Clone)]
pub(crate) struct Place {
    pub workspace: PathBuf,
    /// The checkouts record kept beside the workspace (absent before the clone).
    pub checkouts: PathBuf,
    /// What the runner knows of the workspace (see [`Local`]).
    pub local: PathBuf,
    /// For packs being written or read, removed afterwards.
    pub scratch: PathBuf,
}

/// What a checkpoint cost, for the attempt's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Taken {
    pub manifest: Digest,
    /// Entries in the workspace.
    pub entries: usize,
    /// The files' total size.
    pub bytes: u64,
    /// Bytes packed and uploaded this time (0 when nothing changed).
    pub uploaded: u64,
    /// Whether it differs from the checkpoint before.
    pub changed: bool,
}

/// What a restore cost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Restored {
    pub entries: usize,
    /// Bytes of packs downloaded.
    pub fetched: u64,
}

/// What the runner knows of a workspace on its disk: the checkpoint it matched when last
/// taken or restored, and its files as seen then.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Local {
    #[serde(with = "manifest::as_text")]
    pub digest: Digest,
    manifest: Manifest,
    seen: SeenFiles,
}

impl Local {
    /// The record at `path`; none when there is none or it does not read (a runner from
    /// before, a crash while writing): the workspace is then taken afresh.
    pub(crate) fn read(path: &Path) -> Option<Self> {
        let bytes = std::fs::read(path).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Only the digest of the record at `path`, for callers that compare it with the
    /// latest checkpoint: the manifest and the files seen are skipped, not built.
    pub(crate) fn digest(path: &Path) -> Option<Digest> {
        #[derive(Deserialize)]
        struct DigestOnly {
            #[serde(with = "manifest::as_text")]
            digest: Digest,
        }
        let bytes = std::fs::read(path).ok()?;
        serde_json::from_slice::<DigestOnly>(&bytes)
            .ok()
            .map(|d| d.digest)
    }

    fn write(&self, path: &Path) -> io::Result<()> {
        let partial = path.with_extension("partial");
        std::fs::write(
            &partial,
            serde_json::to_vec(self).map_err(io::Error::other)?,
        )?;
        std::fs::rename(partial, path)
    }
}

/// Why a checkpoint could not be taken or restored.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CheckpointError {
    #[error("the workspace: {0}")]
    Io(#[from] io::Error),
    #[error("the blob store: {0}")]
    Blobs(#[from] BlobError),
    #[error("checkpoint {digest}: {reason}")]
    Invalid { digest: Digest, reason: String },
    #[error(
        "the workspace's pack is {size} bytes, over the {limit} bytes a pack may have (storage.checkpoint_pack_limit)"
    )]
    TooLarge { size: u64, limit: u64 },
    #[error("the database: {0}")]
    Store(#[from] gatehouse_store::StoreError),
}

impl crate::patience::Transient for CheckpointError {
    fn is_transient(&self) -> bool {
        matches!(self, Self::Blobs(err) if err.is_transient())
    }
}

/// Takes and restores checkpoints through the blob store.
#[derive(Clone)]
pub(crate) struct Checkpoints {
    blobs: Blobs,
    /// The largest pack taken or fetched: a manifest may say any size, and whatever it
    /// says is all of a pack that is fetched.
    pub(crate) pack_limit: u64,
}

impl Checkpoints {
    pub(crate) fn new(blobs: Blobs, pack_limit: u64) -> Self {
        Self { blobs, pack_limit }
    }

    /// Checkpoints the workspace at `place`, uploading only what the checkpoint it last
    /// matched does not hold.
    pub(crate) async fn take(&self, place: &Place) -> Result<Taken, CheckpointError> {
        let walk_place = place.clone();
        let (before, walked, checkouts) = blocking(move || {
            let before = Local::read(&walk_place.local);
            let none = SeenFiles::default();
            let seen = before.as_ref().map_or(&none, |l| &l.seen);
            let walked = walk::walk(&walk_place.workspace, seen)?;
            let checkouts = match std::fs::read_to_string(&walk_place.checkouts) {
                Ok(text) => Some(text),
                Err(e) if e.kind() == io::ErrorKind::NotFound => None,
                Err(e) => return Err(e),
            };
            Ok((before, walked, checkouts))
        })
        .await?;
        let mut manifest = Manifest::new(walked.entries, Vec::new(), checkouts);
        let live = manifest.contents();
        let bytes: u64 = live.values().sum();
        // Contents the earlier packs hold, unless they are worth repacking.
        let (mut packs, held) = match &before {
            Some(local) => {
                let packed: u64 = local.manifest.packs.iter().map(|p| p.size).sum();
                if packed > 2 * bytes + (1 << 20) {
                    (Vec::new(), BTreeSet::new())
                } else {
                    let held: BTreeSet<Digest> =
                        local.manifest.contents().into_keys().cloned().collect();
                    (local.manifest.packs.clone(), held)
                }
            }
            None => (Vec::new(), BTreeSet::new()),
        };
        let mut new: BTreeMap<Digest, PathBuf> = BTreeMap::new();
        for entry in &manifest.entries {
            if let Kind::File { digest, .. } = &entry.kind
                && !held.contains(digest)
            {
                new.entry(digest.clone())
                    .or_insert_with(|| place.workspace.join(&entry.path));
            }
        }
        let mut uploaded = 0;
        if !new.is_empty() {
            let scratch = crate::scratch::Scratch::new(&place.scratch, "pack")?;
            let file = scratch.path().join("pack.tar");
            let written = file.clone();
            uploaded = blocking(move || pack::write(&new, &written)).await?;
            // No runner would fetch it: the workspace could never be restored.
            if uploaded > self.pack_limit {
                return Err(CheckpointError::TooLarge {
                    size: uploaded,
                    limit: self.pack_limit,
                });
            }
            let blob = self.blobs.put_file(&file).await?;
            packs.push(Pack {
                digest: blob.digest,
                size: blob.size,
            });
        }
        manifest.packs = packs;
        let entries = manifest.entries.len();
        let json = manifest.to_json();
        let digest = Digest::of(&json);
        let changed = before.as_ref().is_none_or(|l| l.digest != digest);
        // The same manifest as last time is in the store already: an attempt that left the
        // workspace as it found it costs no upload (with NATS, no round trip).
        if changed {
            self.blobs.put_bytes(json.into()).await?;
        }
        // A workspace as its record says (a node that changed nothing, a start right after
        // the last end) writes no file.
        let recorded = !changed && before.as_ref().is_some_and(|l| l.seen == walked.seen);
        if !recorded {
            let local = Local {
                digest: digest.clone(),
                manifest,
                seen: walked.seen,
            };
            let path = place.local.clone();
            blocking(move || local.write(&path)).await?;
        }
        Ok(Taken {
            manifest: digest,
            entries,
            bytes,
            uploaded,
            changed,
        })
    }

    /// Replaces the workspace at `place` with checkpoint `digest`.
    pub(crate) async fn restore(
        &self,
        digest: &Digest,
        place: &Place,
    ) -> Result<Restored, CheckpointError> {
        let invalid = |reason: String| CheckpointError::Invalid {
            digest: digest.clone(),
            reason,
        };
        let bytes = self.blobs.get_bytes(digest, MANIFEST_LIMIT).await?;
        let manifest = Manifest::parse(&bytes).map_err(invalid)?;
        let scratch = crate::scratch::Scratch::new(&place.scratch, "restore")?;
        let mut fetched = 0;
        let mut packs = Vec::new();
        if let Some(pack) = manifest.packs.iter().find(|p| p.size > self.pack_limit) {
            return Err(invalid(format!(
                "its pack {} is recorded as {} bytes, over the {} bytes a pack may have (storage.checkpoint_pack_limit)",
                pack.digest, pack.size, self.pack_limit
            )));
        }
        for (n, pack) in manifest.packs.iter().enumerate() {
            let file = scratch.path().join(format!("pack-{n}.tar"));
            // No more than the manifest says: a pack longer than that is not its pack.
            fetched += match self.blobs.get_to_file(&pack.digest, &file, pack.size).await {
                Err(BlobError::TooLarge { size, .. }) => {
                    return Err(invalid(format!(
                        "its pack {} is longer ({size} bytes or more) than the {} bytes recorded",
                        pack.digest, pack.size
                    )));
                }
                fetched => fetched?,
            };
            packs.push(file);
        }
        let entries = manifest.entries.len();
        let (place, staging, named) = (place.clone(), scratch.path().to_owned(), digest.clone());
        blocking(move || restore::restore(&manifest, &named, &packs, &staging, &place))
            .await
            .map_err(|e| match e.kind() {
                io::ErrorKind::InvalidData => invalid(e.to_string()),
                _ => CheckpointError::Io(e),
            })?;
        drop(scratch);
        Ok(Restored { entries, fetched })
    }
}

/// Runs file work off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(io::Error::other)?
}
