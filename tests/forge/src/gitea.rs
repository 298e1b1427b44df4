//! A stateful fake of the Gitea (Forgejo) REST endpoints Gatehouse calls (`/api/v1`), on
//! loopback: a repository (its default branch), and pull requests opened, listed page by
//! page, and edited, in Gitea's response shapes. The token is read from `Authorization:
//! token …` (401 without the right one); a second open pull request from the same head
//! into the same base is refused with 409, as Gitea does; an edit answers 201, as Gitea's
//! does.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};

use crate::requests::{Request, Shared, lock};

/// A running fake Gitea.
#[derive(Clone)]
pub struct FakeGitea {
    /// Its web address; the API is under `/api/v1`.
    pub url: String,
    inner: Shared,
}

#[derive(Clone)]
struct App {
    inner: Shared,
    token: String,
    url: String,
}

impl FakeGitea {
    /// Starts one taking `token`, on a free port; it stops with the test's runtime.
    pub async fn start(token: &str) -> Self {
        let inner: Shared = Shared::default();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        let app = App {
            inner: inner.clone(),
            token: token.to_owned(),
            url: url.clone(),
        };
        let router = axum::Router::new()
            .route("/api/v1/repos/{owner}/{repo}", get(repository))
            .route("/api/v1/repos/{owner}/{repo}/pulls", get(list).post(create))
            .route(
                "/api/v1/repos/{owner}/{repo}/pulls/{index}",
                get(show).patch(edit),
            )
            .with_state(app);
        tokio::spawn(async move { axum::serve(listener, router).await });
        Self { url, inner }
    }

    /// `url` of its API: what `[forges.NAME] api_url` names.
    pub fn api_url(&self) -> String {
        format!("{}/api/v1", self.url)
    }

    /// The pull requests opened so far.
    pub fn pulls(&self) -> Vec<Request> {
        lock(&self.inner).requests.clone()
    }

    /// Every call so far, as `METHOD /path?query`.
    pub fn calls(&self) -> Vec<String> {
        lock(&self.inner).calls.clone()
    }

    /// The `Authorization` of every call, in the order of [`Self::calls`].
    pub fn tokens(&self) -> Vec<String> {
        lock(&self.inner).tokens.clone()
    }
}

/// Records the call; 401 unless it carries the token.
fn enter(app: &App, headers: &HeaderMap, call: String) -> Option<Response> {
    let mut state = lock(&app.inner);
    state.calls.push(call);
    let authorization = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    state.tokens.push(authorization.clone());
    (authorization != format!("token {}", app.token)).then(|| {
        (
            StatusCode::UNAUTHORIZED,
            Json(
                json!({"message": "token is required", "url": format!("{}/api/swagger", app.url)}),
            ),
        )
            .into_response()
    })
}

fn branch(app: &App, project: &str, name: &str) -> Value {
    json!({
        "label": name,
        "ref": name,
        "sha": "",
        "repo_id": 1,
        "repo": {"id": 1, "full_name": project, "html_url": format!("{}/{project}", app.url)},
    })
}

/// A pull request as Gitea's API shows one.
fn shown(app: &App, request: &Request) -> Value {
    let html = format!("{}/{}/pulls/{}", app.url, request.project, request.number);
    json!({
        "id": 1000 + request.number,
        "url": html,
        "number": request.number,
        "user": {"id": 1, "login": "gatehouse", "full_name": "Gatehouse"},
        "title": request.title,
        "body": request.body,
        "labels": [],
        "milestone": null,
        "assignee": null,
        "assignees": null,
        "state": request.state,
        "is_locked": false,
        "comments": 0,
        "html_url": html,
        "diff_url": format!("{html}.diff"),
        "patch_url": format!("{html}.patch"),
        "mergeable": true,
        "merged": false,
        "merged_at": null,
        "merge_commit_sha": null,
        "merged_by": null,
        "allow_maintainer_edit": false,
        "base": branch(app, &request.project, &request.target),
        "head": branch(app, &request.project, &request.source),
        "merge_base": "",
        "due_date": null,
        "created_at": "2026-12-01T12:00:00Z",
        "updated_at": "2026-12-01T12:00:00Z",
        "closed_at": null,
        "draft": request.title.starts_with("WIP:"),
    })
}

fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        Json(json!({"errors": ["pull request does not exist"], "message": "The target couldn't be found."})),
    )
        .into_response()
}

