//! Delivering a workspace whose `.git` earlier nodes tampered with: links out of the
//! workspace, redirections to another repository, FIFOs, hooks and configuration tricks.
//! Each is refused naming what it found, or neutralised, and none of them ever runs with the
//! token in reach or writes outside the workspace. On a local bare repository as the
//! remote, in `direct` mode.

use std::path::PathBuf;

use gatehouse_events::DeliverMode;

use super::scene::{self, auto, git};
use super::{Delivered, DeliveredTo};

const REPO: &str = "acme/api";

/// A remote with one commit on `main`, cloned into a workspace as a run's first node gets
/// it, with one change made in it.
struct Scene {
    inner: scene::Scene,
    workspace: PathBuf,
    bare: PathBuf,
}

impl Scene {
    async fn new() -> Self {
        let inner = scene::Scene::new().await;
        let bare = inner.remote(REPO, 0);
        inner.prepare(&[auto(REPO)]).await.unwrap();
        let workspace = inner.workspace();
        std::fs::write(workspace.join("FIX.md"), "fixed\n").unwrap();
        Self {
            inner,
            workspace,
            bare,
        }
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.inner.path(relative)
    }

    /// Delivers directly into `main` (the token never shows in the log).
    async fn deliver(&self) -> Result<Vec<Delivered>, String> {
        self.inner.deliver(DeliverMode::Direct, None).await.0
    }

    /// Whether `main` on the remote got the change.
    fn delivered(&self) -> bool {
        git(&self.bare, &["ls-tree", "--name-only", "main"]).contains("FIX.md")
    }
}

fn refusal(delivered: Result<Vec<Delivered>, String>) -> String {
    match delivered {
        Ok(_) => panic!("delivered"),
        Err(reason) => reason,
    }
}

fn merged(delivered: &Result<Vec<Delivered>, String>) -> bool {
    matches!(delivered.as_deref(), Ok([Delivered { to: DeliveredTo::Merged { branch, .. }, .. }]) if branch == "main")
}

#[tokio::test]
async fn a_clean_workspace_is_delivered() {
    let scene = Scene::new().await;
    assert!(merged(&scene.deliver().await));
    assert!(scene.delivered());
}

