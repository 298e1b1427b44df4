//! A stateful fake of the GitHub REST endpoints Gatehouse calls, on loopback: issue
//! comments (list, create, edit) and issue search, with real response shapes, a record of
//! every call, and failures on demand (a 502 after storing a comment, rate limits); pull
//! requests (`pulls.rs`), check runs and job logs (`checks.rs`), review comments and
//! replies (`reviews.rs`); and signing people in with an OAuth App (`oauth.rs`).

mod checks;
pub mod oauth;
mod pulls;
mod reviews;

pub use checks::CheckRun;
pub use pulls::Pull;
pub use reviews::{NewReviewComment, Reply};

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, patch};
use serde_json::{Value, json};

/// The fake's state, shared with the test.
#[derive(Default)]
struct Inner {
    next_id: u64,
    /// id → (repo, number, body)
    comments: BTreeMap<u64, (String, u64, String)>,
    calls: Vec<String>,
    fail_creates: usize,
    fail_pull_creates: usize,
    /// Pull request creations store the pull request, then hang while this is set.
    hold_pull_creates: bool,
    rate_limits: usize,
    search: Vec<Value>,
    pulls: Vec<Pull>,
    /// Repositories that answer 404, as a deleted or inaccessible one does.
    missing: Vec<String>,
    /// `Authorization` of every call, beside `calls`.
    authorizations: Vec<String>,
    tokens_minted: usize,
    /// The `q` of every search, as asked.
    searches: Vec<String>,
    checks: checks::Checks,
    reviews: reviews::Reviews,
    /// Where pull requests' branches are read from (see [`FakeGithub::follow_git`]).
    git_root: Option<std::path::PathBuf>,
}

/// A running fake GitHub.
#[derive(Clone)]
pub struct FakeGithub {
    /// Its `api_url`, and its web address for OAuth.
    pub url: String,
    inner: Arc<Mutex<Inner>>,
    oauth: oauth::Shared,
}

type Shared = Arc<Mutex<Inner>>;

impl FakeGithub {
    /// Starts one on a free port; it stops with the test's runtime.
    pub async fn start() -> Self {
        let inner: Shared = Arc::default();
        let app = axum::Router::new()
            .route(
                "/repos/{owner}/{repo}/issues/{number}/comments",
                get(list_comments).post(create_comment),
            )
            .route(
                "/repos/{owner}/{repo}/issues/comments/{id}",
                patch(update_comment),
            )
            .route("/search/issues", get(search))
            .route("/repos/{owner}/{repo}/installation", get(installation))
            .route("/app/installations", get(installations))
            .route(
                "/app/installations/{id}/access_tokens",
                axum::routing::post(access_token),
            )
            .route("/repos/{owner}/{repo}", get(repository))
            .route(
                "/repos/{owner}/{repo}/pulls",
                get(pulls::list_pulls).post(pulls::create_pull),
            )
            .route(
                "/repos/{owner}/{repo}/pulls/{number}",
                get(pulls::get_pull).patch(pulls::update_pull),
            )
            .route(
                "/repos/{owner}/{repo}/pulls/{number}/comments",
                get(reviews::list_pull_comments),
            )
            .route(
                "/repos/{owner}/{repo}/pulls/{number}/reviews/{review}/comments",
                get(reviews::list_review_comments),
            )
            .route(
                "/repos/{owner}/{repo}/pulls/{number}/comments/{id}/replies",
                axum::routing::post(reviews::reply),
            )
            .route(
                "/repos/{owner}/{repo}/commits/{sha}/check-runs",
                get(checks::list_check_runs),
            )
            .route(
                "/repos/{owner}/{repo}/actions/jobs/{id}/logs",
                get(checks::job_logs),
            )
            .route("/_downloads/jobs/{id}/logs", get(checks::download_log))
            .with_state(inner.clone());
        let oauth = oauth::Shared::default();
        let url = crate::serve_fake(app.merge(oauth::routes(oauth.clone()))).await;
        Self { url, inner, oauth }
    }

