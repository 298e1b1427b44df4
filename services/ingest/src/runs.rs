//! `/runs`: start, list, show, logs, and the run commands.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use gatehouse_engine::{Input, apply};
use gatehouse_events::{Event, RunCommand, RunCommandKind, RunRequested};
use serde::Deserialize;
use uuid::Uuid;

use crate::error::ErrorBody;
use crate::rights::{Caller, may_start};
use crate::schedules::millis;
use crate::views::*;
use crate::{ApiError, ApiState, outbox};

/// Query of `GET /runs`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
pub struct ListQuery {
    /// Only runs with this status.
    pub status: Option<String>,
    /// At most this many (default 50, at most 500).
    pub limit: Option<i64>,
}

/// Query of `GET /runs/{id}/logs`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
pub struct LogQuery {
    /// Lines after this `seq` (default 0).
    pub after: Option<i64>,
    /// At most this many (default 500, at most 5000).
    pub limit: Option<i64>,
}

/// Starts a run of an SOP.
#[utoipa::path(post, path = "/runs", request_body = StartRun, responses(
    (status = 202, body = Accepted), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
    (status = 422, body = ErrorBody)))]
pub async fn start(
    State(api): State<ApiState>,
    caller: Caller,
    Json(body): Json<StartRun>,
) -> Result<(StatusCode, Json<Accepted>), ApiError> {
    let sop = api.catalog.get(&body.sop).ok_or_else(|| {
        ApiError::NotFound(format!(
            "no SOP named `{}`; `gatehouse sop list` shows them",
            body.sop
        ))
    })?;
    sop.check_start(&body.params)
        .map_err(ApiError::Unprocessable)?;
    may_start(sop, &caller.person, &caller.groups)?;
    let run_id = Uuid::now_v7();
    let event_id = outbox::emit(
        &api.store,
        Event::RunRequested(RunRequested {
            run_id,
            sop: sop.name.clone(),
            params: body.params,
            requirement_id: None,
            requested_by: caller.actor(),
            schedule: None,
            parent: None,
        }),
    )
    .await?;
    // The scheduler creates the run within milliseconds; waiting for it here means a
    // `run show` right after `run start` finds it. After the wait the request still stands.
    for _ in 0..250 {
        if api.store.run(run_id).await?.is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    Ok((StatusCode::ACCEPTED, Json(Accepted { run_id, event_id })))
}

/// Lists runs, newest first.
#[utoipa::path(get, path = "/runs", params(ListQuery), responses((status = 200, body = [RunSummary])))]
pub async fn list(
    State(api): State<ApiState>,
    Query(q): Query<ListQuery>,
) -> Result<Json<Vec<RunSummary>>, ApiError> {
    let limit = q.limit.unwrap_or(50).clamp(1, 500);
    let rows = api.store.runs(q.status.as_deref(), limit).await?;
    Ok(Json(rows.into_iter().map(summary).collect()))
}

fn summary(row: gatehouse_store::RunRow) -> RunSummary {
    RunSummary {
        id: row.id,
        sop: row.sop,
        sop_version: row.sop_version,
        status: row.status,
        requested_by: row.requested_by,
        parent_run: row.parent_run,
        created_at: row.created_at,
        updated_at: row.updated_at,
    }
}

/// What a run's agent attempts used, with the run's and its requirement's sums.
async fn usage(
    api: &ApiState,
    run: Uuid,
    requirement: Option<Uuid>,
) -> Result<UsageView, ApiError> {
    let rows = api.store.usage_of_run(run).await?;
    let requirement = match requirement {
        Some(id) => Some(UsageTotal::of(&api.store.usage_of_requirement(id).await?)),
        None => None,
    };
    Ok(UsageView {
        run: UsageTotal::of(&rows),
        requirement,
        attempts: rows
            .into_iter()
            .map(|u| AttemptUsage {
                node: u.node,
                attempt: u.attempt,
                model: u.model,
                input_tokens: u.input_tokens,
                output_tokens: u.output_tokens,
                cache_read_tokens: u.cache_read_tokens,
                cache_write_tokens: u.cache_write_tokens,
                cost_usd: u.cost_usd,
            })
            .collect(),
    })
}

/// A run with its nodes, attempts, artifacts and decisions.
#[utoipa::path(get, path = "/runs/{id}", responses((status = 200, body = RunDetail), (status = 404, body = ErrorBody)))]
pub async fn show(
    State(api): State<ApiState>,
    Path(id): Path<Uuid>,
) -> Result<Json<RunDetail>, ApiError> {
    let (row, sop, run) = api.runs.load(id).await?;
    let attempts = api.store.attempts(id).await?;
    let artifacts = api.store.artifacts(id).await?;
    let decisions = api.store.decisions(id).await?;
    let usage = usage(&api, id, row.requirement_id).await?;
    let nodes = run
        .nodes
        .iter()
        .map(|(node, n)| NodeView {
            node: node.clone(),
            kind: sop
                .node(node)
                .map(|d| d.kind.name().to_owned())
                .unwrap_or_default(),
            status: n.status.as_str().to_owned(),
            attempt: n.attempt,
            rework_count: n.rework_count,
            last_error: n.last_error.clone(),
            duration_ms: attempts
                .iter()
                .filter(|a| &a.node == node)
                .max_by_key(|a| a.attempt)
                .and_then(|a| a.duration_ms),
        })
        .collect();
    let attempts = attempts
        .into_iter()
        .map(|a| AttemptView {
            node: a.node,
            attempt: a.attempt,
            status: a.status,
            exit_code: a.exit_code,
            error: a.error,
            started_at: a.started_at,
            finished_at: a.finished_at,
            duration_ms: a.duration_ms,
        })
        .collect();
    let params: BTreeMap<String, String> = serde_json::from_str(&row.params).unwrap_or_default();
    let schedule = row
        .schedule
        .clone()
        .zip(row.scheduled_ms)
        .map(|(name, ms)| ScheduleLink {
            name,
            scheduled_time: millis(ms),
        });
    Ok(Json(RunDetail {
        usage,
        schedule,
        params,
        failure: run.failure.clone(),
        nodes,
        attempts,
        artifacts: artifacts
            .into_iter()
            .map(|a| ArtifactView {
                node: a.node,
                attempt: a.attempt,
                name: a.name,
                sha256: a.sha256,
                size: a.size,
            })
            .collect(),
        decisions: decisions
            .into_iter()
            .map(|d| DecisionView {
                node: d.node,
                attempt: d.attempt,
                decision: d.decision,
                target: d.target,
                comment: d.comment,
                person: d.person,
                channel: d.channel,
                outcome: d.outcome,
                decided_at: d.decided_at,
            })
            .collect(),
        run: summary(row),
    }))
}

/// A run's output, oldest first; follow it with `after`.
#[utoipa::path(get, path = "/runs/{id}/logs", params(LogQuery), responses((status = 200, body = [LogView]), (status = 404, body = ErrorBody)))]
pub async fn logs(
    State(api): State<ApiState>,
    Path(id): Path<Uuid>,
    Query(q): Query<LogQuery>,
) -> Result<Json<Vec<LogView>>, ApiError> {
    if api.store.run(id).await?.is_none() {
        return Err(ApiError::NotFound(format!("no run {id}")));
    }
    let rows = api
        .store
        .logs(
            id,
            q.after.unwrap_or(0),
            q.limit.unwrap_or(500).clamp(1, 5000),
        )
        .await?;
    Ok(Json(
        rows.into_iter()
            .map(|l| LogView {
                seq: l.seq,
                node: l.node,
                attempt: l.attempt,
                stream: l.stream,
                line: l.line,
                at: l.at,
            })
            .collect(),
    ))
}

/// Checks a command against the run's state, then sends it to the scheduler.
async fn command(
    api: &ApiState,
    id: Uuid,
    caller: &Caller,
    input: Input,
    command: RunCommandKind,
) -> Result<(StatusCode, Json<Accepted>), ApiError> {
    let (_, sop, mut run) = api.runs.load(id).await?;
    apply(&sop, &mut run, input)?;
    let event_id = outbox::emit(
        &api.store,
        Event::RunCommand(RunCommand {
            run_id: id,
            command,
            actor: caller.actor(),
        }),
    )
    .await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(Accepted {
            run_id: id,
            event_id,
        }),
    ))
}

