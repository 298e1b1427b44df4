//! `push`: the base branch moving is how a conflict with it shows.

use serde::Deserialize;

use super::{Repository, User};

/// `push`
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct PushEvent {
    /// `refs/heads/<branch>` or `refs/tags/<tag>`.
    #[serde(rename = "ref")]
    pub git_ref: String,
    /// The commit the ref was at (all zeros when it was created).
    pub before: String,
    /// The commit it is at now (all zeros when it was deleted).
    pub after: String,
    /// Whether the push created the ref.
    #[serde(default)]
    pub created: bool,
    /// Whether the push deleted the ref.
    #[serde(default)]
    pub deleted: bool,
    /// Whether it was a force push.
    #[serde(default)]
    pub forced: bool,
    pub repository: Repository,
    /// Who pushed (GitHub leaves it out of some pushes).
    pub sender: Option<User>,
}

impl PushEvent {
    /// The branch pushed to; `None` for a tag.
    pub fn branch(&self) -> Option<&str> {
        self.git_ref.strip_prefix("refs/heads/")
    }
}
