use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;

use gatehouse_blobs::{BlobStore, LocalBlobs};

use super::*;

/// A runner's disk: a workspace and what is kept beside it.
fn place(root: &Path, name: &str) -> Place {
    let dir = root.join(name);
    Place {
        workspace: dir.join("workspace"),
        checkouts: Some(dir.join("checkouts.json")),
        local: dir.join("checkpoint.json"),
        scratch: dir.join("scratch"),
    }
}

pub(super) fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

pub(super) fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

#[tokio::test]
async fn a_workspace_moves_to_another_runner_whole_and_only_changes_travel_again() {
    let root = tempfile::tempdir().unwrap();
    let store = Arc::new(LocalBlobs::new(root.path().join("blobs")));
    let checkpoints = Checkpoints::new(store.clone(), PACK_LIMIT);
    let (a, b) = (place(root.path(), "a"), place(root.path(), "b"));

    // A repository with a big object, an executable, a link and an empty directory.
    let big = "x".repeat(1 << 20);
    write(&a.workspace.join(".git/objects/pack/big.pack"), &big);
    write(&a.workspace.join(".git/HEAD"), "ref: refs/heads/main");
    write(&a.workspace.join("src/main.rs"), "fn main() {}");
    let script = a.workspace.join("run.sh");
    write(&script, "#!/bin/sh");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink("src/main.rs", a.workspace.join("link")).unwrap();
    std::fs::create_dir_all(a.workspace.join("empty")).unwrap();
    write(a.checkouts.as_ref().unwrap(), r#"[{"repo":"acme/api"}]"#);

    let first = checkpoints.take(&a).await.unwrap();
    assert!(first.changed);
    assert!(first.uploaded > big.len() as u64, "{first:?}");

    // Runner b restores it: files, modes, links, directories and the checkouts record.
    std::fs::create_dir_all(&b.workspace).unwrap();
    write(&b.workspace.join("stale.txt"), "from an older attempt");
    let restored = checkpoints.restore(&first.manifest, &b).await.unwrap();
    assert_eq!(restored.entries, first.entries);
    assert_eq!(read(&b.workspace.join(".git/objects/pack/big.pack")), big);
    assert_eq!(read(&b.workspace.join("src/main.rs")), "fn main() {}");
    let mode = std::fs::metadata(b.workspace.join("run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o755);
    assert_eq!(
        std::fs::read_link(b.workspace.join("link")).unwrap(),
        Path::new("src/main.rs")
    );
    assert!(b.workspace.join("empty").is_dir());
    assert!(!b.workspace.join("stale.txt").exists());
    assert_eq!(
        read(b.checkouts.as_ref().unwrap()),
        r#"[{"repo":"acme/api"}]"#
    );

    // Nothing changed: the same checkpoint, nothing uploaded.
    let again = checkpoints.take(&b).await.unwrap();
    assert_eq!(again.manifest, first.manifest);
    assert!(!again.changed);
    assert_eq!(again.uploaded, 0);

    // A node's change on b travels alone: the big pack is not uploaded again.
    write(&b.workspace.join("src/main.rs"), "fn main() { work() }");
    std::fs::remove_file(b.workspace.join("run.sh")).unwrap();
    let second = checkpoints.take(&b).await.unwrap();
    assert!(second.changed);
    assert!(second.uploaded < 4096, "{second:?}");

    // Back on a, which still has the first copy: it catches up.
    checkpoints.restore(&second.manifest, &a).await.unwrap();
    assert_eq!(
        read(&a.workspace.join("src/main.rs")),
        "fn main() { work() }"
    );
    assert!(!a.workspace.join("run.sh").exists());
    assert_eq!(read(&a.workspace.join(".git/objects/pack/big.pack")), big);
}

#[tokio::test]
async fn packs_that_hold_mostly_dead_content_are_repacked() {
    let root = tempfile::tempdir().unwrap();
    let checkpoints = Checkpoints::new(
        Arc::new(LocalBlobs::new(root.path().join("blobs"))),
        PACK_LIMIT,
    );
    let a = place(root.path(), "a");
    write(&a.workspace.join("big.bin"), &"y".repeat(3 << 20));
    checkpoints.take(&a).await.unwrap();
    std::fs::remove_file(a.workspace.join("big.bin")).unwrap();
    write(&a.workspace.join("small.txt"), "small");
    let taken = checkpoints.take(&a).await.unwrap();
    let local = Local::read(&a.local).unwrap();
    assert_eq!(local.manifest.packs.len(), 1, "repacked into one");
    assert!(local.manifest.packs[0].size < 64 * 1024, "{taken:?}");
}

#[tokio::test]
async fn a_tampered_pack_restores_nothing() {
    let root = tempfile::tempdir().unwrap();
    let store = Arc::new(LocalBlobs::new(root.path().join("blobs")));
    let checkpoints = Checkpoints::new(store.clone(), PACK_LIMIT);
    let (a, b) = (place(root.path(), "a"), place(root.path(), "b"));
    write(&a.workspace.join("a.txt"), "the work");
    let taken = checkpoints.take(&a).await.unwrap();

    // A manifest naming a pack that holds other content than its entries say.
    let manifest =
        Manifest::parse(&store.get_bytes(&taken.manifest, 1 << 20).await.unwrap()).unwrap();
    let mut forged = manifest.clone();
    let other = store
        .put_bytes(bytes::Bytes::from_static(b"not a pack"))
        .await
        .unwrap();
    forged.packs = vec![manifest::Pack {
        digest: other.digest,
        size: other.size,
    }];
    let forged = store.put_bytes(forged.to_json().into()).await.unwrap();
    write(&b.workspace.join("kept.txt"), "untouched");
    let err = checkpoints.restore(&forged.digest, &b).await.unwrap_err();
    assert!(matches!(err, CheckpointError::Invalid { .. }), "{err}");
    assert_eq!(read(&b.workspace.join("kept.txt")), "untouched");

    // A manifest reaching out of the workspace is refused before anything is fetched.
    let mut escaping = manifest;
    escaping.entries[0].path = "../outside.txt".into();
    let escaping = store.put_bytes(escaping.to_json().into()).await.unwrap();
    let err = checkpoints.restore(&escaping.digest, &b).await.unwrap_err();
    assert!(err.to_string().contains("plain relative path"), "{err}");
    assert!(!root.path().join("b/outside.txt").exists());
}

#[tokio::test]
async fn a_workspace_taken_again_unchanged_keeps_its_record_and_a_changed_one_rewrites_it() {
    let root = tempfile::tempdir().unwrap();
    let checkpoints = Checkpoints::new(
        Arc::new(LocalBlobs::new(root.path().join("blobs"))),
        PACK_LIMIT,
    );
    let a = place(root.path(), "a");
    write(&a.workspace.join("notes.txt"), "first");
    let first = checkpoints.take(&a).await.unwrap();
    let inode =
        |path: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(path).unwrap());
    let recorded = inode(&a.local);

    // Written by rename, so a rewrite is a new inode.
    let again = checkpoints.take(&a).await.unwrap();
    assert!(!again.changed);
    assert_eq!(
        inode(&a.local),
        recorded,
        "an unchanged workspace writes no record"
    );

    write(&a.workspace.join("notes.txt"), "second");
    let changed = checkpoints.take(&a).await.unwrap();
    assert!(changed.changed);
    assert_ne!(changed.manifest, first.manifest);
    assert_ne!(inode(&a.local), recorded);
    assert_eq!(Local::digest(&a.local), Some(changed.manifest));
}

/// Stores `manifest` as changed by `forge`, as anything that can write the blob store could.
async fn forged(
    store: &LocalBlobs,
    taken: &Taken,
    forge: impl FnOnce(&mut Manifest),
) -> gatehouse_blobs::Digest {
    let mut manifest =
        Manifest::parse(&store.get_bytes(&taken.manifest, 1 << 20).await.unwrap()).unwrap();
    forge(&mut manifest);
    store
        .put_bytes(manifest.to_json().into())
        .await
        .unwrap()
        .digest
}

#[tokio::test]
async fn a_restore_gives_no_special_bits_and_no_recorded_owner() {
    use std::os::unix::fs::MetadataExt;
    let root = tempfile::tempdir().unwrap();
    let store = Arc::new(LocalBlobs::new(root.path().join("blobs")));
    let checkpoints = Checkpoints::new(store.clone(), PACK_LIMIT);
    let (a, b) = (place(root.path(), "a"), place(root.path(), "b"));
    write(&a.workspace.join("shared/tool"), "#!/bin/sh");
    let taken = checkpoints.take(&a).await.unwrap();
    let digest = forged(&store, &taken, |m| {
        for entry in &mut m.entries {
            entry.mode = if entry.kind == Kind::Dir {
                0o3777
            } else {
                0o6755
            };
            (entry.uid, entry.gid) = (4321, 4321);
        }
    })
    .await;

    checkpoints.restore(&digest, &b).await.unwrap();
    let runner = std::fs::metadata(root.path()).unwrap();
    for (path, mode) in [("shared", 0o777), ("shared/tool", 0o755)] {
        let meta = std::fs::symlink_metadata(b.workspace.join(path)).unwrap();
        assert_eq!(meta.mode() & 0o7777, mode, "{path}");
        assert_eq!(
            (meta.uid(), meta.gid()),
            (runner.uid(), runner.gid()),
            "{path}"
        );
    }
}

#[tokio::test]
async fn a_pack_is_fetched_no_further_than_its_recorded_size_nor_past_the_limit() {
    let root = tempfile::tempdir().unwrap();
    let store = Arc::new(LocalBlobs::new(root.path().join("blobs")));
    let checkpoints = Checkpoints::new(store.clone(), PACK_LIMIT);
    let (a, b) = (place(root.path(), "a"), place(root.path(), "b"));
    write(&a.workspace.join("big.bin"), &"z".repeat(1 << 20));
    let taken = checkpoints.take(&a).await.unwrap();
    write(&b.workspace.join("kept.txt"), "untouched");

    // A manifest that says its pack is 10 bytes: no more than 10 are fetched.
    let short = forged(&store, &taken, |m| m.packs[0].size = 10).await;
    let err = checkpoints.restore(&short, &b).await.unwrap_err();
    assert!(
        matches!(&err, CheckpointError::Invalid { reason, .. } if reason.contains("longer")),
        "{err}"
    );
    assert_eq!(read(&b.workspace.join("kept.txt")), "untouched");
    assert!(!b.workspace.join("big.bin").exists());
    assert_eq!(
        std::fs::read_dir(&b.scratch).unwrap().count(),
        0,
        "nothing of the pack is left"
    );

    // A pack recorded over the limit is not fetched at all, and none is taken over it.
    let limited = Checkpoints::new(store.clone(), 64 * 1024);
    let err = limited.restore(&taken.manifest, &b).await.unwrap_err();
    assert!(err.to_string().contains("checkpoint_pack_limit"), "{err}");
    assert_eq!(read(&b.workspace.join("kept.txt")), "untouched");
    let c = place(root.path(), "c");
    write(&c.workspace.join("big.bin"), &"y".repeat(1 << 20));
    let err = limited.take(&c).await.unwrap_err();
    assert!(matches!(err, CheckpointError::TooLarge { .. }), "{err}");
}
