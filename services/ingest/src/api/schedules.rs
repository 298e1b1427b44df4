//! `/schedules`: create, list, show, pause, resume, trigger, backfill, delete.
//!
//! The API writes schedule definitions and *requests* fires; the scheduler decides every
//! fire (overlap policy, catch-up window) and starts the runs, so a manual trigger obeys
//! the same rules as a cron fire and is recorded the same way.

mod checked;
mod shown;
pub(crate) mod views;

pub(crate) use shown::millis;

use std::time::Duration;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use chrono::Utc;
use gatehouse_schedule::{parse_time, rfc3339};
use gatehouse_store::{FireKind, FireOutcome, FireRow, ScheduleRow};
use jiff::Timestamp;
use serde::Deserialize;

use checked::checked;
use shown::{cursor, fire_view, view};

use crate::error::ErrorBody;
use crate::rights::{Caller, may_start};
use crate::views::*;
use crate::{ApiError, ApiState, paging, projects};
use gatehouse_project::Right;

/// A backfill queues at most this many fires; a larger range is refused with the count.
const MAX_BACKFILL: usize = 1_000;

/// Query of `GET /schedules`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
pub struct ListQuery {
    /// Names after this one (paging).
    pub after: Option<String>,
    /// At most this many (default 100, at most 1000).
    pub limit: Option<i64>,
}

