//! `/people`: who is known to Gatehouse, and the people administrators add and remove.
//! Who is who, and how a request's handle finds its person, is [`People`](crate::People).

pub(crate) mod views;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use gatehouse_store::PersonRow;

use crate::Person;
use crate::people_directory::same;

use crate::api::names::check_name;
use crate::error::ErrorBody;
use crate::rights::Caller;
use crate::views::{AddPerson, PersonView};
use crate::{ApiError, ApiState};

/// The person a request asks something for: `named`, or the caller when it names no one.
/// Only an administrator acts for someone else (`what` says what for, in the refusal); a
/// person Gatehouse does not know is refused by name.
pub(crate) async fn for_whom(
    api: &ApiState,
    caller: &Caller,
    named: Option<&str>,
    what: &str,
) -> Result<Person, ApiError> {
    let id = named.map(str::trim).unwrap_or(&caller.person).to_owned();
    if id != caller.person {
        caller.require_admin(what)?;
    }
    let person = api.people.known(&api.store, &id).await?;
    person.ok_or_else(|| {
        ApiError::Unprocessable(format!(
            "`{id}` is not one of the people known to Gatehouse; an administrator adds them first (`gatehouse person add {id}`)"
        ))
    })
}

/// Everyone known to Gatehouse, configured first.
#[utoipa::path(get, path = "/people", responses(
    (status = 200, body = [PersonView]), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody)))]
pub async fn list(State(api): State<ApiState>) -> Result<Json<Vec<PersonView>>, ApiError> {
    let people = api.people.current(&api.store).await?;
    let view = |p: &Person| PersonView {
        id: p.id.clone(),
        github: p.github.clone(),
        slack: p.slack.clone(),
        discord: p.discord.clone(),
        groups: p.groups.clone(),
        source: if people.is_configured(&p.id) {
            "config"
        } else {
            "api"
        }
        .to_owned(),
    };
    Ok(Json(people.iter().map(view).collect()))
}

/// Adds a person (administrators only). Ids and handles are unique across the
/// configuration and the stored people.
#[utoipa::path(post, path = "/people", request_body = AddPerson, responses(
    (status = 201, body = PersonView), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
    (status = 403, body = ErrorBody), (status = 409, body = ErrorBody), (status = 415, body = ErrorBody),
    (status = 422, body = ErrorBody)))]
pub async fn add(
    State(api): State<ApiState>,
    caller: Caller,
    Json(body): Json<AddPerson>,
) -> Result<(StatusCode, Json<PersonView>), ApiError> {
    caller.require_admin("add people")?;
    let id = body.id.trim();
    check_name(id)?;
    for group in &body.groups {
        check_name(group)?;
    }
    let handle = |h: &Option<String>| {
        h.as_deref()
            .map(str::trim)
            .filter(|h| !h.is_empty())
            .map(str::to_owned)
    };
    let (github, slack, discord) = (
        handle(&body.github),
        handle(&body.slack),
        handle(&body.discord),
    );
    let people = api.people.current(&api.store).await?;
    if people.is_configured(id) {
        return Err(ApiError::Conflict(format!(
            "`{id}` is configured in [[people]]; change them in the configuration"
        )));
    }
    if people.by_id(id).is_some() {
        return Err(ApiError::Conflict(format!("`{id}` exists already")));
    }
    for (what, mine, theirs) in [
        (
            "GitHub login",
            &github,
            (|p: &Person| p.github.clone()) as fn(&Person) -> Option<String>,
        ),
        ("Slack id", &slack, |p| p.slack.clone()),
        ("Discord id", &discord, |p| p.discord.clone()),
    ] {
        if let Some(other) = people.iter().find(|p| same(&theirs(p), mine)) {
            return Err(ApiError::Conflict(format!(
                "{what} `{}` belongs to `{}` already",
                mine.as_deref().unwrap_or_default(),
                other.id
            )));
        }
    }
    let row = PersonRow {
        id: id.to_owned(),
        github,
        slack,
        discord,
        groups: serde_json::to_string(&body.groups)?,
        created_by: caller.person.clone(),
        created_at: chrono::Utc::now(),
    };
    // Checked above against everyone; a race with another administrator is settled here.
    if !api.store.add_person(&row).await? {
        return Err(ApiError::Conflict(format!(
            "`{id}` or one of their handles was added by someone else just now"
        )));
    }
    tracing::info!(person = %id, by = %caller.person, groups = ?body.groups, "person added");
    let person = Person::from_row(&row);
    Ok((
        StatusCode::CREATED,
        Json(PersonView {
            id: person.id,
            github: person.github,
            slack: person.slack,
            discord: person.discord,
            groups: person.groups,
            source: "api".to_owned(),
        }),
    ))
}

/// Removes a person added through the API, and revokes their tokens (administrators
/// only). Configured people are changed in the configuration.
#[utoipa::path(delete, path = "/people/{id}", params(("id" = String, Path, description = "The person's id")), responses(
    (status = 204), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
    (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub async fn remove(
    State(api): State<ApiState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    caller.require_admin("remove people")?;
    if api.people.is_configured(&id) {
        return Err(ApiError::Conflict(format!(
            "`{id}` is configured in [[people]]; remove them from the configuration"
        )));
    }
    if !api.store.remove_person(&id).await? {
        return Err(ApiError::NotFound(format!("no person `{id}` was added")));
    }
    let revoked = api.store.revoke_tokens_of(&id).await?;
    // Their console sessions would be refused anyway (the person is unknown); ending them
    // keeps a person re-added later from finding old browsers signed in.
    let signed_out = api.store.end_sessions_of(&id).await?;
    tracing::info!(person = %id, by = %caller.person, revoked, signed_out, "person removed");
    Ok(StatusCode::NO_CONTENT)
}
