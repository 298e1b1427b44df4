//! Events about the pull requests Gatehouse opened: every review, comment, check and push
//! is recorded against the requirement with what became of it, and those that ask for
//! work become [`feedback`](super::feedback).

use gatehouse_events::{Feedback, FeedbackKind, PullRef};
use gatehouse_github::{
    CheckSuiteEvent, IssueCommentEvent, PullRequestReviewCommentEvent, PullRequestReviewEvent,
    Webhook, WorkflowRunEvent,
};
use gatehouse_store::{NewPullEvent, PullRequestRow, Tx, fit_bytes};

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
        Webhook::PullRequestReview(e) => review(api, tx, delivery, e, lookup).await?,
        Webhook::PullRequestReviewComment(e) => {
            review_comment(api, tx, delivery, e, lookup).await?
        }
        Webhook::PullRequestReviewThread(e) => {
            let event = Event {
                repo: &e.repository.full_name,
                number: e.pull_request.number,
                name: format!("pull_request_review_thread.{}", e.action),
                actor: &e.sender.login,
                summary: format!("review thread {} by @{}", e.action, e.sender.login),
            };
            record_only(tx, delivery, &event).await?
        }
        Webhook::Push(e) => base_moved(api, tx, delivery, e, lookup).await?,
        Webhook::CheckSuite(e) => {
            checks(api, tx, delivery, &CheckResult::of_suite(e), lookup).await?
        }
        Webhook::WorkflowRun(e) => {
            checks(api, tx, delivery, &CheckResult::of_workflow_run(e), lookup).await?
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
                notes.push(record_only(tx, delivery, &event).await?.note().to_owned());
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

/// Records an event that asks for no work.
async fn record_only(tx: &mut Tx, delivery: &str, event: &Event<'_>) -> Result<Outcome, ApiError> {
    let Some(pull) = tx.pull_request(event.repo, event.number).await? else {
        return Ok(not_ours(event));
    };
    record(tx, delivery, &pull, event, "recorded").await?;
    Ok(Outcome::processed(vec![format!(
        "{}: {}",
        event.name, event.summary
    )]))
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

async fn review(
    api: &ApiState,
    tx: &mut Tx,
    delivery: &str,
    e: &PullRequestReviewEvent,
    lookup: &Lookup,
) -> Result<Outcome, ApiError> {
    let review = &e.review;
    let state = review.state.to_ascii_lowercase();
    let event = Event {
        repo: &e.repository.full_name,
        number: e.pull_request.number,
        name: format!("pull_request_review.{}", e.action),
        actor: &review.user.login,
        summary: format!(
            "review {} by @{}",
            state.replace('_', " "),
            review.user.login
        ),
    };
    let body = review.body.as_deref().unwrap_or_default();
    let asks = e.action == "submitted" && (state == "changes_requested" || mentions(api, body));
    let feedback = asks.then(|| Feedback {
        kind: FeedbackKind::Review,
        key: format!("review:{}", review.id),
        text: review_text(&review.user.login, &review.html_url, body, lookup),
        pull: pull_ref(&event),
        from: review.user.login.clone(),
    });
    with_feedback(api, tx, delivery, &event, feedback).await
}

async fn review_comment(
    api: &ApiState,
    tx: &mut Tx,
    delivery: &str,
    e: &PullRequestReviewCommentEvent,
    lookup: &Lookup,
) -> Result<Outcome, ApiError> {
    let comment = &e.comment;
    let event = Event {
        repo: &e.repository.full_name,
        number: e.pull_request.number,
        name: format!("pull_request_review_comment.{}", e.action),
        actor: &comment.user.login,
        summary: format!(
            "review comment on {} by @{}",
            comment.path, comment.user.login
        ),
    };
    // A comment of a review is asked for with its review: the same key, so the review
    // and its comments become one piece of work whichever arrives first.
    let key = comment.pull_request_review_id.map_or_else(
        || format!("review-comment:{}", comment.id),
        |id| format!("review:{id}"),
    );
    let asks = e.action == "created" && mentions(api, &comment.body);
    let feedback = asks.then(|| {
        let mut text = review_text(&comment.user.login, &comment.html_url, "", lookup);
        if lookup.review_comments.is_empty() {
            text.push_str(&comment_line(&comment.path, comment.line, &comment.body));
        }
        Feedback {
            kind: FeedbackKind::Review,
            key,
            text: fit_bytes(&text, MAX_FEEDBACK_BYTES),
            pull: pull_ref(&event),
            from: comment.user.login.clone(),
        }
    });
    with_feedback(api, tx, delivery, &event, feedback).await
}

/// A comment on one of Gatehouse's pull requests that mentions the bot but runs no
/// command is review feedback in prose (`@gatehouse please rename this`); `None` when the
/// comment is not on one of its pull requests.
pub(crate) async fn mention(
    api: &ApiState,
    tx: &mut Tx,
    delivery: &str,
    e: &IssueCommentEvent,
) -> Result<Option<Outcome>, ApiError> {
    let repo = &e.repository.full_name;
    if e.issue.pull_request.is_none() || tx.pull_request(repo, e.issue.number).await?.is_none() {
        return Ok(None);
    }
    let comment = &e.comment;
    let event = Event {
        repo,
        number: e.issue.number,
        name: format!("issue_comment.{}", e.action),
        actor: &comment.user.login,
        summary: format!("comment by @{} mentioning the bot", comment.user.login),
    };
    let text = format!(
        "@{} commented on the pull request ({}):\n\n{}\n",
        comment.user.login,
        comment.html_url,
        quote(&comment.body)
    );
    let feedback = Feedback {
        kind: FeedbackKind::Review,
        key: format!("comment:{}:{}", comment.id, comment.updated_at),
        text: fit_bytes(&text, MAX_FEEDBACK_BYTES),
        pull: pull_ref(&event),
        from: comment.user.login.clone(),
    };
    Ok(Some(
        with_feedback(api, tx, delivery, &event, Some(feedback)).await?,
    ))
}

impl<'a> CheckResult<'a> {
    fn of_suite(e: &'a CheckSuiteEvent) -> Self {
        let suite = &e.check_suite;
        let app = suite.app.as_ref().and_then(|a| a.slug.as_deref());
        Self {
            repo: &e.repository.full_name,
            numbers: suite.pull_requests.iter().map(|p| p.number).collect(),
            name: format!("check_suite.{}", e.action),
            completed: e.action == "completed",
            head_sha: &suite.head_sha,
            conclusion: conclusion(suite.conclusion.as_deref(), suite.status.as_deref()),
            what: format!(
                "check suite of {} on {}",
                app.unwrap_or("an app"),
                short(&suite.head_sha)
            ),
        }
    }

    fn of_workflow_run(e: &'a WorkflowRunEvent) -> Self {
        let run = &e.workflow_run;
        let name = run.name.as_deref().unwrap_or("workflow");
        Self {
            repo: &e.repository.full_name,
            numbers: run.pull_requests.iter().map(|p| p.number).collect(),
            name: format!("workflow_run.{}", e.action),
            completed: e.action == "completed",
            head_sha: &run.head_sha,
            conclusion: conclusion(run.conclusion.as_deref(), run.status.as_deref()),
            what: format!("workflow `{name}` on {}", short(&run.head_sha)),
        }
    }
}

/// The conclusion of a check, or its status before it has one.
fn conclusion<'a>(conclusion: Option<&'a str>, status: Option<&'a str>) -> &'a str {
    conclusion.or(status).unwrap_or("unknown")
}

/// A check suite's or workflow run's result, as far as feedback reads it.
struct CheckResult<'a> {
    repo: &'a str,
    numbers: Vec<u64>,
    name: String,
    completed: bool,
    head_sha: &'a str,
    conclusion: &'a str,
    what: String,
}

/// Conclusions that mean the work is broken (not `cancelled`, `skipped` or `neutral`,
/// which a person or a rule chose).
fn failed(conclusion: &str) -> bool {
    matches!(conclusion, "failure" | "timed_out" | "startup_failure")
}

async fn checks(
    api: &ApiState,
    tx: &mut Tx,
    delivery: &str,
    result: &CheckResult<'_>,
    lookup: &Lookup,
) -> Result<Outcome, ApiError> {
    let mut notes = Vec::new();
    for &number in &result.numbers {
        let event = Event {
            repo: result.repo,
            number,
            name: result.name.clone(),
            actor: "",
            summary: format!("{} {}", result.what, result.conclusion),
        };
        let Some(pull) = tx.pull_request(result.repo, number).await? else {
            notes.push(not_ours(&event).note().to_owned());
            continue;
        };
        // Only the head Gatehouse pushed last is the work as it stands; a result for an
        // older head is history.
        let current = pull.head_sha.is_empty() || pull.head_sha == result.head_sha;
        if !result.completed || !current {
            let outcome = if current {
                "recorded"
            } else {
                "recorded: not the head Gatehouse pushed last"
            };
            record(tx, delivery, &pull, &event, outcome).await?;
            notes.push(format!("{}: {}: {outcome}", event.name, event.summary));
            continue;
        }
        let state = if failed(result.conclusion) {
            "failure"
        } else {
            "success"
        };
        tx.set_pull_checks(result.repo, number, result.head_sha, state)
            .await?;
        let feedback = failed(result.conclusion)
            .then(|| checks_feedback(&event, result.head_sha, lookup))
            .flatten();
        if failed(result.conclusion) && feedback.is_none() {
            let names = lookup.failed_on_base.join(", ");
            let outcome = format!(
                "reported, not retried: {names} fail on the base branch too, so the pull request did not break them"
            );
            record(tx, delivery, &pull, &event, &outcome).await?;
            let key = format!("checks-base:{}:{number}:{}", result.repo, result.head_sha);
            let text = format!(
                "The checks {names} fail on this pull request's base branch as well, so Gatehouse is not reworking the pull request for them."
            );
            tx.want_comment(&key, result.repo, number, &text).await?;
            notes.push(format!("{}: {outcome}", event.name));
            continue;
        }
        notes.push(
            with_feedback(api, tx, delivery, &event, feedback)
                .await?
                .note()
                .to_owned(),
        );
    }
    Ok(processed_or_ignored(
        notes,
        &format!("{}: on no pull request", result.name),
    ))
}

/// The work failing checks ask for: each failing check with the tail of its log, or
/// `None` when every one of them fails on the base branch too (the pull request did not
/// break them; reworking it would not mend them).
fn checks_feedback(event: &Event<'_>, head_sha: &str, lookup: &Lookup) -> Option<Feedback> {
    let ours: Vec<_> = lookup
        .failed
        .iter()
        .filter(|c| !lookup.failed_on_base.contains(&c.name))
        .collect();
    if ours.is_empty() && !lookup.failed.is_empty() {
        return None;
    }
    let mut text = format!(
        "Checks failed on {} (the pull request's head):\n",
        short(head_sha)
    );
    if ours.is_empty() {
        text.push_str(&format!("\n{}\n", event.summary));
    }
    for check in ours {
        text.push_str(&format!("\n### {} ({})\n", check.name, check.conclusion));
        if let Some(url) = &check.html_url {
            text.push_str(&format!("{url}\n"));
        }
        for part in [&check.title, &check.summary].into_iter().flatten() {
            if !part.trim().is_empty() {
                text.push_str(&format!("{}\n", part.trim()));
            }
        }
        if let Some(log) = &check.log_tail {
            text.push_str(&format!(
                "\nThe end of its log:\n```\n{}\n```\n",
                log.trim_end()
            ));
        }
    }
    Some(Feedback {
        kind: FeedbackKind::ChecksFailed,
        key: format!("checks:{}#{}:{head_sha}", event.repo, event.number),
        text: fit_bytes(&text, MAX_FEEDBACK_BYTES),
        pull: pull_ref(event),
        from: String::new(),
    })
}

/// A push to a branch Gatehouse's pull requests merge into: each that no longer merges
/// is sent back (`on_conflict`) or told, with what to do.
async fn base_moved(
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
        let text = format!(
            "The pull request no longer merges into `{branch}`: `{branch}` moved to {} and conflicts with this work.\n\nRebase the work onto the new `{branch}` (`git fetch origin {branch} && git rebase origin/{branch}`), resolve each conflict keeping what both sides meant, and make sure the tests still pass.\n",
            short(&e.after)
        );
        let feedback = Feedback {
            kind: FeedbackKind::Conflict,
            key: format!("conflict:{}#{number}:{}", event.repo, e.after),
            text,
            pull: pull_ref(&event),
            from: String::new(),
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

/// Whether `text` mentions the bot (`@login`, as a word).
fn mentions(api: &ApiState, text: &str) -> bool {
    let Some(github) = &api.github else {
        return false;
    };
    let mention = format!("@{}", github.bot_login.to_ascii_lowercase());
    let text = text.to_ascii_lowercase();
    text.match_indices(&mention).any(|(at, _)| {
        text[at + mention.len()..]
            .chars()
            .next()
            .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
    })
}

/// A review's text for the agent: who asked, the review's body and each of its comments
/// with file and line.
fn review_text(reviewer: &str, url: &str, body: &str, lookup: &Lookup) -> String {
    let mut text = format!("@{reviewer} reviewed the pull request ({url}).\n");
    if !body.trim().is_empty() {
        text.push_str(&format!("\n{}\n", quote(body)));
    }
    if !lookup.review_comments.is_empty() {
        text.push_str("\nTheir comments:\n");
    }
    for c in &lookup.review_comments {
        text.push_str(&comment_line(&c.path, c.line, &c.body));
    }
    fit_bytes(&text, MAX_FEEDBACK_BYTES)
}

fn comment_line(path: &str, line: Option<u64>, body: &str) -> String {
    let at = line.map_or_else(|| path.to_owned(), |l| format!("{path}:{l}"));
    format!("\n- {at}:\n{}\n", quote(body))
}

fn quote(text: &str) -> String {
    text.trim()
        .lines()
        .map(|l| format!("> {l}"))
        .collect::<Vec<_>>()
        .join("\n")
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
