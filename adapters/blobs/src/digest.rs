//! Blob names: the SHA-256 of the contents, as 64 lower-case hex characters.
//!
//! A digest names a file in the local store and an object in NATS, and it arrives from the
//! database and from manifests a node wrote, so it is validated once, when it is parsed: a
//! [`Digest`] value can only hold exactly 64 characters of `0-9a-f`, never a `/`, a `..`
//! or an upper-case spelling that would name the same blob twice.

use std::fmt;
use std::io::Read;
use std::path::Path;
use std::pin::Pin;
use std::str::FromStr;
use std::task::{Context, Poll};

use sha2::{Digest as _, Sha256};
use tokio::io::{AsyncRead, ReadBuf};

use crate::{Blob, BlobError};

/// Size of the buffer files are read through while hashing or copying.
pub(crate) const BUFFER: usize = 256 * 1024;

/// The SHA-256 of a blob's contents, in lower-case hex: the blob's name in every store.
///
/// Parse one with [`str::parse`]; anything but 64 lower-case hex characters is refused.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest(String);

impl Digest {
    /// The digest of `bytes`, for callers that hold a small blob already.
    pub fn of(bytes: &[u8]) -> Self {
        let mut hasher = Hasher::new();
        hasher.update(bytes);
        hasher.finish().digest
    }

    /// The 64 hex characters, for storing in the database or a manifest.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The 32 bytes the hex spells.
    pub(crate) fn to_bytes(&self) -> [u8; 32] {
        let mut out = [0u8; 32];
        for (i, pair) in self.0.as_bytes().chunks_exact(2).enumerate() {
            out[i] = (nibble(pair[0]) << 4) | nibble(pair[1]);
        }
        out
    }

    /// The first two hex characters: the local store's fan-out directory.
    pub(crate) fn shard(&self) -> &str {
        &self.0[..2]
    }

    fn from_sha(sha: Sha256) -> Self {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut hex = String::with_capacity(64);
        for byte in sha.finalize().iter() {
            hex.push(char::from(HEX[usize::from(byte >> 4)]));
            hex.push(char::from(HEX[usize::from(byte & 0x0f)]));
        }
        Self(hex)
    }
}

fn nibble(hex: u8) -> u8 {
    match hex {
        b'0'..=b'9' => hex - b'0',
        _ => hex - b'a' + 10,
    }
}

impl FromStr for Digest {
    type Err = BlobError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let valid = s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        if valid {
            Ok(Self(s.to_owned()))
        } else {
            // Shown in logs and API errors: keep an untrusted string short.
            Err(BlobError::InvalidDigest(s.chars().take(80).collect()))
        }
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for Digest {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// SHA-256 and byte count of a stream fed in pieces, for callers that produce a blob
/// while writing it (a checkpoint pack) and want its [`Blob`] without reading it again.
#[derive(Clone, Default)]
pub struct Hasher {
    sha: Sha256,
    size: u64,
}

impl fmt::Debug for Hasher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hasher")
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

impl Hasher {
    /// A hasher that has seen nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds the next piece.
    pub fn update(&mut self, bytes: &[u8]) {
        self.sha.update(bytes);
        self.size += bytes.len() as u64;
    }

    /// Bytes fed so far.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Digest and size of everything fed.
    pub fn finish(self) -> Blob {
        Blob {
            digest: Digest::from_sha(self.sha),
            size: self.size,
        }
    }
}

/// Digest and size of the file at `path`, read in pieces (never whole) on the blocking
/// pool. The path is followed as given: it is the caller's own file.
pub async fn hash_file(path: &Path) -> Result<Blob, BlobError> {
    let path = path.to_owned();
    blocking(move || {
        let context = || format!("hashing {}", path.display());
        let file = std::fs::File::open(&path).map_err(BlobError::io(context()))?;
        hash_reader(file).map_err(BlobError::io(context()))
    })
    .await
}

/// Digest and size of everything `reader` yields, read in pieces. Blocking.
pub fn hash_reader(mut reader: impl Read) -> std::io::Result<Blob> {
    let mut hasher = Hasher::new();
    let mut buffer = vec![0u8; BUFFER];
    loop {
        match reader.read(&mut buffer) {
            Ok(0) => return Ok(hasher.finish()),
            Ok(n) => hasher.update(&buffer[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// `Ok` when what was read is `digest`.
pub(crate) fn verify(digest: &Digest, read: Blob) -> Result<Blob, BlobError> {
    if read.digest == *digest {
        Ok(read)
    } else {
        Err(BlobError::Corrupt {
            digest: digest.clone(),
            actual: read.digest,
        })
    }
}

/// Runs blocking filesystem work off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, BlobError> + Send + 'static,
) -> Result<T, BlobError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| BlobError::Io {
            context: "running blocking blob work".to_owned(),
            source: std::io::Error::other(e),
        })?
}

/// An [`AsyncRead`] that hashes what passes through it: an upload is checked against the
/// digest it is stored under without reading its source twice.
pub(crate) struct HashingReader<R> {
    inner: R,
    hasher: Hasher,
}

impl<R> HashingReader<R> {
    pub(crate) fn new(inner: R) -> Self {
        Self {
            inner,
            hasher: Hasher::new(),
        }
    }

    /// Digest and size of what was read through it.
    pub(crate) fn finish(self) -> Blob {
        self.hasher.finish()
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for HashingReader<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            this.hasher.update(&buf.filled()[before..]);
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EMPTY: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    #[test]
    fn known_digests() {
        assert_eq!(Digest::of(b"").as_str(), EMPTY);
        assert_eq!(
            Digest::of(b"abc").to_string(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn parses_only_lower_case_hex_of_the_right_length() {
        let parsed: Digest = EMPTY.parse().expect("valid");
        assert_eq!(parsed, Digest::of(b""));
        assert_eq!(parsed.shard(), "e3");
        let refused = [
            String::new(),
            EMPTY.to_uppercase(),
            EMPTY[..63].to_owned(),
            format!("{EMPTY}0"),
            format!("../{}", &EMPTY[3..]),
            format!("{}/x", &EMPTY[..62]),
            format!("{}g", &EMPTY[..63]),
            format!("{}é", &EMPTY[..62]),
            format!("sha256:{EMPTY}"),
        ];
        for bad in refused {
            assert!(
                matches!(bad.parse::<Digest>(), Err(BlobError::InvalidDigest(_))),
                "accepted {bad:?}"
            );
        }
    }

    #[test]
    fn invalid_digest_is_shown_shortened() {
        let long = "x".repeat(10_000);
        let Err(err) = long.parse::<Digest>() else {
            panic!("accepted");
        };
        assert!(err.to_string().len() < 200, "{err}");
    }

    #[test]
    fn bytes_round_trip() {
        let digest = Digest::of(b"abc");
        let hex: String = digest
            .to_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(hex, digest.as_str());
    }

    #[test]
    fn hashing_in_pieces_matches_hashing_whole() {
        let data: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
        let blob = hash_reader(&data[..]).expect("hash");
        assert_eq!(blob.size, 1_000_000);
        assert_eq!(blob.digest, Digest::of(&data));
        let mut pieces = Hasher::new();
        for piece in data.chunks(7777) {
            pieces.update(piece);
        }
        assert_eq!(pieces.size(), 1_000_000);
        assert_eq!(pieces.finish(), blob);
    }
}