/// Cancels a run: stops what runs, closes open gates.
#[utoipa::path(post, path = "/runs/{id}/cancel", responses((status = 202, body = Accepted), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub async fn cancel(
    State(api): State<ApiState>,
    caller: Caller,
    Path(id): Path<Uuid>,
) -> Result<(StatusCode, Json<Accepted>), ApiError> {
    command(&api, id, &caller, Input::Cancel, RunCommandKind::Cancel).await
}

/// Pauses a run: nothing new is dispatched.
#[utoipa::path(post, path = "/runs/{id}/pause", responses((status = 202, body = Accepted), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub async fn pause(
    State(api): State<ApiState>,
    caller: Caller,
    Path(id): Path<Uuid>,
) -> Result<(StatusCode, Json<Accepted>), ApiError> {
    command(&api, id, &caller, Input::Pause, RunCommandKind::Pause).await
}

/// Resumes a paused run.
#[utoipa::path(post, path = "/runs/{id}/resume", responses((status = 202, body = Accepted), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub async fn resume(
    State(api): State<ApiState>,
    caller: Caller,
    Path(id): Path<Uuid>,
) -> Result<(StatusCode, Json<Accepted>), ApiError> {
    command(&api, id, &caller, Input::Resume, RunCommandKind::Resume).await
}

/// Runs a node again, with everything after it and everything that did not complete.
#[utoipa::path(post, path = "/runs/{id}/retry", request_body = Retry, responses((status = 202, body = Accepted), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub async fn retry(
    State(api): State<ApiState>,
    caller: Caller,
    Path(id): Path<Uuid>,
    Json(body): Json<Retry>,
) -> Result<(StatusCode, Json<Accepted>), ApiError> {
    let input = Input::RetryFrom {
        node: body.node.clone(),
    };
    command(
        &api,
        id,
        &caller,
        input,
        RunCommandKind::Retry { node: body.node },
    )
    .await
}

/// The SOPs this deployment offers.
#[utoipa::path(get, path = "/sops", responses((status = 200, body = [SopView])))]
pub async fn sops(State(api): State<ApiState>) -> Json<Vec<SopView>> {
    Json(
        api.catalog
            .iter()
            .map(|s| SopView {
                name: s.name.clone(),
                title: s.title.clone(),
                version: s.version.clone(),
                source: s.source.clone(),
                unavailable: s
                    .check_start(&s.params_with_defaults(&BTreeMap::new()))
                    .err()
                    .filter(|m| m.contains("cannot run yet")),
            })
            .collect(),
    )
}
