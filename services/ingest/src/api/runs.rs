//! `/runs`: start, list, show, logs, and the run commands.

pub(crate) mod budgets;
mod detail;
pub(crate) mod usage;
pub(crate) mod views;

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use gatehouse_engine::{Input, apply};
use gatehouse_events::{
    Event, RequirementSource, RequirementState, RunCommand, RunCommandKind, RunRequested,
};
use serde::Deserialize;
use uuid::Uuid;

pub(crate) use detail::{Loaded, detail, load_readable, loaded, readable_row, summary};

use crate::error::ErrorBody;
use crate::ids;
use crate::issue_requirement::issue_requirement;
use crate::new_requirement::{self, NewRequirement};
use crate::rights::{Caller, may_start};
use crate::views::*;
use crate::{ApiError, ApiState, outbox, paging, projects, run_request};
use gatehouse_commands::IssueRef;
use gatehouse_project::{Request, Right};
use gatehouse_store::IdKind;

/// Query of `GET /runs`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
pub struct ListQuery {
    /// Only runs with this status.
    pub status: Option<String>,
    /// Only runs of this project.
    pub project: Option<String>,
    /// Only runs of this SOP.
    pub sop: Option<String>,
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
    /// Only this node's lines.
    pub node: Option<String>,
    /// The last this many lines instead (at most 5000); not with `after`.
    pub tail: Option<i64>,
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
    may_start(&sop, &caller.person, &caller.groups)?;
    let issue: Option<IssueRef> = body
        .issue
        .as_deref()
        .map(|text| {
            text.parse()
                .map_err(|e| ApiError::Unprocessable(format!("issue: {e}")))
        })
        .transpose()?;
    let issue_repo = issue.as_ref().map(|i| format!("{}/{}", i.owner, i.repo));
    let request = Request {
        project: body.project.as_deref(),
        repositories: &body.repositories,
        issue_repo: issue_repo.as_deref(),
        sop: Some(&sop.name),
    };
    let workspace = projects::bind(&api, request, Some(&caller.person), &caller.groups)?;
    let run_id = Uuid::now_v7();
    let mut tx = api.store.begin().await?;
    // A run on code works on a requirement, which its pull requests deliver: the issue's,
    // or one of its own.
    let requirement = match (&issue, &workspace) {
        (Some(issue), _) => {
            let row = issue_requirement(&api, &mut tx, issue, &caller.actor()).await?;
            projects::claim_for_requirement(&mut tx, Some(row.id), workspace.as_ref()).await?;
            Some(row.id)
        }
        (None, Some(workspace)) => {
            let new = NewRequirement {
                key: format!("api:{run_id}"),
                source: RequirementSource::Api,
                title: format!("{} on {}", sop.name, workspace.project),
                body: body
                    .params
                    .iter()
                    .map(|(k, v)| format!("{k}={v}\n"))
                    .collect(),
                url: None,
                state: RequirementState::Open,
                source_updated_at: String::new(),
                author: caller.actor(),
                project: Some(workspace.project.clone()),
            };
            Some(new_requirement::create(&mut tx, new).await?.id)
        }
        (None, None) => None,
    };
    let request = RunRequested {
        run_id,
        sop: sop.name.clone(),
        params: body.params,
        requirement_id: requirement,
        requested_by: caller.actor(),
        schedule: None,
        parent: None,
        workspace,
    };
    // Shown as `requested` at once: `run show` finds it before the scheduler creates it.
    let event_id = run_request::request(&mut tx, &sop, request).await?;
    tx.commit().await?;
    Ok((StatusCode::ACCEPTED, Json(Accepted { run_id, event_id })))
}

/// Lists runs, newest first: those of projects the caller may read.
#[utoipa::path(get, path = "/runs", params(ListQuery), responses((status = 200, body = [RunSummary])))]
pub async fn list(
    State(api): State<ApiState>,
    caller: Caller,
    Query(q): Query<ListQuery>,
) -> Result<Json<Vec<RunSummary>>, ApiError> {
    let limit = paging::LIST.limit(q.limit);
    let hidden = projects::hidden(&api, caller.reader());
    let rows = api
        .store
        .runs_where(
            q.status.as_deref(),
            q.project.as_deref(),
            q.sop.as_deref(),
            &hidden,
            limit,
        )
        .await?;
    Ok(Json(rows.into_iter().map(summary).collect()))
}

/// A run with its nodes, attempts, artifacts and decisions; 404 for a run of a project
/// the caller may not read.
#[utoipa::path(get, path = "/runs/{id}", responses((status = 200, body = RunDetail), (status = 404, body = ErrorBody)))]
pub async fn show(
    State(api): State<ApiState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<RunDetail>, ApiError> {
    let id = ids::resolve(&api, IdKind::Run, &id, caller.reader()).await?;
    Ok(Json(detail(&api, id, caller.reader()).await?))
}

/// A run's output, oldest first; follow it with `after`.
#[utoipa::path(get, path = "/runs/{id}/logs", params(LogQuery), responses((status = 200, body = [LogView]), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn logs(
    State(api): State<ApiState>,
    caller: Caller,
    Path(id): Path<String>,
    Query(q): Query<LogQuery>,
) -> Result<Json<Vec<LogView>>, ApiError> {
    let id = ids::resolve(&api, IdKind::Run, &id, caller.reader()).await?;
    readable_row(&api, id, caller.reader()).await?;
    let node = q.node.as_deref();
    let rows = match (q.tail, q.after) {
        (Some(_), Some(_)) => {
            return Err(ApiError::Unprocessable(
                "`tail` reads the last lines and `after` follows from a line; give one".into(),
            ));
        }
        (Some(tail), None) => {
            api.store
                .logs_tail(id, node, paging::LOG_LINES.limit(Some(tail)))
                .await?
        }
        (None, after) => {
            api.store
                .logs_after(
                    id,
                    node,
                    after.unwrap_or(0),
                    paging::LOG_LINES.limit(q.limit),
                )
                .await?
        }
    };
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

/// The run's graph as an SVG picture: nodes coloured by status, with attempts and rework.
#[utoipa::path(get, path = "/runs/{id}/graph.svg", responses(
    (status = 200, description = "The graph", content_type = "image/svg+xml"), (status = 404, body = ErrorBody)))]
