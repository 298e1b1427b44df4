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
//!
//! A conversation's home (its CLI's own state) is checkpointed the same way within
//! stricter [`HomeBounds`]: no links, caches left out, and a cap on what its packs and its
//! files may hold together, checked when it is taken and again, as untrusted, when it is
//! restored.

pub(crate) mod archive;
mod blobs;
#[cfg(test)]
mod home_tests;
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
pub(crate) use blobs::{fill_blobs, parse_listing, pending_repos, seed};
use manifest::{Kind, Manifest, Pack};
use walk::SeenFiles;

/// The largest manifest a runner reads back.
const MANIFEST_LIMIT: u64 = 256 * 1024 * 1024;

/// The largest pack a runner writes or fetches unless configured otherwise
/// (`storage.checkpoint_pack_limit`).
pub(crate) const PACK_LIMIT: u64 = 4 * 1024 * 1024 * 1024;

/// How many times its packs' limit a home's files may hold, each path counted: room for
/// files with the same contents, and no more, so a small pack cannot unfold into a disk's
/// worth of copies.
const HOME_FILES_FACTOR: u64 = 4;

/// Top-level names of a home that are never checkpointed: caches (`pip`, `uv`, `go` and
/// others keep theirs in `~/.cache`) are rebuilt at will and would crowd out what matters.
const HOME_LEFT_OUT: &[&str] = &[".cache"];

/// Where one workspace lives on this runner's disk.
#[derive(Debug, Clone)]
pub(crate) struct Place {
    pub workspace: PathBuf,
    /// The checkouts record kept beside the workspace (absent before the clone); `None` for
    /// a home, which has none.
    pub checkouts: Option<PathBuf>,
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
    /// What all the checkpoint's packs hold, this time's and those kept from before.
    pub packed: u64,
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

/// A file of a restored checkpoint still to be written from its repository's mirror (see
/// [`fill_blobs`]). They are kept in a file of their own beside the record
/// ([`pending_path`]), written before the record and removed once they are all written,
/// so a node's start asks one `stat` whether the workspace is whole, not a read of the
/// record of every file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Pending {
    pub path: String,
    /// The repository's directory in the workspace.
    pub repo: String,
    pub id: String,
    pub size: u64,
    pub mode: u32,
}

/// Where the files a restore left pending are listed, beside the record at `local`.
pub(crate) fn pending_path(local: &Path) -> PathBuf {
    local.with_extension("pending.json")
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
    #[error(
        "the home's {what} come to {size} bytes, over the {limit} bytes allowed (storage.conversation_home_limit)"
    )]
    HomeTooLarge {
        /// `packs` or `files`.
        what: &'static str,
        size: u64,
        limit: u64,
    },
    #[error("the database: {0}")]
    Store(#[from] gatehouse_store::StoreError),
}

impl crate::patience::Transient for CheckpointError {
    fn is_transient(&self) -> bool {
        matches!(self, Self::Blobs(err) if err.is_transient())
    }
}

/// What a conversation's home may be: its CLI's state, which another runner restores into
/// the same conversation's sandbox. Taken, it leaves out links (with a warning) and
/// [`HOME_LEFT_OUT`], and fails [`CheckpointError::HomeTooLarge`] past `limit`; restored,
/// a manifest holding a link or a checkouts record, or packs over `limit`, or files over
/// [`HOME_FILES_FACTOR`] times it, is refused before anything is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HomeBounds {
    /// The most its packs may hold together.
    pub limit: u64,
}

impl HomeBounds {
    fn files_limit(self) -> u64 {
        self.limit.saturating_mul(HOME_FILES_FACTOR)
    }

    /// Refuses packs holding `packed` bytes together when that is past the limit.
    fn check_packs(self, packed: u64) -> Result<(), CheckpointError> {
        if packed > self.limit {
            return Err(CheckpointError::HomeTooLarge {
                what: "packs",
                size: packed,
                limit: self.limit,
            });
        }
        Ok(())
    }
}

/// Takes and restores checkpoints through the blob store.
#[derive(Clone)]
pub(crate) struct Checkpoints {
    blobs: Blobs,
    /// The largest pack taken or fetched: a manifest may say any size, and whatever it
    /// says is all of a pack that is fetched.
    pub(crate) pack_limit: u64,
    /// Set for a conversation's home (see [`HomeBounds`]); a workspace has none.
    home: Option<HomeBounds>,
}

impl Checkpoints {
    /// Checkpoints of workspaces.
    pub(crate) fn new(blobs: Blobs, pack_limit: u64) -> Self {
        Self {
            blobs,
            pack_limit,
            home: None,
        }
    }

    /// Checkpoints of conversations' homes, within `bounds`.
    pub(crate) fn homes(blobs: Blobs, bounds: HomeBounds) -> Self {
        Self {
            blobs,
            pack_limit: bounds.limit,
            home: Some(bounds),
        }
    }

    /// The same checkpoints, kept in `blobs`.
    pub(crate) fn in_blobs(self, blobs: Blobs) -> Self {
        Self { blobs, ..self }
    }

