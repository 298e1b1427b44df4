//! A review's line comments, and answering in their threads.

use serde::Deserialize;
use serde_json::json;

use crate::transport::{ATTEMPTS, backoff, call, parse, send};
use crate::{GithubClient, GithubError, User};

/// A comment on a line of a pull request's diff, as the REST API lists it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ReviewComment {
    /// Id (to reply in its thread).
    pub id: u64,
    /// The file, relative to the repository's root.
    pub path: String,
    /// The line in the current diff; `None` once outdated.
    pub line: Option<u64>,
    /// Markdown.
    pub body: String,
    /// Author.
    pub user: User,
    pub html_url: String,
    /// The comment it answers, in a thread.
    #[serde(default)]
    pub in_reply_to_id: Option<u64>,
}

/// Pages of a pull request's review comments read looking for a reply already made: a
/// pull request with more than this many hundred comments gets a reply again.
const REPLY_PAGES: u32 = 10;

impl GithubClient {
    /// The line comments of one review (a review's webhook carries only its body), at
    /// most the first 100.
    pub async fn review_comments(
        &self,
        repo: &str,
        pull: u64,
        review_id: u64,
    ) -> Result<Vec<ReviewComment>, GithubError> {
        let octo = self.client_for(repo).await?;
        let url = format!("/repos/{repo}/pulls/{pull}/reviews/{review_id}/comments?per_page=100");
        call(&octo, http::Method::GET, &url, None).await
    }

    /// Answers in the thread of review comment `comment_id`; returns the reply's id. Sent
    /// once: a reply is not repeated after an error, since GitHub may have stored it (see
    /// [`Self::reply_to_review_comment_once`]).
    pub async fn reply_to_review_comment(
        &self,
        repo: &str,
        pull: u64,
        comment_id: u64,
        body: &str,
    ) -> Result<u64, GithubError> {
        let octo = self.client_for(repo).await?;
        let url = format!("/repos/{repo}/pulls/{pull}/comments/{comment_id}/replies");
        let created = send(
            &octo,
            http::Method::POST,
            &url,
            Some(json!({ "body": body })),
        )
        .await?;
        Ok(parse::<ReviewComment>(&created)?.id)
    }

    /// [`Self::reply_to_review_comment`] with `marker` (see [`crate::comment_marker`])
    /// last, retried, and made at most once: a reply carrying the marker already, made by
    /// an attempt that failed after GitHub stored it or before a restart, is found and its
    /// id returned instead.
    pub async fn reply_to_review_comment_once(
        &self,
        repo: &str,
        pull: u64,
        comment_id: u64,
        marker: &str,
        body: &str,
    ) -> Result<u64, GithubError> {
        let text = format!("{body}\n\n{marker}");
        let mut last = String::new();
        for attempt in 0..ATTEMPTS {
            if let Some(found) = self.find_review_comment(repo, pull, marker).await? {
                return Ok(found);
            }
            match self
                .reply_to_review_comment(repo, pull, comment_id, &text)
                .await
            {
                Err(GithubError::Unavailable(why)) => {
                    last = why;
                    tokio::time::sleep(backoff(attempt)).await;
                }
                done => return done,
            }
        }
        Err(GithubError::Unavailable(last))
    }

    /// The review comment on `pull` whose body carries `marker`.
    async fn find_review_comment(
        &self,
        repo: &str,
        pull: u64,
        marker: &str,
    ) -> Result<Option<u64>, GithubError> {
        let octo = self.client_for(repo).await?;
        for page in 1..=REPLY_PAGES {
            let url = format!("/repos/{repo}/pulls/{pull}/comments?per_page=100&page={page}");
            let batch: Vec<ReviewComment> = call(&octo, http::Method::GET, &url, None).await?;
            if let Some(found) = batch.iter().find(|c| c.body.contains(marker)) {
                return Ok(Some(found.id));
            }
            if batch.len() < 100 {
                break;
            }
        }
        Ok(None)
    }
}
