//! The GitHub REST calls Gatehouse makes, through octocrab, against `api_url` (GitHub,
//! GitHub Enterprise Server, or a test's fake). Routes are given relative to `api_url`:
//! octocrab joins them to it (Enterprise Server's `/api/v3` included) and only then adds
//! credentials, which it never sends to another host.
//!
//! Retries are done here rather than by octocrab's retry policy because that policy also
//! repeats a `POST` that failed with 5xx at once, which can create a comment twice; here a
//! comment is created by [`GithubClient::create_comment_once`], which looks for the
//! comment's marker before every attempt.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{HeaderMap, StatusCode};
use octocrab::Octocrab;
use secrecy::{ExposeSecret, SecretString};
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
    pub id: u64,
    /// Markdown.
    #[serde(default)]
    pub body: String,
}

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

/// GitHub's REST API, as a token or as a GitHub App acting through the installation that
/// covers each repository.
#[derive(Clone)]
pub struct GithubClient {
    auth: Auth,
}

#[derive(Clone)]
enum Auth {
    /// One token for everything (its own for git too).
    Token { octo: Octocrab, token: SecretString },
    /// An app (JWT) client, and installation clients by repository owner: octocrab mints
    /// and refreshes each installation's token.
    App {
        app: Octocrab,
        installations: Arc<Mutex<HashMap<String, Octocrab>>>,
    },
}

impl GithubClient {
    /// A client for `api_url` (e.g. `https://api.github.com`) with a token.
    pub fn new(api_url: &str, token: SecretString) -> Result<Self, GithubError> {
        let api = api_url.trim_end_matches('/').to_owned();
        let octo = builder(&api)?
            .personal_token(token.clone())
            .build()
            .map_err(|e| GithubError::Setup(e.to_string()))?;
        Ok(Self {
            auth: Auth::Token { octo, token },
        })
    }

    /// A client acting as GitHub App `app_id` with its private key (PEM).
    pub fn app(
        api_url: &str,
        app_id: u64,
        private_key: &SecretString,
    ) -> Result<Self, GithubError> {
        let api = api_url.trim_end_matches('/').to_owned();
        let key = octocrab::EncodingKey::from_rsa_pem(private_key.expose_secret().as_bytes())
            .map_err(|e| GithubError::Setup(format!("github.private_key: {e}")))?;
        let app = builder(&api)?
            .app(octocrab::models::AppId(app_id), key)
            .build()
            .map_err(|e| GithubError::Setup(e.to_string()))?;
        Ok(Self {
            auth: Auth::App {
                app,
                installations: Arc::default(),
            },
        })
    }

    /// The client that may act on `repo`: the token's, or the app's installation on the
    /// repository's owner (looked up once per owner).
    async fn client_for(&self, repo: &str) -> Result<Octocrab, GithubError> {
        let (app, installations) = match &self.auth {
            Auth::Token { octo, .. } => return Ok(octo.clone()),
            Auth::App { app, installations } => (app, installations),
        };
        let owner = repo.split('/').next().unwrap_or_default().to_owned();
        if let Some(found) = lock(installations).get(&owner) {
            return Ok(found.clone());
        }
        #[derive(Deserialize)]
        struct Installation {
            id: u64,
        }
        let url = format!("/repos/{repo}/installation");
        let found: Installation = self.call(app, http::Method::GET, &url, None).await?;
        let client = app
            .installation(octocrab::models::InstallationId(found.id))
            .map_err(|e| GithubError::Setup(e.to_string()))?;
        lock(installations).insert(owner, client.clone());
        Ok(client)
    }

    /// A token git can push `repo` with: the configured token, or a fresh installation
    /// token (valid for at least a few minutes).
    pub async fn git_token(&self, repo: &str) -> Result<SecretString, GithubError> {
        match &self.auth {
            Auth::Token { token, .. } => Ok(token.clone()),
            Auth::App { .. } => self
                .client_for(repo)
                .await?
                .installation_token_with_buffer(chrono::Duration::minutes(5))
                .await
                .map_err(|e| GithubError::Unavailable(e.to_string())),
        }
    }

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
            let batch: Vec<IssueComment> = self.call(&octo, http::Method::GET, &url, None).await?;
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
            match self
                .send(
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

    /// Replaces a comment's text (the marker is kept).
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
        let _: Value = self
            .call(
                &octo,
                http::Method::PATCH,
                &url,
                Some(json!({ "body": text })),
            )
            .await?;
        Ok(())
    }

