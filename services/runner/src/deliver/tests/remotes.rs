//! Repositories that are not on GitHub: one on a git remote alone (no `[github]` at all)
//! cloned, its base the remote's `HEAD`, its work branch pushed and said where; merged
//! directly; on a GitLab or Gitea forge, its merge request (pull request) opened once and
//! updated when delivered again; and a deploy key that reaches git only as a file of the
//! session, outside the workspace, never in its log.

use gatehouse_events::{DeliverMode, RepositoryCheckout, RepositoryMode};
use gatehouse_fake_forge::gitea::FakeGitea;
use gatehouse_fake_forge::gitlab::FakeGitlab;
use gatehouse_forges::{Forge, ForgeKind};
use secrecy::SecretString;

use super::super::scene::{BRANCH, Scene, checkout, git};
use super::super::{DeliveredTo, Origin};
use crate::remotes::{Credential, ForgeAccess};

/// `repo` on its own remote: the forge's bare repository, by file:// url.
fn own(scene: &Scene, repo: &str) -> RepositoryCheckout {
    RepositoryCheckout {
        url: Some(format!("file://{}", scene.bare(repo).display())),
        ..checkout(repo, RepositoryMode::Auto, None)
    }
}

/// A scene with no GitHub: the deliverer reaches only repositories with their own remote.
async fn without_github() -> Scene {
    let mut scene = Scene::new().await;
    scene.deliverer.github = None;
    scene.deliverer.git_url = String::new();
    scene
}

#[tokio::test]
async fn a_repository_on_its_own_remote_is_delivered_without_github() {
    let scene = without_github().await;
    scene.remote("team/app", 1);
    // The remote's HEAD names its default branch; work starts from it.
    git(&scene.bare("team/app"), &["branch", "trunk", "main"]);
    git(
        &scene.bare("team/app"),
        &["symbolic-ref", "HEAD", "refs/heads/trunk"],
    );
    let checkouts = scene.prepare(&[own(&scene, "team/app")]).await.unwrap();
    assert_eq!(checkouts[0].base.as_deref(), Some("trunk"));
    std::fs::write(scene.workspace().join("FIX.md"), "fixed\n").unwrap();

    let (delivered, log) = scene.deliver(DeliverMode::Pr, None).await;
    let delivered = delivered.unwrap();
    let pushed = git(&scene.bare("team/app"), &["rev-parse", BRANCH])
        .trim()
        .to_owned();
    assert_eq!(
        delivered[0].to,
        DeliveredTo::PushedBranch {
            branch: BRANCH.into(),
            commit: pushed.clone(),
            url: format!("file://{}", scene.bare("team/app").display()),
        },
        "{log:?}"
    );
    assert_eq!(
        git(
            &scene.bare("team/app"),
            &["show", &format!("{BRANCH}:FIX.md")]
        ),
        "fixed\n"
    );
    assert!(scene.github.calls().is_empty(), "GitHub is never asked");
}

#[tokio::test]
async fn a_repository_on_its_own_remote_merges_directly() {
    let scene = without_github().await;
    scene.remote("team/app", 1);
    scene.prepare(&[own(&scene, "team/app")]).await.unwrap();
    std::fs::write(scene.workspace().join("FIX.md"), "fixed\n").unwrap();
    let (delivered, log) = scene.deliver(DeliverMode::Direct, None).await;
    let delivered = delivered.unwrap();
    let DeliveredTo::Merged { branch, commit } = &delivered[0].to else {
        panic!("{delivered:?} {log:?}");
    };
    assert_eq!(branch, "main");
    assert_eq!(
        git(&scene.bare("team/app"), &["rev-parse", "main"]).trim(),
        commit
    );
}

#[tokio::test]
async fn a_repository_on_github_is_refused_by_a_runner_without_github() {
    let scene = without_github().await;
    scene.remote("acme/api", 1);
    let refused = scene
        .prepare(&[checkout("acme/api", RepositoryMode::Auto, None)])
        .await
        .unwrap_err();
    assert!(
        refused.starts_with("acme/api is on GitHub, but this runner has no [github]"),
        "{refused}"
    );
}

/// A scene whose repository `team/app` is on the forge `lab` (its git the bare
/// repository, its API `api`).
async fn on_forge(kind: ForgeKind, api_url: &str, token: &str) -> Scene {
    let mut scene = without_github().await;
    let api = Forge::new(kind, api_url, SecretString::from(token.to_owned())).unwrap();
    scene.deliverer.remotes.forges.insert(
        "lab".into(),
        ForgeAccess {
            api,
            git_url: format!("file://{}", scene.path("git").display()),
            token: SecretString::from(token.to_owned()),
        },
    );
    scene.remote("team/app", 1);
    scene
}

