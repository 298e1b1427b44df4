//! Workspaces made from the runner's mirrors: no objects copied, nothing fetched when the
//! remote has nothing new, new commits fetched when it has, a broken or half-made mirror
//! discarded and fetched again, and shallow history.

use gatehouse_events::{DeliverMode, History};

use gatehouse_fake_forge::git::commit_all;

use super::super::scene::{Scene, auto, git};

const REPO: &str = "acme/api";

/// The mirrors the scene's deliverer keeps.
fn mirrors(scene: &Scene) -> std::path::PathBuf {
    scene.path("mirrors")
}

/// The one mirror there is, as a bare repository.
fn the_mirror(scene: &Scene) -> std::path::PathBuf {
    let mut found: Vec<_> = std::fs::read_dir(mirrors(scene))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "git"))
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    found.remove(0)
}

/// Waits until the spare checkout beside `mirror` is ready; its directory.
async fn spare_ready(mirror: &std::path::Path) -> std::path::PathBuf {
    let spare = mirror.with_extension("spare");
    for _ in 0..600 {
        if spare.join("ready").is_file() {
            return spare;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("no spare checkout beside {}", mirror.display());
}

/// What the files under `dir` hold.
fn bytes(dir: &std::path::Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let meta = entry.metadata().unwrap();
        total += if meta.is_dir() {
            bytes(&entry.path())
        } else {
            meta.len()
        };
    }
    total
}

/// Forgets the workspace (as a new run would start without one).
fn new_run(scene: &Scene) {
    std::fs::remove_dir_all(scene.workspace()).unwrap();
    std::fs::remove_file(scene.record()).unwrap();
}

fn packs(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir.join("objects/pack"))
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[tokio::test]
async fn a_workspace_shares_its_mirrors_objects_and_a_second_run_fetches_only_what_is_new() {
    let scene = Scene::new().await;
    scene.remote(REPO, 20);
    let first = scene.prepare(&[auto(REPO)]).await.unwrap();
    let ws = scene.workspace();
    let mirror = the_mirror(&scene);
    assert_eq!(
        std::fs::read_to_string(ws.join(".git/objects/info/alternates")).unwrap(),
        format!("{}\n", mirror.join("objects").display())
    );
    assert!(packs(&ws.join(".git")).is_empty(), "no object is copied");
    assert!(ws.join("src/0/file0.txt").is_file());
    assert_eq!(
        git(&ws, &["rev-parse", "origin/main"]).trim(),
        first[0].start.as_deref().unwrap()
    );
    let packed = packs(&mirror);

    // Nothing new on the remote: the mirror is used as it is, and the next workspace is
    // the spare checkout made meanwhile (its files are not written again).
    let readme = spare_ready(&mirror).await.join("repo/README.md");
    let inode = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&readme).unwrap());
    new_run(&scene);
    let again = scene.prepare(&[auto(REPO)]).await.unwrap();
    assert_eq!(again[0].start, first[0].start);
    assert_eq!(packs(&mirror), packed, "nothing was fetched");
    let moved = std::fs::metadata(scene.workspace().join("README.md")).unwrap();
    assert_eq!(std::os::unix::fs::MetadataExt::ino(&moved), inode);
    assert_eq!(
        super::branch_of(&scene.workspace()),
        super::super::scene::BRANCH
    );
    assert_eq!(git(&scene.workspace(), &["status", "--porcelain"]), "");
    spare_ready(&mirror).await;

    // A commit pushed since: fetched, and the work starts from it.
    let other = scene.someone_else(REPO);
    std::fs::write(other.join("NEW.md"), "new\n").unwrap();
    commit_all(&other, "new");
    git(&other, &["push", "-q", "origin", "main"]);
    let pushed = git(&other, &["rev-parse", "HEAD"]).trim().to_owned();
    new_run(&scene);
    let third = scene.prepare(&[auto(REPO)]).await.unwrap();
    assert_eq!(third[0].start.as_deref(), Some(pushed.as_str()));
    assert!(scene.workspace().join("NEW.md").is_file());

    // Delivery pushes from a workspace whose objects are the mirror's.
    std::fs::write(scene.workspace().join("FIX.md"), "fixed\n").unwrap();
    let (delivered, log) = scene.deliver(DeliverMode::Pr, None).await;
    delivered.unwrap_or_else(|e| panic!("{e}: {log:?}"));
}

