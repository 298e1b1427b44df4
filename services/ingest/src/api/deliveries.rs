//! `/deliveries`: every webhook and chat event Gatehouse received (GitHub, Slack,
//! Discord) with what became of it — the run it started, or why nothing happened.
//!
//! Deliveries hold raw payloads of every project, so only administrators see them all,
//! with their payloads; anyone else sees, without payloads, those concerning a project
//! they may read ([`projects::may_see_delivery`]).

pub(crate) mod shown;
pub(crate) mod views;

use axum::Json;
use axum::extract::{Path, Query, State};
use chrono::{DateTime, Utc};
use gatehouse_store::{DeliveryFilter, DeliveryOutcome, DeliveryRow};
use serde::Deserialize;

use crate::error::ErrorBody;
use crate::projects::{self, Reader};
use crate::rights::Caller;
use crate::views::{DeliveryDetail, DeliverySummary};
use crate::{ApiError, ApiState, paging};

/// Where deliveries come from.
pub(crate) const SOURCES: [&str; 3] = ["github", "slack", "discord"];

/// Query of `GET /deliveries`.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
pub struct DeliveryQuery {
    /// Only this source's: github, slack or discord.
    pub source: Option<String>,
    /// Only those that came to this: processed, ignored, pending or failed.
    pub outcome: Option<String>,
    /// At most this many (default 50, at most 500).
    pub limit: Option<i64>,
    /// Only those received before this time (RFC 3339): the last one's `received_at`
    /// gives the next page.
    pub before: Option<DateTime<Utc>>,
}

/// Someone looking at deliveries: what they may read, and whether they administer
/// Gatehouse (an `admin` token of someone in `admins` through the API; through the
/// console, where sessions never carry `admin`, someone in `admins`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Looking<'a> {
    pub(crate) reader: Reader<'a>,
    pub(crate) admin: bool,
}

impl Caller {
    /// The caller looking at deliveries through the API.
    fn looking(&self) -> Looking<'_> {
        Looking {
            reader: self.reader(),
            admin: self.is_admin(),
        }
    }
}

/// Lists deliveries, newest first: every one for administrators, those concerning a
/// project the caller may read for anyone else.
#[utoipa::path(get, path = "/deliveries", params(DeliveryQuery), responses(
    (status = 200, body = [DeliverySummary]), (status = 422, body = ErrorBody)))]
pub async fn list(
    State(api): State<ApiState>,
    caller: Caller,
    Query(q): Query<DeliveryQuery>,
) -> Result<Json<Vec<DeliverySummary>>, ApiError> {
    Ok(Json(listed(&api, caller.looking(), &q).await?))
}

/// A delivery with its payload (the payload for administrators only); `id` is
/// `SOURCE:DELIVERY_ID`, or the sender's id alone when no other source has it. 403 for
/// one concerning no project, unless the caller is an administrator.
#[utoipa::path(get, path = "/deliveries/{id}", responses(
    (status = 200, body = DeliveryDetail), (status = 403, body = ErrorBody),
    (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn show(
    State(api): State<ApiState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<DeliveryDetail>, ApiError> {
    Ok(Json(detail(&api, caller.looking(), &id).await?))
}

/// The deliveries `q` asks for that `who` may see, newest first.
pub(crate) async fn listed(
    api: &ApiState,
    who: Looking<'_>,
    q: &DeliveryQuery,
) -> Result<Vec<DeliverySummary>, ApiError> {
    let source = q.source.as_deref().filter(|s| !s.is_empty());
    if let Some(source) = source
        && !SOURCES.contains(&source)
    {
        return Err(ApiError::Unprocessable(format!(
            "source: `{source}` is none of {}",
            SOURCES.join(", ")
        )));
    }
    let outcome = match q.outcome.as_deref().filter(|s| !s.is_empty()) {
        None => None,
        Some(name) => Some(DeliveryOutcome::parse(name).ok_or_else(|| {
            let names: Vec<&str> = DeliveryOutcome::ALL.iter().map(|o| o.as_str()).collect();
            ApiError::Unprocessable(format!("outcome: `{name}` is none of {}", names.join(", ")))
        })?),
    };
    let readable = projects::delivery_projects(api, who.reader, who.admin);
    let filter = DeliveryFilter {
        source,
        outcome,
        before: q.before,
        projects: readable.as_deref(),
        limit: paging::LIST.limit(q.limit),
    };
    let rows = api.store.deliveries(&filter).await?;
    Ok(rows.iter().map(shown::summary).collect())
}

/// The delivery `id` names, with its payload for administrators.
pub(crate) async fn detail(
    api: &ApiState,
    who: Looking<'_>,
    id: &str,
) -> Result<DeliveryDetail, ApiError> {
    let row = find(api, id).await?;
    let missing = || ApiError::NotFound(format!("no delivery {id}"));
    if row.project.is_none() && !who.admin {
        return Err(ApiError::Forbidden(format!(
            "delivery {id} concerns no project, and only administrators see those (an `admin` token of someone in group `{}`)",
            crate::rights::ADMINS
        )));
    }
    if !projects::may_see_delivery(api, row.project.as_deref(), who.reader, who.admin) {
        return Err(missing());
    }
    let (payload, payload_withheld) = match who.admin {
        true => (Some(shown::payload(&row.body)), None),
        false => (
            None,
            Some("payloads are shown to administrators only: they may hold anything the sender put in them".to_owned()),
        ),
    };
    Ok(DeliveryDetail {
        delivery: shown::summary(&row),
        payload,
        payload_withheld,
    })
}

/// The stored delivery `id` names: `SOURCE:DELIVERY_ID`, or a delivery id alone when
/// one source has it.
async fn find(api: &ApiState, id: &str) -> Result<DeliveryRow, ApiError> {
    let missing = || {
        ApiError::NotFound(format!(
            "no delivery {id}; `gatehouse delivery list` shows them"
        ))
    };
    if id.is_empty() || id.len() > 512 {
        return Err(missing());
    }
    if let Some((source, delivery)) = id.split_once(':')
        && SOURCES.contains(&source)
    {
        return api
            .store
            .delivery(source, delivery)
            .await?
            .ok_or_else(missing);
    }
    let mut found = api.store.deliveries_with_id(id).await?;
    match found.len() {
        0 => Err(missing()),
        1 => Ok(found.remove(0)),
        _ => Err(ApiError::Unprocessable(format!(
            "deliveries of several sources have the id {id}; name one as SOURCE:{id} ({})",
            found
                .iter()
                .map(|d| d.source.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}
