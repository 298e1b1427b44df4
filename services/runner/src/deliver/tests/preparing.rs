//! Preparing workspaces of one and several repositories in each mode — what goes where,
//! on which branch, and what a failure leaves (nothing) — and the trees attempts leave.

use gatehouse_events::RepositoryMode;

use super::super::scene::{BRANCH, Scene, auto, checkout, git};
use super::super::trees::{self, Objects};
use super::branch_of;

#[tokio::test]
async fn several_repositories_are_checked_out_under_their_names_on_their_branches() {
    let scene = Scene::new().await;
    for repo in ["acme/api", "acme/web", "acme/shared"] {
        scene.remote(repo, 3);
    }
    let repositories = [
        auto("acme/api"),
        checkout("acme/web", RepositoryMode::New, Some("feature/x")),
        checkout("acme/shared", RepositoryMode::ReadOnly, None),
    ];
    let checkouts = scene.prepare(&repositories).await.unwrap();
    let ws = scene.workspace();
    assert_eq!(branch_of(&ws.join("api")), BRANCH);
    assert_eq!(branch_of(&ws.join("web")), "feature/x");
    assert_eq!(branch_of(&ws.join("shared")), "main");
    assert!(ws.join("shared/src/0/file0.txt").is_file());
    let bases: Vec<_> = checkouts
        .iter()
        .map(|c| (c.dir.as_str(), c.base.as_deref()))
        .collect();
    assert_eq!(
        bases,
        [
            ("api", Some("main")),
            ("web", Some("main")),
            ("shared", Some("main"))
        ]
    );

    // Prepared once: again (a later node, a restart) clones nothing, even with the remote gone.
    std::fs::remove_dir_all(scene.path("git")).unwrap();
    assert_eq!(scene.prepare(&repositories).await.unwrap(), checkouts);
    let scratch: Vec<_> = std::fs::read_dir(scene.scratch()).unwrap().collect();
    assert!(
        scratch.is_empty(),
        "nothing left behind in the scratch directory"
    );
}

#[tokio::test]
async fn one_repository_is_the_workspace_itself() {
    let scene = Scene::new().await;
    scene.remote("acme/api", 1);
    let checkouts = scene.prepare(&[auto("acme/api")]).await.unwrap();
    assert_eq!(checkouts[0].dir, "");
    assert_eq!(branch_of(&scene.workspace()), BRANCH);
    let remote = git(&scene.workspace(), &["remote", "get-url", "origin"]);
    assert!(remote.starts_with("file://") && !remote.contains(super::super::scene::TOKEN));
}

#[tokio::test]
async fn a_missing_existing_branch_fails_naming_it_and_leaves_nothing() {
    let scene = Scene::new().await;
    scene.remote("acme/api", 1);
    scene.remote("acme/web", 1);
    let reason = scene
        .prepare(&[
            auto("acme/api"),
            checkout("acme/web", RepositoryMode::Existing, Some("release")),
        ])
        .await
        .unwrap_err();
    assert_eq!(
        reason,
        "`release` does not exist in acme/web (mode existing)"
    );
    assert!(
        !scene.workspace().join("api").exists(),
        "the clone that worked went too"
    );
    assert!(!scene.record().exists());
}

#[tokio::test]
async fn a_clone_that_fails_names_the_repository_and_leaves_no_partial_directory() {
    let scene = Scene::new().await;
    scene.remote("acme/api", 1);
    let reason = scene
        .prepare(&[auto("acme/api"), auto("acme/missing")])
        .await
        .unwrap_err();
    assert!(reason.starts_with("cloning acme/missing: "), "{reason}");
    assert!(
        reason.contains("does not appear to be a git repository"),
        "{reason}"
    );
    assert!(!scene.workspace().join("api").exists());
    assert!(!scene.workspace().join("missing").exists());
    assert!(std::fs::read_dir(scene.scratch()).unwrap().next().is_none());
    // The missing repository created, preparing again works.
    scene.remote("acme/missing", 1);
    scene
        .prepare(&[auto("acme/api"), auto("acme/missing")])
        .await
        .unwrap();
}

#[tokio::test]
async fn a_missing_base_branch_fails_naming_it() {
    let scene = Scene::new().await;
    scene.remote("acme/api", 1);
    let mut api = auto("acme/api");
    api.branch = Some("develop".into());
    let reason = scene.prepare(&[api]).await.unwrap_err();
    assert_eq!(
        reason,
        "`develop` does not exist in acme/api (its base branch)"
    );
}

#[tokio::test]
async fn trees_take_untracked_files_and_leave_ignored_ones_and_the_workspace_alone() {
    let scene = Scene::new().await;
    scene.remote("acme/api", 5);
    scene.prepare(&[auto("acme/api")]).await.unwrap();
    let (ws, scratch) = (scene.workspace(), scene.scratch());
    let checkouts = scene.checkouts().unwrap();
    let shared = scene.deliverer.shared_objects(&checkouts[0]);
    let shared = shared.as_deref();
    let tree = || async {
        trees::tree(&ws, &scratch, Objects::Scratch, shared)
            .await
            .unwrap()
    };
    let head = git(&ws, &["rev-parse", "HEAD^{tree}"]).trim().to_owned();
    assert_eq!(tree().await, head, "a fresh clone's tree is its HEAD's");

    let objects = || walk_count(&ws.join(".git/objects"));
    let before = objects();
    std::fs::write(ws.join("NEW.md"), "new\n").unwrap();
    let with_new = tree().await;
    assert_ne!(with_new, head);
    assert_eq!(
        objects(),
        before,
        "computing a tree writes nothing into the workspace"
    );

    std::fs::write(ws.join(".gitignore"), "*.log\n").unwrap();
    let ignored = tree().await;
    std::fs::write(ws.join("debug.log"), "noise\n").unwrap();
    assert_eq!(tree().await, ignored, "an ignored file is not in the tree");
    std::fs::remove_file(ws.join("src/0/file0.txt")).unwrap();
    assert_ne!(tree().await, ignored, "a deletion is");
    assert!(std::fs::read_dir(&scratch).unwrap().next().is_none());

    // A tampered `.git` makes the tree unverifiable, saying why.
    std::fs::write(ws.join(".git/commondir"), "/elsewhere").unwrap();
    let reason = trees::tree(&ws, &scratch, Objects::Scratch, shared)
        .await
        .unwrap_err();
    assert!(
        reason.contains("`.git/commondir` points git at another repository"),
        "{reason}"
    );
}

fn walk_count(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| {
            if e.file_type().unwrap().is_dir() {
                walk_count(&e.path())
            } else {
                1
            }
        })
        .sum()
}
