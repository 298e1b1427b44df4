//! Finding open issues and pull requests by label, for reconciliation.

use octocrab::Octocrab;
use serde::Deserialize;
use serde_json::Value;

use crate::transport::{call, urlencode};
use crate::{GithubClient, GithubError};

/// An issue found by search (reconciliation).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct FoundIssue {
    pub number: u64,
    pub title: String,
    pub body: Option<String>,
    pub html_url: String,
    /// `https://api.../repos/owner/name`: the repository.
    pub repository_url: String,
    pub updated_at: String,
    /// Author.
    pub user: crate::User,
    #[serde(default)]
    pub labels: Vec<crate::Label>,
    /// Present for pull requests.
    pub pull_request: Option<Value>,
}

impl FoundIssue {
    /// `owner/name`, from `repository_url`.
    pub fn repo(&self) -> String {
        let mut parts = self.repository_url.rsplit('/');
        let name = parts.next().unwrap_or_default();
        let owner = parts.next().unwrap_or_default();
        format!("{owner}/{name}")
    }
}

impl GithubClient {
    /// Open issues and pull requests carrying `label` within `scope` (a search qualifier
    /// such as `repo:acme/api` or `user:acme`: reconciliation never searches all of
    /// GitHub), for reconciliation: those the token sees, or those of every installation
    /// of the app.
    pub async fn open_with_label(
        &self,
        label: &str,
        scope: &str,
    ) -> Result<Vec<FoundIssue>, GithubError> {
        let clients = self.search_clients().await?;
        let mut all = Vec::new();
        for octo in &clients {
            all.extend(self.search(octo, label, scope).await?);
        }
        Ok(all)
    }

    async fn search(
        &self,
        octo: &Octocrab,
        label: &str,
        scope: &str,
    ) -> Result<Vec<FoundIssue>, GithubError> {
        #[derive(Deserialize)]
        struct Page {
            items: Vec<FoundIssue>,
        }
        let mut all = Vec::new();
        for page in 1..=10 {
            let query = format!("is:open label:\"{label}\" {scope}");
            let url = format!(
                "/search/issues?q={}&per_page=100&page={page}",
                urlencode(&query)
            );
            let found: Page = call(octo, http::Method::GET, &url, None).await?;
            let last = found.items.len() < 100;
            all.extend(found.items);
            if last {
                break;
            }
        }
        Ok(all)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn found_issues_name_their_repository() {
        let issue: FoundIssue = serde_json::from_value(json!({
            "number": 3, "title": "t", "body": null, "html_url": "h",
            "repository_url": "https://ghe.example/api/v3/repos/acme/app",
            "updated_at": "2026-11-30T00:00:00Z", "user": {"login": "ana"}, "labels": []
        }))
        .unwrap();
        assert_eq!(issue.repo(), "acme/app");
    }
}
