//! Conversations: `GET /conversations` and `GET /conversations/{id}` show chat threads'
//! conversations with the assistant (turns, replies, tool traces, egress connections,
//! usage, workspace, pull requests); `POST /conversations/{id}/stop` ends the running turn as `stop` in the thread
//! does, answered in the thread.

pub(crate) mod views;

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use gatehouse_conversation::{Conversation, TurnStatus, Work};
use gatehouse_events::{RunWorkspace, Said};
use gatehouse_project::Right;
use gatehouse_store::{ConversationRow, TurnAttemptRow, TurnToolCallRow, TurnUsageRow};
use serde::Deserialize;
use uuid::Uuid;

use crate::api::connections::by_turn_attempt;
use crate::error::ErrorBody;
use crate::ids;
use crate::projects::require;
use crate::rights::Caller;
use crate::views::{
    ConnectionView, ConversationDetail, ConversationSummary, StopAccepted, ToolCallView,
    TurnAttemptView, TurnView, UsageTotal,
};
use crate::{ApiError, ApiState, paging, projects};
use gatehouse_store::IdKind;

/// Query of `GET /conversations`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
pub struct ConversationQuery {
    /// Only this project's.
    pub project: Option<String>,
    /// At most this many (default 50, at most 500).
    pub limit: Option<i64>,
}

/// Lists conversations, newest first: those of projects the caller may read.
#[utoipa::path(get, path = "/conversations", params(ConversationQuery), responses((status = 200, body = [ConversationSummary])))]
pub async fn list(
    State(api): State<ApiState>,
    caller: Caller,
    Query(q): Query<ConversationQuery>,
) -> Result<Json<Vec<ConversationSummary>>, ApiError> {
    let limit = paging::LIST.limit(q.limit);
    let hidden = projects::hidden(&api, caller.reader());
    let rows = api
        .store
        .conversations(q.project.as_deref(), &hidden, limit)
        .await?;
    let summaries = rows.iter().map(listed).collect::<Result<_, _>>()?;
    Ok(Json(summaries))
}

/// A stored conversation as lists show it.
pub(crate) fn listed(row: &ConversationRow) -> Result<ConversationSummary, ApiError> {
    Ok(summary(row, &state(row)?))
}

/// A conversation with its turns, each attempt's reply, tool calls and usage; 404 for one
/// of a project the caller may not read.
#[utoipa::path(get, path = "/conversations/{id}", responses((status = 200, body = ConversationDetail), (status = 404, body = ErrorBody)))]
pub async fn show(
    State(api): State<ApiState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<ConversationDetail>, ApiError> {
    let id = ids::resolve(&api, IdKind::Conversation, &id, caller.reader()).await?;
    let row = found(&api, id).await?;
    projects::readable(&api, Some(&row.project), caller.reader(), || not_found(id))?;
    let state = state(&row)?;
    let attempts = api.store.turn_attempts(id).await?;
    let tools = api.store.turn_tool_calls(id).await?;
    let usage = api.store.turn_usage(id).await?;
    let mut connections = by_turn_attempt(api.store.conversation_connections(id).await?);
    let pull_requests = api
        .store
        .pull_requests_of_requirement(row.requirement_id)
        .await?;
    let workspace: RunWorkspace = serde_json::from_str(&row.workspace)
        .map_err(|e| ApiError::Internal(format!("conversation {id}: its workspace: {e}")))?;
    let turns = state
        .turns
        .iter()
        .map(|turn| TurnView {
            seq: turn.seq,
            text: turn.text.clone(),
            person: turn.person.clone(),
            status: turn_status(turn.status).into(),
            steer: turn.steer,
            kind: match turn.work {
                Work::Assistant => "assistant",
                Work::Ask { .. } => "ask",
                Work::Deliver { .. } => "deliver",
            }
            .into(),
            role: match &turn.work {
                Work::Ask { role } => Some(role.clone()),
                _ => None,
            },
            draft: matches!(turn.work, Work::Deliver { draft: true }),
            failure: turn.failure.clone(),
            attempts: attempts
                .iter()
                .filter(|a| u64::try_from(a.seq).ok() == Some(turn.seq))
                .map(|a| {
                    let reached = connections.remove(&(a.seq, a.attempt)).unwrap_or_default();
                    attempt(a, &tools, &usage, reached)
                })
                .collect(),
        })
        .collect();
    Ok(Json(ConversationDetail {
        conversation: summary(&row, &state),
        session_id: state.session_id.clone(),
        repositories: workspace.repositories.into_iter().map(|r| r.repo).collect(),
        turns,
        pull_requests: pull_requests
            .into_iter()
            .map(crate::api::requirements::pull_request)
            .collect(),
        usage: UsageTotal::of_turns(&usage),
    }))
}

/// Stops the conversation's running turn, as `stop` in its thread does; the thread is told.
/// Needs the right to talk to the project's assistant.
#[utoipa::path(post, path = "/conversations/{id}/stop", responses(
    (status = 202, body = StopAccepted), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn stop(
    State(api): State<ApiState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<StopAccepted>), ApiError> {
    let id = ids::resolve(&api, IdKind::Conversation, &id, caller.reader()).await?;
    let row = found(&api, id).await?;
    let project = api.projects.get(&row.project).ok_or_else(|| {
        ApiError::Conflict(format!(
            "conversation {id}'s project `{}` is no longer configured",
            row.project
        ))
    })?;
    require(
        project,
        Right::Converse,
        Some(&caller.person),
        &caller.groups,
    )?;
    let mut tx = api.store.begin().await?;
    let seq = crate::outbox::say_to_conversation(&mut tx, id, &caller.person, Said::Stop).await?;
    tx.commit().await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(StopAccepted {
            conversation_id: id,
            seq,
        }),
    ))
}

