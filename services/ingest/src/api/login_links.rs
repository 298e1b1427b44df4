//! `POST /login-links`: a one-time link that signs a person in to the console
//! (`gatehouse login`). The session it starts may do no more than the token that asked
//! for it; only an administrator asks for someone else's.

pub(crate) mod views;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};

use crate::auth::from_now;
use crate::error::ErrorBody;
use crate::rights::{Caller, Scopes};
use crate::views::{CreateLoginLink, LoginLinkCreated};
use crate::{ApiError, ApiState};

/// Creates a login link; the secret is shown once.
#[utoipa::path(post, path = "/login-links", request_body = CreateLoginLink, responses(
    (status = 201, body = LoginLinkCreated), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
    (status = 422, body = ErrorBody)))]
pub async fn create(
    State(api): State<ApiState>,
    caller: Caller,
    Json(body): Json<CreateLoginLink>,
) -> Result<(StatusCode, Json<LoginLinkCreated>), ApiError> {
    // A console session is a person's: it decides gates, which an agent's token may not.
    if caller.for_agent {
        return Err(ApiError::Forbidden(format!(
            "this token (`{}`) was made for an agent, and the console is for people; \
             sign in with a token of your own (one made without --for-agent)",
            caller.token
        )));
    }
    let person = crate::api::people::for_whom(
        &api,
        &caller,
        body.person.as_deref(),
        "create sign-in links for other people",
    )
    .await?;
    // What a browser needs day to day, as far as the asking token has it; `admin` stays
    // with tokens.
    let scopes = Scopes::default_within(&caller.scopes);
    let (secret, expires_at) = create_login_link(&api, &person.id, &caller.person, &scopes).await?;
    let path = format!("/login/{secret}");
    let url = api
        .console
        .public_url
        .as_ref()
        .map(|base| format!("{base}{path}"));
    Ok((
        StatusCode::CREATED,
        Json(LoginLinkCreated {
            person: person.id.clone(),
            path,
            url,
            scopes: scopes.to_vec(),
            expires_at,
        }),
    ))
}

/// Creates a login link for `person` whose session may do `scopes`; the secret (shown
/// once) and when it expires.
async fn create_login_link(
    api: &ApiState,
    person: &str,
    created_by: &str,
    scopes: &Scopes,
) -> Result<(String, DateTime<Utc>), ApiError> {
    let expires_at = from_now(api.console.login_link_ttl)?;
    let secret = api
        .store
        .mint_login_link(person, created_by, &scopes.to_stored(), expires_at)
        .await?;
    Ok((secret, expires_at))
}
