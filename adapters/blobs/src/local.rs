//! The blob store in a local directory: the embedded default, where every service shares
//! one machine's data directory.
//!
//! Layout under the directory given to [`LocalBlobs::new`] (the caller passes
//! `{data_dir}/blobs`):
//!
//! ```text
//! sha256/ab/ab12…(64 hex)   one file per blob, named by its digest, fanned out by the first byte
//! tmp/                      blobs being written; a crash may leave `.*.part` files here
//! corrupt/                  blobs found not to match their names, moved aside for a look
//! ```
//!
//! A blob is written into `tmp/`, fsynced and renamed to its name, so its name only ever
//! holds whole contents, and two writers of the same contents race harmlessly (whichever
//! rename comes last replaces identical bytes; a writer that finds the blob there already
//! drops its copy). Every read hashes what it reads and hands nothing on that does not
//! match the name, so a blob changed on disk is reported as [`BlobError::Corrupt`] and
//! never returned: the file is moved aside to `corrupt/`, so that storing the same
//! contents again restores the blob (a put that finds a file of the right size under the
//! name does not rewrite it).

use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use bytes::Bytes;

use crate::digest::{blocking, verify};
use crate::file::{self, ORDINARY, OpenFailure, PRIVATE, Staged};
use crate::{Blob, BlobError, BlobStore, Digest};

/// Blobs as files in a directory of this machine: no server to run, nothing shared
/// between machines.
#[derive(Debug, Clone)]
pub struct LocalBlobs {
    dir: PathBuf,
}

impl LocalBlobs {
    /// The store in `dir` (created on first write, or by [`BlobStore::check_ready`]).
    /// Nothing is touched here, so constructing it cannot fail.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }
}

/// Where the blob `digest` lives under `dir`.
fn blob_path(dir: &Path, digest: &Digest) -> PathBuf {
    dir.join("sha256")
        .join(digest.shard())
        .join(digest.as_str())
}

/// A new temporary file in `dir/tmp`.
fn stage(dir: &Path) -> Result<Staged, BlobError> {
    let tmp = dir.join("tmp");
    let context = || format!("creating a temporary file in {}", tmp.display());
    std::fs::create_dir_all(&tmp).map_err(BlobError::io(context()))?;
    Staged::create_in(&tmp, "blob", PRIVATE).map_err(BlobError::io(context()))
}

/// Whether `target` already holds the blob: a regular file of its size. (Its contents are
/// checked whenever it is read; a file of the wrong size or kind is replaced.)
fn holds(target: &Path, size: u64) -> bool {
    match std::fs::symlink_metadata(target) {
        Ok(meta) if meta.file_type().is_file() && meta.len() == size => true,
        Ok(meta) => {
            tracing::warn!(
                path = %target.display(),
                kind = ?meta.file_type(),
                size = meta.len(),
                expected = size,
                "replacing a damaged blob"
            );
            false
        }
        Err(_) => false,
    }
}

/// Gives the staged contents `blob`'s name, unless the store holds them already.
fn install(dir: &Path, staged: Staged, blob: Blob) -> Result<Blob, BlobError> {
    let target = blob_path(dir, &blob.digest);
    let context = || format!("storing blob {} at {}", blob.digest, target.display());
    if let Some(shard) = target.parent() {
        std::fs::create_dir_all(shard).map_err(BlobError::io(context()))?;
    }
    if holds(&target, blob.size) {
        // Dropping `staged` removes the copy.
        return Ok(blob);
    }
    staged.commit(&target).map_err(BlobError::io(context()))?;
    Ok(blob)
}

/// Opens the stored blob `digest`, regular files only, links not followed.
fn open_blob(dir: &Path, digest: &Digest) -> Result<(std::fs::File, u64), BlobError> {
    let path = blob_path(dir, digest);
    file::open_regular(&path).map_err(|failure| match failure {
        OpenFailure::Missing => BlobError::NotFound(digest.clone()),
        OpenFailure::NotRegular(reason) => BlobError::Refused {
            digest: digest.clone(),
            reason: reason.to_owned(),
        },
        OpenFailure::Io(source) => BlobError::Io {
            context: format!("opening blob {}", path.display()),
            source,
        },
    })
}