    /// Checkpoints the workspace at `place`, uploading only what the checkpoint it last
    /// matched does not hold.
    pub(crate) async fn take(&self, place: &Place) -> Result<Taken, CheckpointError> {
        let walk_place = place.clone();
        let rules = match self.home {
            Some(_) => walk::Rules {
                links: false,
                left_out: HOME_LEFT_OUT,
            },
            None => walk::Rules::default(),
        };
        let (before, walked, checkouts) = blocking(move || {
            if pending_path(&walk_place.local).exists() {
                return Err(io::Error::other(
                    "files of its last checkpoint are not written yet (their repository's mirror was not ready)",
                ));
            }
            let before = Local::read(&walk_place.local);
            let none = SeenFiles::default();
            let seen = before.as_ref().map_or(&none, |l| &l.seen);
            let walked = walk::walk(&walk_place.workspace, seen, rules)?;
            let checkouts = match &walk_place.checkouts {
                Some(path) => match std::fs::read_to_string(path) {
                    Ok(text) => Some(text),
                    Err(e) if e.kind() == io::ErrorKind::NotFound => None,
                    Err(e) => return Err(e),
                },
                None => None,
            };
            Ok((before, walked, checkouts))
        })
        .await?;
        let mut manifest = Manifest::new(walked.entries, Vec::new(), checkouts);
        let live = manifest.contents();
        let bytes: u64 = live.values().sum::<u64>() + manifest.blob_sizes();
        if let Some(home) = self.home {
            // Each path counted, as a restore counts them.
            let files: u64 = manifest.file_sizes();
            if files > home.files_limit() {
                return Err(CheckpointError::HomeTooLarge {
                    what: "files",
                    size: files,
                    limit: home.files_limit(),
                });
            }
        }
        // Contents the earlier packs hold, unless they are worth repacking.
        let (mut packs, held) = match &before {
            Some(local) => {
                let packed: u64 = local.manifest.packs.iter().map(|p| p.size).sum();
                let held: BTreeSet<Digest> =
                    local.manifest.contents().into_keys().cloned().collect();
                // A home's packs stay within its limit: when a pack of the new contents
                // would take them past it, all are packed again, holding only what it
                // still has.
                let fresh = pack::size(
                    live.iter()
                        .filter(|(digest, _)| !held.contains(**digest))
                        .map(|(_, size)| *size),
                );
                let over_home = self
                    .home
                    .is_some_and(|home| packed.saturating_add(fresh) > home.limit);
                if over_home || packed > 2 * bytes + (1 << 20) {
                    (Vec::new(), BTreeSet::new())
                } else {
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
        let kept: u64 = packs.iter().map(|p| p.size).sum();
        if let Some(home) = self.home {
            // Known before a byte is packed: a home past its limit costs no upload.
            let packed = kept.saturating_add(pack::size(
                live.iter()
                    .filter(|(digest, _)| new.contains_key(**digest))
                    .map(|(_, size)| *size),
            ));
            home.check_packs(packed)?;
        }
        let mut uploaded = 0;
        if !new.is_empty() {
            let scratch = crate::scratch::Scratch::new(&place.scratch, "pack")?;
            let file = scratch.path().join("pack.tar");
            let written = file.clone();
            uploaded = blocking(move || pack::write(&new, &written)).await?;
            // Again as written: a file may have grown since it was looked at.
            if let Some(home) = self.home {
                home.check_packs(kept.saturating_add(uploaded))?;
            }
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
        let packed = manifest.packs.iter().map(|p| p.size).sum();
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
            packed,
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
        let manifest_limit = self
            .home
            .map_or(MANIFEST_LIMIT, |home| home.limit.min(MANIFEST_LIMIT));
        let bytes = match self.blobs.get_bytes(digest, manifest_limit).await {
            Err(BlobError::TooLarge { size, .. }) => {
                return Err(invalid(format!(
                    "its manifest is {size} bytes or more, over the {manifest_limit} bytes read back"
                )));
            }
            bytes => bytes?,
        };
        let manifest = Manifest::parse(&bytes).map_err(invalid)?;
        if let Some(home) = self.home {
            check_home(&manifest, home).map_err(invalid)?;
        }
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
        let files_limit = self.home.map(HomeBounds::files_limit);
        blocking(move || {
            restore::restore(&manifest, &named, &packs, &staging, &place, files_limit)
        })
        .await
        .map_err(|e| match e.kind() {
            io::ErrorKind::InvalidData => invalid(e.to_string()),
            _ => CheckpointError::Io(e),
        })?;
        drop(scratch);
        Ok(Restored { entries, fetched })
    }
}

/// What a home's manifest must be besides a manifest (see [`HomeBounds`]): no link (the
/// CLI's state needs none, and one could lead the runner or the next sandbox out of the
/// home), no repository's file, no checkouts record, and packs within the limit.
fn check_home(manifest: &Manifest, home: HomeBounds) -> Result<(), String> {
    for entry in &manifest.entries {
        let what = match entry.kind {
            Kind::Link { .. } => "a link",
            Kind::Blob { .. } => "a repository's file",
            Kind::Dir | Kind::File { .. } => continue,
        };
        return Err(format!(
            "`{}` is {what}, which a conversation's home may not hold",
            entry.path
        ));
    }
    if manifest.checkouts.is_some() {
        return Err("it holds a checkouts record, which a conversation's home has not".into());
    }
    let packed = manifest
        .packs
        .iter()
        .fold(0u64, |sum, p| sum.saturating_add(p.size));
    if packed > home.limit {
        return Err(format!(
            "its packs are recorded as {packed} bytes, over the {} bytes a conversation's home may hold (storage.conversation_home_limit)",
            home.limit
        ));
    }
    Ok(())
}

/// Runs file work off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(io::Error::other)?
}