#[tokio::test]
async fn a_broken_or_half_made_mirror_is_discarded_and_fetched_again() {
    let scene = Scene::new().await;
    scene.remote(REPO, 20);
    let first = scene.prepare(&[auto(REPO)]).await.unwrap();
    let mirror = the_mirror(&scene);

    // Its packs cut short, as a disk error would leave them.
    for pack in packs(&mirror).iter().filter(|p| p.ends_with(".pack")) {
        let path = mirror.join("objects/pack").join(pack);
        let len = std::fs::metadata(&path).unwrap().len();
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        file.set_len(len / 2).unwrap();
    }
    new_run(&scene);
    let again = scene.prepare(&[auto(REPO)]).await.unwrap();
    assert_eq!(again[0].start, first[0].start);
    assert!(scene.workspace().join("src/0/file0.txt").is_file());
    git(&mirror, &["fsck", "--no-dangling"]);

    // A mirror whose first fetch never finished (no marker) is not trusted either.
    std::fs::remove_file(mirror.join("gatehouse-mirror.json")).unwrap();
    std::fs::write(mirror.join("HEAD"), "garbage").unwrap();
    new_run(&scene);
    let third = scene.prepare(&[auto(REPO)]).await.unwrap();
    assert_eq!(third[0].start, first[0].start);
    git(&mirror, &["fsck", "--no-dangling"]);
}

#[tokio::test]
async fn a_shallow_project_gets_only_the_tip_and_delivers() {
    let scene = Scene::new().await;
    scene.remote(REPO, 5);
    let other = scene.someone_else(REPO);
    for n in 0..3 {
        std::fs::write(other.join("LOG.md"), format!("{n}\n")).unwrap();
        commit_all(&other, "more");
    }
    git(&other, &["push", "-q", "origin", "main"]);
    let mut repository = auto(REPO);
    repository.history = History::Shallow;
    scene.prepare(&[repository]).await.unwrap();
    let ws = scene.workspace();
    assert_eq!(git(&ws, &["rev-list", "--count", "HEAD"]).trim(), "1");
    assert!(ws.join(".git/shallow").is_file());
    std::fs::write(ws.join("FIX.md"), "fixed\n").unwrap();
    let (delivered, log) = scene.deliver(DeliverMode::Pr, None).await;
    delivered.unwrap_or_else(|e| panic!("{e}: {log:?}"));
}

/// A runner's places for a run: its workspace and what it keeps beside it.
fn place(root: &std::path::Path) -> crate::checkpoint::Place {
    crate::checkpoint::Place {
        workspace: root.join("workspace"),
        checkouts: Some(root.join("checkouts.json")),
        local: root.join("checkpoint.json"),
        scratch: root.join("scratch"),
    }
}

/// Every file under `dir` but `.git`, with its contents.
fn files(dir: &std::path::Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut found = std::collections::BTreeMap::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(at) = pending.pop() {
        for entry in std::fs::read_dir(&at).unwrap().flatten() {
            let path = entry.path();
            if entry.file_name() == ".git" {
                continue;
            }
            if entry.file_type().unwrap().is_dir() {
                pending.push(path);
            } else {
                let relative = path.strip_prefix(dir).unwrap().display().to_string();
                found.insert(relative, std::fs::read(&path).unwrap());
            }
        }
    }
    found
}

