//! GitHub's OAuth web flow as the fake plays it. `/login/oauth/authorize` answers as
//! GitHub does once the person agreed: a redirect to `redirect_uri` with a fresh code and
//! the `state` (the test says beforehand who agrees, [`super::FakeGithub::authorizes_as`]).
//! `/login/oauth/access_token` exchanges a code once, for the right client, as GitHub's
//! JSON answer (errors come with status 200, as GitHub's do); `/user` names the token's
//! owner.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};

/// The OAuth App the fake knows.
pub const CLIENT_ID: &str = "Iv1.fakeconsole";
pub const CLIENT_SECRET: &str = "fake-console-secret";

#[derive(Default)]
pub(super) struct OAuth {
    /// Who agrees at the next authorize.
    next_login: Option<String>,
    /// Code → login, until exchanged.
    codes: BTreeMap<String, String>,
    /// Token → login.
    tokens: BTreeMap<String, String>,
    counter: u64,
}

pub(super) type Shared = Arc<Mutex<OAuth>>;

fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, OAuth> {
    shared.lock().unwrap_or_else(|p| p.into_inner())
}

pub(super) fn routes(shared: Shared) -> Router {
    Router::new()
        .route("/login/oauth/authorize", get(authorize))
        .route("/login/oauth/access_token", post(exchange))
        .route("/user", get(user))
        .with_state(shared)
}

pub(super) fn authorizes_as(shared: &Shared, login: &str) {
    lock(shared).next_login = Some(login.to_owned());
}

async fn authorize(
    State(shared): State<Shared>,
    Query(q): Query<BTreeMap<String, String>>,
) -> Response {
    let mut oauth = lock(&shared);
    let (Some(redirect), Some(state), Some(CLIENT_ID)) = (
        q.get("redirect_uri"),
        q.get("state"),
        q.get("client_id").map(String::as_str),
    ) else {
        return (
            StatusCode::BAD_REQUEST,
            "unknown client or missing parameters",
        )
            .into_response();
    };
    let Some(login) = oauth.next_login.take() else {
        return (StatusCode::FORBIDDEN, "nobody agreed").into_response();
    };
    oauth.counter += 1;
    let code = format!("code-{}", oauth.counter);
    oauth.codes.insert(code.clone(), login);
    let to = format!("{redirect}?code={code}&state={state}");
    (StatusCode::FOUND, [(header::LOCATION, to)]).into_response()
}

async fn exchange(State(shared): State<Shared>, Json(body): Json<Value>) -> Json<Value> {
    let mut oauth = lock(&shared);
    if body["client_id"] != CLIENT_ID || body["client_secret"] != CLIENT_SECRET {
        return Json(json!({ "error": "incorrect_client_credentials" }));
    }
    let Some(login) = body["code"].as_str().and_then(|c| oauth.codes.remove(c)) else {
        return Json(json!({
            "error": "bad_verification_code",
            "error_description": "The code passed is incorrect or expired."
        }));
    };
    oauth.counter += 1;
    let token = format!("gho_fake{}", oauth.counter);
    oauth.tokens.insert(token.clone(), login);
    Json(json!({ "access_token": token, "token_type": "bearer", "scope": "" }))
}

async fn user(State(shared): State<Shared>, headers: HeaderMap) -> Response {
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' ').map(|(_, t)| t.to_owned()))
        .unwrap_or_default();
    match lock(&shared).tokens.get(&token) {
        Some(login) => Json(json!({ "login": login, "id": 1 })).into_response(),
        None => (
            StatusCode::UNAUTHORIZED,
            Json(json!({ "message": "Bad credentials" })),
        )
            .into_response(),
    }
}