/// `verify`, moving a blob that fails it out of its name (to `dir/corrupt/`), unless it
/// was replaced since `opened` was opened.
fn verify_or_quarantine(
    dir: &Path,
    digest: &Digest,
    opened: &std::fs::File,
    read: Blob,
) -> Result<Blob, BlobError> {
    let err = match verify(digest, read) {
        Ok(blob) => return Ok(blob),
        Err(err) => err,
    };
    let path = blob_path(dir, digest);
    let same = match (opened.metadata(), std::fs::symlink_metadata(&path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    };
    if same {
        let aside = dir.join("corrupt");
        let stamp = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let to = aside.join(format!("{digest}.{stamp}"));
        match std::fs::create_dir_all(&aside).and_then(|()| std::fs::rename(&path, &to)) {
            Ok(()) => tracing::warn!(%digest, moved_to = %to.display(), "corrupt blob moved aside"),
            Err(e) => tracing::warn!(%digest, error = %e, "could not move a corrupt blob aside"),
        }
    }
    Err(err)
}

#[async_trait]
impl BlobStore for LocalBlobs {
    async fn put_file(&self, path: &Path) -> Result<Blob, BlobError> {
        let dir = self.dir.clone();
        let path = path.to_owned();
        blocking(move || {
            let context = || format!("copying {} into the blob store", path.display());
            let source = std::fs::File::open(&path).map_err(BlobError::io(context()))?;
            let staged = stage(&dir)?;
            let blob = file::copy_hashing(&source, staged.file(), u64::MAX)
                .map_err(BlobError::io(context()))?;
            install(&dir, staged, blob)
        })
        .await
    }

    async fn put_bytes(&self, bytes: Bytes) -> Result<Blob, BlobError> {
        let dir = self.dir.clone();
        blocking(move || {
            let blob = Blob {
                digest: Digest::of(&bytes),
                size: bytes.len() as u64,
            };
            if holds(&blob_path(&dir, &blob.digest), blob.size) {
                return Ok(blob);
            }
            let staged = stage(&dir)?;
            let mut writer = staged.file();
            writer
                .write_all(&bytes)
                .map_err(BlobError::io(format!("writing blob {}", blob.digest)))?;
            install(&dir, staged, blob)
        })
        .await
    }

    async fn get_to_file(
        &self,
        digest: &Digest,
        dest: &Path,
        limit: u64,
    ) -> Result<u64, BlobError> {
        let dir = self.dir.clone();
        let digest = digest.clone();
        let dest = dest.to_owned();
        blocking(move || {
            let (blob_file, size) = open_blob(&dir, &digest)?;
            if size > limit {
                return Err(BlobError::TooLarge {
                    digest,
                    size,
                    limit,
                });
            }
            let context = || format!("writing blob {digest} to {}", dest.display());
            let staged = Staged::beside(&dest, ORDINARY).map_err(BlobError::io(context()))?;
            let read = file::copy_hashing(&blob_file, staged.file(), size)
                .map_err(BlobError::io(context()))?;
            let read = verify_or_quarantine(&dir, &digest, &blob_file, read)?;
            staged.commit(&dest).map_err(BlobError::io(context()))?;
            Ok(read.size)
        })
        .await
    }

    async fn get_bytes(&self, digest: &Digest, limit: u64) -> Result<Bytes, BlobError> {
        let dir = self.dir.clone();
        let digest = digest.clone();
        blocking(move || {
            let (blob_file, size) = open_blob(&dir, &digest)?;
            if size > limit {
                return Err(BlobError::TooLarge {
                    digest,
                    size,
                    limit,
                });
            }
            // `size` is at most `limit`, which the caller is willing to hold.
            let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
            let read = file::copy_hashing(&blob_file, &mut bytes, size)
                .map_err(BlobError::io(format!("reading blob {digest}")))?;
            verify_or_quarantine(&dir, &digest, &blob_file, read)?;
            Ok(Bytes::from(bytes))
        })
        .await
    }

    async fn contains(&self, digest: &Digest) -> Result<bool, BlobError> {
        let path = blob_path(&self.dir, digest);
        match tokio::fs::symlink_metadata(&path).await {
            Ok(meta) if meta.file_type().is_file() => Ok(true),
            // Not a usable blob: storing it again replaces whatever is there.
            Ok(meta) => {
                tracing::warn!(path = %path.display(), kind = ?meta.file_type(), "not a blob");
                Ok(false)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(BlobError::Io {
                context: format!("looking for blob {}", path.display()),
                source,
            }),
        }
    }

    fn describe(&self) -> String {
        format!("local {}", self.dir.display())
    }

    async fn check_ready(&self) -> Result<(), BlobError> {
        let dir = self.dir.clone();
        blocking(move || {
            let blobs = dir.join("sha256");
            std::fs::create_dir_all(&blobs)
                .map_err(BlobError::io(format!("creating {}", blobs.display())))?;
            // Proves the directory writable; dropped, it is removed.
            let probe = stage(&dir)?;
            let mut writer = probe.file();
            writer
                .write_all(b"ready")
                .map_err(BlobError::io(format!("writing in {}", dir.display())))?;
            Ok(())
        })
        .await
    }
}
