//! Pull requests: opened, listed, updated and read back, with the commits their ends are
//! at (set by the test, or read from the forge's bare repositories) and whether they merge.

use std::collections::BTreeMap;
use std::path::{Path as FsPath, PathBuf};

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::{FakeGithub, Shared, enter, missing};

/// A pull request the fake holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pull {
    /// `owner/name`.
    pub repo: String,
    /// Number.
    pub number: u64,
    /// Head branch.
    pub head: String,
    /// Base branch.
    pub base: String,
    /// Title.
    pub title: String,
    /// Body.
    pub body: String,
    /// Opened as a draft.
    pub draft: bool,
    /// The head's commit; empty until set or read from git.
    pub head_sha: String,
    /// The base's commit; empty until set or read from git.
    pub base_sha: String,
    /// open or closed.
    pub state: String,
    pub merged: bool,
    /// Whether it merges cleanly; `None` (GitHub still computing) until set.
    pub mergeable: Option<bool>,
    /// GitHub's word on that: `unknown` until set.
    pub mergeable_state: String,
    pub merge_commit_sha: Option<String>,
}

impl FakeGithub {
    /// The pull requests opened so far.
    pub fn pulls(&self) -> Vec<Pull> {
        self.lock().pulls.clone()
    }

    /// Pull request `number` of `repo`, as the fake holds it now.
    pub fn pull(&self, repo: &str, number: u64) -> Option<Pull> {
        self.lock()
            .pulls
            .iter()
            .find(|p| p.repo == repo && p.number == number)
            .cloned()
    }

    /// Sets the commit pull request `number`'s head is at, as a push to its branch does.
    pub fn set_pull_head(&self, repo: &str, number: u64, sha: &str) {
        self.with_pull(repo, number, |p| p.head_sha = sha.to_owned());
    }

    /// Reads both ends' commits of pull request `number` from the bare repository
    /// `git_dir` (its head and base branches), as GitHub sees a push; returns the head's.
    pub fn sync_pull_head(&self, repo: &str, number: u64, git_dir: &FsPath) -> String {
        let pull = self.pull(repo, number).expect("no such pull request");
        let head = branch_sha(git_dir, &pull.head).expect("the head branch is not in git_dir");
        let base = branch_sha(git_dir, &pull.base);
        self.with_pull(repo, number, |p| {
            p.head_sha = head.clone();
            p.base_sha = base.unwrap_or_default();
        });
        head
    }

    /// From now on every read of a pull request first takes its ends' commits from the
    /// bare repository `<root>/<owner>/<name>.git` (a [`crate::Forge`]'s `git/`), when it
    /// has the branch: pushes through a `file://` remote then show as they do on GitHub.
    pub fn follow_git(&self, root: &FsPath) {
        self.lock().git_root = Some(root.to_path_buf());
    }

    /// Sets whether pull request `number` merges cleanly, and GitHub's word for it
    /// (`clean`, `dirty` for conflicts, `unknown`, ...).
    pub fn set_mergeable(&self, repo: &str, number: u64, mergeable: Option<bool>, state: &str) {
        self.with_pull(repo, number, |p| {
            p.mergeable = mergeable;
            p.mergeable_state = state.to_owned();
        });
    }

    /// Merges pull request `number` as commit `sha` (closed, merged).
    pub fn merge_pull(&self, repo: &str, number: u64, sha: &str) {
        self.with_pull(repo, number, |p| {
            p.state = "closed".into();
            p.merged = true;
            p.merge_commit_sha = Some(sha.to_owned());
        });
    }

    fn with_pull(&self, repo: &str, number: u64, change: impl FnOnce(&mut Pull)) {
        let mut state = self.lock();
        let pull = state
            .pulls
            .iter_mut()
            .find(|p| p.repo == repo && p.number == number)
            .expect("no such pull request");
        change(pull);
    }
}

/// The commit `branch` is at in bare repository `git_dir`, if it has the branch.
fn branch_sha(git_dir: &FsPath, branch: &str) -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["rev-parse", "--verify", "--quiet"])
        .arg(format!("refs/heads/{branch}^{{commit}}"))
        .current_dir(git_dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .ok()?;
    let sha = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    (out.status.success() && !sha.is_empty()).then_some(sha)
}

/// Takes the ends' commits of `repo`'s pull requests from git, when following it.
fn refresh_from_git(inner: &Shared, repo: &str) {
    let (root, ends) = {
        let state = inner.lock().unwrap_or_else(|p| p.into_inner());
        let Some(root) = state.git_root.clone() else {
            return;
        };
        let ends: Vec<(u64, String, String)> = state
            .pulls
            .iter()
            .filter(|p| p.repo == repo)
            .map(|p| (p.number, p.head.clone(), p.base.clone()))
            .collect();
        (root, ends)
    };
    let git_dir: PathBuf = root.join(format!("{repo}.git"));
    let found: Vec<(u64, Option<String>, Option<String>)> = ends
        .into_iter()
        .map(|(n, head, base)| (n, branch_sha(&git_dir, &head), branch_sha(&git_dir, &base)))
        .collect();
    let mut state = inner.lock().unwrap_or_else(|p| p.into_inner());
    for (number, head, base) in found {
        if let Some(pull) = state
            .pulls
            .iter_mut()
            .find(|p| p.repo == repo && p.number == number)
        {
            if let Some(head) = head {
                pull.head_sha = head;
            }
            if let Some(base) = base {
                pull.base_sha = base;
            }
        }
    }
}

