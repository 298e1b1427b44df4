//! Delivering prepared workspaces against local bare repositories and the fake GitHub:
//! pull requests per repository, `existing` and read-only repositories, direct merges (a
//! conflict, a push racing the merge), and the approval binding.

use gatehouse_events::{DeliverMode, DeliverSpec, RepositoryMode};

use super::super::branch::Repo;
use super::super::scene::{BRANCH, Scene, auto, checkout, git};
use super::super::{By, Delivered, DeliveredTo, Delivery, Subject};
use super::branch_of;

#[tokio::test]
async fn delivery_refuses_work_changed_after_the_approval_and_pushes_nothing() {
    let scene = Scene::new().await;
    scene.remote("acme/api", 1);
    scene.remote("acme/web", 1);
    scene
        .prepare(&[auto("acme/api"), auto("acme/web")])
        .await
        .unwrap();
    let ws = scene.workspace();
    std::fs::write(ws.join("api/FIX.md"), "fixed\n").unwrap();
    std::fs::write(ws.join("web/FIX.md"), "fixed\n").unwrap();
    let approval = scene.approve().await;
    std::fs::write(ws.join("web/LATER.md"), "not reviewed\n").unwrap();

    let (delivered, _) = scene.deliver(DeliverMode::Pr, Some(&approval)).await;
    let reason = delivered.unwrap_err();
    let approved = &approval.trees["acme/web"][..12];
    assert!(
        reason.starts_with(&format!(
            "the workspace changed after gate `review` approved it: acme/web is not what was approved (approved tree {approved}, now "
        )),
        "{reason}"
    );
    assert!(
        reason.ends_with("send the run back to the gate to approve the change"),
        "{reason}"
    );
    for repo in ["acme/api", "acme/web"] {
        let branches = git(&scene.bare(repo), &["branch", "--list"]);
        assert!(
            !branches.contains("gatehouse/"),
            "nothing pushed to {repo}: {branches}"
        );
    }
    assert!(scene.github.pulls().is_empty());

    // Undone, the approved work goes out as approved.
    std::fs::remove_file(ws.join("web/LATER.md")).unwrap();
    let (delivered, _) = scene.deliver(DeliverMode::Pr, Some(&approval)).await;
    assert_eq!(delivered.unwrap().len(), 2);
    let pushed = git(
        &scene.bare("acme/web"),
        &["rev-parse", &format!("{BRANCH}^{{tree}}")],
    );
    assert_eq!(
        pushed.trim(),
        approval.trees["acme/web"],
        "the commit pushed is the approved tree"
    );
}

