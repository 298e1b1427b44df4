//! The GitHub REST calls Gatehouse makes, through octocrab, against `api_url` (GitHub,
//! GitHub Enterprise Server, or a test's fake).
//!
//! Retries are done here rather than by octocrab's retry policy because that policy also
//! repeats a `POST` that failed with 5xx at once, which can create a comment twice; here a
//! comment is created by [`GithubClient::create_comment_once`], which looks for the
//! comment's marker before every attempt.

use std::time::Duration;

use http::{HeaderMap, StatusCode};
use octocrab::Octocrab;
use secrecy::SecretString;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use thiserror::Error;

/// Attempts per call before giving up (rate-limit waits included).
const ATTEMPTS: u32 = 5;
/// The longest wait for a rate limit Gatehouse sits through inside one call; longer waits
/// fail the call, and the caller tries again later.
const MAX_WAIT: Duration = Duration::from_secs(120);

/// Why a GitHub call failed.
#[derive(Debug, Error)]
pub enum GithubError {
    /// GitHub answered with an error status that retrying will not fix.
    #[error("GitHub answered {status}: {message}")]
    Api {
        /// The status.
        status: StatusCode,
        /// GitHub's message.
        message: String,
    },
    /// Still failing (5xx, rate limit, transport) after every attempt.
    #[error("GitHub is unavailable: {0}")]
    Unavailable(String),
    /// The configured `api_url` or token cannot be used.
    #[error("GitHub client: {0}")]
    Setup(String),
}

/// A comment as listed.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct IssueComment {
    /// Id.
    pub id: u64,
    /// Markdown.
    #[serde(default)]
    pub body: String,
}

/// An issue found by search (reconciliation).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct FoundIssue {
    /// Number.
    pub number: u64,
    /// Title.
    pub title: String,
    /// Body.
    pub body: Option<String>,
    /// Link.
    pub html_url: String,
    /// `https://api.../repos/owner/name`: the repository.
    pub repository_url: String,
    /// Last change.
    pub updated_at: String,
    /// Author.
    pub user: crate::User,
    /// Labels.
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

/// GitHub's REST API as one token.
#[derive(Clone)]
pub struct GithubClient {
    api: String,
    octo: Octocrab,
}

impl GithubClient {
    /// A client for `api_url` (e.g. `https://api.github.com`) with a token.
    pub fn new(api_url: &str, token: SecretString) -> Result<Self, GithubError> {
        let api = api_url.trim_end_matches('/').to_owned();
        let octo = Octocrab::builder()
            .base_uri(api.as_str())
            .map_err(|e| GithubError::Setup(format!("api_url `{api}`: {e}")))?
            .personal_token(token)
            .add_retry_config(octocrab::service::middleware::retry::RetryConfig::None)
            .set_connect_timeout(Some(Duration::from_secs(10)))
            .set_read_timeout(Some(Duration::from_secs(30)))
            .build()
            .map_err(|e| GithubError::Setup(e.to_string()))?;
        Ok(Self { api, octo })
    }

