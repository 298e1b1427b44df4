//! The webhook payloads Gatehouse reads, with only the fields it uses. Unknown fields are
//! ignored; a missing required field fails that delivery's parse, which the caller records.

mod checks;
mod issues;
mod pulls;
mod push;
mod review;
#[cfg(test)]
mod tests;

use serde::Deserialize;

pub use checks::{
    App, CheckOutput, CheckPull, CheckRun, CheckRunEvent, CheckSuite, CheckSuiteEvent,
    CheckSuiteId, Tip, WorkflowRun, WorkflowRunEvent, failing_conclusion,
};
pub use issues::{Comment, CommentChanges, Issue, IssueCommentEvent, IssuesEvent, Previous};
pub use pulls::{Branch, PullRequest, PullRequestEvent};
pub use push::PushEvent;
pub use review::{
    DiffComment, PullRequestReviewCommentEvent, PullRequestReviewEvent,
    PullRequestReviewThreadEvent, Review, ReviewThread,
};

/// A parsed delivery, by its `X-GitHub-Event` header.
#[derive(Debug, Clone, PartialEq)]
pub enum Webhook {
    /// GitHub checking the hook works.
    Ping,
    /// An issue opened, edited, closed, reopened, labeled, unlabeled, assigned...
    Issues(IssuesEvent),
    /// A comment on an issue or pull request.
    IssueComment(IssueCommentEvent),
    /// A pull request opened, closed (merged or not), reopened, synchronized...
    PullRequest(PullRequestEvent),
    /// A review submitted, edited or dismissed.
    PullRequestReview(PullRequestReviewEvent),
    /// A comment on a line of a pull request's diff, created, edited or deleted.
    PullRequestReviewComment(PullRequestReviewCommentEvent),
    /// A review thread resolved or unresolved.
    PullRequestReviewThread(PullRequestReviewThreadEvent),
    /// A check suite requested or completed on a commit.
    CheckSuite(CheckSuiteEvent),
    /// One check run created or completed on a commit.
    CheckRun(CheckRunEvent),
    /// A GitHub Actions workflow run requested, in progress or completed.
    WorkflowRun(WorkflowRunEvent),
    /// Commits pushed to a branch or tag (or one deleted).
    Push(PushEvent),
    /// An event Gatehouse does not act on (its name).
    Other(String),
}

impl Webhook {
    /// Parses a body by its event name.
    pub fn parse(event: &str, body: &[u8]) -> Result<Self, serde_json::Error> {
        Ok(match event {
            "ping" => Self::Ping,
            "issues" => Self::Issues(serde_json::from_slice(body)?),
            "issue_comment" => Self::IssueComment(serde_json::from_slice(body)?),
            "pull_request" => Self::PullRequest(serde_json::from_slice(body)?),
            "pull_request_review" => Self::PullRequestReview(serde_json::from_slice(body)?),
            "pull_request_review_comment" => {
                Self::PullRequestReviewComment(serde_json::from_slice(body)?)
            }
            "pull_request_review_thread" => {
                Self::PullRequestReviewThread(serde_json::from_slice(body)?)
            }
            "check_suite" => Self::CheckSuite(serde_json::from_slice(body)?),
            "check_run" => Self::CheckRun(serde_json::from_slice(body)?),
            "workflow_run" => Self::WorkflowRun(serde_json::from_slice(body)?),
            "push" => Self::Push(serde_json::from_slice(body)?),
            other => Self::Other(other.to_owned()),
        })
    }

    /// The repository (`owner/name`) an event happened in, for the events that have one.
    pub fn repository(&self) -> Option<&str> {
        let repository = match self {
            Self::Issues(e) => &e.repository,
            Self::IssueComment(e) => &e.repository,
            Self::PullRequest(e) => &e.repository,
            Self::PullRequestReview(e) => &e.repository,
            Self::PullRequestReviewComment(e) => &e.repository,
            Self::PullRequestReviewThread(e) => &e.repository,
            Self::CheckSuite(e) => &e.repository,
            Self::CheckRun(e) => &e.repository,
            Self::WorkflowRun(e) => &e.repository,
            Self::Push(e) => &e.repository,
            Self::Ping | Self::Other(_) => return None,
        };
        Some(&repository.full_name)
    }

    /// The issue or pull request an event is about (its repository and number; the two
    /// share the numbers), for the events that have one. A check or workflow run names the
    /// first of the pull requests its commit heads ([`Self::pull_numbers`] gives them
    /// all); a push names none.
    pub fn subject(&self) -> Option<(&str, u64)> {
        let number = match self {
            Self::Issues(e) => e.issue.number,
            Self::IssueComment(e) => e.issue.number,
            Self::PullRequest(e) => e.pull_request.number,
            Self::PullRequestReview(e) => e.pull_request.number,
            Self::PullRequestReviewComment(e) => e.pull_request.number,
            Self::PullRequestReviewThread(e) => e.pull_request.number,
            Self::CheckSuite(_) | Self::CheckRun(_) | Self::WorkflowRun(_) => {
                *self.pull_numbers().first()?
            }
            Self::Push(_) | Self::Ping | Self::Other(_) => return None,
        };
        Some((self.repository()?, number))
    }

    /// Every pull request the event is about: the one a pull request, review or comment on
    /// a pull request names, all those a check or workflow run's commit heads (several
    /// pull requests can share a head), none for issues and pushes.
    pub fn pull_numbers(&self) -> Vec<u64> {
        let pulls = match self {
            Self::CheckSuite(e) => &e.check_suite.pull_requests,
            Self::CheckRun(e) => &e.check_run.pull_requests,
            Self::WorkflowRun(e) => &e.workflow_run.pull_requests,
            Self::IssueComment(e) if e.issue.pull_request.is_some() => {
                return vec![e.issue.number];
            }
            Self::PullRequest(e) => return vec![e.pull_request.number],
            Self::PullRequestReview(e) => return vec![e.pull_request.number],
            Self::PullRequestReviewComment(e) => return vec![e.pull_request.number],
            Self::PullRequestReviewThread(e) => return vec![e.pull_request.number],
            Self::IssueComment(_) | Self::Issues(_) | Self::Push(_) => return Vec::new(),
            Self::Ping | Self::Other(_) => return Vec::new(),
        };
        pulls.iter().map(|p| p.number).collect()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Label {
    /// Its name, e.g. `sop:bug-fix`.
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Repository {
    /// `owner/name`.
    pub full_name: String,
}

/// A GitHub account.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct User {
    pub login: String,
}
