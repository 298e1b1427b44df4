//! The local blob store against a real directory: round trips, deduplication, and the
//! ways a store on disk can be tampered with (contents changed, links and FIFOs planted).

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;
use gatehouse_blobs::{BlobError, BlobStore, Blobs, Digest, LocalBlobs};

mod common;
use common::{data, entries};

/// A store in a fresh directory (kept alive by the returned guard).
fn store() -> (tempfile::TempDir, PathBuf, Blobs) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("blobs");
    let blobs: Blobs = std::sync::Arc::new(LocalBlobs::new(&root));
    (dir, root, blobs)
}

/// The documented layout: `sha256/<first two hex>/<hex>`.
fn blob_path(root: &Path, digest: &Digest) -> PathBuf {
    root.join("sha256")
        .join(&digest.as_str()[..2])
        .join(digest.as_str())
}

#[tokio::test]
async fn the_contract_holds() {
    let (guard, root, blobs) = store();
    common::contract(&blobs, guard.path()).await;
    assert!(
        entries(&root.join("tmp")).is_empty(),
        "temporary files left"
    );
}

#[tokio::test]
async fn a_blob_is_a_private_file_under_its_digest() {
    let (_guard, root, blobs) = store();
    let content = Bytes::from_static(b"# Welcome to Gatehouse\n");
    let blob = blobs.put_bytes(content.clone()).await.expect("put");
    let path = blob_path(&root, &blob.digest);
    assert_eq!(std::fs::read(&path).expect("stored file"), content);
    let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "blobs are private to the service");
    assert!(
        entries(&root.join("tmp")).is_empty(),
        "temporary files left"
    );
}

#[tokio::test]
async fn five_mib_file_round_trip() {
    let (guard, root, blobs) = store();
    let content = data(5 * 1024 * 1024 + 17, 7);
    let source = guard.path().join("pack.tar");
    std::fs::write(&source, &content).expect("write source");

    let blob = blobs.put_file(&source).await.expect("put");
    assert_eq!(blob.digest, Digest::of(&content));
    assert_eq!(blob.size, content.len() as u64);
    assert_eq!(
        gatehouse_blobs::hash_file(&source).await.expect("hash"),
        blob
    );

    let out = guard.path().join("out");
    std::fs::create_dir(&out).expect("mkdir");
    let dest = out.join("restored.tar");
    // An existing file at `dest` is replaced, not written through.
    std::fs::write(&dest, b"old").expect("old dest");
    let old_inode = std::fs::metadata(&dest).expect("meta").ino();
    let size = blobs
        .get_to_file(&blob.digest, &dest, u64::MAX)
        .await
        .expect("get");
    assert_eq!(size, content.len() as u64);
    assert!(
        std::fs::read(&dest).expect("dest") == content,
        "restored contents differ"
    );
    assert_ne!(std::fs::metadata(&dest).expect("meta").ino(), old_inode);
    assert_eq!(
        entries(&out),
        ["restored.tar"],
        "temporary files left beside dest"
    );
    assert!(
        entries(&root.join("tmp")).is_empty(),
        "temporary files left"
    );

    assert!(matches!(
        blobs.get_bytes(&blob.digest, 1024 * 1024).await,
        Err(BlobError::TooLarge { size, limit: 1_048_576, .. }) if size == content.len() as u64
    ));
}

#[tokio::test]
async fn put_twice_stores_once() {
    let (guard, root, blobs) = store();
    let content = data(300_000, 3);
    let first = blobs
        .put_bytes(Bytes::from(content.clone()))
        .await
        .expect("put");
    let path = blob_path(&root, &first.digest);
    let inode = std::fs::metadata(&path).expect("stored").ino();

    let again = blobs
        .put_bytes(Bytes::from(content.clone()))
        .await
        .expect("put again");
    let source = guard.path().join("same");
    std::fs::write(&source, &content).expect("write");
    let from_file = blobs.put_file(&source).await.expect("put file");
    assert_eq!(again, first);
    assert_eq!(from_file, first);
    assert_eq!(
        std::fs::metadata(&path).expect("stored").ino(),
        inode,
        "the stored blob was rewritten"
    );
    assert_eq!(entries(&root.join("sha256")).len(), 1);
    assert_eq!(entries(path.parent().expect("shard")).len(), 1);
    assert!(
        entries(&root.join("tmp")).is_empty(),
        "temporary files left"
    );
}

#[tokio::test]
async fn concurrent_puts_of_the_same_contents() {
    let (_guard, root, blobs) = store();
    let content = Bytes::from(data(1024 * 1024, 11));
    let puts: Vec<_> = (0..8)
        .map(|_| {
            let (blobs, content) = (blobs.clone(), content.clone());
            tokio::spawn(async move { blobs.put_bytes(content).await })
        })
        .collect();
    let mut digests = Vec::new();
    for put in puts {
        digests.push(put.await.expect("join").expect("put").digest);
    }
    assert!(digests.iter().all(|d| *d == digests[0]));
    let back = blobs.get_bytes(&digests[0], u64::MAX).await.expect("get");
    assert_eq!(back, content);
    assert!(
        entries(&root.join("tmp")).is_empty(),
        "temporary files left"
    );
}

