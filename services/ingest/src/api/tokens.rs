//! `/tokens`: a person creates, lists and revokes their own tokens; an administrator does
//! so for anyone. A token never gives more than its creator's token has.

pub(crate) mod views;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use chrono::Utc;
use gatehouse_store::{NewToken, TokenRow};
use serde::Deserialize;

use crate::api::names::check_name;
use crate::error::ErrorBody;
use crate::rights::{ADMINS, Caller, Scope, Scopes};
use crate::views::{CreateToken, TokenCreated, TokenView, WhoAmI};
use crate::{ApiError, ApiState, hash_token, new_token};

/// Query of `GET /tokens`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
pub struct ListQuery {
    /// Only this person's tokens (an administrator's choice; others see their own).
    pub person: Option<String>,
}

/// Creates a token acting for a person; the secret is shown once.
#[utoipa::path(post, path = "/tokens", request_body = CreateToken, responses(
    (status = 201, body = TokenCreated), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
    (status = 403, body = ErrorBody), (status = 409, body = ErrorBody), (status = 415, body = ErrorBody),
    (status = 422, body = ErrorBody)))]
pub async fn create(
    State(api): State<ApiState>,
    caller: Caller,
    Json(body): Json<CreateToken>,
) -> Result<(StatusCode, Json<TokenCreated>), ApiError> {
    let person = crate::api::people::for_whom(
        &api,
        &caller,
        body.person.as_deref(),
        "create tokens for other people",
    )
    .await?;
    let person_id = person.id.clone();
    let scopes = match &body.scopes {
        Some(scopes) if scopes.is_empty() => {
            return Err(ApiError::Unprocessable(
                "a token needs at least one scope".into(),
            ));
        }
        Some(scopes) => Scopes::of(scopes.iter().copied()),
        None => Scopes::default_within(&caller.scopes),
    };
    if !caller.scopes.covers(&scopes) {
        return Err(ApiError::Forbidden(format!(
            "a token can only give scopes its creator's token has ({}); asked for {}",
            caller.scopes.names().join(", "),
            scopes.names().join(", ")
        )));
    }
    if scopes.has(Scope::Admin) && !person.groups.iter().any(|g| g == ADMINS) {
        return Err(ApiError::Unprocessable(format!(
            "the `admin` scope is only for people in group `{ADMINS}`, and {person_id} is not"
        )));
    }
    let expires_at = match body.expires_in.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(text) => {
            let after = humantime::parse_duration(text)
                .ok()
                .and_then(|d| chrono::Duration::from_std(d).ok())
                .filter(|d| *d > chrono::Duration::zero())
                .ok_or_else(|| {
                    ApiError::Unprocessable(format!(
                        "expires_in `{text}` is not a duration such as `30d` or `12h`"
                    ))
                })?;
            Some(Utc::now() + after)
        }
    };
    // An agent's token makes only agents' tokens: it cannot mint itself a way to decide.
    let for_agent = body.for_agent || caller.for_agent;
    let secret = new_token();
    let hash = hash_token(&secret);
    let stored_scopes = scopes.to_stored();
    let base = NewToken {
        name: "",
        person: &person_id,
        created_by: &caller.person,
        scopes: &stored_scopes,
        expires_at,
        hash: &hash,
        for_agent,
    };
    let row = match body.name.as_deref().map(str::trim) {
        Some(name) => {
            check_name(name)?;
            // Names are global: a non-administrator names tokens after the person they
            // act for, so nobody takes the names another person's tokens would get (or
            // names a token to look like someone else's).
            let own = name == person_id || name.starts_with(&format!("{person_id}-"));
            if !own && !caller.is_admin() {
                return Err(ApiError::Unprocessable(format!(
                    "a token for {person_id} is named `{person_id}` or `{person_id}-<something>`; `{name}` is not"
                )));
            }
            api.store
                .create_token(&NewToken {
                    name,
                    ..base.clone()
                })
                .await?
                .ok_or_else(|| {
                    ApiError::Conflict(format!(
                        "a token named `{name}` exists; choose another name"
                    ))
                })?
        }
        // The person's id, then `id-2`, `id-3`, ...: readable in `token list`.
        None => {
            let mut created = None;
            for n in 1..=100 {
                let name = if n == 1 {
                    person_id.clone()
                } else {
                    format!("{person_id}-{n}")
                };
                if let Some(row) = api
                    .store
                    .create_token(&NewToken {
                        name: &name,
                        ..base.clone()
                    })
                    .await?
                {
                    created = Some(row);
                    break;
                }
            }
            created.ok_or_else(|| {
                ApiError::Conflict(format!(
                    "{person_id} has 100 tokens named after them; give this one a name"
                ))
            })?
        }
    };
    tracing::info!(token = %row.name, person = %row.person, by = %caller.person, scopes = %row.scopes, for_agent = row.for_agent, "token created");
    Ok((
        StatusCode::CREATED,
        Json(TokenCreated {
            name: row.name,
            person: row.person,
            scopes: scopes.to_vec(),
            expires_at: row.expires_at,
            token: secret,
            for_agent: row.for_agent,
        }),
    ))
}

/// The tokens in use (not revoked): one's own, or anyone's for an administrator.
#[utoipa::path(get, path = "/tokens", params(ListQuery), responses(
    (status = 200, body = [TokenView]), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
    (status = 403, body = ErrorBody)))]
pub async fn list(
    State(api): State<ApiState>,
    caller: Caller,
    Query(q): Query<ListQuery>,
) -> Result<Json<Vec<TokenView>>, ApiError> {
    let person = match q.person {
        Some(person) if person != caller.person => {
            caller.require_admin("list other people's tokens")?;
            Some(person)
        }
        Some(person) => Some(person),
        None if caller.is_admin() => None,
        None => Some(caller.person.clone()),
    };
    let rows = api.store.tokens(person.as_deref()).await?;
    Ok(Json(rows.into_iter().map(view).collect()))
}

/// Revokes a token by name: one's own, or anyone's for an administrator.
#[utoipa::path(delete, path = "/tokens/{name}", params(("name" = String, Path, description = "The token's name")), responses(
    (status = 204), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn revoke(
    State(api): State<ApiState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    let not_found = || ApiError::NotFound(format!("no token named `{name}` is in use"));
    let row = api
        .store
        .token(&name)
        .await?
        .filter(|t| t.revoked_at.is_none())
        .ok_or_else(not_found)?;
    if row.person != caller.person {
        // Someone else's token: its existence is not told to those who may not see it.
        if !caller.is_admin() {
            return Err(not_found());
        }
    }
    if !api.store.revoke_token(&name).await? {
        return Err(not_found());
    }
    tracing::info!(token = %name, person = %row.person, by = %caller.person, "token revoked");
    Ok(StatusCode::NO_CONTENT)
}

fn view(row: TokenRow) -> TokenView {
    TokenView {
        scopes: Scopes::parse_stored(&row.scopes).to_vec(),
        name: row.name,
        person: row.person,
        created_by: row.created_by,
        created_at: row.created_at,
        expires_at: row.expires_at,
        for_agent: row.for_agent,
    }
}

/// Who the calling token acts for, its scopes, and whether it was made for an agent.
#[utoipa::path(get, path = "/whoami", responses((status = 200, body = WhoAmI), (status = 401, body = ErrorBody)))]
pub async fn whoami(caller: Caller) -> Json<WhoAmI> {
    Json(WhoAmI {
        admin: caller.is_admin(),
        person: caller.person,
        groups: caller.groups,
        token: caller.token,
        scopes: caller.scopes.to_vec(),
        for_agent: caller.for_agent,
    })
}
