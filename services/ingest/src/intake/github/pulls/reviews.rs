//! Reviews, review comments and comments that mention the bot on one of Gatehouse's
//! pull requests: feedback in people's words, with the review's line comments.

use gatehouse_events::{Feedback, FeedbackKind};
use gatehouse_github::{IssueCommentEvent, PullRequestReviewCommentEvent, PullRequestReviewEvent};
use gatehouse_store::{Tx, fit_bytes};

use super::{Event, Lookup, MAX_FEEDBACK_BYTES, pull_ref, with_feedback};
use crate::intake::deliveries::Outcome;
use crate::{ApiError, ApiState};

pub(super) async fn review(
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
        text: review_text(&review.html_url, body, lookup),
        pull: pull_ref(&event),
        from: review.user.login.clone(),
        thread: None,
    });
    with_feedback(api, tx, delivery, &event, feedback).await
}

pub(super) async fn review_comment(
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
        let mut text = review_text(&comment.html_url, "", lookup);
        if lookup.review_comments.is_empty() {
            text.push_str(&comment_line(&comment.path, comment.line, &comment.body));
        }
        Feedback {
            kind: FeedbackKind::Review,
            key,
            text: fit_bytes(&text, MAX_FEEDBACK_BYTES),
            pull: pull_ref(&event),
            from: comment.user.login.clone(),
            // Answered in the comment's thread (its first comment: GitHub takes no
            // replies to replies).
            thread: Some(comment.in_reply_to_id.unwrap_or(comment.id)),
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
    // Who wrote it is the feedback's `from`, named in its label.
    let text = format!("{}\n\n{}\n", comment.html_url, quote(&comment.body));
    let feedback = Feedback {
        kind: FeedbackKind::Review,
        key: format!("comment:{}:{}", comment.id, comment.updated_at),
        text: fit_bytes(&text, MAX_FEEDBACK_BYTES),
        pull: pull_ref(&event),
        from: comment.user.login.clone(),
        thread: None,
    };
    Ok(Some(
        with_feedback(api, tx, delivery, &event, Some(feedback)).await?,
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

/// A review's details for the agent (who asked is the feedback's label): where it is, its
/// body and each of its comments with file and line.
fn review_text(url: &str, body: &str, lookup: &Lookup) -> String {
    let mut text = format!("{url}\n");
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