pub async fn graph(
    State(api): State<ApiState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<axum::response::Response, ApiError> {
    let id = ids::resolve(&api, IdKind::Run, &id, caller.reader()).await?;
    let (_, sop, run) = load_readable(&api, id, caller.reader()).await?;
    let decisions = api.store.decisions(id).await?;
    let lines = decisions.iter().filter_map(|d| {
        decision_line(&d.decision, &d.person, &d.outcome).map(|l| (d.node.as_str(), l))
    });
    Ok(svg_response(graph_svg(&sop, &run, lines)))
}

/// An SVG document as a response.
pub(crate) fn svg_response(svg: String) -> axum::response::Response {
    use axum::response::IntoResponse;
    let mut response = svg.into_response();
    response.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("image/svg+xml; charset=utf-8"),
    );
    response
}

/// A decision as a gate's box in the graph lists it (`approved by ana`); none for one that
/// was refused (`outcome` other than `applied`), which decided nothing.
pub(crate) fn decision_line(decision: &str, person: &str, outcome: &str) -> Option<String> {
    if outcome != "applied" {
        return None;
    }
    let verb = match decision {
        "approve" => "approved",
        "send_back" => "sent back",
        "reject" => "rejected",
        other => other,
    };
    Some(format!("{verb} by {person}"))
}

/// `sop`'s graph with each node's state in `run`, and the gates' decisions (node, line),
/// oldest first, as SVG.
pub(crate) fn graph_svg<'a>(
    sop: &gatehouse_sop::Sop,
    run: &gatehouse_engine::RunState,
    decisions: impl IntoIterator<Item = (&'a str, String)>,
) -> String {
    let mut graph = gatehouse_graph::Graph::of_sop(sop);
    let mut by_node: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (node, line) in decisions {
        by_node.entry(node).or_default().push(line);
    }
    for (node, lines) in by_node {
        graph.set_decisions(node, lines);
    }
    for (node, n) in &run.nodes {
        graph.set_state(
            node,
            gatehouse_graph::NodeState {
                status: n.status,
                attempt: n.attempt,
                rework: n.rework_count,
            },
        );
    }
    gatehouse_graph::svg(&graph)
}

/// Checks a command against the run's project (its `run` list) and state, then sends it
/// to the scheduler.
async fn command(
    api: &ApiState,
    id: Uuid,
    caller: &Caller,
    input: Input,
    command: RunCommandKind,
) -> Result<(StatusCode, Json<Accepted>), ApiError> {
    let (row, sop, mut run) = api.runs.load(id).await?;
    let (person, groups) = (Some(caller.person.as_str()), &caller.groups);
    projects::may_act(api, row.project.as_deref(), Right::Run, person, groups)?;
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
#[utoipa::path(post, path = "/runs/{id}/cancel", responses((status = 202, body = Accepted), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub async fn cancel(
    State(api): State<ApiState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<Accepted>), ApiError> {
    let id = ids::resolve(&api, IdKind::Run, &id, caller.reader()).await?;
    command(&api, id, &caller, Input::Cancel, RunCommandKind::Cancel).await
}

/// Pauses a run: nothing new is dispatched.
#[utoipa::path(post, path = "/runs/{id}/pause", responses((status = 202, body = Accepted), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub async fn pause(
    State(api): State<ApiState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<Accepted>), ApiError> {
    let id = ids::resolve(&api, IdKind::Run, &id, caller.reader()).await?;
    command(&api, id, &caller, Input::Pause, RunCommandKind::Pause).await
}

/// Resumes a paused run.
#[utoipa::path(post, path = "/runs/{id}/resume", responses((status = 202, body = Accepted), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub async fn resume(
    State(api): State<ApiState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<Accepted>), ApiError> {
    let id = ids::resolve(&api, IdKind::Run, &id, caller.reader()).await?;
    command(&api, id, &caller, Input::Resume, RunCommandKind::Resume).await
}

/// Runs a node again, with everything after it and everything that did not complete.
#[utoipa::path(post, path = "/runs/{id}/retry", request_body = Retry, responses((status = 202, body = Accepted), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub async fn retry(
    State(api): State<ApiState>,
    caller: Caller,
    Path(id): Path<String>,
    Json(body): Json<Retry>,
) -> Result<(StatusCode, Json<Accepted>), ApiError> {
    let id = ids::resolve(&api, IdKind::Run, &id, caller.reader()).await?;
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
