//! Gatehouse's blob store: artifacts, workspace checkpoint packs and their manifests, kept
//! by content.
//!
//! A blob is named by the SHA-256 of its contents ([`Digest`]), so the same bytes are
//! stored once however often they are put, a name never changes meaning, and whoever
//! reads a blob can tell whether it got what the name promises. Every read here does tell:
//! it hashes while it reads and refuses ([`BlobError::Corrupt`]) contents that do not
//! match, before any of them is handed on (a file is written under a temporary name and
//! only renamed into place once checked).
//!
//! Two backends, chosen by `[storage] blobs`:
//!
//! - [`LocalBlobs`] (`"local"`): files under `{data_dir}/blobs`, for `gatehouse up` and any
//!   deployment on one machine;
//! - [`NatsBlobs`] (`"nats"`): a NATS JetStream object store bucket, so runners on several
//!   machines share blobs without a shared filesystem.
//!
//! Both stream: files are hashed, copied, uploaded and downloaded in pieces, and only
//! [`BlobStore::get_bytes`] holds a blob in memory, up to a limit the caller sets.

mod digest;
mod error;
mod file;
mod local;
mod nats;

use std::path::Path;

use async_trait::async_trait;
use bytes::Bytes;

pub use digest::{Digest, Hasher, hash_file, hash_reader};
pub use error::BlobError;
pub use local::LocalBlobs;
pub use nats::NatsBlobs;

/// A stored blob: what a caller records (in the database, in a manifest) to get it back.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Blob {
    /// Its name: the SHA-256 of its contents.
    pub digest: Digest,
    /// Its length in bytes.
    pub size: u64,
}

/// A content-addressed blob store. Services hold it as [`Blobs`] and do not know which
/// backend is behind it.
#[async_trait]
pub trait BlobStore: Send + Sync + 'static {
    /// Stores the contents of the file at `path` (the caller's own file: the path is
    /// followed as given), hashing it while reading it; nothing is stored again when a blob
    /// with that digest exists already.
    async fn put_file(&self, path: &Path) -> Result<Blob, BlobError>;

    /// Stores `bytes`; nothing is stored again when a blob with that digest exists already.
    async fn put_bytes(&self, bytes: Bytes) -> Result<Blob, BlobError>;

    /// Writes the blob to `dest` and returns its size. `dest` is made a new file (written
    /// beside it under a temporary name, fsynced, renamed into place: whatever was at `dest`
    /// is replaced, never written through); its directory must exist. The contents are
    /// checked against `digest` while written: on a mismatch ([`BlobError::Corrupt`]) or
    /// any other failure nothing is left at `dest`. A blob over `limit` bytes is refused
    /// ([`BlobError::TooLarge`]) before it is read, or as soon as more than `limit` bytes
    /// came: the caller's word on its size bounds the disk it takes.
    async fn get_to_file(&self, digest: &Digest, dest: &Path, limit: u64)
    -> Result<u64, BlobError>;

    /// The blob's bytes, checked against `digest`; a blob over `limit` bytes is refused
    /// ([`BlobError::TooLarge`]) before it is read.
    async fn get_bytes(&self, digest: &Digest, limit: u64) -> Result<Bytes, BlobError>;

    /// Whether a blob is stored under `digest` (its contents are checked only when read).
    async fn contains(&self, digest: &Digest) -> Result<bool, BlobError>;

    /// What the store is, for logs and `/readyz`: `local /path` or `nats bucket NAME`.
    fn describe(&self) -> String;

    /// Whether the store can be used now: the local directory is writable (it is created if
    /// missing), or the bucket answers (it is created if missing).
    async fn check_ready(&self) -> Result<(), BlobError>;
}

/// The blob store as services share it.
pub type Blobs = std::sync::Arc<dyn BlobStore>;
