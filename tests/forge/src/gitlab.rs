//! A stateful fake of the GitLab REST endpoints Gatehouse calls (`/api/v4`), on loopback:
//! a project (its default branch), and merge requests opened, listed by source branch and
//! state, and updated, in GitLab's response shapes. A project is named by its path,
//! url-encoded as one segment, as GitLab takes it; the token is read from `PRIVATE-TOKEN`
//! (401 without the right one); a second open merge request from the same source branch
//! into the same target is refused with 409, as GitLab does.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};

use crate::requests::{Request, Shared, lock};

/// A running fake GitLab.
#[derive(Clone)]
pub struct FakeGitlab {
    /// Its web address; the API is under `/api/v4`.
    pub url: String,
    inner: Shared,
}

#[derive(Clone)]
struct App {
    inner: Shared,
    token: String,
    url: String,
}

impl FakeGitlab {
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
            .route("/api/v4/projects/{id}", get(project))
            .route(
                "/api/v4/projects/{id}/merge_requests",
                get(list).post(create),
            )
            .route(
                "/api/v4/projects/{id}/merge_requests/{iid}",
                get(show).put(update),
            )
            .with_state(app);
        tokio::spawn(async move { axum::serve(listener, router).await });
        Self { url, inner }
    }

    /// `url` of its API: what `[forges.NAME] api_url` names.
    pub fn api_url(&self) -> String {
        format!("{}/api/v4", self.url)
    }

    /// The merge requests opened so far.
    pub fn merge_requests(&self) -> Vec<Request> {
        lock(&self.inner).requests.clone()
    }

    /// Every call so far, as `METHOD /path?query`.
    pub fn calls(&self) -> Vec<String> {
        lock(&self.inner).calls.clone()
    }

    /// The `PRIVATE-TOKEN` of every call, in the order of [`Self::calls`].
    pub fn tokens(&self) -> Vec<String> {
        lock(&self.inner).tokens.clone()
    }
}

/// Records the call; 401 unless it carries the token.
fn enter(app: &App, headers: &HeaderMap, call: String) -> Option<Response> {
    let mut state = lock(&app.inner);
    state.calls.push(call);
    let token = headers
        .get("private-token")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    state.tokens.push(token.clone());
    (token != app.token).then(|| {
        (
            StatusCode::UNAUTHORIZED,
            Json(json!({"message": "401 Unauthorized"})),
        )
            .into_response()
    })
}

fn not_found(what: &str) -> Response {
    (
        StatusCode::NOT_FOUND,
        Json(json!({"message": format!("404 {what} Not Found")})),
    )
        .into_response()
}

/// A merge request as GitLab's API shows one.
fn shown(app: &App, request: &Request) -> Value {
    json!({
        "id": 1000 + request.number,
        "iid": request.number,
        "project_id": 1,
        "title": request.title,
        "description": request.body,
        "state": request.state,
        "created_at": "2026-12-01T12:00:00.000Z",
        "updated_at": "2026-12-01T12:00:00.000Z",
        "target_branch": request.target,
        "source_branch": request.source,
        "source_project_id": 1,
        "target_project_id": 1,
        "draft": request.title.starts_with("Draft:"),
        "work_in_progress": request.title.starts_with("Draft:"),
        "merge_status": "can_be_merged",
        "detailed_merge_status": "mergeable",
        "sha": "",
        "author": {"id": 1, "username": "gatehouse", "name": "Gatehouse", "state": "active"},
        "references": {"short": format!("!{}", request.number), "full": format!("{}!{}", request.project, request.number)},
        "web_url": format!("{}/{}/-/merge_requests/{}", app.url, request.project, request.number),
    })
}

async fn project(
    State(app): State<App>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    if let Some(refused) = enter(&app, &headers, format!("{method} {uri}")) {
        return refused;
    }
    let name = id.rsplit('/').next().unwrap_or(&id).to_owned();
    Json(json!({
        "id": 1,
        "name": name,
        "path": name,
        "path_with_namespace": id,
        "default_branch": "main",
        "visibility": "private",
        "web_url": format!("{}/{id}", app.url),
        "http_url_to_repo": format!("{}/{id}.git", app.url),
    }))
    .into_response()
}

async fn list(
    State(app): State<App>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(query): Query<BTreeMap<String, String>>,
) -> Response {
    let at = format!("{method} {uri}");
    if let Some(refused) = enter(&app, &headers, at) {
        return refused;
    }
    let state = lock(&app.inner);
    let found: Vec<Value> = state
        .requests
        .iter()
        .filter(|r| r.project == id)
        .filter(|r| {
            query
                .get("state")
                .is_none_or(|s| s == "all" || *s == r.state)
        })
        .filter(|r| query.get("source_branch").is_none_or(|b| *b == r.source))
        .rev()
        .map(|r| shown(&app, r))
        .collect();
    Json(Value::Array(found)).into_response()
}

async fn show(
    State(app): State<App>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    Path((id, iid)): Path<(String, u64)>,
) -> Response {
    let at = format!("{method} {uri}");
    if let Some(refused) = enter(&app, &headers, at) {
        return refused;
    }
    let state = lock(&app.inner);
    match state
        .requests
        .iter()
        .find(|r| r.project == id && r.number == iid)
    {
        Some(found) => Json(shown(&app, found)).into_response(),
        None => not_found("Merge Request"),
    }
}

async fn create(
    State(app): State<App>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    Path(id): Path<String>,
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
    let (source, target, title) = (
        field("source_branch"),
        field("target_branch"),
        field("title"),
    );
    if source.is_empty() || target.is_empty() || title.is_empty() {
        return (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": "source_branch, target_branch, title are missing"})),
        )
            .into_response();
    }
    let mut state = lock(&app.inner);
    if let Some(open) = state.requests.iter().find(|r| {
        r.project == id && r.source == source && r.target == target && r.state == "opened"
    }) {
        return (
            StatusCode::CONFLICT,
            Json(json!({"message": [format!(
                "Another open merge request already exists for this source branch: !{}",
                open.number
            )]})),
        )
            .into_response();
    }
    let number = state.requests.iter().filter(|r| r.project == id).count() as u64 + 1;
    let request = Request {
        project: id,
        number,
        source,
        target,
        title,
        body: field("description"),
        state: "opened".into(),
    };
    let answer = shown(&app, &request);
    state.requests.push(request);
    (StatusCode::CREATED, Json(answer)).into_response()
}

async fn update(
    State(app): State<App>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    Path((id, iid)): Path<(String, u64)>,
    Json(body): Json<Value>,
) -> Response {
    let at = format!("{method} {uri}");
    if let Some(refused) = enter(&app, &headers, at) {
        return refused;
    }
    let mut state = lock(&app.inner);
    let Some(found) = state
        .requests
        .iter_mut()
        .find(|r| r.project == id && r.number == iid)
    else {
        return not_found("Merge Request");
    };
    if let Some(title) = body.get("title").and_then(Value::as_str) {
        found.title = title.to_owned();
    }
    if let Some(text) = body.get("description").and_then(Value::as_str) {
        found.body = text.to_owned();
    }
    let found = found.clone();
    Json(shown(&app, &found)).into_response()
}