    /// The repository's default branch.
    pub async fn default_branch(&self, repo: &str) -> Result<String, GithubError> {
        #[derive(Deserialize)]
        struct Repo {
            default_branch: String,
        }
        let url = format!("/repos/{repo}");
        let octo = self.client_for(repo).await?;
        let found: Repo = self.call(&octo, http::Method::GET, &url, None).await?;
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
        let open: Vec<Pull> = self.call(&octo, http::Method::GET, &find, None).await?;
        let fields = json!({ "title": title, "body": body });
        if let Some(pull) = open.first() {
            let url = format!("/repos/{repo}/pulls/{}", pull.number);
            let _: Value = self
                .call(&octo, http::Method::PATCH, &url, Some(fields))
                .await?;
            return Ok(pull.number);
        }
        let url = format!("/repos/{repo}/pulls");
        let create = json!({ "title": title, "body": body, "head": head, "base": base });
        let error = match self
            .send(&octo, http::Method::POST, &url, Some(create))
            .await
        {
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
            let open: Vec<Pull> = self.call(&octo, http::Method::GET, &find, None).await?;
            if let Some(pull) = open.first() {
                return Ok(pull.number);
            }
        }
        Err(error)
    }

    /// Open issues and pull requests carrying `label` within `scope` (a search qualifier
    /// such as `repo:acme/api` or `user:acme`: reconciliation never searches all of
    /// GitHub), for reconciliation: those the token sees, or those of every installation
    /// of the app.
    pub async fn open_with_label(
        &self,
        label: &str,
        scope: &str,
    ) -> Result<Vec<FoundIssue>, GithubError> {
        let clients = match &self.auth {
            Auth::Token { octo, .. } => vec![octo.clone()],
            Auth::App { app, .. } => {
                #[derive(Deserialize)]
                struct Installation {
                    id: u64,
                }
                let url = "/app/installations?per_page=100";
                let found: Vec<Installation> = self.call(app, http::Method::GET, url, None).await?;
                found
                    .into_iter()
                    .map(|i| app.installation(octocrab::models::InstallationId(i.id)))
                    .collect::<Result<_, _>>()
                    .map_err(|e| GithubError::Setup(e.to_string()))?
            }
        };
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
            let found: Page = self.call(octo, http::Method::GET, &url, None).await?;
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
        octo: &Octocrab,
        method: http::Method,
        url: &str,
        body: Option<Value>,
    ) -> Result<T, GithubError> {
        let mut last = String::new();
        for attempt in 0..ATTEMPTS {
            match self.send(octo, method.clone(), url, body.clone()).await {
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
        octo: &Octocrab,
        method: http::Method,
        url: &str,
        body: Option<Value>,
    ) -> Result<String, GithubError> {
        let response = match method {
            http::Method::POST => octo._post(url, body.as_ref()).await,
            http::Method::PATCH => octo._patch(url, body.as_ref()).await,
            _ => octo._get(url).await,
        }
        .map_err(|e| GithubError::Unavailable(e.to_string()))?;
        let status = response.status();
        let wait = rate_limit_wait(status, response.headers(), now_epoch());
        let text = octo
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

/// An octocrab builder for `api` without octocrab's own retries (see the module docs).
fn builder(
    api: &str,
) -> Result<
    octocrab::OctocrabBuilder<
        octocrab::NoSvc,
        octocrab::DefaultOctocrabBuilderConfig,
        octocrab::NoAuth,
        octocrab::NotLayerReady,
    >,
    GithubError,
> {
    Ok(Octocrab::builder()
        .base_uri(api)
        .map_err(|e| GithubError::Setup(format!("api_url `{api}`: {e}")))?
        .add_retry_config(octocrab::service::middleware::retry::RetryConfig::None)
        .set_connect_timeout(Some(Duration::from_secs(10)))
        .set_read_timeout(Some(Duration::from_secs(30))))
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
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
