//! Signing in with GitHub: the authorization-code flow of the configured OAuth App, the
//! GitHub login mapped to one of the people (`[[people]] github = ...`).
//!
//! The `state` sent to GitHub is random, stored hashed, accepted once within ten minutes,
//! and also set in a cookie of its own, so a callback is only accepted in the browser that
//! started it (someone else's code cannot sign you in as them). That cookie is
//! `SameSite=Lax`: GitHub's redirect back is a cross-site navigation, which a `Strict`
//! cookie would not come with.

use axum::extract::{Query, State};
use axum::http::header::SET_COOKIE;
use axum::http::{HeaderMap, HeaderValue};
use axum::response::Response;
use chrono::Utc;
use gatehouse_store::OneTime;
use serde::Deserialize;
use subtle::ConstantTimeEq;

use super::page::{PageError, local_path, redirect};
use super::signin::start_session;
use crate::auth::{hash_token, new_token};
use crate::rights::Scopes;
use crate::{ApiError, ApiState};

/// How long a sign-in may take at GitHub.
const STATE_TTL: chrono::Duration = chrono::Duration::minutes(10);

/// Where GitHub sends people back, under `server.public_url`.
pub(crate) const CALLBACK: &str = "/auth/github/callback";

fn state_cookie_name(secure: bool) -> &'static str {
    if secure {
        "__Host-gatehouse_oauth"
    } else {
        "gatehouse_oauth"
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct Start {
    next: Option<String>,
}

/// `GET /auth/github`: off to GitHub.
pub(crate) async fn start(
    State(api): State<ApiState>,
    Query(q): Query<Start>,
) -> Result<Response, PageError> {
    let (app, base) = configured(&api)?;
    let state = new_token();
    let next = local_path(q.next.as_deref());
    api.store
        .create_oauth_state(&hash_token(&state), &next, Utc::now() + STATE_TTL)
        .await?;
    let secure = api.console.secure();
    let mut response = redirect(&app.authorize_url(&state, &format!("{base}{CALLBACK}")));
    let cookie = format!(
        "{}={state}; Path=/; HttpOnly; SameSite=Lax; Max-Age={}{}",
        state_cookie_name(secure),
        STATE_TTL.num_seconds(),
        if secure { "; Secure" } else { "" }
    );
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(SET_COOKIE, value);
    }
    Ok(response)
}

#[derive(Debug, Deserialize)]
pub(crate) struct Callback {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

/// `GET /auth/github/callback`: GitHub's answer; a session when the login is someone's.
pub(crate) async fn callback(
    State(api): State<ApiState>,
    headers: HeaderMap,
    Query(q): Query<Callback>,
) -> Result<Response, PageError> {
    let (app, base) = configured(&api)?;
    if let Some(error) = q.error {
        return Err(ApiError::Forbidden(format!(
            "GitHub did not sign you in: {}",
            q.error_description.unwrap_or(error)
        ))
        .into());
    }
    let (Some(code), Some(state)) = (q.code, q.state) else {
        return Err(ApiError::BadRequest("GitHub's answer lacks its code or state".into()).into());
    };
    let secure = api.console.secure();
    let ours = super::session::cookie_value(&headers, state_cookie_name(secure));
    if !ours.is_some_and(|c| bool::from(c.as_bytes().ct_eq(state.as_bytes()))) {
        return Err(ApiError::Forbidden(
            "this sign-in was not started in this browser; start again from the sign-in page"
                .into(),
        )
        .into());
    }
    let next = match api.store.use_oauth_state(&hash_token(&state)).await? {
        OneTime::Claimed((next, expires_at)) if expires_at > Utc::now() => next,
        OneTime::Claimed(_) => return Err(gone("took too long")),
        OneTime::Used(_) => return Err(gone("was already used")),
        OneTime::Unknown => return Err(gone("is not one Gatehouse started")),
    };
    let login = app
        .login(&code, &format!("{base}{CALLBACK}"))
        .await
        .map_err(|e| {
            tracing::warn!(error = %e, "GitHub sign-in failed");
            ApiError::Forbidden(format!("GitHub did not confirm who you are: {e}"))
        })?;
    let people = api.people.current(&api.store).await?;
    let person = people.by_github(&login).ok_or_else(|| {
        ApiError::Forbidden(format!(
            "the GitHub account `{login}` is not one of the people known to Gatehouse; an administrator adds it (`github = \"{login}\"` under [[people]])"
        ))
    })?;
    let started = start_session(&api, &person.id, "github", &Scopes::default_for_new()).await?;
    let mut response = redirect(&local_path(Some(&next)));
    let headers = response.headers_mut();
    headers.append(SET_COOKIE, started);
    let clear = format!(
        "{}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0{}",
        state_cookie_name(secure),
        if secure { "; Secure" } else { "" }
    );
    if let Ok(value) = HeaderValue::from_str(&clear) {
        headers.append(SET_COOKIE, value);
    }
    Ok(response)
}

/// The OAuth App and the public address, or 404 when GitHub sign-in is not configured.
fn configured(api: &ApiState) -> Result<(&gatehouse_github::OAuthApp, &str), ApiError> {
    match (&api.console.github, &api.console.public_url) {
        (Some(app), Some(base)) => Ok((app, base.as_str())),
        _ => Err(ApiError::NotFound(
            "signing in with GitHub is not configured here ([console] github_client_id)".into(),
        )),
    }
}

fn gone(why: &str) -> PageError {
    PageError::Api(ApiError::Gone(format!(
        "this GitHub sign-in {why}; start again from the sign-in page"
    )))
}
