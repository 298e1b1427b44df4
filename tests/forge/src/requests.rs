//! What the fake GitLab and Gitea share: the merge requests (pull requests) they hold, and
//! the record of every call with the token it carried.

use std::sync::{Arc, Mutex};

/// A merge request (GitLab) or pull request (Gitea) the fake holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The project's path (`group/app`, `owner/name`).
    pub project: String,
    /// GitLab's `iid`, Gitea's `number`.
    pub number: u64,
    /// The work branch.
    pub source: String,
    /// The branch it merges into.
    pub target: String,
    pub title: String,
    /// GitLab's `description`, Gitea's `body`.
    pub body: String,
    /// `opened` (GitLab), `open` (Gitea), or `closed`/`merged`.
    pub state: String,
}

#[derive(Default)]
pub(crate) struct Inner {
    pub requests: Vec<Request>,
    /// `METHOD /path?query` of every call.
    pub calls: Vec<String>,
    /// The token each call carried (`PRIVATE-TOKEN`, or `Authorization`), beside `calls`.
    pub tokens: Vec<String>,
}

pub(crate) type Shared = Arc<Mutex<Inner>>;

pub(crate) fn lock(inner: &Shared) -> std::sync::MutexGuard<'_, Inner> {
    inner.lock().unwrap_or_else(|p| p.into_inner())
}
