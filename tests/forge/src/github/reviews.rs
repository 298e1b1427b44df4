//! Review comments: those a review left (added by the test), and the replies Gatehouse
//! posts in their threads (recorded, for the test to read).

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::{FakeGithub, Shared, enter, missing};

/// A line comment a review leaves, as a test adds it.
#[derive(Debug, Clone, Copy)]
pub struct NewReviewComment<'a> {
    /// The review it belongs to.
    pub review_id: u64,
    /// The reviewer's login.
    pub author: &'a str,
    /// The file, relative to the repository's root.
    pub path: &'a str,
    /// The line; `None` for an outdated comment.
    pub line: Option<u64>,
    pub body: &'a str,
}

/// A reply posted in a review comment's thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The reply's id.
    pub id: u64,
    /// The comment answered: its thread's first (GitHub threads a reply to a reply there).
    pub to: u64,
    pub body: String,
}

/// A review comment or reply the fake holds.
#[derive(Debug, Clone)]
pub(super) struct Held {
    repo: String,
    pull: u64,
    review_id: Option<u64>,
    author: String,
    path: String,
    line: Option<u64>,
    body: String,
    in_reply_to: Option<u64>,
}

/// Review comments by id, and the failures asked for.
#[derive(Default)]
pub(super) struct Reviews {
    comments: BTreeMap<u64, Held>,
    fail_replies: usize,
}

impl FakeGithub {
    /// Adds a line comment of review `comment.review_id` on pull request `pull`; returns
    /// its id.
    pub fn add_review_comment(&self, repo: &str, pull: u64, comment: NewReviewComment<'_>) -> u64 {
        let mut state = self.lock();
        state.next_id += 1;
        let id = 5000 + state.next_id;
        state.reviews.comments.insert(
            id,
            Held {
                repo: repo.to_owned(),
                pull,
                review_id: Some(comment.review_id),
                author: comment.author.to_owned(),
                path: comment.path.to_owned(),
                line: comment.line,
                body: comment.body.to_owned(),
                in_reply_to: None,
            },
        );
        id
    }

    /// The replies posted on pull request `pull`'s review threads, oldest first.
    pub fn review_replies(&self, repo: &str, pull: u64) -> Vec<Reply> {
        self.lock()
            .reviews
            .comments
            .iter()
            .filter(|(_, c)| c.repo == repo && c.pull == pull)
            .filter_map(|(id, c)| {
                c.in_reply_to.map(|to| Reply {
                    id: *id,
                    to,
                    body: c.body.clone(),
                })
            })
            .collect()
    }

    /// The next `n` replies are stored but answered 502, as GitHub does when it fails
    /// after writing.
    pub fn fail_replies(&self, n: usize) {
        self.lock().reviews.fail_replies = n;
    }
}

fn comment_json(id: u64, c: &Held) -> Value {
    json!({
        "id": id, "node_id": format!("PRRC_{id}"),
        "pull_request_review_id": c.review_id, "in_reply_to_id": c.in_reply_to,
        "path": c.path, "line": c.line, "original_line": c.line,
        "diff_hunk": "@@ -1 +1 @@", "body": c.body,
        "user": {"login": c.author, "id": 1, "type": "User"},
        "html_url": format!("https://github.com/{}/pull/{}#discussion_r{id}", c.repo, c.pull),
        "created_at": "2026-11-30T12:00:00Z", "updated_at": "2026-11-30T12:00:00Z"
    })
}

fn page(all: Vec<Value>, query: &BTreeMap<String, String>) -> Vec<Value> {
    let number: usize = query.get("page").and_then(|p| p.parse().ok()).unwrap_or(1);
    let per_page: usize = query
        .get("per_page")
        .and_then(|p| p.parse().ok())
        .unwrap_or(30);
    all.into_iter()
        .skip((number.max(1) - 1) * per_page)
        .take(per_page)
        .collect()
}

pub(super) async fn list_review_comments(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo, pull, review)): Path<(String, String, u64, u64)>,
    Query(query): Query<BTreeMap<String, String>>,
) -> Response {
    let call = format!("GET /repos/{owner}/{repo}/pulls/{pull}/reviews/{review}/comments");
    if let Some(refused) = enter(&inner, &headers, call) {
        return refused;
    }
    if let Some(gone) = missing(&inner, &owner, &repo) {
        return gone;
    }
    let full = format!("{owner}/{repo}");
    let state = inner.lock().unwrap_or_else(|p| p.into_inner());
    let all = state
        .reviews
        .comments
        .iter()
        .filter(|(_, c)| c.repo == full && c.pull == pull && c.review_id == Some(review))
        .map(|(id, c)| comment_json(*id, c))
        .collect();
    Json(Value::Array(page(all, &query))).into_response()
}

pub(super) async fn list_pull_comments(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo, pull)): Path<(String, String, u64)>,
    Query(query): Query<BTreeMap<String, String>>,
) -> Response {
    let call = format!("GET /repos/{owner}/{repo}/pulls/{pull}/comments");
    if let Some(refused) = enter(&inner, &headers, call) {
        return refused;
    }
    if let Some(gone) = missing(&inner, &owner, &repo) {
        return gone;
    }
    let full = format!("{owner}/{repo}");
    let state = inner.lock().unwrap_or_else(|p| p.into_inner());
    let all = state
        .reviews
        .comments
        .iter()
        .filter(|(_, c)| c.repo == full && c.pull == pull)
        .map(|(id, c)| comment_json(*id, c))
        .collect();
    Json(Value::Array(page(all, &query))).into_response()
}

pub(super) async fn reply(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo, pull, to)): Path<(String, String, u64, u64)>,
    Json(body): Json<Value>,
) -> Response {
    let call = format!("POST /repos/{owner}/{repo}/pulls/{pull}/comments/{to}/replies");
    if let Some(refused) = enter(&inner, &headers, call) {
        return refused;
    }
    let Some(text) = body["body"].as_str() else {
        return (
            StatusCode::UNPROCESSABLE_ENTITY,
            Json(json!({"message": "body is missing"})),
        )
            .into_response();
    };
    let full = format!("{owner}/{repo}");
    let mut state = inner.lock().unwrap_or_else(|p| p.into_inner());
    let Some(answered) = state
        .reviews
        .comments
        .get(&to)
        .filter(|c| c.repo == full && c.pull == pull)
        .cloned()
    else {
        return (StatusCode::NOT_FOUND, Json(json!({"message": "Not Found"}))).into_response();
    };
    state.next_id += 1;
    let id = 5000 + state.next_id;
    let held = Held {
        in_reply_to: Some(answered.in_reply_to.unwrap_or(to)),
        review_id: None,
        author: "gatehouse[bot]".into(),
        body: text.to_owned(),
        ..answered
    };
    let answer = comment_json(id, &held);
    state.reviews.comments.insert(id, held);
    if state.reviews.fail_replies > 0 {
        state.reviews.fail_replies -= 1;
        return (
            StatusCode::BAD_GATEWAY,
            Json(json!({"message": "Server Error"})),
        )
            .into_response();
    }
    (StatusCode::CREATED, Json(answer)).into_response()
}
