//! Helpers both backends' tests use, and what every backend promises ([`contract`]).

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use bytes::Bytes;
use gatehouse_blobs::{BlobError, Blobs, Digest};

/// Pseudo-random bytes: no run of them repeats, so a misplaced piece changes the digest.
pub fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// The names in `dir`; none when it does not exist.
pub fn entries(dir: &Path) -> Vec<String> {
    match std::fs::read_dir(dir) {
        Ok(list) => list
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// What every backend promises, checked on `blobs`, with files in `scratch`: round trips of
/// bytes and files (an empty blob too), contents stored once under their digest, the limit
/// on `get_bytes`, a `dest` replaced rather than written through, and a missing blob found
/// nowhere and written nowhere.
pub async fn contract(blobs: &Blobs, scratch: &Path) {
    let content = Bytes::from(data(300_000, 1));
    let blob = blobs.put_bytes(content.clone()).await.expect("put");
    assert_eq!(blob.digest, Digest::of(&content));
    assert_eq!(blob.size, 300_000);
    assert!(blobs.contains(&blob.digest).await.expect("contains"));
    assert_eq!(
        blobs.put_bytes(content.clone()).await.expect("put again"),
        blob
    );
    let source = scratch.join("same");
    std::fs::write(&source, &content).expect("write");
    assert_eq!(blobs.put_file(&source).await.expect("put file"), blob);

    assert_eq!(
        blobs
            .get_bytes(&blob.digest, 300_000)
            .await
            .expect("at the limit"),
        content
    );
    assert!(matches!(
        blobs.get_bytes(&blob.digest, 299_999).await,
        Err(BlobError::TooLarge {
            size: 300_000,
            limit: 299_999,
            ..
        })
    ));

    // An existing file at `dest` is replaced, not written through.
    let out = scratch.join("out");
    std::fs::create_dir(&out).expect("mkdir");
    let dest = out.join("restored");
    std::fs::write(&dest, b"old").expect("old dest");
    let old_inode = std::fs::metadata(&dest).expect("meta").ino();
    let size = blobs
        .get_to_file(&blob.digest, &dest, u64::MAX)
        .await
        .expect("get");
    assert_eq!(size, 300_000);
    assert!(
        std::fs::read(&dest).expect("dest") == content,
        "restored contents differ"
    );
    assert_ne!(std::fs::metadata(&dest).expect("meta").ino(), old_inode);
    assert_eq!(
        entries(&out),
        ["restored"],
        "temporary files left beside dest"
    );

    // A blob longer than the caller says it is is refused, and nothing is written.
    let short = out.join("short");
    assert!(matches!(
        blobs.get_to_file(&blob.digest, &short, 10).await,
        Err(BlobError::TooLarge {
            size: 300_000,
            limit: 10,
            ..
        })
    ));
    assert!(!short.exists(), "a refused blob left a file");
    assert_eq!(entries(&out), ["restored"], "a refused blob left a file");

    let empty = blobs.put_bytes(Bytes::new()).await.expect("put empty");
    assert_eq!(empty.size, 0);
    assert!(
        blobs
            .get_bytes(&empty.digest, 0)
            .await
            .expect("get")
            .is_empty()
    );
    let empty_dest = out.join("empty");
    assert_eq!(
        blobs
            .get_to_file(&empty.digest, &empty_dest, u64::MAX)
            .await
            .expect("get"),
        0
    );
    assert_eq!(std::fs::metadata(&empty_dest).expect("dest").len(), 0);

    let missing = Digest::of(b"never stored");
    assert!(!blobs.contains(&missing).await.expect("contains"));
    assert!(matches!(
        blobs.get_bytes(&missing, 1024).await,
        Err(BlobError::NotFound(d)) if d == missing
    ));
    let nowhere = scratch.join("nowhere");
    std::fs::create_dir(&nowhere).expect("mkdir");
    assert!(matches!(
        blobs
            .get_to_file(&missing, &nowhere.join("dest"), u64::MAX)
            .await,
        Err(BlobError::NotFound(_))
    ));
    assert!(entries(&nowhere).is_empty(), "a missing blob left a file");
}