#[tokio::test]
async fn a_git_config_linked_to_a_host_file_is_refused_and_the_file_left_alone() {
    let scene = Scene::new().await;
    let victim = scene.path("host/precious.conf");
    std::fs::create_dir_all(victim.parent().unwrap()).unwrap();
    std::fs::write(&victim, "precious\n").unwrap();
    let config = scene.workspace.join(".git/config");
    std::fs::remove_file(&config).unwrap();
    std::os::unix::fs::symlink(&victim, &config).unwrap();
    let reason = refusal(scene.deliver().await);
    assert!(
        reason.contains("`.git/config` is a symbolic link"),
        "{reason}"
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    assert!(!scene.delivered());
}

#[tokio::test]
async fn a_linked_or_redirected_git_directory_is_refused() {
    let scene = Scene::new().await;
    let elsewhere = scene.path("elsewhere.git");
    std::fs::rename(scene.workspace.join(".git"), &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, scene.workspace.join(".git")).unwrap();
    let reason = refusal(scene.deliver().await);
    assert!(reason.contains("`.git` is a symbolic link"), "{reason}");
    let config = std::fs::read_to_string(elsewhere.join("config")).unwrap();
    assert!(
        config.contains("[remote \"origin\"]"),
        "nothing written through the link"
    );

    std::fs::remove_file(scene.workspace.join(".git")).unwrap();
    let gitfile = format!("gitdir: {}\n", elsewhere.display());
    std::fs::write(scene.workspace.join(".git"), gitfile).unwrap();
    let reason = refusal(scene.deliver().await);
    assert!(
        reason.contains("`.git` is a file pointing at a repository elsewhere"),
        "{reason}"
    );
    assert!(!scene.delivered());
}

/// A `commondir` makes git take its configuration from another directory, where the
/// rewritten config never reaches: there a clean filter would run at `git add`.
#[tokio::test]
async fn a_commondir_is_refused_and_its_filter_never_runs() {
    let scene = Scene::new().await;
    let evil = scene.path("evil");
    let copied = std::process::Command::new("cp")
        .args(["-a"])
        .arg(scene.workspace.join(".git"))
        .arg(&evil)
        .status()
        .unwrap();
    assert!(copied.success());
    let leak = scene.path("leak");
    let mut config = std::fs::read_to_string(evil.join("config")).unwrap();
    config.push_str(&format!(
        "[filter \"x\"]\n\tclean = \"env > {} && cat\"\n",
        leak.display()
    ));
    std::fs::write(evil.join("config"), config).unwrap();
    std::fs::write(
        scene.workspace.join(".git/commondir"),
        evil.display().to_string(),
    )
    .unwrap();
    std::fs::write(scene.workspace.join(".gitattributes"), "* filter=x\n").unwrap();
    let reason = refusal(scene.deliver().await);
    assert!(
        reason.contains("`.git/commondir` points git at another repository"),
        "{reason}"
    );
    assert!(!leak.exists(), "the filter ran");
    assert!(!scene.delivered());
}

#[tokio::test]
async fn alternates_from_another_repository_are_refused() {
    let scene = Scene::new().await;
    let other = scene.path("other-project/.git/objects");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(
        scene.workspace.join(".git/objects/info/alternates"),
        format!("{}\n", other.display()),
    )
    .unwrap();
    let reason = refusal(scene.deliver().await);
    assert!(
        reason.contains("`.git/objects/info/alternates` points git at another repository"),
        "{reason}"
    );
    assert!(!scene.delivered());
}

#[tokio::test]
async fn a_fifo_in_git_does_not_hang_delivery() {
    let scene = Scene::new().await;
    let exclude = scene.workspace.join(".git/info/exclude");
    let _ = std::fs::remove_file(&exclude);
    std::fs::create_dir_all(exclude.parent().unwrap()).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&exclude)
        .status()
        .unwrap();
    assert!(made.success());
    let reason = refusal(scene.deliver().await);
    assert!(reason.contains("`.git/info/exclude` is a FIFO"), "{reason}");
}

/// Hooks in `.git/hooks` and in a `core.hooksPath` directory, an fsmonitor, a credential
/// helper, an ssh command and a remote elsewhere, all in the workspace's config: delivery
/// goes to Gatehouse's remote and none of them runs.
#[tokio::test]
async fn hooks_and_config_tricks_never_run() {
    let scene = Scene::new().await;
    let ran = scene.path("ran");
    let script = format!("#!/bin/sh\nenv >> {}\n", ran.display());
    let hooks = scene.path("evil-hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    let planted = [
        scene.workspace.join(".git/hooks/pre-commit"),
        scene.workspace.join(".git/hooks/pre-push"),
        hooks.join("pre-commit"),
        hooks.join("post-commit"),
        hooks.join("pre-push"),
        hooks.join("reference-transaction"),
        scene.path("fsmonitor"),
    ];
    for path in &planted {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, &script).unwrap();
        let executable = std::os::unix::fs::PermissionsExt::from_mode(0o755);
        std::fs::set_permissions(path, executable).unwrap();
    }
    let config = scene.workspace.join(".git/config");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!(
        "[core]\n\thooksPath = {}\n\tfsmonitor = {}\n\tsshCommand = {}\n[credential]\n\thelper = \"!{}\"\n[remote \"origin\"]\n\tpushurl = file:///nonexistent/evil.git\n",
        hooks.display(),
        scene.path("fsmonitor").display(),
        scene.path("fsmonitor").display(),
        scene.path("fsmonitor").display(),
    ));
    std::fs::write(&config, text).unwrap();
    assert!(merged(&scene.deliver().await));
    assert!(scene.delivered(), "delivered to Gatehouse's remote");
    assert!(
        !ran.exists(),
        "{}",
        std::fs::read_to_string(&ran).unwrap_or_default()
    );
}