fn pull_json(pull: &Pull) -> Value {
    json!({
        "number": pull.number, "state": pull.state, "title": pull.title, "body": pull.body,
        "draft": pull.draft, "merged": pull.merged,
        "html_url": format!("https://github.com/{}/pull/{}", pull.repo, pull.number),
        "head": {"ref": pull.head, "sha": pull.head_sha, "repo": {"full_name": pull.repo}},
        "base": {"ref": pull.base, "sha": pull.base_sha, "repo": {"full_name": pull.repo}},
        "mergeable": pull.mergeable, "mergeable_state": pull.mergeable_state,
        "merge_commit_sha": pull.merge_commit_sha
    })
}

pub(super) async fn get_pull(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo, number)): Path<(String, String, u64)>,
) -> Response {
    let path = format!("/repos/{owner}/{repo}/pulls/{number}");
    if let Some(refused) = enter(&inner, &headers, format!("GET {path}")) {
        return refused;
    }
    if let Some(gone) = missing(&inner, &owner, &repo) {
        return gone;
    }
    let full = format!("{owner}/{repo}");
    refresh_from_git(&inner, &full);
    let state = inner.lock().unwrap_or_else(|p| p.into_inner());
    match state
        .pulls
        .iter()
        .find(|p| p.repo == full && p.number == number)
    {
        Some(pull) => Json(pull_json(pull)).into_response(),
        None => (StatusCode::NOT_FOUND, Json(json!({"message": "Not Found"}))).into_response(),
    }
}

pub(super) async fn list_pulls(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo)): Path<(String, String)>,
    Query(query): Query<BTreeMap<String, String>>,
) -> Response {
    if let Some(refused) = enter(&inner, &headers, format!("GET /repos/{owner}/{repo}/pulls")) {
        return refused;
    }
    let full = format!("{owner}/{repo}");
    refresh_from_git(&inner, &full);
    let head = query.get("head").cloned().unwrap_or_default();
    // GitHub lists open ones unless asked otherwise.
    let wanted = query.get("state").cloned().unwrap_or_else(|| "open".into());
    let state = inner.lock().unwrap_or_else(|p| p.into_inner());
    let found: Vec<Value> = state
        .pulls
        .iter()
        .filter(|p| p.repo == full && (head.is_empty() || head == format!("{owner}:{}", p.head)))
        .filter(|p| wanted == "all" || p.state == wanted)
        .map(pull_json)
        .collect();
    Json(Value::Array(found)).into_response()
}

pub(super) async fn create_pull(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo)): Path<(String, String)>,
    Json(body): Json<Value>,
) -> Response {
    if let Some(refused) = enter(
        &inner,
        &headers,
        format!("POST /repos/{owner}/{repo}/pulls"),
    ) {
        return refused;
    }
    let Some((answer, fail, hold)) = open_pull(&inner, &owner, &repo, &body) else {
        let head = body["head"].as_str().unwrap_or_default();
        return (
            StatusCode::UNPROCESSABLE_ENTITY,
            Json(json!({"message": "Validation Failed", "errors": [{"message": format!("A pull request already exists for {owner}:{head}.")}]})),
        )
            .into_response();
    };
    while hold && holding(&inner) {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    if fail {
        return (
            StatusCode::BAD_GATEWAY,
            Json(json!({"message": "Server Error"})),
        )
            .into_response();
    }
    (StatusCode::CREATED, Json(answer)).into_response()
}

/// Opens the pull request `body` asks for: its JSON, whether to answer 502 anyway and
/// whether to hang first; `None` when one is open from that branch already.
fn open_pull(inner: &Shared, owner: &str, repo: &str, body: &Value) -> Option<(Value, bool, bool)> {
    let full = format!("{owner}/{repo}");
    let mut state = inner.lock().unwrap_or_else(|p| p.into_inner());
    let head = body["head"].as_str().unwrap_or_default().to_owned();
    if state
        .pulls
        .iter()
        .any(|p| p.repo == full && p.head == head && p.state == "open")
    {
        return None;
    }
    state.next_id += 1;
    let pull = Pull {
        repo: full,
        number: 100 + state.next_id,
        head,
        base: body["base"].as_str().unwrap_or_default().to_owned(),
        title: body["title"].as_str().unwrap_or_default().to_owned(),
        body: body["body"].as_str().unwrap_or_default().to_owned(),
        draft: body["draft"].as_bool().unwrap_or(false),
        head_sha: String::new(),
        base_sha: String::new(),
        state: "open".into(),
        merged: false,
        mergeable: None,
        mergeable_state: "unknown".into(),
        merge_commit_sha: None,
    };
    let answer = pull_json(&pull);
    state.pulls.push(pull);
    let fail = state.fail_pull_creates > 0;
    state.fail_pull_creates = state.fail_pull_creates.saturating_sub(1);
    Some((answer, fail, state.hold_pull_creates))
}

fn holding(inner: &Shared) -> bool {
    inner
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .hold_pull_creates
}

pub(super) async fn update_pull(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo, number)): Path<(String, String, u64)>,
    Json(body): Json<Value>,
) -> Response {
    let path = format!("/repos/{owner}/{repo}/pulls/{number}");
    if let Some(refused) = enter(&inner, &headers, format!("PATCH {path}")) {
        return refused;
    }
    let mut state = inner.lock().unwrap_or_else(|p| p.into_inner());
    let Some(pull) = state.pulls.iter_mut().find(|p| p.number == number) else {
        return (StatusCode::NOT_FOUND, Json(json!({"message": "Not Found"}))).into_response();
    };
    if let Some(title) = body["title"].as_str() {
        pull.title = title.to_owned();
    }
    if let Some(text) = body["body"].as_str() {
        pull.body = text.to_owned();
    }
    let answer = pull_json(pull);
    Json(answer).into_response()
}
