//! What a delivery refuses to push whoever asks: changes adding a configured secret's
//! value, and (from a conversation) a work branch that is a base branch.

use gatehouse_events::{DeliverMode, RepositoryMode};

use super::super::By;
use super::super::scene::{BRANCH, Scene, auto, checkout, git};
use crate::secrets::Secrets;

const KEY: &str = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\nQyNTUxOQAAACBzZWNyZXQta2V5LW1hdGVyaWFsLWZvci10ZXN0cy1vbmx5AAAA\n-----END OPENSSH PRIVATE KEY-----\n";
const PASSWORD: &str = r#"pa"ss\word-42"#;

fn secrets() -> Secrets {
    Secrets::new([
        ("SSH_KEY".to_owned(), KEY.to_owned()),
        ("DB_PASSWORD".to_owned(), PASSWORD.to_owned()),
    ])
}

/// Nothing of the delivery reached the remote: no work branch, `main` as seeded.
fn nothing_pushed(scene: &Scene, main: &str) {
    let bare = scene.bare("acme/api");
    let branches = git(&bare, &["branch", "--list"]);
    assert!(!branches.contains("gatehouse/"), "{branches}");
    assert_eq!(git(&bare, &["rev-parse", "main"]), main);
    assert!(scene.github.pulls().is_empty());
}

#[tokio::test]
async fn changes_adding_a_secrets_value_are_refused_naming_it_and_nothing_is_pushed() {
    let mut scene = Scene::new().await;
    scene.secrets = secrets();
    scene.remote("acme/api", 1);
    // The repository holds the password already (someone else's doing): changing that
    // file elsewhere adds nothing.
    let other = scene.someone_else("acme/api");
    std::fs::write(
        other.join("config.json"),
        format!("{{\"password\": {}}}\n", serde_json::json!(PASSWORD)),
    )
    .unwrap();
    git(&other, &["add", "--all"]);
    git(&other, &["commit", "--quiet", "-m", "config"]);
    git(&other, &["push", "--quiet", "origin", "main"]);
    let main = git(&scene.bare("acme/api"), &["rev-parse", "main"]);
    scene.prepare(&[auto("acme/api")]).await.unwrap();
    let ws = scene.workspace();

    // The key, with Windows line endings, in a new file.
    std::fs::create_dir_all(ws.join("keys")).unwrap();
    std::fs::write(ws.join("keys/id"), KEY.replace('\n', "\r\n")).unwrap();
    let (delivered, log) = scene.deliver(DeliverMode::Pr, None).await;
    assert_eq!(
        delivered.unwrap_err(),
        "refused: the changes to acme/api add the value of the secret SSH_KEY (in keys/id); nothing was delivered"
    );
    let log = log.join("\n");
    assert!(!log.contains("b3BlbnNzaC1rZXkt"), "{log}");
    nothing_pushed(&scene, &main);

    // The password once more, JSON-escaped, in the file that had it.
    std::fs::remove_dir_all(ws.join("keys")).unwrap();
    std::fs::write(
        ws.join("config.json"),
        format!(
            "{{\"password\": {0}, \"again\": {0}}}\n",
            serde_json::json!(PASSWORD)
        ),
    )
    .unwrap();
    let (delivered, _) = scene.deliver(DeliverMode::Pr, None).await;
    assert_eq!(
        delivered.unwrap_err(),
        "refused: the changes to acme/api add the value of the secret DB_PASSWORD (in config.json); nothing was delivered"
    );
    nothing_pushed(&scene, &main);

    // A change beside the value it had is delivered.
    std::fs::write(
        ws.join("config.json"),
        format!(
            "{{\"password\": {}, \"port\": 5432}}\n",
            serde_json::json!(PASSWORD)
        ),
    )
    .unwrap();
    let (delivered, _) = scene.deliver(DeliverMode::Pr, None).await;
    assert_eq!(delivered.unwrap().len(), 1);
    let pushed = git(
        &scene.bare("acme/api"),
        &["show", &format!("{BRANCH}:config.json")],
    );
    assert!(pushed.contains("5432"), "{pushed}");
}

#[tokio::test]
async fn a_conversation_never_pushes_to_a_base_branch() {
    let mut scene = Scene::new().await;
    scene.by = By::Conversation(uuid::Uuid::nil());
    scene.remote("acme/api", 1);
    let main = git(&scene.bare("acme/api"), &["rev-parse", "main"]);
    // `existing` on the base itself: the work branch is `main`.
    scene
        .prepare(&[checkout("acme/api", RepositoryMode::Existing, Some("main"))])
        .await
        .unwrap();
    std::fs::write(scene.workspace().join("FIX.md"), "fixed\n").unwrap();
    let (delivered, _) = scene.deliver(DeliverMode::Pr, None).await;
    assert_eq!(
        delivered.unwrap_err(),
        "refused: the work branch of acme/api is `main`, its base branch, and a conversation delivers only through a pull request from a branch of its own, never to a base branch (give acme/api a `branch_name` other than `main`, or mode `auto` or `new`); nothing was pushed"
    );
    nothing_pushed(&scene, &main);

    // A run's `deliver` node, after its gate, may push to such a branch as configured.
    scene.by = By::Run(uuid::Uuid::nil());
    let (delivered, _) = scene.deliver(DeliverMode::Pr, None).await;
    assert_eq!(delivered.unwrap().len(), 1);
    assert_eq!(
        git(&scene.bare("acme/api"), &["show", "main:FIX.md"]),
        "fixed\n"
    );
}

#[tokio::test]
async fn a_conversation_never_pushes_to_the_default_branch_either() {
    let mut scene = Scene::new().await;
    scene.by = By::Conversation(uuid::Uuid::nil());
    scene.remote("acme/api", 1);
    let other = scene.someone_else("acme/api");
    git(&other, &["push", "--quiet", "origin", "main:release"]);
    let main = git(&scene.bare("acme/api"), &["rev-parse", "main"]);
    // Based on `release`, working on `main`: GitHub's default branch all the same.
    let mut repository = checkout("acme/api", RepositoryMode::Existing, Some("main"));
    repository.branch = Some("release".into());
    scene.prepare(&[repository]).await.unwrap();
    std::fs::write(scene.workspace().join("FIX.md"), "fixed\n").unwrap();
    let (delivered, _) = scene.deliver(DeliverMode::Pr, None).await;
    let reason = delivered.unwrap_err();
    assert!(
        reason.starts_with("refused: the work branch of acme/api is `main`, its default branch,"),
        "{reason}"
    );
    nothing_pushed(&scene, &main);

    // Its own branch goes out as a pull request.
    let mut scene = Scene::new().await;
    scene.by = By::Conversation(uuid::Uuid::nil());
    scene.remote("acme/api", 1);
    scene.prepare(&[auto("acme/api")]).await.unwrap();
    std::fs::write(scene.workspace().join("FIX.md"), "fixed\n").unwrap();
    let (delivered, _) = scene.deliver(DeliverMode::Pr, None).await;
    assert_eq!(delivered.unwrap().len(), 1);
    assert_eq!(scene.github.pulls().len(), 1);
}
