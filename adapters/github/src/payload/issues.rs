//! `issues` and `issue_comment`.

use serde::Deserialize;

use super::{Label, Repository, User};

/// `issues`
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct IssuesEvent {
    /// opened, edited, closed, reopened, labeled, unlabeled, assigned, unassigned, ...
    pub action: String,
    /// The issue after the change.
    pub issue: Issue,
    /// The label added or removed (labeled, unlabeled).
    pub label: Option<Label>,
    /// The account assigned or unassigned (assigned, unassigned).
    pub assignee: Option<User>,
    pub repository: Repository,
    /// Who did it.
    pub sender: User,
}

/// `issue_comment`
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct IssueCommentEvent {
    /// created, edited, deleted.
    pub action: String,
    /// The issue (or pull request) commented on.
    pub issue: Issue,
    pub comment: Comment,
    /// For `edited`: what the body was before.
    pub changes: Option<CommentChanges>,
    pub repository: Repository,
    /// Who did it.
    pub sender: User,
}

/// An issue; pull requests are issues too (then `pull_request` is present).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Issue {
    /// Number within the repository.
    pub number: u64,
    pub title: String,
    pub body: Option<String>,
    /// open or closed.
    pub state: String,
    pub html_url: String,
    /// Labels now on it.
    #[serde(default)]
    pub labels: Vec<Label>,
    /// Author.
    pub user: User,
    /// Last change (RFC 3339): distinguishes one label event from a later one.
    pub updated_at: String,
    /// Present when the issue is a pull request.
    pub pull_request: Option<serde_json::Value>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Comment {
    /// Id (for edits and replies).
    pub id: u64,
    /// Markdown text.
    pub body: String,
    /// Author.
    pub user: User,
    pub html_url: String,
    /// Last change (creation or edit): with `id`, names this version of the comment.
    #[serde(default)]
    pub updated_at: String,
}

/// `changes` of an edited comment.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct CommentChanges {
    /// The previous body, when it changed.
    pub body: Option<Previous>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Previous {
    pub from: String,
}
