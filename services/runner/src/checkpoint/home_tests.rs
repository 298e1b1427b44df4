//! A conversation's home as a checkpoint: no links, no caches, within its limit when taken,
//! and refused, before anything is written, when what is restored breaks any of that.

use std::path::Path;
use std::sync::Arc;

use gatehouse_blobs::{BlobStore, LocalBlobs};

use super::manifest::{Entry, Pack};
use super::tests::{read, write};
use super::*;

const LIMIT: u64 = 64 * 1024;

/// A runner's disk: a home and what is kept beside it.
fn place(root: &Path, name: &str) -> Place {
    let dir = root.join(name);
    Place {
        workspace: dir.join("home"),
        checkouts: None,
        local: dir.join("home.json"),
        scratch: dir.join("scratch"),
    }
}

fn homes(store: &Arc<LocalBlobs>) -> Checkpoints {
    Checkpoints::homes(store.clone(), HomeBounds { limit: LIMIT })
}

/// Stores the manifest of `taken` as changed by `forge`, as anything that can write the blob
/// store could.
async fn forged(store: &LocalBlobs, taken: &Taken, forge: impl FnOnce(&mut Manifest)) -> Digest {
    let mut manifest =
        Manifest::parse(&store.get_bytes(&taken.manifest, 1 << 20).await.unwrap()).unwrap();
    forge(&mut manifest);
    store
        .put_bytes(manifest.to_json().into())
        .await
        .unwrap()
        .digest
}

fn entry(path: &str, kind: Kind) -> Entry {
    Entry {
        path: path.into(),
        kind,
        mode: 0o644,
        uid: 0,
        gid: 0,
    }
}

#[tokio::test]
async fn a_home_travels_without_its_links_and_caches() {
    let root = tempfile::tempdir().unwrap();
    let store = Arc::new(LocalBlobs::new(root.path().join("blobs")));
    let homes = homes(&store);
    let (a, b) = (place(root.path(), "a"), place(root.path(), "b"));
    let session = ".claude/projects/-work/0f1e.jsonl";
    write(&a.workspace.join(session), "{\"type\":\"user\"}\n");
    write(&a.workspace.join(".claude.json"), "{}");
    write(&a.workspace.join(".cache/pip/wheel"), &"w".repeat(1 << 20));
    std::os::unix::fs::symlink("/etc", a.workspace.join(".claude/etc")).unwrap();

    let taken = homes.take(&a).await.unwrap();
    assert!(taken.changed);
    assert!(taken.packed < LIMIT, "the cache is left out: {taken:?}");
    write(&b.workspace.join("stale.txt"), "from an older turn");
    homes.restore(&taken.manifest, &b).await.unwrap();
    assert_eq!(read(&b.workspace.join(session)), "{\"type\":\"user\"}\n");
    assert_eq!(read(&b.workspace.join(".claude.json")), "{}");
    assert!(!b.workspace.join(".cache").exists());
    assert!(!b.workspace.join(".claude/etc").is_symlink());
    assert!(!b.workspace.join("stale.txt").exists());
    assert_eq!(Local::digest(&b.local), Some(taken.manifest));
}

#[tokio::test]
async fn a_home_past_its_limit_is_not_taken_and_its_packs_stay_within_it() {
    let root = tempfile::tempdir().unwrap();
    let store = Arc::new(LocalBlobs::new(root.path().join("blobs")));
    let homes = homes(&store);
    let a = place(root.path(), "a");

    // A session growing turn by turn: its packs are packed again rather than piled up.
    let mut transcript = String::new();
    for turn in 0..6 {
        transcript.push_str(&format!("{turn}{}\n", "t".repeat(10 * 1024)));
        write(&a.workspace.join(".claude/session.jsonl"), &transcript);
        let taken = homes.take(&a).await.unwrap();
        assert!(taken.packed <= LIMIT, "turn {turn}: {taken:?}");
    }

    write(
        &a.workspace.join(".claude/big.bin"),
        &"b".repeat(LIMIT as usize),
    );
    let before = Local::digest(&a.local);
    let err = homes.take(&a).await.unwrap_err();
    assert!(
        matches!(err, CheckpointError::HomeTooLarge { what: "packs", .. }),
        "{err}"
    );
    assert!(
        err.to_string().contains("storage.conversation_home_limit"),
        "{err}"
    );
    assert_eq!(
        Local::digest(&a.local),
        before,
        "the record is left as it was"
    );
}

#[tokio::test]
async fn a_tampered_home_is_refused_before_anything_is_written() {
    let root = tempfile::tempdir().unwrap();
    let store = Arc::new(LocalBlobs::new(root.path().join("blobs")));
    let homes = homes(&store);
    let (a, b) = (place(root.path(), "a"), place(root.path(), "b"));
    let content = "s".repeat(40 * 1024);
    write(&a.workspace.join(".claude/session.jsonl"), &content);
    let taken = homes.take(&a).await.unwrap();
    write(&b.workspace.join("kept.txt"), "untouched");

    let link = forged(&store, &taken, |m| {
        m.entries.push(entry(
            ".claude/escape",
            Kind::Link {
                target: "../../../workspace".into(),
            },
        ));
    })
    .await;
    let climbing = forged(&store, &taken, |m| m.entries[1].path = "../outside".into()).await;
    let absolute = forged(&store, &taken, |m| {
        m.entries[1].path = "/tmp/outside".into()
    })
    .await;
    let checkouts = forged(&store, &taken, |m| m.checkouts = Some("[]".into())).await;
    let over = forged(&store, &taken, |m| {
        m.packs.push(Pack {
            digest: m.packs[0].digest.clone(),
            size: LIMIT,
        });
    })
    .await;
    // One content, many paths: a small pack unfolding past what a home may hold.
    let unfolding = forged(&store, &taken, |m| {
        let file = m.entries[1].kind.clone();
        for n in 0..7 {
            m.entries
                .push(entry(&format!(".claude/copy-{n}"), file.clone()));
        }
    })
    .await;

    for (digest, says) in [
        (link, "`.claude/escape` is a link"),
        (climbing, "not a plain relative path"),
        (absolute, "not a plain relative path"),
        (checkouts, "checkouts record"),
        (over, "storage.conversation_home_limit"),
        (unfolding, "its files would hold"),
    ] {
        let err = homes.restore(&digest, &b).await.unwrap_err();
        assert!(
            matches!(&err, CheckpointError::Invalid { reason, .. } if reason.contains(says)),
            "{says}: {err}"
        );
        assert_eq!(read(&b.workspace.join("kept.txt")), "untouched", "{says}");
        assert!(!root.path().join("b/outside").exists());
        assert!(!root.path().join("workspace").exists());
    }
    // The untouched one restores.
    homes.restore(&taken.manifest, &b).await.unwrap();
    assert_eq!(read(&b.workspace.join(".claude/session.jsonl")), content);
}
