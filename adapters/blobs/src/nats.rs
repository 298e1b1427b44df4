//! The blob store in a NATS JetStream object store bucket: the distributed mode, where
//! runners on different machines restore workspaces and read artifacts without a shared
//! filesystem.
//!
//! Each blob is one object named by its hex digest. The object store splits it into
//! 128 KiB chunk messages of the bucket's stream (`OBJ_<bucket>`) and records the SHA-256
//! of what was uploaded in the object's metadata. That record lets a put skip an upload
//! the bucket holds already, and replace an object whose record does not match its name;
//! every read still hashes the chunks it receives and refuses ([`BlobError::Corrupt`]) an
//! object whose contents are not its name, so nothing a third party published into the
//! bucket is handed on under a digest it does not have.
//!
//! The bucket is opened on first use and created (file storage, one replica) when it does
//! not exist; an operator who wants replicas or limits creates it beforehand.

use std::path::Path;
use std::time::Duration;

use async_nats::jetstream::context::{GetStreamError, GetStreamErrorKind};
use async_nats::jetstream::object_store::{
    Config, GetErrorKind, InfoErrorKind, Object, ObjectInfo, ObjectMetadata, ObjectStore,
};
use async_nats::jetstream::{self, ErrorCode};
use async_trait::async_trait;
use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::sync::OnceCell;

use crate::digest::{BUFFER, Hasher, HashingReader, blocking, verify};
use crate::file::{ORDINARY, Staged};
use crate::{Blob, BlobError, BlobStore, Digest};

/// How long a read may wait for the next chunk before giving up: a reader whose chunks
/// were purged (the object replaced meanwhile) would otherwise wait forever.
const STALL: Duration = Duration::from_secs(60);

/// The object `check_ready` asks about: its absence is as good an answer as its presence.
const PROBE: &str = "gatehouse-ready-probe";

const DESCRIPTION: &str =
    "Gatehouse blobs: artifacts, workspace checkpoints and manifests, named by SHA-256";

/// Blobs as objects in one JetStream object store bucket, shared by every process that
/// connects to the same NATS.
pub struct NatsBlobs {
    js: jetstream::Context,
    bucket: String,
    store: OnceCell<ObjectStore>,
}

impl std::fmt::Debug for NatsBlobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NatsBlobs")
            .field("bucket", &self.bucket)
            .finish_non_exhaustive()
    }
}

impl NatsBlobs {
    /// The store in `bucket` (letters, digits, `_` and `-` only; refused here otherwise, so
    /// a bad configuration fails at start). Nothing is asked of the server until first use.
    pub fn new(js: jetstream::Context, bucket: impl Into<String>) -> Result<Self, BlobError> {
        let bucket = bucket.into();
        let valid = !bucket.is_empty()
            && bucket
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !valid {
            return Err(BlobError::InvalidBucket(bucket.chars().take(80).collect()));
        }
        Ok(Self {
            js,
            bucket,
            store: OnceCell::new(),
        })
    }

    async fn store(&self) -> Result<&ObjectStore, BlobError> {
        self.store
            .get_or_try_init(|| open_or_create(&self.js, &self.bucket))
            .await
    }

    /// The object's metadata; `None` when there is none or it was deleted.
    async fn info(&self, digest: &Digest) -> Result<Option<ObjectInfo>, BlobError> {
        match self.store().await?.info(digest.as_str()).await {
            Ok(info) if !info.deleted => Ok(Some(info)),
            Ok(_) => Ok(None),
            Err(e) if e.kind() == InfoErrorKind::NotFound => Ok(None),
            Err(e) => Err(BlobError::nats("getting object info")(e)),
        }
    }

    /// Whether the bucket holds `digest` already, as its metadata records: an object
    /// whose recorded SHA-256 is not its name is not counted (and will be replaced).
    async fn holds(&self, digest: &Digest) -> Result<bool, BlobError> {
        let Some(info) = self.info(digest).await? else {
            return Ok(false);
        };
        let recorded = format!("SHA-256={}", base64_url(&digest.to_bytes()));
        if info.digest.as_deref() == Some(recorded.as_str()) {
            return Ok(true);
        }
        tracing::warn!(bucket = %self.bucket, object = %digest, recorded = ?info.digest,
            "object's recorded digest is not its name; it will be replaced");
        Ok(false)
    }