#[tokio::test]
async fn a_checkpoint_packs_what_changed_and_another_runner_writes_the_rest_from_its_mirror() {
    use crate::checkpoint::{Checkpoints, PACK_LIMIT};
    use crate::deliver::checkouts;
    use crate::deliver::prepare::Layout;
    use crate::deliver::{Deliverer, MIRROR_LIMIT, Mirrors};

    let scene = Scene::new().await;
    scene.remote(REPO, 20);
    // A megabyte of the repository's files, so they outweigh `.git`'s own.
    let other = scene.someone_else(REPO);
    for n in 0..50 {
        let text = format!("line {n}\n").repeat(2_000);
        std::fs::write(other.join(format!("src/big{n}.txt")), text).unwrap();
    }
    commit_all(&other, "big");
    git(&other, &["push", "-q", "origin", "main"]);
    scene.prepare(&[auto(REPO)]).await.unwrap();
    let ws = scene.workspace();
    std::fs::write(ws.join("src/0/file0.txt"), "changed\n").unwrap();
    std::fs::write(ws.join("NEW.md"), "new\n").unwrap();
    let store = std::sync::Arc::new(gatehouse_blobs::LocalBlobs::new(scene.path("blobs")));
    let checkpoints = Checkpoints::new(store, PACK_LIMIT);
    let a = crate::checkpoint::Place {
        workspace: ws.clone(),
        checkouts: Some(scene.record()),
        local: scene.local(),
        scratch: scene.scratch(),
    };
    let taken = checkpoints.take(&a).await.unwrap();
    let tracked: u64 = files(&ws).values().map(|f| f.len() as u64).sum();
    assert!(
        taken.uploaded < tracked / 4,
        "the repository's unchanged files are not packed: {taken:?}, {tracked} bytes of files"
    );

    // Another runner, with a disk and mirrors of its own.
    let b = place(&scene.path("b"));
    checkpoints.restore(&taken.manifest, &b).await.unwrap();
    assert!(
        !b.workspace.join("src/1/file1.txt").exists(),
        "left for the mirror"
    );
    let other = Deliverer {
        github: scene.deliverer.github.clone(),
        git_url: scene.deliverer.git_url.clone(),
        remotes: crate::remotes::Remotes::default(),
        author_name: "Gatehouse".into(),
        author_email: "gatehouse@localhost".into(),
        mirrors: Some(Mirrors::new(scene.path("b/mirrors"), MIRROR_LIMIT)),
    };
    let planned = checkouts::plan(&[auto(REPO)], super::super::scene::BRANCH).unwrap();
    let record = b.checkouts.clone().unwrap();
    let layout = Layout {
        workspace: &b.workspace,
        record: &record,
        scratch: &b.scratch,
        local: &b.local,
    };
    let mut log = Vec::new();
    other.prepare(&planned, &layout, &mut log).await.unwrap();
    assert_eq!(files(&b.workspace), files(&ws), "{log:?}");
    assert!(
        std::fs::read_to_string(b.workspace.join(".git/objects/info/alternates"))
            .unwrap()
            .starts_with(&scene.path("b/mirrors").display().to_string())
    );
    // As restored and written it is the checkpoint but for its alternates, which name
    // this runner's mirror: taking it again packs only them.
    let again = checkpoints.take(&b).await.unwrap();
    assert!(again.uploaded <= 2048, "one small file: {again:?}");
    let status = git(&b.workspace, &["status", "--porcelain"]);
    assert_eq!(status, " M src/0/file0.txt\n?? NEW.md\n");
}

#[tokio::test]
async fn mirrors_past_their_limit_lose_the_least_recently_used_one_no_run_holds() {
    let mut scene = Scene::new().await;
    scene.remote("acme/api", 20);
    scene.remote("acme/web", 20);
    scene.prepare(&[auto("acme/api")]).await.unwrap();
    let api = the_mirror(&scene);
    spare_ready(&api).await;
    // Room for one repository's mirror, not two.
    let limit = bytes(&api) * 3 / 2;
    scene.deliverer.mirrors = Some(crate::deliver::Mirrors::new(scene.path("mirrors"), limit));

    // A second repository takes the mirrors past their limit: the first, which no run
    // holds any more, goes with its spare; the one just fetched stays.
    new_run(&scene);
    scene.prepare(&[auto("acme/web")]).await.unwrap();
    for _ in 0..600 {
        if !api.exists() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(!api.exists(), "the least recently used mirror is removed");
    assert!(!api.with_extension("spare").exists(), "and its spare");
    assert_eq!(the_mirror(&scene).extension().unwrap(), "git");
    assert_ne!(the_mirror(&scene), api);

    // A run on it fetches it again.
    new_run(&scene);
    scene.prepare(&[auto("acme/api")]).await.unwrap();
    assert!(scene.workspace().join("src/0/file0.txt").is_file());
}
