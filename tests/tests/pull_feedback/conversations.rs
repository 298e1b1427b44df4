//! Feedback on a pull request a conversation delivered: a turn of the conversation, pushed
//! to the same branch and answered on the pull request, the thread told.

use std::time::Duration;

use gatehouse_fake_forge::git::git;
use gatehouse_ingest::Person;
use gatehouse_tests::fake_slack::BOT_USER;
use gatehouse_tests::gatehouse::chat::ANA;
use gatehouse_tests::{Backend, Gatehouse};
use serde_json::json;

use super::hub::{fixture, with_script_assistant};

const CHANNEL: &str = "C0API";
const REPO: &str = "acme/api";

const PROJECTS: &str = r#"
[[projects]]
name = "api"
repositories = [{ repo = "acme/api" }]
channels = ["slack:C0API"]
converse = ["ana"]
run = ["ana"]
"#;

/// The assistant: appends its prompt to `notes.txt` and says how long the notes are.
const NOTE: &str =
    "#!/bin/sh\ncat \"$1\" >> notes.txt\necho \"noted, $(wc -l < notes.txt) lines\"\n";

async fn start(backend: Backend) -> Gatehouse {
    let ana = Person {
        id: "ana".into(),
        github: Some("Codertocat".into()),
        slack: Some(ANA.into()),
        discord: None,
        groups: Vec::new(),
    };
    let gh = with_script_assistant(backend, NOTE, &[])
        .await
        .people(vec![ana])
        .chat()
        .github(Vec::new())
        .projects(PROJECTS)
        .start()
        .await;
    gh.github.follow_git(&gh.data.path().join("git"));
    gh
}

/// Waits until the bot said something containing `text` in the thread `ts`.
async fn said(gh: &Gatehouse, ts: &str, text: &str) -> String {
    for _ in 0..1000 {
        let found = gh
            .slack
            .messages(CHANNEL)
            .into_iter()
            .filter(|m| m.user == BOT_USER && m.thread_ts.as_deref() == Some(ts))
            .find(|m| m.text.contains(text));
        if let Some(message) = found {
            return message.text;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!(
        "the bot never said {text:?} in the thread: {:#?}",
        gh.slack.messages(CHANNEL)
    );
}

pub(crate) async fn a_review_becomes_a_turn_pushed_to_the_same_pull_request(backend: Backend) {
    let gh = start(backend).await;
    let ts = gh
        .slack_mention("Ev1", CHANNEL, ANA, "add a health endpoint")
        .await;
    said(&gh, &ts, "noted").await;
    gh.slack_mention_in("Ev2", CHANNEL, Some(&ts), ANA, "deliver")
        .await;
    said(&gh, &ts, "acme/api#").await;
    let pulls = gh.github.pulls();
    assert_eq!(pulls.len(), 1, "{pulls:?}");
    let (number, branch) = (pulls[0].number, pulls[0].head.clone());

    let mut review = fixture("pull_request_review.submitted");
    review["review"]["state"] = json!("changes_requested");
    review["review"]["body"] = json!("return 204, not 200");
    review["pull_request"]["number"] = json!(number);
    review["repository"]["full_name"] = json!(REPO);
    gh.deliver_github("pull_request_review", "rv-conv", &review)
        .await;
    let note = gh.note("rv-conv").await;
    assert!(note.contains("a turn of conversation"), "{note}");
    said(
        &gh,
        &ts,
        &format!("Review of {REPO}#{number} by @Codertocat"),
    )
    .await;
    let reply = said(&gh, &ts, &format!("Updated {REPO}#{number}")).await;
    assert!(reply.contains("pushed"), "{reply}");

    let bare = gh.data.path().join(format!("git/{REPO}.git"));
    let notes = git(&bare, &["show", &format!("{branch}:notes.txt")]);
    assert!(notes.contains("> return 204, not 200"), "{notes}");
    assert_eq!(gh.github.pulls().len(), 1, "the same pull request, updated");
    let comments = gh.github.comments(REPO, number);
    assert!(
        comments.iter().any(|c| c.starts_with("@Codertocat pushed")),
        "{comments:#?}"
    );
    gh.stop().await;
}
