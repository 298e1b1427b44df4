//! A push to the branch Gatehouse's pull requests merge into: those that no longer merge
//! are feedback, with what to do.

use gatehouse_events::{Feedback, FeedbackKind};
use gatehouse_store::Tx;

use super::{Event, Lookup, processed_or_ignored, pull_ref, short, with_feedback};
use crate::intake::deliveries::Outcome;
use crate::{ApiError, ApiState};

/// A push to a branch Gatehouse's pull requests merge into: each that no longer merges
/// is sent back (`on_conflict`) or told, with what to do.
pub(super) async fn base_moved(
    api: &ApiState,
    tx: &mut Tx,
    delivery: &str,
    e: &gatehouse_github::PushEvent,
    lookup: &Lookup,
) -> Result<Outcome, ApiError> {
    let Some(branch) = e.git_ref.strip_prefix("refs/heads/").filter(|_| !e.deleted) else {
        return Ok(Outcome::ignored(format!(
            "push to {}: only a branch moving is acted on",
            e.git_ref
        )));
    };
    let mut notes = Vec::new();
    for &number in &lookup.conflicting {
        let event = Event {
            repo: &e.repository.full_name,
            number,
            name: "push".into(),
            actor: e.sender.as_ref().map_or("", |s| s.login.as_str()),
            summary: format!(
                "{branch} moved to {}; the pull request no longer merges into it",
                short(&e.after)
            ),
        };
        // What to do about a conflict is the feedback's to say; these are its details.
        let text = format!(
            "`{branch}` moved to {} and the pull request no longer merges into it.\n\nTo rebase the work onto it: `git fetch origin {branch} && git rebase origin/{branch}`\n",
            short(&e.after)
        );
        let feedback = Feedback {
            kind: FeedbackKind::Conflict,
            key: format!("conflict:{}#{number}:{}", event.repo, e.after),
            text,
            pull: pull_ref(&event),
            from: String::new(),
            thread: None,
        };
        notes.push(
            with_feedback(api, tx, delivery, &event, Some(feedback))
                .await?
                .note()
                .to_owned(),
        );
    }
    if !lookup.merging.is_empty() {
        let merging: Vec<String> = lookup.merging.iter().map(|n| format!("#{n}")).collect();
        notes.push(format!(
            "push to {branch}: {} still merge",
            merging.join(", ")
        ));
    }
    Ok(processed_or_ignored(
        notes,
        &format!("push to {branch}: no open pull request of Gatehouse's merges into it"),
    ))
}