fn forge_checkout() -> RepositoryCheckout {
    RepositoryCheckout {
        forge: Some("lab".into()),
        path: Some("team/app".into()),
        ..checkout("team/app", RepositoryMode::Auto, None)
    }
}

/// Delivers the workspace with `FIX.md` saying `text`: the merge request's number, and
/// whether this delivery opened it.
async fn deliver_fix(scene: &Scene, text: &str) -> (u64, bool, String) {
    std::fs::write(scene.workspace().join("FIX.md"), text).unwrap();
    let (delivered, log) = scene.deliver(DeliverMode::Pr, None).await;
    let delivered = delivered.unwrap_or_else(|e| panic!("{e}: {log:?}"));
    match &delivered[0].to {
        DeliveredTo::Request {
            forge,
            number,
            opened,
            url,
            branch,
            ..
        } => {
            assert_eq!((forge.as_str(), branch.as_str()), ("lab", BRANCH));
            (*number, *opened, url.clone())
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_gitlab_merge_request_is_opened_once_and_updated_when_delivered_again() {
    let gitlab = FakeGitlab::start("glpat-secret").await;
    let scene = on_forge(ForgeKind::Gitlab, &gitlab.api_url(), "glpat-secret").await;
    scene.prepare(&[forge_checkout()]).await.unwrap();

    let (number, opened, url) = deliver_fix(&scene, "fixed\n").await;
    assert_eq!((number, opened), (1, true));
    assert_eq!(url, format!("{}/team/app/-/merge_requests/1", gitlab.url));
    let (again, opened, _) = deliver_fix(&scene, "fixed again\n").await;
    assert_eq!((again, opened), (1, false), "found open, not opened");

    let requests = gitlab.merge_requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    let api = Forge::new(
        ForgeKind::Gitlab,
        &gitlab.api_url(),
        SecretString::from("glpat-secret"),
    )
    .unwrap();
    assert_eq!(api.default_branch("team/app").await.unwrap(), "main");
    assert_eq!(
        (requests[0].source.as_str(), requests[0].target.as_str()),
        (BRANCH, "main")
    );
    assert_eq!(requests[0].title, "Fix it");
    assert!(
        gitlab.calls().iter().any(|c| c.starts_with(
            "GET /api/v4/projects/team%2Fapp/merge_requests?state=opened&source_branch=gatehouse%2F1-fix-it"
        )),
        "{:?}",
        gitlab.calls()
    );
    assert!(gitlab.tokens().iter().all(|t| t == "glpat-secret"));
    assert_eq!(
        git(
            &scene.bare("team/app"),
            &["show", &format!("{BRANCH}:FIX.md")]
        ),
        "fixed again\n"
    );
}

#[tokio::test]
async fn a_gitea_pull_request_is_opened_once_and_updated_when_delivered_again() {
    let gitea = FakeGitea::start("gitea-secret").await;
    let scene = on_forge(ForgeKind::Gitea, &gitea.api_url(), "gitea-secret").await;
    scene.prepare(&[forge_checkout()]).await.unwrap();

    let (number, opened, url) = deliver_fix(&scene, "fixed\n").await;
    assert_eq!((number, opened), (1, true));
    assert_eq!(url, format!("{}/team/app/pulls/1", gitea.url));
    let (again, opened, _) = deliver_fix(&scene, "fixed again\n").await;
    assert_eq!((again, opened), (1, false), "found open, not opened");
    assert_eq!(gitea.pulls().len(), 1);
    let api = Forge::new(
        ForgeKind::Gitea,
        &gitea.api_url(),
        SecretString::from("gitea-secret"),
    )
    .unwrap();
    assert_eq!(api.default_branch("team/app").await.unwrap(), "main");
    assert!(gitea.tokens().iter().all(|t| t == "token gitea-secret"));
}

#[tokio::test]
async fn a_forge_that_refuses_a_duplicate_sends_delivery_back_to_the_open_one() {
    let gitea = FakeGitea::start("t").await;
    let api = Forge::new(ForgeKind::Gitea, &gitea.api_url(), SecretString::from("t")).unwrap();
    let wanted = gatehouse_forges::NewRequest {
        head: "work",
        base: "main",
        title: "Fix",
        body: "b",
        draft: true,
    };
    let first = api.open_or_update("team/app", &wanted).await.unwrap();
    assert!(first.opened);
    assert_eq!(
        gitea.pulls()[0].title,
        "WIP: Fix",
        "a draft, as Gitea marks one"
    );
    let again = api.open_or_update("team/app", &wanted).await.unwrap();
    assert_eq!((again.number, again.opened), (first.number, false));
    assert_eq!(gitea.pulls()[0].title, "WIP: Fix", "still a draft");
    let wrong = Forge::new(ForgeKind::Gitea, &gitea.api_url(), SecretString::from("x")).unwrap();
    let refused = wrong.open_or_update("team/app", &wanted).await.unwrap_err();
    assert_eq!(
        refused.to_string(),
        "the forge answered 401: token is required"
    );
}

const KEY: &str = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA-a-deploy-key-never-seen\n-----END OPENSSH PRIVATE KEY-----";

#[tokio::test]
async fn a_deploy_key_is_a_file_of_the_session_outside_the_workspace_and_never_logged() {
    let mut scene = without_github().await;
    let url = "ssh://git@127.0.0.1:1/team/app.git";
    scene.deliverer.remotes.credentials.insert(
        url.into(),
        Credential::DeployKey {
            key: SecretString::from(KEY),
            known_hosts: None,
        },
    );
    let origin = Origin {
        url: Some(url.into()),
        ..Origin::default()
    };
    let scratch = scene.scratch();
    let remote = scene.deliverer.remote("team/app", &origin).unwrap();
    let session = scene
        .deliverer
        .session("team/app", &remote, &scratch)
        .await
        .unwrap();
    let crate::git::Auth::Ssh { key_file, .. } = &session.auth else {
        panic!("an ssh session");
    };
    use std::os::unix::fs::PermissionsExt;
    assert!(key_file.starts_with(&scratch), "{}", key_file.display());
    assert!(!key_file.starts_with(scene.workspace()));
    let mode = std::fs::metadata(key_file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "only the runner reads it");
    assert_eq!(
        std::fs::read_to_string(key_file).unwrap(),
        format!("{KEY}\n")
    );
    let key_file = key_file.clone();
    drop(session);
    assert!(!key_file.exists(), "gone with the session");

    // A clone over ssh that cannot connect fails, and nothing says the key.
    let repository = RepositoryCheckout {
        url: Some(url.into()),
        ..checkout("team/app", RepositoryMode::Auto, None)
    };
    let refused = scene.prepare(&[repository]).await.unwrap_err();
    assert!(refused.starts_with("cloning team/app:"), "{refused}");
    assert!(!refused.contains("deploy-key-never-seen"));
    let mut found = Vec::new();
    for root in [scene.workspace(), scratch] {
        holding(&root, "deploy-key-never-seen", &mut found);
    }
    assert!(found.is_empty(), "{found:?}");
}

/// The files under `root` that hold `needle`.
fn holding(root: &std::path::Path, needle: &str, found: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            holding(&path, needle, found);
        } else if std::fs::read(&path)
            .is_ok_and(|bytes| String::from_utf8_lossy(&bytes).contains(needle))
        {
            found.push(path);
        }
    }
}

#[tokio::test]
async fn a_conversation_never_pushes_to_the_default_branch_its_remote_names() {
    let mut scene = without_github().await;
    scene.by = super::super::By::Conversation(uuid::Uuid::nil());
    scene.remote("team/app", 1);
    let bare = scene.bare("team/app");
    git(&bare, &["branch", "trunk", "main"]);
    git(&bare, &["symbolic-ref", "HEAD", "refs/heads/trunk"]);
    let repository = RepositoryCheckout {
        branch: Some("main".into()),
        ..own(&scene, "team/app")
    };
    let repository = RepositoryCheckout {
        mode: RepositoryMode::Existing,
        branch_name: Some("trunk".into()),
        ..repository
    };
    scene.prepare(&[repository]).await.unwrap();
    std::fs::write(scene.workspace().join("FIX.md"), "fixed\n").unwrap();
    let before = git(&bare, &["for-each-ref"]);
    let (delivered, log) = scene.deliver(DeliverMode::Pr, None).await;
    let refused = delivered.unwrap_err();
    assert!(
        refused.starts_with("refused: the work branch of team/app is `trunk`, its default branch"),
        "{refused} {log:?}"
    );
    assert_eq!(git(&bare, &["for-each-ref"]), before, "nothing pushed");
}
