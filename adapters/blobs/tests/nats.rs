//! The NATS blob store against the machine's NATS (JetStream on): `nats://127.0.0.1:4222`,
//! or `GATEHOUSE_TEST_NATS`. Each test uses a bucket of its own, deleted afterwards. When
//! NATS is unreachable the tests fail, unless `NATS_TESTS=skip`.

use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_nats::jetstream;
use bytes::Bytes;
use gatehouse_blobs::{BlobError, Blobs, Digest, NatsBlobs};

mod common;
use common::{data, entries};

fn nats_url() -> String {
    std::env::var("GATEHOUSE_TEST_NATS").unwrap_or_else(|_| "nats://127.0.0.1:4222".to_owned())
}

/// The machine's JetStream, or `None` when it is unreachable and `NATS_TESTS=skip`.
async fn connect() -> Option<jetstream::Context> {
    let url = nats_url();
    let connected = tokio::time::timeout(Duration::from_secs(5), async_nats::connect(&url)).await;
    let problem = match connected {
        Ok(Ok(client)) => return Some(jetstream::new(client)),
        Ok(Err(e)) => e.to_string(),
        Err(_) => "no answer within 5 s".to_owned(),
    };
    if std::env::var("NATS_TESTS").as_deref() == Ok("skip") {
        eprintln!("skipping: NATS at {url} is unreachable ({problem}) and NATS_TESTS=skip");
        return None;
    }
    panic!(
        "NATS at {url} is unreachable ({problem}): start nats-server with JetStream \
         (`nats-server -js`), point GATEHOUSE_TEST_NATS at one, or set NATS_TESTS=skip"
    );
}

/// A bucket name no other test or run uses.
fn unique_bucket() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("test_blobs_{}_{nanos}_{n}", std::process::id())
}

/// Runs `test` with a JetStream context and a fresh bucket name, then deletes the bucket,
/// whether the test passed or panicked.
async fn with_bucket<F, Fut>(test: F)
where
    F: FnOnce(jetstream::Context, String) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let Some(js) = connect().await else {
        return;
    };
    let bucket = unique_bucket();
    let outcome = tokio::spawn(test(js.clone(), bucket.clone())).await;
    let deleted = js.delete_object_store(&bucket).await;
    match outcome {
        // A failed test may not have got as far as creating the bucket.
        Err(e) => std::panic::resume_unwind(e.into_panic()),
        Ok(()) => deleted.expect("deleting the test bucket"),
    }
    assert!(
        js.get_object_store(&bucket).await.is_err(),
        "bucket {bucket} left behind"
    );
}

fn blobs(js: &jetstream::Context, bucket: &str) -> Blobs {
    std::sync::Arc::new(NatsBlobs::new(js.clone(), bucket).expect("valid bucket"))
}

#[tokio::test]
async fn the_contract_holds() {
    with_bucket(|js, bucket| async move {
        let dir = tempfile::tempdir().expect("tempdir");
        common::contract(&blobs(&js, &bucket), dir.path()).await;
    })
    .await;
}

#[tokio::test]
async fn the_bucket_is_created_and_contents_uploaded_once() {
    with_bucket(|js, bucket| async move {
        let blobs = blobs(&js, &bucket);
        assert_eq!(blobs.describe(), format!("nats bucket {bucket}"));
        blobs.check_ready().await.expect("ready");
        let store = js.get_object_store(&bucket).await.expect("bucket created");

        let content = Bytes::from(data(300_000, 1));
        let blob = blobs.put_bytes(content.clone()).await.expect("put");
        assert_eq!(blob.digest, Digest::of(&content));
        assert_eq!(blob.size, 300_000);
        assert!(blobs.contains(&blob.digest).await.expect("contains"));
        let first = store.info(blob.digest.as_str()).await.expect("object");
        assert_eq!(first.size, 300_000);

        assert_eq!(
            blobs.put_bytes(content.clone()).await.expect("put again"),
            blob
        );
        let again = store.info(blob.digest.as_str()).await.expect("object");
        assert_eq!(again.nuid, first.nuid, "the object was uploaded again");

        for bad in ["", "a.b", "a b", "a/b", "a*"] {
            assert!(matches!(
                NatsBlobs::new(js.clone(), bad),
                Err(BlobError::InvalidBucket(_))
            ));
        }
    })
    .await;
}

