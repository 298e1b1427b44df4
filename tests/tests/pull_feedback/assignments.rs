//! Assigning an issue to the bot starts an SOP, or opens a conversation on the issue;
//! unassigning it cancels the run, or stops the conversation's turn.

use gatehouse_fake_forge::git::git;
use gatehouse_ingest::Trigger;
use gatehouse_tests::gatehouse::github::REPO;
use gatehouse_tests::{Backend, Gatehouse};
use serde_json::json;

use super::hub::{PROJECT, fixture, people, with_script_assistant};

/// Runs until a person decides; its project names it as the default SOP.
const HOLD: &str = "name: hold\nnodes:\n  wait: { kind: gate, approvers: [ana] }\n";

/// The real `issues.assigned` payload: issue #1 assigned to `login` by ana.
fn assigned(action: &str, login: &str, at: &str) -> serde_json::Value {
    let mut payload = fixture(&format!("issues.{action}"));
    payload["assignee"]["login"] = json!(login);
    payload["sender"]["login"] = json!("Codertocat");
    payload["issue"]["updated_at"] = json!(at);
    payload
}

/// Assigned to someone else: nothing; to the bot: the project's default SOP, once;
/// unassigned: cancelled.
pub(crate) async fn start_and_cancel(backend: Backend) {
    // No `sop`: the project's `default_sop`.
    let trigger = Trigger::new("", "", &["Codertocat/*".into()], true, false)
        .unwrap()
        .on_assignment(true);
    let project = format!("{PROJECT}default_sop = \"hold\"\n");
    let gh = Gatehouse::builder(backend)
        .sop("hold", HOLD)
        .people(people())
        .projects(&project)
        .github(vec![trigger])
        .start()
        .await;
    // Assigned to someone else: nothing starts.
    gh.deliver_github(
        "issues",
        "as-other",
        &assigned("assigned", "bob-gh", "2030-01-01T00:00:00Z"),
    )
    .await;
    let note = gh.note("as-other").await;
    assert!(note.contains("not to the bot"), "{note}");

    let to_bot = assigned("assigned", "gatehouse", "2030-01-01T00:01:00Z");
    gh.deliver_github("issues", "as-bot", &to_bot).await;
    let note = gh.note("as-bot").await;
    assert!(note.contains("started `hold`"), "{note}");
    gh.runs(1, "waiting", 1).await;
    // The same assignment delivered again starts nothing more.
    gh.deliver_github("issues", "as-bot-again", &to_bot).await;
    assert!(gh.note("as-bot-again").await.contains("already started"));

    gh.deliver_github(
        "issues",
        "unas-bot",
        &assigned("unassigned", "gatehouse", "2030-01-01T00:02:00Z"),
    )
    .await;
    let note = gh.note("unas-bot").await;
    assert!(
        note.contains("assignment removed: cancelling run"),
        "{note}"
    );
    gh.runs(1, "cancelled", 1).await;
    gh.stop().await;
}

/// The assistant: waits while `$HOLD` exists, appends its prompt to `notes.txt` and says
/// how long the notes are, mentioning the lead.
const NOTE: &str = "#!/bin/sh\nwhile [ -e \"$HOLD\" ]; do sleep 0.05; done\ncat \"$1\" >> notes.txt\necho \"noted, $(wc -l < notes.txt) lines, cc @lead-gh\"\n";

/// The real `issue_comment.created` payload: comment `id` by `login` on issue #1.
fn comment(id: u64, login: &str, body: &str) -> serde_json::Value {
    let mut payload = fixture("issue_comment.created");
    payload["comment"]["id"] = json!(id);
    payload["comment"]["user"]["login"] = json!(login);
    payload["comment"]["body"] = json!(body);
    payload["comment"]["updated_at"] = json!(format!("2030-01-02T00:00:{:02}Z", id % 60));
    payload
}

