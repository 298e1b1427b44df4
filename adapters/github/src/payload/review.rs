//! `pull_request_review`, `pull_request_review_comment` and `pull_request_review_thread`:
//! what reviewers say on a pull request.

use serde::Deserialize;

use super::{CommentChanges, PullRequest, Repository, User};

/// `pull_request_review`
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct PullRequestReviewEvent {
    /// submitted, edited, dismissed.
    pub action: String,
    pub review: Review,
    /// The pull request reviewed (without `mergeable`: GitHub leaves it out here).
    pub pull_request: PullRequest,
    pub repository: Repository,
    /// Who did it.
    pub sender: User,
}

/// A review: a verdict, a body, and the line comments fetched apart
/// ([`crate::GithubClient::review_comments`]).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Review {
    /// Id (to fetch its line comments).
    pub id: u64,
    /// Markdown; `None` when the reviewer only left line comments.
    pub body: Option<String>,
    /// approved, changes_requested, commented, dismissed: lowercase in webhooks, uppercase
    /// in REST answers, so compare with [`Review::requests_changes`] and the like.
    pub state: String,
    /// The reviewer.
    pub user: User,
    pub html_url: String,
    /// When it was submitted (RFC 3339); `None` for a pending review.
    pub submitted_at: Option<String>,
    /// The head commit the reviewer saw.
    pub commit_id: Option<String>,
}

impl Review {
    /// Whether the reviewer asked for changes.
    pub fn requests_changes(&self) -> bool {
        self.state.eq_ignore_ascii_case("changes_requested")
    }

    /// Whether the reviewer approved.
    pub fn approves(&self) -> bool {
        self.state.eq_ignore_ascii_case("approved")
    }
}

/// `pull_request_review_comment`
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct PullRequestReviewCommentEvent {
    /// created, edited, deleted.
    pub action: String,
    pub comment: DiffComment,
    /// For `edited`: what the body was before.
    pub changes: Option<CommentChanges>,
    pub pull_request: PullRequest,
    pub repository: Repository,
    /// Who did it.
    pub sender: User,
}

/// A comment on a line of a pull request's diff (a review comment), as webhooks carry it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct DiffComment {
    /// Id (to reply in its thread).
    pub id: u64,
    /// GraphQL id (threads name their comments by it).
    #[serde(default)]
    pub node_id: String,
    /// Markdown.
    pub body: String,
    /// The file commented on, relative to the repository's root.
    pub path: String,
    /// The line in the current diff; `None` once the line is outdated.
    pub line: Option<u64>,
    /// The line when the comment was made.
    pub original_line: Option<u64>,
    /// The diff around the line, as the reviewer saw it.
    #[serde(default)]
    pub diff_hunk: String,
    /// Author.
    pub user: User,
    pub html_url: String,
    /// Last change (creation or edit): with `id`, names this version of the comment.
    #[serde(default)]
    pub updated_at: String,
    /// The comment it answers, in a thread.
    #[serde(default)]
    pub in_reply_to_id: Option<u64>,
    /// The review it belongs to.
    pub pull_request_review_id: Option<u64>,
}

/// `pull_request_review_thread`
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct PullRequestReviewThreadEvent {
    /// resolved, unresolved.
    pub action: String,
    pub thread: ReviewThread,
    pub pull_request: PullRequest,
    pub repository: Repository,
    /// Who did it.
    pub sender: User,
}

/// A thread of line comments.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ReviewThread {
    /// GraphQL id.
    pub node_id: String,
    /// Its comments, the first one opening it.
    pub comments: Vec<DiffComment>,
}
