//! Events about the pull requests Gatehouse opened: every review, comment, check and push
//! is recorded against the requirement with what became of it, and those that ask for
//! work become [`feedback`](super::feedback).

mod checks;
mod conflicts;
mod reviews;

pub(crate) use reviews::mention;

use gatehouse_events::{Feedback, FeedbackKind, PullRef};
use gatehouse_github::Webhook;
use gatehouse_store::{NewPullEvent, PullRequestRow, Tx};

use super::feedback::{self, Heard};
use super::lookup::Lookup;
use crate::intake::deliveries::Outcome;
use crate::issue_requirement::github_actor;
use crate::{ApiError, ApiState};

/// The most of a piece of feedback's text the agent is given: reviews and logs are written
/// by people and CI, and a prompt has a price.
pub(crate) const MAX_FEEDBACK_BYTES: usize = 24 * 1024;

/// What one event about a pull request comes to, before it is recorded.
struct Event<'a> {
    repo: &'a str,
    number: u64,
    /// `event.action`.
    name: String,
    actor: &'a str,
    summary: String,
}

/// Handles an event about a pull request (reviews, review comments and threads, checks,
/// workflow runs); `None` when the webhook is not one of those.
pub(crate) async fn heard(
    api: &ApiState,
    tx: &mut Tx,
    delivery: &str,
    webhook: &Webhook,
    lookup: &Lookup,
) -> Result<Option<Outcome>, ApiError> {
    Ok(Some(match webhook {
        Webhook::PullRequestReview(e) => reviews::review(api, tx, delivery, e, lookup).await?,
        Webhook::PullRequestReviewComment(e) => {
            reviews::review_comment(api, tx, delivery, e, lookup).await?
        }
        Webhook::PullRequestReviewThread(e) => {
            let event = Event {
                repo: &e.repository.full_name,
                number: e.pull_request.number,
                name: format!("pull_request_review_thread.{}", e.action),
                actor: &e.sender.login,
                summary: format!("review thread {} by @{}", e.action, e.sender.login),
            };
            with_feedback(api, tx, delivery, &event, None).await?
        }
        Webhook::Push(e) => conflicts::base_moved(api, tx, delivery, e, lookup).await?,
        Webhook::CheckSuite(e) => {
            let result = checks::CheckResult::of_suite(e);
            checks::checks(api, tx, delivery, &result, lookup).await?
        }
        Webhook::WorkflowRun(e) => {
            let result = checks::CheckResult::of_workflow_run(e);
            checks::checks(api, tx, delivery, &result, lookup).await?
        }
        Webhook::CheckRun(e) => {
            let mut notes = Vec::new();
            for number in webhook.pull_numbers() {
                let event = Event {
                    repo: &e.repository.full_name,
                    number,
                    name: format!("check_run.{}", e.action),
                    actor: "",
                    summary: format!(
                        "check `{}` {}",
                        e.check_run.name,
                        e.check_run
                            .conclusion
                            .as_deref()
                            .unwrap_or(&e.check_run.status)
                    ),
                };
                notes.push(
                    with_feedback(api, tx, delivery, &event, None)
                        .await?
                        .note()
                        .to_owned(),
                );
            }
            processed_or_ignored(notes, "the check run is on no pull request")
        }
        _ => return Ok(None),
    }))
}

/// Records a `pull_request` event (synchronize, closed, reopened, ...) on one of
/// Gatehouse's pull requests, with what its processing came to.
pub(crate) async fn record_pull_request(
    tx: &mut Tx,
    delivery: &str,
    e: &gatehouse_github::PullRequestEvent,
    outcome: &str,
) -> Result<(), ApiError> {
    let pr = &e.pull_request;
    let Some(pull) = tx.pull_request(&e.repository.full_name, pr.number).await? else {
        return Ok(());
    };
    let summary = match e.action.as_str() {
        "synchronize" => format!(
            "head moved to {} by @{}",
            short(&pr.head.sha),
            e.sender.login
        ),
        "closed" if pr.merged => format!("merged by @{}", e.sender.login),
        action => format!("{action} by @{}", e.sender.login),
    };
    let event = Event {
        repo: &e.repository.full_name,
        number: pr.number,
        name: format!("pull_request.{}", e.action),
        actor: &e.sender.login,
        summary,
    };
    record(tx, delivery, &pull, &event, outcome).await
}

fn processed_or_ignored(notes: Vec<String>, none: &str) -> Outcome {
    if notes.is_empty() {
        Outcome::ignored(none)
    } else {
        Outcome::processed(notes)
    }
}

fn not_ours(event: &Event<'_>) -> Outcome {
    Outcome::ignored(format!(
        "{}: {}#{} is not a pull request Gatehouse opened",
        event.name, event.repo, event.number
    ))
}

async fn record(
    tx: &mut Tx,
    delivery: &str,
    pull: &PullRequestRow,
    event: &Event<'_>,
    outcome: &str,
) -> Result<(), ApiError> {
    tx.record_pull_event(&NewPullEvent {
        repo: event.repo,
        number: event.number,
        requirement: pull.requirement_id,
        delivery_id: delivery,
        event: &event.name,
        actor: event.actor,
        summary: &event.summary,
        outcome,
    })
    .await?;
    Ok(())
}

/// Records an event and, when it asks for work, starts it.
async fn with_feedback(
    api: &ApiState,
    tx: &mut Tx,
    delivery: &str,
    event: &Event<'_>,
    feedback: Option<Feedback>,
) -> Result<Outcome, ApiError> {
    let Some(pull) = tx.pull_request(event.repo, event.number).await? else {
        return Ok(not_ours(event));
    };
    let Some(feedback) = feedback else {
        record(tx, delivery, &pull, event, "recorded").await?;
        return Ok(Outcome::processed(vec![format!(
            "{}: {}",
            event.name, event.summary
        )]));
    };
    let Some(requirement) = api.store.requirement(pull.requirement_id).await? else {
        let outcome = "ignored: its requirement is gone";
        record(tx, delivery, &pull, event, outcome).await?;
        return Ok(Outcome::ignored(outcome));
    };
    let asker = match feedback.kind {
        FeedbackKind::Review => Some(github_actor(api, event.actor).await?),
        FeedbackKind::ChecksFailed | FeedbackKind::Conflict => None,
    };
    let heard = Heard {
        delivery,
        pull: &pull,
        requirement: &requirement,
        asker: asker.as_ref(),
        feedback,
    };
    let outcome = feedback::start(api, tx, heard).await?;
    record(tx, delivery, &pull, event, &outcome).await?;
    let note = format!("{}: {}: {outcome}", event.name, event.summary);
    Ok(
        if outcome.starts_with("ignored") || outcome.starts_with("refused") {
            Outcome::ignored(note)
        } else {
            Outcome::processed(vec![note])
        },
    )
}

fn short(sha: &str) -> &str {
    &sha[..sha.len().min(7)]
}

fn pull_ref(event: &Event<'_>) -> PullRef {
    PullRef {
        repo: event.repo.to_owned(),
        number: event.number,
    }
}
