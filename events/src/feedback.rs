//! What a pull request Gatehouse opened asks for after delivery: a reviewer's changes, a
//! failing check, a conflict with its base. Ingest turns a GitHub event into a
//! [`Feedback`]; the scheduler sends an SOP run back with it (`on_review`,
//! `on_checks_failed`, `on_conflict` on the deliver node) or makes it a turn of the
//! conversation that delivered; the runner pushes the work to the same branch and answers
//! on the pull request.

use serde::{Deserialize, Serialize};

/// A pull request, as the place work is pushed to and answered on.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PullRef {
    /// `owner/name`.
    pub repo: String,
    pub number: u64,
}

impl std::fmt::Display for PullRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}#{}", self.repo, self.number)
    }
}

/// What kind of feedback: which of the deliver node's rules it falls under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FeedbackKind {
    /// A review with changes requested, or a comment that mentions the bot (`on_review`).
    Review,
    /// A check suite or workflow run failed on the pull request's head
    /// (`on_checks_failed`).
    ChecksFailed,
    /// The pull request no longer merges cleanly into its base (`on_conflict`).
    Conflict,
}

impl FeedbackKind {
    /// The deliver node's rule for this kind, as the SOP names it.
    pub fn rule(self) -> &'static str {
        match self {
            Self::Review => "on_review",
            Self::ChecksFailed => "on_checks_failed",
            Self::Conflict => "on_conflict",
        }
    }
}

impl std::fmt::Display for FeedbackKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Review => "review",
            Self::ChecksFailed => "failing checks",
            Self::Conflict => "conflict",
        })
    }
}

/// One piece of feedback on a pull request, as work for whoever delivered it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Feedback {
    pub kind: FeedbackKind,
    /// Names this piece of feedback (`review:123`, `checks:<sha>`, `conflict:<base sha>`):
    /// the same key again, under another delivery, changes nothing.
    pub key: String,
    /// What the agent is told: the reviewer's comments with file and line, or the failing
    /// jobs with the tail of their logs. Written by people or CI; untrusted, bounded.
    pub text: String,
    /// The pull request it came from, where the work is pushed and answered.
    pub pull: PullRef,
    /// The GitHub login the answer is addressed to (the reviewer; empty for checks).
    #[serde(default)]
    pub from: String,
}