    /// The next person to authorize the OAuth App is GitHub's `login`.
    pub fn authorizes_as(&self, login: &str) {
        oauth::authorizes_as(&self.oauth, login);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The comments on an issue, oldest first.
    pub fn comments(&self, repo: &str, number: u64) -> Vec<String> {
        self.lock()
            .comments
            .values()
            .filter(|(r, n, _)| r == repo && *n == number)
            .map(|(_, _, body)| body.clone())
            .collect()
    }

    /// The `Authorization` header of every call so far, in the order of [`Self::calls`].
    pub fn authorizations(&self) -> Vec<String> {
        self.lock().authorizations.clone()
    }

    /// Every call so far, as `METHOD /path`.
    pub fn calls(&self) -> Vec<String> {
        self.lock().calls.clone()
    }

    /// The next `n` comment creations store the comment but answer 502, as GitHub does
    /// when it fails after writing.
    pub fn fail_creates(&self, n: usize) {
        self.lock().fail_creates = n;
    }

    /// The next `n` pull request creations open the pull request but answer 502, as GitHub
    /// does when it fails after writing.
    pub fn fail_pull_creates(&self, n: usize) {
        self.lock().fail_pull_creates = n;
    }

    /// While `hold`, a pull request creation opens the pull request and then hangs, as a
    /// connection does when the process that made it is killed mid-request.
    pub fn hold_pull_creates(&self, hold: bool) {
        self.lock().hold_pull_creates = hold;
    }

    /// The next `n` requests answer 403 with `Retry-After: 1` (a secondary rate limit).
    pub fn rate_limit(&self, n: usize) {
        self.lock().rate_limits = n;
    }

    /// Makes a repository answer 404 from now on.
    pub fn remove_repository(&self, repo: &str) {
        self.lock().missing.push(repo.to_owned());
    }

    /// An issue that searches for its labels find.
    pub fn add_search_result(&self, issue: Value) {
        self.lock().search.push(issue);
    }

    /// The queries of every issue search so far.
    pub fn searches(&self) -> Vec<String> {
        self.lock().searches.clone()
    }
}

/// Records the call; answers a rate limit or a missing token instead when due.
fn enter(inner: &Shared, headers: &HeaderMap, call: String) -> Option<Response> {
    let mut state = inner.lock().unwrap_or_else(|p| p.into_inner());
    state.calls.push(call);
    let authorization = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    state.authorizations.push(authorization);
    if !headers.contains_key("authorization") {
        return Some(
            (
                StatusCode::UNAUTHORIZED,
                Json(json!({"message": "Requires authentication"})),
            )
                .into_response(),
        );
    }
    if state.rate_limits > 0 {
        state.rate_limits -= 1;
        return Some(
            (
                StatusCode::FORBIDDEN,
                [("retry-after", "1")],
                Json(json!({"message": "You have exceeded a secondary rate limit."})),
            )
                .into_response(),
        );
    }
    None
}

/// 404 for a repository the test removed.
fn missing(inner: &Shared, owner: &str, repo: &str) -> Option<Response> {
    let state = inner.lock().unwrap_or_else(|p| p.into_inner());
    state
        .missing
        .contains(&format!("{owner}/{repo}"))
        .then(|| (StatusCode::NOT_FOUND, Json(json!({"message": "Not Found"}))).into_response())
}

fn comment_json(id: u64, body: &str) -> Value {
    json!({
        "id": id,
        "node_id": format!("IC_{id}"),
        "url": format!("https://api.github.com/repos/x/y/issues/comments/{id}"),
        "html_url": format!("https://github.com/x/y/issues/1#issuecomment-{id}"),
        "body": body,
        "user": {"login": "gatehouse[bot]", "id": 1, "type": "Bot"},
        "created_at": "2026-11-30T12:00:00Z",
        "updated_at": "2026-11-30T12:00:00Z",
        "author_association": "NONE"
    })
}

async fn list_comments(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo, number)): Path<(String, String, u64)>,
    Query(query): Query<BTreeMap<String, String>>,
) -> Response {
    let path = format!("/repos/{owner}/{repo}/issues/{number}/comments");
    if let Some(refused) = enter(&inner, &headers, format!("GET {path}")) {
        return refused;
    }
    if let Some(gone) = missing(&inner, &owner, &repo) {
        return gone;
    }
    let page: usize = query.get("page").and_then(|p| p.parse().ok()).unwrap_or(1);
    let per_page: usize = query
        .get("per_page")
        .and_then(|p| p.parse().ok())
        .unwrap_or(30);
    let state = inner.lock().unwrap_or_else(|p| p.into_inner());
    let full = format!("{owner}/{repo}");
    let all: Vec<Value> = state
        .comments
        .iter()
        .filter(|(_, (r, n, _))| *r == full && *n == number)
        .map(|(id, (_, _, body))| comment_json(*id, body))
        .collect();
    let page: Vec<Value> = all
        .into_iter()
        .skip((page.max(1) - 1) * per_page)
        .take(per_page)
        .collect();
    Json(Value::Array(page)).into_response()
}

async fn create_comment(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo, number)): Path<(String, String, u64)>,
    Json(body): Json<Value>,
) -> Response {
    let path = format!("/repos/{owner}/{repo}/issues/{number}/comments");
    if let Some(refused) = enter(&inner, &headers, format!("POST {path}")) {
        return refused;
    }
    let Some(text) = body["body"].as_str() else {
        return (
            StatusCode::UNPROCESSABLE_ENTITY,
            Json(json!({"message": "body is missing"})),
        )
            .into_response();
    };
    let mut state = inner.lock().unwrap_or_else(|p| p.into_inner());
    state.next_id += 1;
    let id = state.next_id;
    state
        .comments
        .insert(id, (format!("{owner}/{repo}"), number, text.to_owned()));
    if state.fail_creates > 0 {
        state.fail_creates -= 1;
        return (
            StatusCode::BAD_GATEWAY,
            Json(json!({"message": "Server Error"})),
        )
            .into_response();
    }
    (StatusCode::CREATED, Json(comment_json(id, text))).into_response()
}