#[tokio::test]
async fn corrupted_blob_is_refused_and_leaves_no_dest() {
    let (guard, root, blobs) = store();
    let content = data(200_000, 5);
    let blob = blobs
        .put_bytes(Bytes::from(content.clone()))
        .await
        .expect("put");
    let path = blob_path(&root, &blob.digest);
    let mut tampered = content.clone();
    tampered[100_000] ^= 1;
    std::fs::write(&path, &tampered).expect("overwrite");

    let dest = guard.path().join("restored");
    match blobs.get_to_file(&blob.digest, &dest, u64::MAX).await {
        Err(BlobError::Corrupt { digest, actual }) => {
            assert_eq!(digest, blob.digest);
            assert_eq!(actual, Digest::of(&tampered));
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    assert!(!dest.exists(), "a corrupt blob was written to dest");
    assert_eq!(
        entries(guard.path()),
        ["blobs"],
        "temporary files left beside dest"
    );

    // Moved aside: the name is free, and storing the contents again restores the blob.
    assert!(!blobs.contains(&blob.digest).await.expect("contains"));
    assert_eq!(entries(&root.join("corrupt")).len(), 1);
    blobs
        .put_bytes(Bytes::from(content.clone()))
        .await
        .expect("put again");
    let back = blobs.get_bytes(&blob.digest, u64::MAX).await.expect("get");
    assert!(back == content, "not restored");

    // The same through get_bytes.
    std::fs::write(&path, &tampered).expect("overwrite");
    assert!(matches!(
        blobs.get_bytes(&blob.digest, u64::MAX).await,
        Err(BlobError::Corrupt { .. })
    ));
}

#[tokio::test]
async fn symbolic_link_at_a_blob_path_is_refused() {
    let (guard, root, blobs) = store();
    let content = Bytes::from_static(b"artifact contents");
    let blob = blobs.put_bytes(content.clone()).await.expect("put");
    let path = blob_path(&root, &blob.digest);

    // A link to a file with exactly the right contents: refused all the same, because it is
    // a link (it could as well point at /proc/self/environ).
    let elsewhere = guard.path().join("elsewhere");
    std::fs::write(&elsewhere, &content).expect("write");
    std::fs::remove_file(&path).expect("remove");
    std::os::unix::fs::symlink(&elsewhere, &path).expect("symlink");

    let err = blobs.get_bytes(&blob.digest, 1024).await;
    assert!(
        matches!(&err, Err(BlobError::Refused { digest, .. }) if *digest == blob.digest),
        "{err:?}"
    );
    let dest = guard.path().join("dest");
    assert!(matches!(
        blobs.get_to_file(&blob.digest, &dest, u64::MAX).await,
        Err(BlobError::Refused { .. })
    ));
    assert!(!dest.exists());
    assert!(!blobs.contains(&blob.digest).await.expect("contains"));

    // Storing it again replaces the link itself; what it pointed to is untouched.
    blobs.put_bytes(content.clone()).await.expect("put again");
    assert!(std::fs::symlink_metadata(&path).expect("meta").is_file());
    assert_eq!(std::fs::read(&elsewhere).expect("read"), content);
    assert_eq!(
        blobs.get_bytes(&blob.digest, 1024).await.expect("get"),
        content
    );
}

#[tokio::test]
async fn fifo_at_a_blob_path_is_refused_without_blocking() {
    let (_guard, root, blobs) = store();
    let blob = blobs
        .put_bytes(Bytes::from_static(b"x"))
        .await
        .expect("put");
    let path = blob_path(&root, &blob.digest);
    std::fs::remove_file(&path).expect("remove");
    rustix::fs::mkfifoat(rustix::fs::CWD, &path, rustix::fs::Mode::RUSR).expect("mkfifo");
    let got = tokio::time::timeout(Duration::from_secs(10), blobs.get_bytes(&blob.digest, 10))
        .await
        .expect("reading a FIFO blocked");
    assert!(matches!(got, Err(BlobError::Refused { .. })), "{got:?}");
}

#[test]
fn invalid_digests_are_refused() {
    let valid = Digest::of(b"x").to_string();
    for bad in [
        valid.to_uppercase(),
        valid[..63].to_owned(),
        "abc".to_owned(),
        "../x".to_owned(),
        format!("../{}", &valid[3..]),
        format!("{}/..", &valid[..61]),
        String::new(),
    ] {
        assert!(
            matches!(bad.parse::<Digest>(), Err(BlobError::InvalidDigest(_))),
            "accepted {bad:?}"
        );
    }
    assert_eq!(valid.parse::<Digest>().expect("valid").as_str(), valid);
}

#[tokio::test]
async fn readiness() {
    let (guard, root, blobs) = store();
    blobs.check_ready().await.expect("ready");
    assert!(root.join("sha256").is_dir() && root.join("tmp").is_dir());
    assert!(entries(&root.join("tmp")).is_empty(), "probe left behind");
    assert_eq!(blobs.describe(), format!("local {}", root.display()));

    // A store whose directory cannot be made.
    let file = guard.path().join("a-file");
    std::fs::write(&file, b"").expect("write");
    let broken = LocalBlobs::new(file.join("blobs"));
    assert!(matches!(
        broken.check_ready().await,
        Err(BlobError::Io { .. })
    ));
}