    async fn upload(
        &self,
        digest: &Digest,
        data: &mut (impl AsyncRead + Unpin),
    ) -> Result<(), BlobError> {
        let meta = ObjectMetadata {
            name: digest.to_string(),
            ..Default::default()
        };
        self.store()
            .await?
            .put(meta, data)
            .await
            .map_err(BlobError::nats("putting object"))?;
        Ok(())
    }

    async fn open(&self, digest: &Digest) -> Result<Object, BlobError> {
        self.store()
            .await?
            .get(digest.as_str())
            .await
            .map_err(|e| match e.kind() {
                GetErrorKind::NotFound => BlobError::NotFound(digest.clone()),
                _ => BlobError::nats("getting object")(e),
            })
    }
}

async fn open_or_create(js: &jetstream::Context, bucket: &str) -> Result<ObjectStore, BlobError> {
    match js.get_object_store(bucket).await {
        Ok(store) => return Ok(store),
        Err(e) if !stream_not_found(&e) => return Err(BlobError::nats("opening the bucket")(e)),
        Err(_) => {}
    }
    let config = Config {
        bucket: bucket.to_owned(),
        description: Some(DESCRIPTION.to_owned()),
        ..Default::default()
    };
    match js.create_object_store(config).await {
        Ok(store) => {
            tracing::info!(bucket, "created the blob bucket");
            Ok(store)
        }
        // Another process may have created it meanwhile (with another description).
        Err(create) => js
            .get_object_store(bucket)
            .await
            .map_err(|_| BlobError::nats("creating the bucket")(create)),
    }
}