#[tokio::test]
async fn twenty_mib_file_round_trip() {
    with_bucket(|js, bucket| async move {
        let blobs = blobs(&js, &bucket);
        let dir = tempfile::tempdir().expect("tempdir");
        let content = data(20 * 1024 * 1024 + 3, 2);
        let source = dir.path().join("checkpoint.tar");
        std::fs::write(&source, &content).expect("write");

        let blob = blobs.put_file(&source).await.expect("put");
        assert_eq!(blob.digest, Digest::of(&content));
        assert_eq!(blob.size, content.len() as u64);
        let store = js.get_object_store(&bucket).await.expect("bucket");
        let info = store.info(blob.digest.as_str()).await.expect("object");
        assert!(info.chunks > 100, "stored in {} chunks", info.chunks);

        let out = dir.path().join("out");
        std::fs::create_dir(&out).expect("mkdir");
        let dest = out.join("restored.tar");
        let size = blobs
            .get_to_file(&blob.digest, &dest, u64::MAX)
            .await
            .expect("get");
        assert_eq!(size, content.len() as u64);
        assert!(
            std::fs::read(&dest).expect("read") == content,
            "contents differ"
        );
        assert_eq!(entries(&out), ["restored.tar"], "temporary files left");

        // Stored once: a second put of the same file uploads nothing.
        assert_eq!(blobs.put_file(&source).await.expect("put again"), blob);
        let again = store.info(blob.digest.as_str()).await.expect("object");
        assert_eq!(again.nuid, info.nuid, "the object was uploaded again");

        assert!(matches!(
            blobs.get_bytes(&blob.digest, 1024 * 1024).await,
            Err(BlobError::TooLarge { .. })
        ));
    })
    .await;
}

#[tokio::test]
async fn object_under_a_wrong_name_is_refused() {
    with_bucket(|js, bucket| async move {
        let blobs = blobs(&js, &bucket);
        blobs.check_ready().await.expect("ready");
        let good = b"the real artifact".as_slice();
        let evil = b"something else entirely".as_slice();
        let name = Digest::of(good);
        // Published straight through the object store, as anyone with access could.
        let store = js.get_object_store(&bucket).await.expect("bucket");
        store
            .put(name.as_str(), &mut &evil[..])
            .await
            .expect("raw put");

        assert!(!blobs.contains(&name).await.expect("contains"));
        match blobs.get_bytes(&name, 1024).await {
            Err(BlobError::Corrupt { digest, actual }) => {
                assert_eq!(digest, name);
                assert_eq!(actual, Digest::of(evil));
            }
            other => panic!("expected Corrupt, got {other:?}"),
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let dest = dir.path().join("artifact");
        assert!(matches!(
            blobs.get_to_file(&name, &dest, u64::MAX).await,
            Err(BlobError::Corrupt { .. })
        ));
        assert!(entries(dir.path()).is_empty(), "something was left at dest");

        // Storing the real contents replaces the impostor.
        blobs
            .put_bytes(Bytes::from_static(good))
            .await
            .expect("put");
        assert!(blobs.contains(&name).await.expect("contains"));
        assert_eq!(blobs.get_bytes(&name, 1024).await.expect("get"), good);
    })
    .await;
}

#[tokio::test]
async fn two_processes_share_a_bucket_they_both_create() {
    with_bucket(|js, bucket| async move {
        // Two stores on their own connections, as two services would have.
        let other_js = connect().await.expect("second connection");
        let (a, b) = (blobs(&js, &bucket), blobs(&other_js, &bucket));
        let (ready_a, ready_b) = tokio::join!(a.check_ready(), b.check_ready());
        ready_a.expect("a ready");
        ready_b.expect("b ready");

        let blob = a
            .put_bytes(Bytes::from_static(b"shared"))
            .await
            .expect("put");
        assert!(b.contains(&blob.digest).await.expect("contains"));
        assert_eq!(
            b.get_bytes(&blob.digest, 100).await.expect("get"),
            &b"shared"[..]
        );
    })
    .await;
}
