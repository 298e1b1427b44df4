//! Pull requests, and the branch they merge into by default.

use http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::transport::{call, parse, send, urlencode};
use crate::{GithubClient, GithubError, Tip};

/// The pull request a work branch should have.
#[derive(Debug, Clone, Copy)]
pub struct NewPull<'a> {
    /// The work branch.
    pub head: &'a str,
    /// The branch it merges into.
    pub base: &'a str,
    pub title: &'a str,
    pub body: &'a str,
    /// Opened as a draft. An open pull request found instead is left as it is.
    pub draft: bool,
}

/// A work branch's open pull request, as [`GithubClient::open_or_update_pull_request`]
/// left it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkPull {
    pub number: u64,
    /// Its page (`https://github.com/owner/name/pull/N`); empty when GitHub gave none.
    pub url: String,
    pub draft: bool,
    /// `true` when this call opened it; `false` when it was open already and was updated.
    pub opened: bool,
}

/// A pull request's state now: where its ends are, and whether it merges.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PullInfo {
    pub number: u64,
    /// open or closed.
    pub state: String,
    #[serde(default)]
    pub merged: bool,
    /// The branch it merges from, and its commit.
    pub head: Tip,
    /// The branch it merges into, and its commit.
    pub base: Tip,
    /// Whether it merges cleanly; `None` while GitHub is still working it out (ask again
    /// in a few seconds).
    pub mergeable: Option<bool>,
    /// clean, dirty (conflicts), blocked, behind, unstable, unknown, ...
    pub mergeable_state: Option<String>,
    /// The merge commit once merged (before that, GitHub's test merge, if any).
    pub merge_commit_sha: Option<String>,
}

/// A pull request as GitHub's answers describe it.
#[derive(Deserialize)]
struct Pull {
    number: u64,
    #[serde(default)]
    html_url: String,
    #[serde(default)]
    draft: bool,
}

impl Pull {
    fn work(self, opened: bool) -> WorkPull {
        WorkPull {
            number: self.number,
            url: self.html_url,
            draft: self.draft,
            opened,
        }
    }
}

impl GithubClient {
    /// The repository's default branch.
    pub async fn default_branch(&self, repo: &str) -> Result<String, GithubError> {
        #[derive(Deserialize)]
        struct Repo {
            default_branch: String,
        }
        let url = format!("/repos/{repo}");
        let octo = self.client_for(repo).await?;
        let found: Repo = call(&octo, http::Method::GET, &url, None).await?;
        Ok(found.default_branch)
    }

    /// Pull request `number` as it is now.
    pub async fn pull(&self, repo: &str, number: u64) -> Result<PullInfo, GithubError> {
        let url = format!("/repos/{repo}/pulls/{number}");
        let octo = self.client_for(repo).await?;
        call(&octo, http::Method::GET, &url, None).await
    }

    /// Opens a pull request from `head` into `base`, or updates the open one from `head`
    /// (a delivery run again after rework): one pull request per work branch. Returns its
    /// number.
    pub async fn open_or_update_pull(
        &self,
        repo: &str,
        head: &str,
        base: &str,
        title: &str,
        body: &str,
    ) -> Result<u64, GithubError> {
        let pull = NewPull {
            head,
            base,
            title,
            body,
            draft: false,
        };
        Ok(self.open_or_update_pull_request(repo, &pull).await?.number)
    }

    /// [`GithubClient::open_or_update_pull`], saying more: the pull request's page,
    /// whether it is a draft, and whether this call opened it.
    pub async fn open_or_update_pull_request(
        &self,
        repo: &str,
        pull: &NewPull<'_>,
    ) -> Result<WorkPull, GithubError> {
        let owner = repo.split('/').next().unwrap_or_default();
        let find = format!(
            "/repos/{repo}/pulls?state=open&head={}",
            urlencode(&format!("{owner}:{}", pull.head))
        );
        let octo = self.client_for(repo).await?;
        let open: Vec<Pull> = call(&octo, http::Method::GET, &find, None).await?;
        let fields = json!({ "title": pull.title, "body": pull.body });
        if let Some(found) = open.into_iter().next() {
            let url = format!("/repos/{repo}/pulls/{}", found.number);
            let updated: Value = call(&octo, http::Method::PATCH, &url, Some(fields)).await?;
            let updated = serde_json::from_value::<Pull>(updated).unwrap_or(found);
            return Ok(updated.work(false));
        }
        let url = format!("/repos/{repo}/pulls");
        let mut create = json!({
            "title": pull.title, "body": pull.body, "head": pull.head, "base": pull.base
        });
        if pull.draft {
            create["draft"] = Value::Bool(true);
        }
        let error = match send(&octo, http::Method::POST, &url, Some(create)).await {
            Ok(text) => return Ok(parse::<Pull>(&text)?.work(true)),
            Err(error) => error,
        };
        // The create may have got through before failing (5xx), or a retry meets "a pull
        // request already exists" (422): then the open one is the answer, opened by this
        // call or the one it retries.
        let retryable = match &error {
            GithubError::Unavailable(_) => true,
            GithubError::Api { status, .. } => *status == StatusCode::UNPROCESSABLE_ENTITY,
            GithubError::Setup(_) => false,
        };
        if retryable {
            let open: Vec<Pull> = call(&octo, http::Method::GET, &find, None).await?;
            if let Some(found) = open.into_iter().next() {
                return Ok(found.work(true));
            }
        }
        Err(error)
    }
}
