//! Signing in and out.
//!
//! A login link (`/login/SECRET`) is shown as a page with one button rather than signing
//! in on `GET`: chat clients and mail scanners open links to preview them, and would
//! otherwise use it up. The button posts the secret back (it is the form's token: nobody
//! without the link can send it), the link is claimed once, and a session starts.

use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::http::header::SET_COOKIE;
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use gatehouse_store::{LoginLinkRow, OneTime};
use maud::html;
use serde::Deserialize;

use super::page::{PageError, frame, local_path, redirect};
use super::session::{Posted, WithCsrf, clear_cookie, cross_site, set_cookie, viewer};
use crate::auth::{from_now, hash_token, new_token};
use crate::rights::Scopes;
use crate::{ApiError, ApiState};

/// Query of the sign-in pages: where to go afterwards.
#[derive(Debug, Deserialize)]
pub(crate) struct Next {
    next: Option<String>,
    /// Set after signing out, to say so.
    signed_out: Option<String>,
}

/// `/signin`: how to get in.
pub(crate) async fn page(
    State(api): State<ApiState>,
    headers: HeaderMap,
    Query(q): Query<Next>,
) -> Result<Response, PageError> {
    let next = local_path(q.next.as_deref());
    if viewer(&api, &headers).await?.is_some() {
        return Ok(redirect(&next));
    }
    let body = html! {
        h1 { "Sign in to Gatehouse" }
        @if q.signed_out.is_some() {
            p.notice role="status" { "You are signed out." }
        }
        p { "Gatehouse signs you in with a one-time link, valid for "
            (humantime::format_duration(api.console.login_link_ttl)) ". Ask for one:" }
        ul {
            li { "in a terminal: " code { "gatehouse login" } }
            li { "in Slack or Discord: " code { "@gatehouse login" } " (the link comes as a direct message)" }
        }
        @if api.console.github.is_some() && api.console.public_url.is_some() {
            p { "Or: " a.button href=(format!("/auth/github?next={}", super::page::encode(&next))) { "Sign in with GitHub" } }
        }
    };
    Ok(frame("Sign in", None, body).into_response())
}

/// `GET /login/SECRET`: who the link signs in, and the button that does it.
pub(crate) async fn confirm(
    State(api): State<ApiState>,
    Path(secret): Path<String>,
    Query(q): Query<Next>,
) -> Result<Response, PageError> {
    let row = api.store.login_link(&hash_token(&secret)).await?;
    let row = usable(row.map(OneTime::Claimed).unwrap_or(OneTime::Unknown))?;
    let next = local_path(q.next.as_deref());
    let body = html! {
        h1 { "Sign in to Gatehouse" }
        form method="post" action="/login" {
            input type="hidden" name="link" value=(secret);
            input type="hidden" name="next" value=(next);
            p { "This link signs you in as " strong { (row.person) } "." }
            button type="submit" { "Sign in as " (row.person) }
        }
    };
    Ok(frame("Sign in", None, body).into_response())
}

/// The login form.
#[derive(Debug, Deserialize)]
pub(crate) struct LoginForm {
    link: String,
    next: Option<String>,
}

/// `POST /login`: claims the link and starts the session.
pub(crate) async fn sign_in(
    State(api): State<ApiState>,
    headers: HeaderMap,
    axum::Form(form): axum::Form<LoginForm>,
) -> Result<Response, PageError> {
    if cross_site(&headers, api.console.public_url.as_deref()) {
        return Err(
            ApiError::Forbidden("a form from another site cannot sign you in".into()).into(),
        );
    }
    let row = usable(api.store.use_login_link(&hash_token(&form.link)).await?)?;
    if api.people.known(&api.store, &row.person).await?.is_none() {
        return Err(ApiError::Forbidden(format!(
            "this link was for `{}`, who is no longer one of the people known to Gatehouse",
            row.person
        ))
        .into());
    }
    let scopes = Scopes::parse_stored(&row.scopes);
    let started = start_session(&api, &row.person, "link", &scopes).await?;
    let mut response = redirect(&local_path(form.next.as_deref()));
    response.headers_mut().insert(SET_COOKIE, started);
    Ok(response)
}

/// Starts a session for `person` that may do `scopes`; the cookie that carries it.
pub(crate) async fn start_session(
    api: &ApiState,
    person: &str,
    via: &str,
    scopes: &Scopes,
) -> Result<axum::http::HeaderValue, ApiError> {
    let secret = new_token();
    let expires_at = from_now(api.console.session_ttl)?;
    api.store
        .create_session(
            &hash_token(&secret),
            person,
            via,
            &scopes.to_stored(),
            expires_at,
        )
        .await?;
    tracing::info!(%person, via, "signed in to the console");
    let max_age = i64::try_from(api.console.session_ttl.as_secs()).unwrap_or(i64::MAX);
    Ok(set_cookie(&secret, api.console.secure(), max_age))
}

/// A link that may still sign someone in, or why not (unknown 404, used or expired 410).
fn usable(claim: OneTime<LoginLinkRow>) -> Result<LoginLinkRow, PageError> {
    let gone = |why: &str| {
        PageError::Api(ApiError::Gone(format!(
            "this sign-in link {why}; ask for a new one with `gatehouse login` or `@gatehouse login`"
        )))
    };
    match claim {
        OneTime::Unknown => Err(ApiError::NotFound(
            "this sign-in link is not one Gatehouse made; ask for a new one with `gatehouse login` or `@gatehouse login`".into(),
        )
        .into()),
        OneTime::Used(_) => Err(gone("was already used")),
        OneTime::Claimed(row) if row.used_at.is_some() => Err(gone("was already used")),
        OneTime::Claimed(row) if row.expires_at <= Utc::now() => Err(gone("has expired")),
        OneTime::Claimed(row) => Ok(row),
    }
}

/// A form that carries only its CSRF token.
#[derive(Debug, Deserialize)]
pub(crate) struct CsrfOnly {
    csrf: String,
}

impl WithCsrf for CsrfOnly {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

/// `POST /signout`: ends the session everywhere its cookie went.
pub(crate) async fn sign_out(
    State(api): State<ApiState>,
    posted: Posted<CsrfOnly>,
) -> Result<Response, PageError> {
    api.store.end_session(posted.viewer.session).await?;
    let mut response = redirect("/signin?signed_out=1");
    response
        .headers_mut()
        .insert(SET_COOKIE, clear_cookie(api.console.secure()));
    Ok(response)
}