/// Creates a schedule. Fires are owed from now on: a new schedule does not catch up on
/// its past (use backfill for that).
#[utoipa::path(post, path = "/schedules", request_body = CreateSchedule, responses(
    (status = 201, body = ScheduleView), (status = 409, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn create(
    State(api): State<ApiState>,
    caller: Caller,
    Json(body): Json<CreateSchedule>,
) -> Result<(StatusCode, Json<ScheduleView>), ApiError> {
    let row = checked(&api, &caller, body).await?;
    if !api.store.insert_schedule(&row).await? {
        return Err(ApiError::Conflict(format!(
            "a schedule named `{}` exists already",
            row.name
        )));
    }
    let stored = find(&api, &row.name).await?;
    Ok((StatusCode::CREATED, Json(view(&api, stored).await?)))
}

/// Lists schedules by name with their last and next fire: those of no project or of a
/// project the caller may read.
#[utoipa::path(get, path = "/schedules", params(ListQuery), responses((status = 200, body = [ScheduleView])))]
pub async fn list(
    State(api): State<ApiState>,
    caller: Caller,
    Query(q): Query<ListQuery>,
) -> Result<Json<Vec<ScheduleView>>, ApiError> {
    let limit = paging::SCHEDULES.limit(q.limit);
    let hidden = projects::hidden(&api, caller.reader());
    let rows = api
        .store
        .schedules(q.after.as_deref(), &hidden, limit)
        .await?;
    let mut views = Vec::with_capacity(rows.len());
    for row in rows {
        views.push(view(&api, row).await?);
    }
    Ok(Json(views))
}

/// A schedule with its recent fires and next fire times; 404 for one of a project the
/// caller may not read.
#[utoipa::path(get, path = "/schedules/{name}", responses((status = 200, body = ScheduleDetail), (status = 404, body = ErrorBody)))]
pub async fn show(
    State(api): State<ApiState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<Json<ScheduleDetail>, ApiError> {
    let row = find(&api, &name).await?;
    projects::readable(&api, row.project.as_deref(), caller.reader(), || {
        no_schedule(&name)
    })?;
    let upcoming = match (row.timing(), row.paused) {
        (Ok(timing), false) => {
            let mut times = Vec::new();
            let mut cursor = cursor(&api, &row).await?;
            while times.len() < 5 {
                let Some(fire) = timing.next_fire(cursor) else {
                    break;
                };
                cursor = fire.scheduled.timestamp();
                times.push(rfc3339(&fire.scheduled));
            }
            times
        }
        _ => Vec::new(),
    };
    let mut recent = Vec::new();
    for fire in api.store.fires(&name, 20).await? {
        recent.push(fire_view(&api, fire).await?);
    }
    Ok(Json(ScheduleDetail {
        schedule: view(&api, row).await?,
        upcoming,
        recent,
    }))
}

/// Pauses a schedule, with a note; fires that fall due while paused are not owed.
#[utoipa::path(post, path = "/schedules/{name}/pause", request_body = PauseSchedule, responses(
    (status = 200, body = ScheduleView), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn pause(
    State(api): State<ApiState>,
    caller: Caller,
    Path(name): Path<String>,
    body: Option<Json<PauseSchedule>>,
) -> Result<Json<ScheduleView>, ApiError> {
    let note = body.and_then(|Json(b)| b.note);
    set_paused(&api, &caller, &name, true, note.as_deref()).await
}

/// Resumes a paused schedule from now on.
#[utoipa::path(post, path = "/schedules/{name}/resume", responses(
    (status = 200, body = ScheduleView), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn resume(
    State(api): State<ApiState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<Json<ScheduleView>, ApiError> {
    set_paused(&api, &caller, &name, false, None).await
}

async fn set_paused(
    api: &ApiState,
    caller: &Caller,
    name: &str,
    paused: bool,
    note: Option<&str>,
) -> Result<Json<ScheduleView>, ApiError> {
    may_operate(api, caller, &find(api, name).await?)?;
    if !api
        .store
        .set_schedule_paused(name, paused, note, Utc::now())
        .await?
    {
        return Err(no_schedule(name));
    }
    let row = find(api, name).await?;
    Ok(Json(view(api, row).await?))
}

/// Fires a schedule now. The scheduler decides the fire by the schedule's overlap policy
/// (a run still going may mean skipped or buffered); the answer is that decision when it
/// comes within a few seconds, `requested` otherwise.
#[utoipa::path(post, path = "/schedules/{name}/trigger", responses(
    (status = 202, body = FireView), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub async fn trigger(
    State(api): State<ApiState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<(StatusCode, Json<FireView>), ApiError> {
    let row = find(&api, &name).await?;
    may_operate(&api, &caller, &row)?;
    // Whoever fires it answers for the run, so they must be allowed to start its SOP.
    if let Some(sop) = api.catalog.get(&row.sop) {
        may_start(&sop, &caller.person, &caller.groups)?;
    }
    if row.paused {
        return Err(ApiError::Conflict(format!(
            "schedule `{name}` is paused; resume it first"
        )));
    }
    let now = Utc::now().timestamp_millis();
    let fire = FireRow {
        schedule: name.clone(),
        scheduled_ms: now,
        kind: FireKind::Manual,
        outcome: FireOutcome::Requested,
        run_id: None,
        fired_ms: now,
        lateness_ms: 0,
        requested_by: Some(caller.person.clone()),
    };
    let mut tx = api.store.begin().await?;
    if !tx.record_fire(&fire).await? {
        return Err(ApiError::Conflict(format!(
            "schedule `{name}` fired at this very millisecond; try again"
        )));
    }
    tx.commit().await?;
    let mut latest = fire;
    for _ in 0..250 {
        if let Some(found) = api
            .store
            .fires(&name, 50)
            .await?
            .into_iter()
            .find(|f| f.scheduled_ms == now)
        {
            latest = found;
        }
        if latest.outcome != FireOutcome::Requested {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok((StatusCode::ACCEPTED, Json(fire_view(&api, latest).await?)))
}

/// Queues the schedule's cron times between `from` and `to` that never ran (never
/// recorded, or skipped) to run one after another, oldest first.
#[utoipa::path(post, path = "/schedules/{name}/backfill", request_body = Backfill, responses(
    (status = 200, body = BackfillResult), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn backfill(
    State(api): State<ApiState>,
    caller: Caller,
    Path(name): Path<String>,
    Json(body): Json<Backfill>,
) -> Result<Json<BackfillResult>, ApiError> {
    let row = find(&api, &name).await?;
    may_operate(&api, &caller, &row)?;
    if let Some(sop) = api.catalog.get(&row.sop) {
        may_start(&sop, &caller.person, &caller.groups)?;
    }
    let from = parse_time(&body.from).map_err(|e| ApiError::Unprocessable(format!("from: {e}")))?;
    let to = parse_time(&body.to).map_err(|e| ApiError::Unprocessable(format!("to: {e}")))?;
    if to < from {
        return Err(ApiError::Unprocessable(format!(
            "to {to} is before from {from}"
        )));
    }
    let now = Timestamp::now();
    if to > now {
        return Err(ApiError::Unprocessable(format!(
            "to {to} is in the future; the scheduler fires those itself"
        )));
    }
    let timing = row
        .timing()
        .map_err(|e| ApiError::Unprocessable(e.to_string()))?;
    let mut times = Vec::new();
    let mut cursor = from
        .checked_sub(jiff::SignedDuration::from_nanos(1))
        .unwrap_or(from);
    while let Some(fire) = timing.next_fire(cursor) {
        let at = fire.scheduled.timestamp();
        if at > to {
            break;
        }
        if times.len() == MAX_BACKFILL {
            return Err(ApiError::Unprocessable(format!(
                "more than {MAX_BACKFILL} fires between {from} and {to}; backfill a shorter range"
            )));
        }
        times.push(at.as_millisecond());
        cursor = at;
    }
    let mut tx = api.store.begin().await?;
    let mut queued = Vec::new();
    for &ms in &times {
        if tx
            .backfill_fire(&name, ms, now.as_millisecond(), &caller.person)
            .await?
        {
            queued.push(millis(ms));
        }
    }
    tx.commit().await?;
    let already = times.len() - queued.len();
    Ok(Json(BackfillResult { queued, already }))
}

/// Deletes a schedule made through the API, with its fire history; runs it started stay.
#[utoipa::path(delete, path = "/schedules/{name}", responses(
    (status = 204), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub async fn delete(
    State(api): State<ApiState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    let row = find(&api, &name).await?;
    may_operate(&api, &caller, &row)?;
    if row.source == "config" {
        return Err(ApiError::Conflict(format!(
            "schedule `{name}` comes from the configuration file; remove it there (or pause it)"
        )));
    }
    if !api.store.delete_schedule(&name).await? {
        return Err(no_schedule(&name));
    }
    Ok(StatusCode::NO_CONTENT)
}

/// Refuses (403) someone the schedule's project does not let run: pausing, resuming,
/// triggering, backfilling and deleting a schedule are acts on its project's runs.
fn may_operate(api: &ApiState, caller: &Caller, row: &ScheduleRow) -> Result<(), ApiError> {
    let person = Some(caller.person.as_str());
    projects::may_act(
        api,
        row.project.as_deref(),
        Right::Run,
        person,
        &caller.groups,
    )
}

async fn find(api: &ApiState, name: &str) -> Result<ScheduleRow, ApiError> {
    api.store
        .schedule(name)
        .await?
        .ok_or_else(|| no_schedule(name))
}

fn no_schedule(name: &str) -> ApiError {
    ApiError::NotFound(format!(
        "no schedule named `{name}`; `gatehouse schedule list` shows them"
    ))
}
