//! Check runs per commit, and their jobs' logs: the log answers 302 to a download path on
//! this same fake, as GitHub's redirects to its log storage.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::{FakeGithub, Shared, enter, missing};

/// A check run the fake holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckRun {
    /// The job's or check's name.
    pub name: String,
    /// success, failure, timed_out, cancelled, ...; `None` while in progress.
    pub conclusion: Option<String>,
    /// The app that ran it: `github-actions` for a job with a log.
    pub app: String,
    pub title: Option<String>,
    pub summary: Option<String>,
    /// The job's log; `None` answers 404 (410 once expired, see
    /// [`FakeGithub::expire_log`]).
    pub log: Option<String>,
}

/// Check runs and logs by id.
#[derive(Default)]
pub(super) struct Checks {
    /// id → (repo, sha, run)
    runs: BTreeMap<u64, (String, String, CheckRun)>,
    expired: Vec<u64>,
}

impl FakeGithub {
    /// Adds a check run on commit `sha` of `repo`; returns its id (the job's).
    pub fn add_check_run(&self, repo: &str, sha: &str, run: CheckRun) -> u64 {
        let mut state = self.lock();
        state.next_id += 1;
        let id = 9000 + state.next_id;
        state
            .checks
            .runs
            .insert(id, (repo.to_owned(), sha.to_owned(), run));
        id
    }

    /// Adds a GitHub Actions job `name` on `sha` that failed, with `log`; returns its id.
    pub fn fail_check(&self, repo: &str, sha: &str, name: &str, log: &str) -> u64 {
        self.add_check_run(
            repo,
            sha,
            CheckRun {
                name: name.to_owned(),
                conclusion: Some("failure".into()),
                app: "github-actions".into(),
                title: Some(format!("{name} failed")),
                summary: Some(format!("Process completed with exit code 1 ({name}).")),
                log: Some(log.to_owned()),
            },
        )
    }

    /// Adds a GitHub Actions job `name` on `sha` that succeeded; returns its id.
    pub fn pass_check(&self, repo: &str, sha: &str, name: &str) -> u64 {
        self.add_check_run(
            repo,
            sha,
            CheckRun {
                name: name.to_owned(),
                conclusion: Some("success".into()),
                app: "github-actions".into(),
                title: None,
                summary: None,
                log: Some(format!("{name}: ok\n")),
            },
        )
    }

    /// Makes job `id`'s log answer 410, as GitHub does once logs expire.
    pub fn expire_log(&self, id: u64) {
        self.lock().checks.expired.push(id);
    }
}

fn run_json(id: u64, repo: &str, sha: &str, run: &CheckRun) -> Value {
    json!({
        "id": id, "name": run.name, "head_sha": sha,
        "status": if run.conclusion.is_some() { "completed" } else { "in_progress" },
        "conclusion": run.conclusion,
        "html_url": format!("https://github.com/{repo}/actions/runs/1/job/{id}"),
        "check_suite": {"id": 1},
        "app": {"id": 15368, "slug": run.app, "name": run.app},
        "output": {"title": run.title, "summary": run.summary, "text": null},
        "pull_requests": []
    })
}

pub(super) async fn list_check_runs(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo, sha)): Path<(String, String, String)>,
) -> Response {
    let call = format!("GET /repos/{owner}/{repo}/commits/{sha}/check-runs");
    if let Some(refused) = enter(&inner, &headers, call) {
        return refused;
    }
    if let Some(gone) = missing(&inner, &owner, &repo) {
        return gone;
    }
    let full = format!("{owner}/{repo}");
    let state = inner.lock().unwrap_or_else(|p| p.into_inner());
    let runs: Vec<Value> = state
        .checks
        .runs
        .iter()
        .filter(|(_, (r, s, _))| *r == full && *s == sha)
        .map(|(id, (r, s, run))| run_json(*id, r, s, run))
        .collect();
    Json(json!({"total_count": runs.len(), "check_runs": runs})).into_response()
}

/// 302 to the download path, as GitHub answers (404 for an unknown job or one without a
/// log, 410 for an expired log).
pub(super) async fn job_logs(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo, id)): Path<(String, String, u64)>,
) -> Response {
    let call = format!("GET /repos/{owner}/{repo}/actions/jobs/{id}/logs");
    if let Some(refused) = enter(&inner, &headers, call) {
        return refused;
    }
    let full = format!("{owner}/{repo}");
    let state = inner.lock().unwrap_or_else(|p| p.into_inner());
    if state.checks.expired.contains(&id) {
        return (StatusCode::GONE, Json(json!({"message": "Gone"}))).into_response();
    }
    let found = state
        .checks
        .runs
        .get(&id)
        .is_some_and(|(r, _, run)| *r == full && run.log.is_some());
    if !found {
        return (StatusCode::NOT_FOUND, Json(json!({"message": "Not Found"}))).into_response();
    }
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("127.0.0.1");
    let to = format!("http://{host}/_downloads/jobs/{id}/logs?sig=fake");
    (StatusCode::FOUND, [(header::LOCATION, to)]).into_response()
}

/// The log itself; like GitHub's storage it needs no token (the signed URL is the key),
/// and the call and its `Authorization` (if any) are recorded like every other.
pub(super) async fn download_log(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Response {
    let mut state = inner.lock().unwrap_or_else(|p| p.into_inner());
    state.calls.push(format!("GET /_downloads/jobs/{id}/logs"));
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    state.authorizations.push(authorization);
    match state
        .checks
        .runs
        .get(&id)
        .and_then(|(_, _, run)| run.log.clone())
    {
        Some(log) => (StatusCode::OK, [(header::CONTENT_TYPE, "text/plain")], log).into_response(),
        None => (StatusCode::NOT_FOUND, "Not Found").into_response(),
    }
}
