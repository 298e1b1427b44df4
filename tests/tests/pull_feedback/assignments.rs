//! Assigning an issue to the bot starts an SOP; unassigning it cancels the run.

use gatehouse_ingest::Trigger;
use gatehouse_tests::{Backend, Gatehouse};
use serde_json::json;

use super::hub::{PROJECT, fixture, people};

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