async fn repository(
    State(app): State<App>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    Path((owner, repo)): Path<(String, String)>,
) -> Response {
    if let Some(refused) = enter(&app, &headers, format!("{method} {uri}")) {
        return refused;
    }
    Json(json!({
        "id": 1,
        "owner": {"id": 1, "login": owner},
        "name": repo,
        "full_name": format!("{owner}/{repo}"),
        "private": true,
        "default_branch": "main",
        "html_url": format!("{}/{owner}/{repo}", app.url),
        "clone_url": format!("{}/{owner}/{repo}.git", app.url),
    }))
    .into_response()
}

async fn list(
    State(app): State<App>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    Path((owner, repo)): Path<(String, String)>,
    Query(query): Query<BTreeMap<String, String>>,
) -> Response {
    let at = format!("{method} {uri}");
    if let Some(refused) = enter(&app, &headers, at) {
        return refused;
    }
    let project = format!("{owner}/{repo}");
    let page: usize = query
        .get("page")
        .and_then(|p| p.parse().ok())
        .unwrap_or(1)
        .max(1);
    let limit: usize = query
        .get("limit")
        .and_then(|p| p.parse().ok())
        .unwrap_or(30)
        .clamp(1, 50);
    let state = lock(&app.inner);
    let found: Vec<Value> = state
        .requests
        .iter()
        .filter(|r| r.project == project)
        .filter(|r| {
            query
                .get("state")
                .is_none_or(|s| s == "all" || *s == r.state)
        })
        .rev()
        .skip((page - 1) * limit)
        .take(limit)
        .map(|r| shown(&app, r))
        .collect();
    Json(Value::Array(found)).into_response()
}

async fn show(
    State(app): State<App>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    Path((owner, repo, index)): Path<(String, String, u64)>,
) -> Response {
    let at = format!("{method} {uri}");
    if let Some(refused) = enter(&app, &headers, at) {
        return refused;
    }
    let project = format!("{owner}/{repo}");
    let state = lock(&app.inner);
    match state
        .requests
        .iter()
        .find(|r| r.project == project && r.number == index)
    {
        Some(found) => Json(shown(&app, found)).into_response(),
        None => not_found(),
    }
}

async fn create(
    State(app): State<App>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    Path((owner, repo)): Path<(String, String)>,
    Json(body): Json<Value>,
) -> Response {
    if let Some(refused) = enter(&app, &headers, format!("{method} {uri}")) {
        return refused;
    }
    let field = |name: &str| {
        body.get(name)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let (head, base, title) = (field("head"), field("base"), field("title"));
    if head.is_empty() || base.is_empty() || title.is_empty() {
        return (
            StatusCode::UNPROCESSABLE_ENTITY,
            Json(json!({"message": "[Head]: Required; [Base]: Required; [Title]: Required"})),
        )
            .into_response();
    }
    let project = format!("{owner}/{repo}");
    let mut state = lock(&app.inner);
    if let Some(open) = state
        .requests
        .iter()
        .find(|r| r.project == project && r.source == head && r.target == base && r.state == "open")
    {
        return (
            StatusCode::CONFLICT,
            Json(json!({
                "message": format!(
                    "pull request already exists for these targets [id: {}, issue_id: {}, head_repo_id: 1, base_repo_id: 1, head_branch: {head}, base_branch: {base}]",
                    1000 + open.number, open.number
                ),
                "url": format!("{}/api/swagger", app.url),
            })),
        )
            .into_response();
    }
    let number = state
        .requests
        .iter()
        .filter(|r| r.project == project)
        .count() as u64
        + 1;
    let request = Request {
        project,
        number,
        source: head,
        target: base,
        title,
        body: field("body"),
        state: "open".into(),
    };
    let answer = shown(&app, &request);
    state.requests.push(request);
    (StatusCode::CREATED, Json(answer)).into_response()
}

async fn edit(
    State(app): State<App>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    Path((owner, repo, index)): Path<(String, String, u64)>,
    Json(body): Json<Value>,
) -> Response {
    let at = format!("{method} {uri}");
    if let Some(refused) = enter(&app, &headers, at) {
        return refused;
    }
    let project = format!("{owner}/{repo}");
    let mut state = lock(&app.inner);
    let Some(found) = state
        .requests
        .iter_mut()
        .find(|r| r.project == project && r.number == index)
    else {
        return not_found();
    };
    if let Some(title) = body.get("title").and_then(Value::as_str) {
        found.title = title.to_owned();
    }
    if let Some(text) = body.get("body").and_then(Value::as_str) {
        found.body = text.to_owned();
    }
    let found = found.clone();
    (StatusCode::CREATED, Json(shown(&app, &found))).into_response()
}