#[tokio::test]
async fn each_repository_gets_one_pull_request_linking_the_others_and_read_only_is_never_pushed() {
    let scene = Scene::new().await;
    for repo in ["acme/api", "acme/web", "acme/shared"] {
        scene.remote(repo, 1);
    }
    scene
        .prepare(&[
            auto("acme/api"),
            checkout("acme/web", RepositoryMode::New, Some("feature/x")),
            checkout("acme/shared", RepositoryMode::ReadOnly, None),
        ])
        .await
        .unwrap();
    let ws = scene.workspace();
    for dir in ["api", "web", "shared"] {
        std::fs::write(ws.join(dir).join("FIX.md"), "fixed\n").unwrap();
    }
    let shared_before = git(&scene.bare("acme/shared"), &["for-each-ref"]);
    let (delivered, log) = scene.deliver(DeliverMode::Pr, None).await;
    let delivered = delivered.unwrap();
    let numbers: Vec<(String, u64)> = delivered
        .iter()
        .map(|d| match &d.to {
            DeliveredTo::Pull { number, .. } => (d.repo.clone(), *number),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(numbers.len(), 2, "{delivered:?}");
    assert!(
        delivered
            .iter()
            .all(|d| matches!(d.to, DeliveredTo::Pull { opened: true, .. })),
        "{delivered:?}"
    );
    let pulls = scene.github.pulls();
    let api = pulls.iter().find(|p| p.repo == "acme/api").unwrap();
    let web = pulls.iter().find(|p| p.repo == "acme/web").unwrap();
    assert_eq!((api.head.as_str(), api.base.as_str()), (BRANCH, "main"));
    assert_eq!(
        (web.head.as_str(), web.base.as_str()),
        ("feature/x", "main")
    );
    assert!(api.body.starts_with("Closes #1\n"), "{}", api.body);
    assert!(web.body.starts_with("Part of acme/api#1\n"), "{}", web.body);
    assert!(
        api.body.contains(&format!("- acme/web#{}", web.number)),
        "{}",
        api.body
    );
    assert!(
        web.body.contains(&format!("- acme/api#{}", api.number)),
        "{}",
        web.body
    );
    assert_eq!(
        git(&scene.bare("acme/web"), &["show", "feature/x:FIX.md"]),
        "fixed\n"
    );
    assert_eq!(
        git(&scene.bare("acme/shared"), &["for-each-ref"]),
        shared_before
    );
    assert!(
        log.iter().any(|l| l == "[gatehouse] acme/shared is read-only: its changes in the workspace are not delivered"),
        "{log:?}"
    );

    // Delivered again: the same pull requests, updated.
    std::fs::write(ws.join("api/FIX.md"), "fixed again\n").unwrap();
    let (again, _) = scene.deliver(DeliverMode::Pr, None).await;
    let again: Vec<(String, u64, bool)> = again
        .unwrap()
        .iter()
        .map(|d| match &d.to {
            DeliveredTo::Pull { number, opened, .. } => (d.repo.clone(), *number, *opened),
            other => panic!("{other:?}"),
        })
        .collect();
    let updated: Vec<(String, u64, bool)> =
        numbers.into_iter().map(|(r, n)| (r, n, false)).collect();
    assert_eq!(again, updated, "found open, not opened");
    assert_eq!(scene.github.pulls().len(), 2);
}

#[tokio::test]
async fn an_existing_branch_is_checked_out_and_pushed_to() {
    let scene = Scene::new().await;
    scene.remote("acme/api", 1);
    let other = scene.someone_else("acme/api");
    git(&other, &["checkout", "--quiet", "-b", "release"]);
    std::fs::write(other.join("RELEASE.md"), "1.0\n").unwrap();
    git(&other, &["add", "--all"]);
    git(&other, &["commit", "--quiet", "-m", "release"]);
    git(&other, &["push", "--quiet", "origin", "release"]);
    let tip = git(&other, &["rev-parse", "HEAD"]).trim().to_owned();

    scene
        .prepare(&[checkout(
            "acme/api",
            RepositoryMode::Existing,
            Some("release"),
        )])
        .await
        .unwrap();
    let ws = scene.workspace();
    assert_eq!(branch_of(&ws), "release");
    assert!(ws.join("RELEASE.md").is_file());
    std::fs::write(ws.join("FIX.md"), "fixed\n").unwrap();
    let (delivered, _) = scene.deliver(DeliverMode::Pr, None).await;
    assert!(
        matches!(
            delivered.as_deref(),
            Ok([Delivered {
                to: DeliveredTo::Pull { .. },
                ..
            }])
        ),
        "{delivered:?}"
    );
    let bare = scene.bare("acme/api");
    assert_eq!(
        git(&bare, &["rev-parse", "release^"]).trim(),
        tip,
        "added to, not replaced"
    );
    assert_eq!(git(&bare, &["show", "release:FIX.md"]), "fixed\n");

    // Someone pushes to it meanwhile: the delivery says so and replaces nothing.
    git(
        &other,
        &["pull", "--quiet", "--ff-only", "origin", "release"],
    );
    std::fs::write(other.join("THEIRS.md"), "theirs\n").unwrap();
    git(&other, &["add", "--all"]);
    git(&other, &["commit", "--quiet", "-m", "theirs"]);
    git(&other, &["push", "--quiet", "origin", "release"]);
    std::fs::write(ws.join("FIX.md"), "fixed again\n").unwrap();
    let (delivered, _) = scene.deliver(DeliverMode::Pr, None).await;
    let reason = delivered.unwrap_err();
    assert!(
        reason.starts_with("`release` on acme/api has commits the workspace does not"),
        "{reason}"
    );
    assert_eq!(git(&bare, &["show", "release:THEIRS.md"]), "theirs\n");
}

#[tokio::test]
async fn nothing_to_deliver_names_the_repositories() {
    let scene = Scene::new().await;
    scene.remote("acme/api", 1);
    scene.prepare(&[auto("acme/api")]).await.unwrap();
    let (delivered, _) = scene.deliver(DeliverMode::Pr, None).await;
    assert_eq!(
        delivered.unwrap_err(),
        "nothing to deliver: acme/api has no changes against main"
    );
}

/// The base moving between the merge and its push (another push landing) is caught by the
/// push's lease: nothing is pushed, and the failure names the branch and both commits.
#[tokio::test]
async fn a_push_to_the_base_while_merging_is_refused_by_the_lease() {
    let scene = Scene::new().await;
    scene.remote("acme/api", 1);
    scene.prepare(&[auto("acme/api")]).await.unwrap();
    std::fs::write(scene.workspace().join("FIX.md"), "fixed\n").unwrap();
    let checkouts = scene.checkouts().unwrap();
    let spec = DeliverSpec {
        mode: DeliverMode::Direct,
        branch: Some("main".into()),
        answer: None,
    };
    let (workspace, scratch) = (scene.workspace(), scene.scratch());
    let delivery = Delivery {
        workspace: &workspace,
        scratch: &scratch,
        checkouts: &checkouts,
        subject: Subject {
            by: By::Run(uuid::Uuid::nil()),
            title: "Fix it",
            issue: None,
        },
        approval: None,
        spec: &spec,
        draft: false,
        secrets: &crate::secrets::Secrets::default(),
    };
    let mut repo = Repo::open(&scene.deliverer, &delivery, &checkouts[0])
        .await
        .unwrap();
    repo.verify().await.unwrap();
    assert!(repo.commit().await.unwrap());
    let merge = repo.merge(false).await.unwrap();

    let other = scene.someone_else("acme/api");
    std::fs::write(other.join("OTHER.md"), "someone else\n").unwrap();
    git(&other, &["add", "--all"]);
    git(&other, &["commit", "--quiet", "-m", "meanwhile"]);
    git(&other, &["push", "--quiet", "origin", "main"]);
    let theirs = git(&other, &["rev-parse", "HEAD"]).trim().to_owned();

    let reason = repo.push_merge(&merge).await.unwrap_err();
    assert_eq!(
        reason,
        format!(
            "main on acme/api moved from {} to {} while merging; nothing was pushed",
            &merge.expected[..12],
            &theirs[..12]
        )
    );
    assert_eq!(
        git(&scene.bare("acme/api"), &["rev-parse", "main"]).trim(),
        theirs
    );

    // Merged again on the new base, it goes through.
    let merge = repo.merge(false).await.unwrap();
    assert_eq!(merge.expected, theirs);
    repo.push_merge(&merge).await.unwrap();
    let bare = scene.bare("acme/api");
    assert_eq!(git(&bare, &["rev-parse", "main"]).trim(), merge.commit);
    assert_eq!(git(&bare, &["show", "main:FIX.md"]), "fixed\n");
    assert_eq!(git(&bare, &["show", "main:OTHER.md"]), "someone else\n");
}

#[tokio::test]
async fn a_conflicting_direct_merge_names_the_files_and_pushes_nothing() {
    let scene = Scene::new().await;
    scene.remote("acme/api", 1);
    scene.remote("acme/web", 1);
    scene
        .prepare(&[auto("acme/api"), auto("acme/web")])
        .await
        .unwrap();
    let ws = scene.workspace();
    std::fs::write(ws.join("api/FIX.md"), "ours\n").unwrap();
    std::fs::write(ws.join("web/README.md"), "ours\n").unwrap();
    let other = scene.someone_else("acme/web");
    std::fs::write(other.join("README.md"), "theirs\n").unwrap();
    git(&other, &["commit", "--quiet", "-am", "theirs"]);
    git(&other, &["push", "--quiet", "origin", "main"]);
    let api_main = git(&scene.bare("acme/api"), &["rev-parse", "main"]);

    let (delivered, _) = scene.deliver(DeliverMode::Direct, None).await;
    assert_eq!(
        delivered.unwrap_err(),
        "the work on acme/web conflicts with main in: README.md"
    );
    assert_eq!(
        git(&scene.bare("acme/api"), &["rev-parse", "main"]),
        api_main,
        "acme/api untouched too"
    );
}