/// Whether opening a bucket failed because its stream does not exist.
fn stream_not_found(err: &(dyn std::error::Error + 'static)) -> bool {
    err.source()
        .and_then(|source| source.downcast_ref::<GetStreamError>())
        .is_some_and(|e| {
            matches!(e.kind(), GetStreamErrorKind::JetStream(js)
                if js.error_code() == ErrorCode::STREAM_NOT_FOUND)
        })
}

/// Reads the next piece of `object`, giving up after [`STALL`] without one.
async fn read_some(object: &mut Object, buffer: &mut [u8]) -> Result<usize, BlobError> {
    match tokio::time::timeout(STALL, object.read(buffer)).await {
        Ok(Ok(n)) => Ok(n),
        Ok(Err(e)) => Err(BlobError::nats("reading object")(e)),
        Err(_) => Err(BlobError::Nats {
            operation: "reading object",
            message: format!("no data for {} s", STALL.as_secs()),
        }),
    }
}

/// URL-safe base64 with padding: how the object store records an object's SHA-256.
fn base64_url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for group in bytes.chunks(3) {
        let byte = |i: usize| u32::from(group.get(i).copied().unwrap_or(0));
        let bits = (byte(0) << 16) | (byte(1) << 8) | byte(2);
        for i in 0..4 {
            if i <= group.len() {
                let sextet = (bits >> (18 - 6 * i)) & 63;
                out.push(char::from(ALPHABET[sextet as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[async_trait]
impl BlobStore for NatsBlobs {
    async fn put_file(&self, path: &Path) -> Result<Blob, BlobError> {
        // The name must be known before the first chunk goes out: hash first.
        let expected = crate::digest::hash_file(path).await?;
        if self.holds(&expected.digest).await? {
            return Ok(expected);
        }
        let context = || format!("storing {} in bucket {}", path.display(), self.bucket);
        let file = tokio::fs::File::open(path)
            .await
            .map_err(BlobError::io(context()))?;
        let mut reader = HashingReader::new(file);
        self.upload(&expected.digest, &mut reader).await?;
        if reader.finish() == expected {
            return Ok(expected);
        }
        // The object now holds something else under this name: take it back.
        if let Ok(store) = self.store().await
            && let Err(e) = store.delete(expected.digest.as_str()).await
        {
            tracing::warn!(bucket = %self.bucket, object = %expected.digest, error = %e,
                "could not delete an object uploaded from a changing file");
        }
        Err(BlobError::Io {
            context: context(),
            source: std::io::Error::other("the file changed while it was being stored"),
        })
    }

    async fn put_bytes(&self, bytes: Bytes) -> Result<Blob, BlobError> {
        let hashed = bytes.clone();
        let blob = blocking(move || {
            let mut hasher = Hasher::new();
            hasher.update(&hashed);
            Ok(hasher.finish())
        })
        .await?;
        if !self.holds(&blob.digest).await? {
            self.upload(&blob.digest, &mut &bytes[..]).await?;
        }
        Ok(blob)
    }

    async fn get_to_file(
        &self,
        digest: &Digest,
        dest: &Path,
        limit: u64,
    ) -> Result<u64, BlobError> {
        let mut object = self.open(digest).await?;
        let size = object.info().size as u64;
        if size > limit {
            return Err(BlobError::TooLarge {
                digest: digest.clone(),
                size,
                limit,
            });
        }
        let context = || format!("writing blob {digest} to {}", dest.display());
        let dest = dest.to_owned();
        let (beside, staging) = (dest.clone(), context());
        let staged =
            blocking(move || Staged::beside(&beside, ORDINARY).map_err(BlobError::io(staging)))
                .await?;
        let clone = staged
            .file()
            .try_clone()
            .map_err(BlobError::io(context()))?;
        let mut out = tokio::fs::File::from_std(clone);
        let mut hasher = Hasher::new();
        let mut buffer = vec![0u8; BUFFER];
        let mut written = 0u64;
        loop {
            let n = read_some(&mut object, &mut buffer).await?;
            if n == 0 {
                break;
            }
            written += n as u64;
            // The object may have been replaced since its size was looked at.
            if written > limit {
                return Err(BlobError::TooLarge {
                    digest: digest.clone(),
                    size: written,
                    limit,
                });
            }
            hasher.update(&buffer[..n]);
            out.write_all(&buffer[..n])
                .await
                .map_err(BlobError::io(context()))?;
        }
        out.flush().await.map_err(BlobError::io(context()))?;
        drop(out);
        let read = verify(digest, hasher.finish())?;
        let committed = context();
        blocking(move || staged.commit(&dest).map_err(BlobError::io(committed))).await?;
        Ok(read.size)
    }

    async fn get_bytes(&self, digest: &Digest, limit: u64) -> Result<Bytes, BlobError> {
        // Opening the object reads its info (a deleted one is not found).
        let mut object = self.open(digest).await?;
        let size = object.info().size;
        if size as u64 > limit {
            return Err(BlobError::TooLarge {
                digest: digest.clone(),
                size: size as u64,
                limit,
            });
        }
        // `size` is at most `limit`, which the caller is willing to hold.
        let mut bytes = Vec::with_capacity(size);
        let mut buffer = vec![0u8; BUFFER];
        loop {
            let n = read_some(&mut object, &mut buffer).await?;
            if n == 0 {
                break;
            }
            bytes.extend_from_slice(&buffer[..n]);
            // The object may have been replaced since its size was looked at.
            if bytes.len() as u64 > limit {
                return Err(BlobError::TooLarge {
                    digest: digest.clone(),
                    size: bytes.len() as u64,
                    limit,
                });
            }
        }
        let mut hasher = Hasher::new();
        hasher.update(&bytes);
        verify(digest, hasher.finish())?;
        Ok(Bytes::from(bytes))
    }

    async fn contains(&self, digest: &Digest) -> Result<bool, BlobError> {
        self.holds(digest).await
    }

    fn describe(&self) -> String {
        format!("nats bucket {}", self.bucket)
    }

    async fn check_ready(&self) -> Result<(), BlobError> {
        // The handle is cached; this asks the server again each time.
        match self.store().await?.info(PROBE).await {
            Ok(_) => Ok(()),
            Err(e) if e.kind() == InfoErrorKind::NotFound => Ok(()),
            Err(e) => Err(BlobError::nats("checking the bucket")(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_url_matches_the_object_store_record() {
        // SHA-256 of the empty string, as `nats object info` shows it.
        let empty = Digest::of(b"");
        assert_eq!(
            base64_url(&empty.to_bytes()),
            "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU="
        );
        assert_eq!(base64_url(b"f"), "Zg==");
        assert_eq!(base64_url(b"fo"), "Zm8=");
        assert_eq!(base64_url(b"foo"), "Zm9v");
        assert_eq!(base64_url(b"\xfb\xff"), "-_8=");
    }
}
