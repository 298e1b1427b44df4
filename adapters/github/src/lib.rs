//! GitHub, as Gatehouse sees it: the webhook signature check (done on the raw body, before
//! anything is parsed), the few payload fields Gatehouse acts on, and the REST calls it
//! makes (comments, pull requests, reviews, checks, search), and signing people in with GitHub (`OAuthApp`).
//!
//! The payload types are deliberately small and tolerant: GitHub adds fields all the time,
//! and a delivery that lacks a field Gatehouse needs is recorded and ignored, never a panic.

mod chat;
mod checks;
mod client;
mod comments;
mod error;
mod oauth;
mod payload;
mod pulls;
mod reviews;
mod search;
mod signature;
mod transport;

pub use chat::{chat_comment, quiet_mentions};
pub use checks::{CheckLimits, FailedCheck};
pub use client::GithubClient;
pub use comments::{IssueComment, comment_marker, is_gatehouse_comment};
pub use error::GithubError;
pub use oauth::OAuthApp;
pub use payload::{
    App, Branch, CheckOutput, CheckPull, CheckRun, CheckRunEvent, CheckSuite, CheckSuiteEvent,
    CheckSuiteId, Comment, CommentChanges, DiffComment, Issue, IssueCommentEvent, IssuesEvent,
    Label, Previous, PullRequest, PullRequestEvent, PullRequestReviewCommentEvent,
    PullRequestReviewEvent, PullRequestReviewThreadEvent, PushEvent, Repository, Review,
    ReviewThread, Tip, User, Webhook, WorkflowRun, WorkflowRunEvent, failing_conclusion,
};
pub use pulls::{NewPull, PullInfo, WorkPull};
pub use reviews::ReviewComment;
pub use search::FoundIssue;
pub use signature::{SignatureError, verify_signature};
pub use transport::rate_limit_wait;