    /// Every comment on an issue, oldest first.
    pub async fn comments(
        &self,
        repo: &str,
        number: u64,
    ) -> Result<Vec<IssueComment>, GithubError> {
        let mut all = Vec::new();
        for page in 1.. {
            let url = format!(
                "{}/repos/{repo}/issues/{number}/comments?per_page=100&page={page}",
                self.api
            );
            let batch: Vec<IssueComment> = self.call(http::Method::GET, &url, None).await?;
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
            let url = format!("{}/repos/{repo}/issues/{number}/comments", self.api);
            let text = format!("{body}\n\n{marker}");
            match self
                .send(http::Method::POST, &url, Some(json!({ "body": text })))
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

    /// Replaces a comment's text (the marker is kept).
    pub async fn update_comment(
        &self,
        repo: &str,
        id: u64,
        marker: &str,
        body: &str,
    ) -> Result<(), GithubError> {
        let url = format!("{}/repos/{repo}/issues/comments/{id}", self.api);
        let text = format!("{body}\n\n{marker}");
        let _: Value = self
            .call(http::Method::PATCH, &url, Some(json!({ "body": text })))
            .await?;
        Ok(())
    }

    /// The repository's default branch.
    pub async fn default_branch(&self, repo: &str) -> Result<String, GithubError> {
        #[derive(Deserialize)]
        struct Repo {
            default_branch: String,
        }
        let url = format!("{}/repos/{repo}", self.api);
        let found: Repo = self.call(http::Method::GET, &url, None).await?;
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
            "{}/repos/{repo}/pulls?state=open&head={}",
            self.api,
            urlencode(&format!("{owner}:{head}"))
        );
        let open: Vec<Pull> = self.call(http::Method::GET, &find, None).await?;
        let fields = json!({ "title": title, "body": body });
        if let Some(pull) = open.first() {
            let url = format!("{}/repos/{repo}/pulls/{}", self.api, pull.number);
            let _: Value = self.call(http::Method::PATCH, &url, Some(fields)).await?;
            return Ok(pull.number);
        }
        let url = format!("{}/repos/{repo}/pulls", self.api);
        let create = json!({ "title": title, "body": body, "head": head, "base": base });
        let error = match self.send(http::Method::POST, &url, Some(create)).await {
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
            let open: Vec<Pull> = self.call(http::Method::GET, &find, None).await?;
            if let Some(pull) = open.first() {
                return Ok(pull.number);
            }
        }
        Err(error)
    }

    /// Open issues and pull requests carrying `label`, for reconciliation.
    pub async fn open_with_label(&self, label: &str) -> Result<Vec<FoundIssue>, GithubError> {
        #[derive(Deserialize)]
        struct Page {
            items: Vec<FoundIssue>,
        }
        let mut all = Vec::new();
        for page in 1..=10 {
            let query = format!("is:open label:\"{label}\"");
            let url = format!(
                "{}/search/issues?q={}&per_page=100&page={page}",
                self.api,
                urlencode(&query)
            );
            let found: Page = self.call(http::Method::GET, &url, None).await?;
            let last = found.items.len() < 100;
            all.extend(found.items);
            if last {
                break;
            }
        }
        Ok(all)
    }

    /// An idempotent call (GET, PATCH), retried on 5xx, transport errors and rate limits.
    async fn call<T: DeserializeOwned>(
        &self,
        method: http::Method,
        url: &str,
        body: Option<Value>,
    ) -> Result<T, GithubError> {
        let mut last = String::new();
        for attempt in 0..ATTEMPTS {
            match self.send(method.clone(), url, body.clone()).await {
                Ok(text) => return parse(&text),
                Err(GithubError::Unavailable(why)) => {
                    last = why;
                    tokio::time::sleep(backoff(attempt)).await;
                }
                Err(other) => return Err(other),
            }
        }
        Err(GithubError::Unavailable(last))
    }

    /// One request. Rate limits are waited out here (then `Unavailable` so the caller
    /// tries again); 5xx and transport errors are `Unavailable`; other errors are final.
    async fn send(
        &self,
        method: http::Method,
        url: &str,
        body: Option<Value>,
    ) -> Result<String, GithubError> {
        let response = match method {
            http::Method::POST => self.octo._post(url, body.as_ref()).await,
            http::Method::PATCH => self.octo._patch(url, body.as_ref()).await,
            _ => self.octo._get(url).await,
        }
        .map_err(|e| GithubError::Unavailable(e.to_string()))?;
        let status = response.status();
        let wait = rate_limit_wait(status, response.headers(), now_epoch());
        let text = self
            .octo
            .body_to_string(response)
            .await
            .map_err(|e| GithubError::Unavailable(e.to_string()))?;
        if status.is_success() {
            return Ok(text);
        }
        if let Some(wait) = wait {
            if wait > MAX_WAIT {
                return Err(GithubError::Unavailable(format!(
                    "rate limited for {}s",
                    wait.as_secs()
                )));
            }
            tracing::warn!(%status, wait_s = wait.as_secs(), %url, "GitHub rate limit; waiting");
            tokio::time::sleep(wait).await;
            return Err(GithubError::Unavailable(format!("rate limited ({status})")));
        }
        let message = serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| v["message"].as_str().map(str::to_owned))
            .unwrap_or(text);
        if status.is_server_error() {
            return Err(GithubError::Unavailable(format!("{status}: {message}")));
        }
        Err(GithubError::Api { status, message })
    }
}

/// How long a rate-limited response asks to wait: `Retry-After` (secondary limits), or
/// until `X-RateLimit-Reset` when `X-RateLimit-Remaining` is 0 (primary limit), or a
/// minute for a 429 without either. `None` when the response is not a rate limit.
pub fn rate_limit_wait(
    status: StatusCode,
    headers: &HeaderMap,
    now_epoch: i64,
) -> Option<Duration> {
    if status != StatusCode::TOO_MANY_REQUESTS && status != StatusCode::FORBIDDEN {
        return None;
    }
    let number = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<i64>().ok())
    };
    if let Some(secs) = number("retry-after") {
        return Some(Duration::from_secs(secs.max(0).unsigned_abs()));
    }
    if number("x-ratelimit-remaining") == Some(0)
        && let Some(reset) = number("x-ratelimit-reset")
    {
        return Some(Duration::from_secs(
            (reset - now_epoch).max(1).unsigned_abs(),
        ));
    }
    (status == StatusCode::TOO_MANY_REQUESTS).then_some(Duration::from_secs(60))
}

fn backoff(attempt: u32) -> Duration {
    Duration::from_millis(200 * 2u64.pow(attempt.min(6)))
}

fn now_epoch() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

fn parse<T: DeserializeOwned>(text: &str) -> Result<T, GithubError> {
    serde_json::from_str(text).map_err(|e| GithubError::Api {
        status: StatusCode::OK,
        message: format!("unexpected response ({e}): {text}"),
    })
}

fn urlencode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, value.parse().unwrap());
        }
        map
    }

    #[test]
    fn rate_limits_name_their_wait() {
        let forbidden = StatusCode::FORBIDDEN;
        assert_eq!(
            rate_limit_wait(forbidden, &headers(&[("retry-after", "30")]), 0),
            Some(Duration::from_secs(30)),
            "secondary limit"
        );
        assert_eq!(
            rate_limit_wait(
                forbidden,
                &headers(&[
                    ("x-ratelimit-remaining", "0"),
                    ("x-ratelimit-reset", "1090")
                ]),
                1000
            ),
            Some(Duration::from_secs(90)),
            "primary limit: until the reset"
        );
        assert_eq!(
            rate_limit_wait(StatusCode::TOO_MANY_REQUESTS, &HeaderMap::new(), 0),
            Some(Duration::from_secs(60))
        );
        assert_eq!(
            rate_limit_wait(forbidden, &headers(&[("x-ratelimit-remaining", "12")]), 0),
            None,
            "a plain 403 is a permission problem"
        );
        assert_eq!(
            rate_limit_wait(StatusCode::BAD_GATEWAY, &HeaderMap::new(), 0),
            None
        );
    }

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