async fn found(api: &ApiState, id: Uuid) -> Result<ConversationRow, ApiError> {
    api.store
        .conversation(id)
        .await?
        .ok_or_else(|| not_found(id))
}

fn not_found(id: Uuid) -> ApiError {
    ApiError::NotFound(format!("no conversation {id}"))
}

fn state(row: &ConversationRow) -> Result<Conversation, ApiError> {
    serde_json::from_str(&row.state)
        .map_err(|e| ApiError::Internal(format!("conversation {}: its state: {e}", row.id)))
}

fn summary(row: &ConversationRow, state: &Conversation) -> ConversationSummary {
    ConversationSummary {
        id: row.id,
        project: row.project.clone(),
        requirement_id: row.requirement_id,
        platform: row.platform.clone(),
        channel: row.channel.clone(),
        thread: row.thread.clone(),
        started_by: row.started_by.clone(),
        activity: row.activity.to_string(),
        turn_count: state.turns.len(),
        queued: state.queue.len(),
        created_at: row.created_at,
        updated_at: row.updated_at,
    }
}

fn turn_status(status: TurnStatus) -> &'static str {
    match status {
        TurnStatus::Queued => "queued",
        TurnStatus::Running => "running",
        TurnStatus::Replied => "replied",
        TurnStatus::Failed => "failed",
        TurnStatus::Stopped => "stopped",
    }
}

fn attempt(
    a: &TurnAttemptRow,
    tools: &[TurnToolCallRow],
    usage: &[TurnUsageRow],
    connections: Vec<ConnectionView>,
) -> TurnAttemptView {
    let same = |seq: i64, attempt: i32| seq == a.seq && attempt == a.attempt;
    let mut by_n: BTreeMap<i32, ToolCallView> = BTreeMap::new();
    for t in tools.iter().filter(|t| same(t.seq, t.attempt)) {
        by_n.insert(
            t.n,
            ToolCallView {
                tool: t.tool.clone(),
                summary: t.summary.clone(),
                started_ms: t.started_ms,
                duration_ms: t.duration_ms,
                failed: t.failed,
            },
        );
    }
    TurnAttemptView {
        attempt: u32::try_from(a.attempt).unwrap_or(0),
        role: a.role.clone(),
        status: a.status.to_string(),
        session_id: a.session_id.clone(),
        reply: a.reply.clone(),
        failure: a.failure.clone(),
        started_at: a.started_at,
        finished_at: a.finished_at,
        duration_ms: a.duration_ms,
        cli_ms: a.cli_ms,
        tools: by_n.into_values().collect(),
        connections,
        usage: UsageTotal::of_turns(usage.iter().filter(|u| same(u.seq, u.attempt))),
    }
}
