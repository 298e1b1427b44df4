//! Pull requests, and the branch they merge into by default.

use http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::transport::{call, parse, send, urlencode};
use crate::{GithubClient, GithubError};

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
        #[derive(Deserialize)]
        struct Pull {
            number: u64,
        }
        let owner = repo.split('/').next().unwrap_or_default();
        let find = format!(
            "/repos/{repo}/pulls?state=open&head={}",
            urlencode(&format!("{owner}:{head}"))
        );
        let octo = self.client_for(repo).await?;
        let open: Vec<Pull> = call(&octo, http::Method::GET, &find, None).await?;
        let fields = json!({ "title": title, "body": body });
        if let Some(pull) = open.first() {
            let url = format!("/repos/{repo}/pulls/{}", pull.number);
            let _: Value = call(&octo, http::Method::PATCH, &url, Some(fields)).await?;
            return Ok(pull.number);
        }
        let url = format!("/repos/{repo}/pulls");
        let create = json!({ "title": title, "body": body, "head": head, "base": base });
        let error = match send(&octo, http::Method::POST, &url, Some(create)).await {
            Ok(text) => return Ok(parse::<Pull>(&text)?.number),
            Err(error) => error,
        };
        // The create may have got through before failing (5xx), or a retry meets "a pull
        // request already exists" (422): then the open one is the answer.
        let retryable = match &error {
            GithubError::Unavailable(_) => true,
            GithubError::Api { status, .. } => *status == StatusCode::UNPROCESSABLE_ENTITY,
            GithubError::Setup(_) => false,
        };
        if retryable {
            let open: Vec<Pull> = call(&octo, http::Method::GET, &find, None).await?;
            if let Some(pull) = open.first() {
                return Ok(pull.number);
            }
        }
        Err(error)
    }
}