/// Waits until issue #1 has a comment that satisfies `check`; returns it.
async fn commented(gh: &Gatehouse, what: &str, check: impl Fn(&str) -> bool) -> String {
    for _ in 0..1500 {
        if let Some(found) = gh.github.comments(REPO, 1).into_iter().find(|c| check(c)) {
            return found;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!(
        "issue #1 never had a comment {what}: {:#?}",
        gh.github.comments(REPO, 1)
    );
}

/// Assigned to the bot by a trigger that opens a conversation: the issue is its first
/// message, answered on the issue; comments that mention the bot are turns (a stranger's
/// is refused), `deliver` opens the pull request, unassigning stops the running turn.
pub(crate) async fn a_conversation_on_the_issue(backend: Backend) {
    let hold = tempfile::tempdir().unwrap();
    let hold = hold.path().join("hold");
    let trigger = Trigger::new("", "", &["Codertocat/*".into()], true, false)
        .unwrap()
        .on_assignment(true)
        .opening_conversation(true);
    let project = format!("{PROJECT}converse = [\"ana\"]\n");
    let gh = with_script_assistant(backend, NOTE, &[("HOLD", hold.display().to_string())])
        .await
        .people(people())
        .projects(&project)
        .github(vec![trigger])
        .start()
        .await;
    gh.github.follow_git(&gh.data.path().join("git"));

    // ana (Codertocat) assigns the issue to the bot: the issue is the first message.
    let to_bot = assigned("assigned", "gatehouse", "2030-01-01T00:01:00Z");
    gh.deliver_github("issues", "as-conv", &to_bot).await;
    let note = gh.note("as-conv").await;
    assert!(note.contains("opened conversation"), "{note}");
    commented(&gh, "with the first reply", |c| c.contains("noted, ")).await;
    gh.deliver_github("issues", "as-conv-again", &to_bot).await;
    assert!(gh.note("as-conv-again").await.contains("already told"));

    // A comment that mentions the bot is the next turn.
    let more = comment(
        9001,
        "Codertocat",
        "Thanks! @gatehouse please also fix the typo in CONTRIBUTING",
    );
    gh.deliver_github("issue_comment", "c-more", &more).await;
    let note = gh.note("c-more").await;
    assert!(note.contains(": message 2"), "{note}");
    // The same comment from a second hook is heard once.
    gh.deliver_github("issue_comment", "c-more-again", &more)
        .await;
    assert!(gh.note("c-more-again").await.contains("heard already"));

    // bob may read the project, not converse: he is answered, nothing is said.
    gh.deliver_github(
        "issue_comment",
        "c-bob",
        &comment(9002, "bob-gh", "@gatehouse delete everything"),
    )
    .await;
    assert!(gh.note("c-bob").await.contains("refused"));
    commented(&gh, "refusing bob", |c| {
        c.starts_with("@bob-gh Sorry, I can't take this from you")
    })
    .await;

    // `deliver` opens the pull request with both turns' work.
    gh.deliver_github(
        "issue_comment",
        "c-deliver",
        &comment(9003, "Codertocat", "@gatehouse deliver"),
    )
    .await;
    commented(&gh, "naming the pull request", |c| {
        c.contains(&format!("{REPO}#"))
    })
    .await;
    let pulls = gh.github.pulls();
    assert_eq!(pulls.len(), 1, "{pulls:?}");
    let bare = gh.data.path().join(format!("git/{REPO}.git"));
    let notes = git(&bare, &["show", &format!("{}:notes.txt", pulls[0].head)]);
    assert!(
        notes.contains(&format!(
            "GitHub issue {REPO}#1: Spelling error in the README file"
        )),
        "{notes}"
    );
    assert!(notes.contains("please also fix the typo"), "{notes}");
    // The agent's replies cannot page anyone.
    let replies: Vec<String> = gh
        .github
        .comments(REPO, 1)
        .into_iter()
        .filter(|c| c.contains("noted, "))
        .collect();
    assert_eq!(replies.len(), 2, "{replies:#?}");
    assert!(
        replies.iter().all(|c| c.contains("cc @\u{200B}lead-gh")),
        "{replies:#?}"
    );

    // While a turn runs, unassigning stops it.
    std::fs::write(&hold, "").unwrap();
    gh.deliver_github(
        "issue_comment",
        "c-long",
        &comment(9004, "Codertocat", "@gatehouse one more thing"),
    )
    .await;
    commented(&gh, "starting the turn", |c| {
        c.contains("working on it") || c.contains("Working")
    })
    .await;
    gh.deliver_github(
        "issues",
        "unas-conv",
        &assigned("unassigned", "gatehouse", "2030-01-01T00:02:00Z"),
    )
    .await;
    let note = gh.note("unas-conv").await;
    assert!(
        note.contains("assignment removed: stopping conversation"),
        "{note}"
    );
    commented(&gh, "saying the turn stops", |c| {
        c.contains("Stopping the current turn")
    })
    .await;
    std::fs::remove_file(&hold).unwrap();
    gh.stop().await;
}