async fn update_comment(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo, id)): Path<(String, String, u64)>,
    Json(body): Json<Value>,
) -> Response {
    let path = format!("/repos/{owner}/{repo}/issues/comments/{id}");
    if let Some(refused) = enter(&inner, &headers, format!("PATCH {path}")) {
        return refused;
    }
    let mut state = inner.lock().unwrap_or_else(|p| p.into_inner());
    let Some(comment) = state.comments.get_mut(&id) else {
        return (StatusCode::NOT_FOUND, Json(json!({"message": "Not Found"}))).into_response();
    };
    comment.2 = body["body"].as_str().unwrap_or_default().to_owned();
    let text = comment.2.clone();
    Json(comment_json(id, &text)).into_response()
}

async fn search(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Query(query): Query<BTreeMap<String, String>>,
) -> Response {
    if let Some(refused) = enter(&inner, &headers, "GET /search/issues".into()) {
        return refused;
    }
    let q = query.get("q").cloned().unwrap_or_default();
    let mut state = inner.lock().unwrap_or_else(|p| p.into_inner());
    state.searches.push(q.clone());
    // `repo:` and `user:` qualifiers narrow the search as GitHub's do (either may match).
    let scopes: Vec<&str> = q
        .split_whitespace()
        .filter(|w| w.starts_with("repo:") || w.starts_with("user:"))
        .collect();
    let in_scope = |issue: &Value| {
        let url = issue["repository_url"].as_str().unwrap_or_default();
        let mut parts = url.rsplit('/');
        let name = parts.next().unwrap_or_default();
        let owner = parts.next().unwrap_or_default();
        scopes.is_empty()
            || scopes.iter().any(|s| {
                s.strip_prefix("repo:")
                    .is_some_and(|r| r.eq_ignore_ascii_case(&format!("{owner}/{name}")))
                    || s.strip_prefix("user:")
                        .is_some_and(|u| u.eq_ignore_ascii_case(owner))
            })
    };
    let items: Vec<Value> = state
        .search
        .iter()
        .filter(|issue| in_scope(issue))
        .filter(|issue| {
            issue["labels"].as_array().is_some_and(|labels| {
                labels.iter().any(|l| {
                    l["name"]
                        .as_str()
                        .is_some_and(|name| q.contains(&format!("label:\"{name}\"")))
                })
            })
        })
        .cloned()
        .collect();
    Json(json!({"total_count": items.len(), "incomplete_results": false, "items": items}))
        .into_response()
}

async fn repository(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo)): Path<(String, String)>,
) -> Response {
    if let Some(refused) = enter(&inner, &headers, format!("GET /repos/{owner}/{repo}")) {
        return refused;
    }
    Json(json!({
        "id": 1296269, "name": repo, "full_name": format!("{owner}/{repo}"),
        "private": false, "default_branch": "main"
    }))
    .into_response()
}

/// The app's installation on a repository's owner (one installation, id 42, for all).
async fn installation(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo)): Path<(String, String)>,
) -> Response {
    let call = format!("GET /repos/{owner}/{repo}/installation");
    if let Some(refused) = enter(&inner, &headers, call) {
        return refused;
    }
    Json(json!({"id": 42, "app_id": 12345, "account": {"login": owner}})).into_response()
}

async fn installations(State(inner): State<Shared>, headers: HeaderMap) -> Response {
    if let Some(refused) = enter(&inner, &headers, "GET /app/installations".into()) {
        return refused;
    }
    Json(json!([{"id": 42, "app_id": 12345, "account": {"login": "Codertocat"}}])).into_response()
}

/// Mints an installation token, valid for an hour, numbered so tests can tell them apart.
async fn access_token(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Response {
    let call = format!("POST /app/installations/{id}/access_tokens");
    if let Some(refused) = enter(&inner, &headers, call) {
        return refused;
    }
    let mut state = inner.lock().unwrap_or_else(|p| p.into_inner());
    state.tokens_minted += 1;
    let expires = (chrono::Utc::now() + chrono::Duration::hours(1)).to_rfc3339();
    (
        StatusCode::CREATED,
        Json(json!({
            "token": format!("ghs_installation_{id}_{}", state.tokens_minted),
            "expires_at": expires,
            "permissions": {"issues": "write", "contents": "write", "pull_requests": "write"},
            "repository_selection": "all"
        })),
    )
        .into_response()
}
