//! Who may `deliver` from a conversation, and where it may push, end to end through the
//! fake Slack and GitHub: `deliver` needs the project's `run` right beside `converse`
//! (before, `converse` alone pushed), and a conversation's delivery goes through a pull
//! request from a branch of its own, never to a base branch (before, a repository in
//! `existing` mode on `main` was pushed straight to `main`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use gatehouse_agent::{Executor, Role};
use gatehouse_fake_forge::git::git;
use gatehouse_sandbox::ProcessSandbox;
use gatehouse_scheduler::AssistantSettings;
use gatehouse_tests::fake_slack::{BOT_USER, SlackMessage};
use gatehouse_tests::gatehouse::chat::{self, ANA, BO};
use gatehouse_tests::{Backend, Gatehouse, TestDb, on_both_backends};

on_both_backends!(
    deliver_needs_the_projects_run_right,
    a_conversation_never_delivers_to_the_base_branch,
);

const CHANNEL: &str = "C0API";

/// An assistant that changes the workspace and says so.
const AGENT: &str =
    "#!/bin/sh\nprompt=$(cat \"$1\")\necho \"$prompt\" >> notes.txt\necho \"noted: $prompt\"\n";

/// Gatehouse with chat, the fake GitHub's repositories and `projects`, its assistant a
/// `command` role changing the workspace.
async fn start(backend: Backend, projects: &str) -> Gatehouse {
    let data = tempfile::tempdir().unwrap();
    let bin = data.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let agent = bin.join("agent");
    std::fs::write(&agent, AGENT).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let role = Role {
        command: vec!["agent".into(), "{prompt_file}".into()],
        env: BTreeMap::from([("PATH".into(), format!("{}:/usr/bin:/bin", bin.display()))]),
        ..Role::new(Executor::Command)
    };
    Gatehouse::builder_on(TestDb::new(backend).await, data)
        .people(chat::people())
        .chat()
        .projects(projects)
        .sandbox(Arc::new(ProcessSandbox::default()))
        .runner(move |options| {
            options.roles = BTreeMap::from([("assistant".to_owned(), role)]);
        })
        .assistant(AssistantSettings::new("assistant"))
        .start()
        .await
}

/// Waits until the bot has said something in `thread` containing `text`; returns it.
async fn said(gh: &Gatehouse, thread: &str, text: &str) -> SlackMessage {
    let mine = || {
        gh.slack
            .messages(CHANNEL)
            .into_iter()
            .filter(|m| m.user == BOT_USER && m.thread_ts.as_deref() == Some(thread))
    };
    for _ in 0..1500 {
        if let Some(m) = mine().find(|m| m.text.contains(text)) {
            return m;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let texts: Vec<String> = mine().map(|m| m.text).collect();
    panic!("the bot never said {text:?} in {thread}: {texts:#?}");
}

/// The commit `main` of the fake GitHub's `acme/api` is at.
fn main_of(gh: &Gatehouse) -> String {
    let bare = gh.data.path().join("git/acme/api.git");
    git(&bare, &["rev-parse", "main"]).trim().to_owned()
}

async fn deliver_needs_the_projects_run_right(backend: Backend) {
    let projects = r#"
[[projects]]
name = "api"
repositories = [{ repo = "acme/api" }]
channels = ["slack:C0API"]
converse = ["ana", "bo"]
run = ["ana"]
"#;
    let gh = start(backend, projects).await;
    let thread = gh
        .slack_mention("Ev1", CHANNEL, BO, "add a health endpoint")
        .await;
    said(&gh, &thread, "noted: add a health endpoint").await;
    // bo may converse, not run: the delivery is refused in the thread, nothing pushed.
    gh.slack_mention_in("Ev2", CHANNEL, Some(&thread), BO, "deliver")
        .await;
    let refusal = said(&gh, &thread, "can't deliver").await;
    assert_eq!(
        refusal.text,
        "Sorry, I can't deliver for you: delivering pushes a work branch and opens a pull request, which needs the project's `run` right, and bo may not start runs on project `api`; its run list is ana."
    );
    assert!(gh.github.pulls().is_empty());
    // ana may: the same workspace goes out as a pull request.
    gh.slack_mention_in("Ev3", CHANNEL, Some(&thread), ANA, "deliver")
        .await;
    said(&gh, &thread, "acme/api#").await;
    assert_eq!(gh.github.pulls().len(), 1, "{:?}", gh.github.pulls());
    gh.stop().await;
}

async fn a_conversation_never_delivers_to_the_base_branch(backend: Backend) {
    let projects = r#"
[[projects]]
name = "api"
repositories = [{ repo = "acme/api", mode = "existing", branch_name = "main" }]
channels = ["slack:C0API"]
"#;
    let gh = start(backend, projects).await;
    let before = main_of(&gh);
    let thread = gh
        .slack_mention("Ev1", CHANNEL, ANA, "add a health endpoint")
        .await;
    said(&gh, &thread, "noted: add a health endpoint").await;
    gh.slack_mention_in("Ev2", CHANNEL, Some(&thread), ANA, "deliver")
        .await;
    let refusal = said(&gh, &thread, "the work branch of acme/api is `main`").await;
    assert!(
        refusal.text.contains(
            "a conversation delivers only through a pull request from a branch of its own"
        ),
        "{}",
        refusal.text
    );
    assert_eq!(main_of(&gh), before, "nothing was pushed to main");
    assert!(gh.github.pulls().is_empty());
    gh.stop().await;
}
