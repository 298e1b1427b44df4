//! `pull_request`, and the pull request as every pull request event carries it.

use serde::Deserialize;

use super::{Label, Repository, User};

/// `pull_request`
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct PullRequestEvent {
    /// opened, edited, closed, reopened, labeled, synchronize, ...
    pub action: String,
    /// The pull request after the change.
    pub pull_request: PullRequest,
    /// The label added or removed (labeled, unlabeled).
    pub label: Option<Label>,
    pub repository: Repository,
    /// Who did it.
    pub sender: User,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct PullRequest {
    /// Number within the repository.
    pub number: u64,
    pub title: String,
    pub body: Option<String>,
    /// open or closed.
    pub state: String,
    /// Whether it was merged (on `closed`).
    #[serde(default)]
    pub merged: bool,
    pub html_url: String,
    /// Labels now on it.
    #[serde(default)]
    pub labels: Vec<Label>,
    /// Author.
    pub user: User,
    /// Last change (RFC 3339).
    pub updated_at: String,
    /// The branch it merges from.
    pub head: Branch,
    /// The branch it merges into.
    pub base: Branch,
    /// Whether it merges cleanly; `None` while GitHub is still working it out (and in
    /// the events that leave it out, such as reviews).
    #[serde(default)]
    pub mergeable: Option<bool>,
    /// GitHub's finer word on that: clean, dirty (conflicts), blocked, behind, unstable,
    /// unknown, ...
    #[serde(default)]
    pub mergeable_state: Option<String>,
    /// The merge commit once merged (before that, GitHub's test merge, if any).
    #[serde(default)]
    pub merge_commit_sha: Option<String>,
}

impl PullRequest {
    /// Whether the head is in another repository (a fork): such a pull request must not
    /// start runs holding write credentials unless configured.
    pub fn from_fork(&self) -> bool {
        match (&self.head.repo, &self.base.repo) {
            (Some(head), Some(base)) => head.full_name != base.full_name,
            // A deleted fork leaves no head repository.
            _ => true,
        }
    }
}

/// One end of a pull request.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Branch {
    #[serde(rename = "ref")]
    pub name: String,
    /// The commit it is at (empty when the payload leaves it out).
    #[serde(default)]
    pub sha: String,
    /// Its repository (absent when a fork was deleted).
    pub repo: Option<Repository>,
}
