//! Issue comments: listing them, and creating one exactly once.

use serde::Deserialize;
use serde_json::{Value, json};

use crate::transport::{ATTEMPTS, backoff, call, parse, send};
use crate::{GithubClient, GithubError};

/// A comment as listed.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct IssueComment {
    pub id: u64,
    /// Markdown.
    #[serde(default)]
    pub body: String,
}

/// What starts the invisible last line of every comment Gatehouse posts.
const MARKER_START: &str = "<!-- gatehouse:";

/// The marker of the comment Gatehouse keys `key`: an HTML comment, invisible on GitHub,
/// by which a comment is found again and known as Gatehouse's own.
pub fn comment_marker(key: &str) -> String {
    format!("{MARKER_START}{key} -->")
}

/// Whether `body` ends with a Gatehouse marker, as every comment Gatehouse posts does
/// (whatever account posted it). Someone else who ends a comment so only makes it one
/// Gatehouse does not act on.
pub fn is_gatehouse_comment(body: &str) -> bool {
    body.trim_end().lines().next_back().is_some_and(|last| {
        last.trim().starts_with(MARKER_START) && last.trim_end().ends_with("-->")
    })
}

impl GithubClient {
    /// Every comment on an issue, oldest first.
    pub async fn comments(
        &self,
        repo: &str,
        number: u64,
    ) -> Result<Vec<IssueComment>, GithubError> {
        let octo = self.client_for(repo).await?;
        let mut all = Vec::new();
        for page in 1.. {
            let url = format!("/repos/{repo}/issues/{number}/comments?per_page=100&page={page}");
            let batch: Vec<IssueComment> = call(&octo, http::Method::GET, &url, None).await?;
            let last = batch.len() < 100;
            all.extend(batch);
            if last {
                break;
            }
        }
        Ok(all)
    }

    /// Creates a comment carrying `marker` (an HTML comment, invisible on GitHub) unless one
    /// exists already: a create that failed after GitHub stored it, or a restart between
    /// creating and recording, is found instead of repeated.
    pub async fn create_comment_once(
        &self,
        repo: &str,
        number: u64,
        marker: &str,
        body: &str,
    ) -> Result<u64, GithubError> {
        let mut last = String::new();
        for attempt in 0..ATTEMPTS {
            if let Some(found) = self
                .comments(repo, number)
                .await?
                .into_iter()
                .find(|c| c.body.contains(marker))
            {
                return Ok(found.id);
            }
            let url = format!("/repos/{repo}/issues/{number}/comments");
            let text = format!("{body}\n\n{marker}");
            let octo = self.client_for(repo).await?;
            match send(
                &octo,
                http::Method::POST,
                &url,
                Some(json!({ "body": text })),
            )
            .await
            {
                Ok(created) => {
                    let created: IssueComment = parse(&created)?;
                    return Ok(created.id);
                }
                Err(GithubError::Unavailable(why)) => {
                    last = why;
                    tokio::time::sleep(backoff(attempt)).await;
                }
                Err(other) => return Err(other),
            }
        }
        Err(GithubError::Unavailable(last))
    }

    /// Replaces a comment's text (the marker is kept last).
    pub async fn update_comment(
        &self,
        repo: &str,
        id: u64,
        marker: &str,
        body: &str,
    ) -> Result<(), GithubError> {
        let url = format!("/repos/{repo}/issues/comments/{id}");
        let text = format!("{body}\n\n{marker}");
        let octo = self.client_for(repo).await?;
        let _: Value = call(
            &octo,
            http::Method::PATCH,
            &url,
            Some(json!({ "body": text })),
        )
        .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_comment_is_gatehouses_own_by_its_last_line() {
        let marker = comment_marker("status:acme/api#4");
        assert!(is_gatehouse_comment(&format!(
            "Run started\n/gatehouse run deploy\n\n{marker}"
        )));
        assert!(is_gatehouse_comment(&format!("{marker}\r\n")));
        assert!(!is_gatehouse_comment(&format!(
            "{marker}\n/gatehouse run deploy"
        )));
        assert!(!is_gatehouse_comment("/gatehouse run deploy"));
        assert!(!is_gatehouse_comment("<!-- mine -->"));
    }
}
