//! Requirements: `GET /requirements` and `GET /requirements/{id}` show what people asked for,
//! where, and what was done for it (its runs, the pull requests its deliveries opened, what
//! its agents used). Creating one is what every source shares: [`crate::new_requirement`].

pub(crate) mod views;

use axum::Json;
use axum::extract::{Path, Query, State};
use gatehouse_store::{DirectMergeRow, PullRequestRow, PushedBranchRow, RequirementRow};
use serde::Deserialize;

use crate::error::ErrorBody;
use crate::ids;
use crate::rights::Caller;
use crate::views::{
    DirectMergeView, PullEventView, PullRequestView, PushedBranchView, RequirementDetail,
    RequirementSummary, UsageTotal,
};
use crate::{ApiError, ApiState, paging, projects};
use gatehouse_store::IdKind;

/// Query of `GET /requirements`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
pub struct RequirementQuery {
    /// Only requirements in this state (open, closed or delivered).
    pub state: Option<String>,
    /// At most this many (default 50, at most 500).
    pub limit: Option<i64>,
}

/// Lists requirements, newest first: those of projects the caller may read.
#[utoipa::path(get, path = "/requirements", params(RequirementQuery), responses((status = 200, body = [RequirementSummary])))]
pub async fn list(
    State(api): State<ApiState>,
    caller: Caller,
    Query(q): Query<RequirementQuery>,
) -> Result<Json<Vec<RequirementSummary>>, ApiError> {
    let limit = paging::LIST.limit(q.limit);
    let hidden = projects::hidden(&api, caller.reader());
    let rows = api
        .store
        .requirements(q.state.as_deref(), &hidden, limit)
        .await?;
    Ok(Json(rows.into_iter().map(summary).collect()))
}

/// A requirement with its runs, pull requests and usage; 404 for one of a project the
/// caller may not read. Its runs and conversations in projects the caller may not read
/// are left out, and so is what they used.
#[utoipa::path(get, path = "/requirements/{id}", responses((status = 200, body = RequirementDetail), (status = 404, body = ErrorBody)))]
pub async fn show(
    State(api): State<ApiState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<RequirementDetail>, ApiError> {
    let id = ids::resolve(&api, IdKind::Requirement, &id, caller.reader()).await?;
    let reader = caller.reader();
    let missing = || ApiError::NotFound(format!("no requirement {id}"));
    let row = api.store.requirement(id).await?.ok_or_else(missing)?;
    projects::readable(&api, row.project.as_deref(), reader, missing)?;
    let mut runs = api.store.runs_of_requirement(id).await?;
    runs.retain(|r| projects::may_read(&api, r.project.as_deref(), reader));
    let mut conversations = api.store.conversations_of_requirement(id).await?;
    let all_conversations = conversations.len();
    conversations.retain(|c| projects::may_read(&api, Some(&c.project), reader));
    let pull_requests = api.store.pull_requests_of_requirement(id).await?;
    let direct_merges = api.store.direct_merges_of_requirement(id).await?;
    let pushed_branches = api.store.pushed_branches_of_requirement(id).await?;
    let pull_events = api.store.pull_events_of_requirement(id, 200).await?;
    // Runs' agent nodes and conversations' turns alike.
    let mut used = api.store.usage_of_requirement(id).await?;
    used.retain(|u| runs.iter().any(|r| r.id == u.run_id));
    let mut usage = UsageTotal::of(&used);
    // The turns: summed per model by the store when every conversation may be read,
    // else those of each conversation that may.
    let turns = if conversations.len() == all_conversations {
        api.store.requirement_turn_usage(id).await?
    } else {
        let mut readable = Vec::new();
        for c in &conversations {
            readable.extend(api.store.turn_usage(c.id).await?.into_iter().map(|t| {
                gatehouse_store::ModelUsageTotal {
                    model: t.model,
                    input_tokens: t.input_tokens,
                    output_tokens: t.output_tokens,
                    cache_read_tokens: t.cache_read_tokens,
                    cache_write_tokens: t.cache_write_tokens,
                    cost_usd: t.cost_usd,
                }
            }));
        }
        readable
    };
    for turns in turns {
        let tokens = [
            turns.input_tokens,
            turns.output_tokens,
            turns.cache_read_tokens,
            turns.cache_write_tokens,
        ];
        usage.add(&turns.model, tokens, turns.cost_usd);
    }
    Ok(Json(RequirementDetail {
        body: row.body.clone(),
        requirement: summary(row),
        runs: runs.into_iter().map(crate::api::runs::summary).collect(),
        conversations: conversations
            .iter()
            .map(crate::api::conversations::listed)
            .collect::<Result<_, _>>()?,
        pull_requests: pull_requests.into_iter().map(pull_request).collect(),
        pull_request_events: pull_events
            .into_iter()
            .map(|e| PullEventView {
                repo: e.repo,
                number: e.number,
                event: e.event,
                actor: e.actor,
                summary: e.summary,
                outcome: e.outcome,
                delivery: e.delivery_id,
                at: e.created_at,
            })
            .collect(),
        direct_merges: direct_merges.into_iter().map(direct_merge).collect(),
        pushed_branches: pushed_branches.into_iter().map(pushed_branch).collect(),
        usage,
    }))
}

/// A pull request a delivery opened, as the requirement and conversation views show it.
pub(crate) fn pull_request(p: PullRequestRow) -> PullRequestView {
    PullRequestView {
        repo: p.repo,
        number: p.number,
        branch: p.branch,
        run_id: p.run_id,
        state: p.state.to_string(),
        opened_at: p.created_at,
        head: p.head_sha,
        checks: p.checks,
    }
}

/// Work a delivery merged into a branch itself, as the requirement and run views show it.
pub(crate) fn pushed_branch(p: PushedBranchRow) -> PushedBranchView {
    PushedBranchView {
        repo: p.repo,
        branch: p.branch,
        commit: p.commit_sha,
        remote: p.remote,
        forge: p.forge,
        request: p.request_number,
        request_url: p.request_url,
        run_id: p.run_id,
        pushed_at: p.created_at,
    }
}

pub(crate) fn direct_merge(m: DirectMergeRow) -> DirectMergeView {
    DirectMergeView {
        repo: m.repo,
        branch: m.branch,
        commit: m.commit_sha,
        run_id: m.run_id,
        approved_by: m.approved_by,
        merged_at: m.created_at,
    }
}

fn summary(row: RequirementRow) -> RequirementSummary {
    RequirementSummary {
        id: row.id,
        key: row.source_key,
        // Written by Gatehouse as JSON; a row from elsewhere shows as its text.
        source: serde_json::from_str(&row.source).unwrap_or(serde_json::Value::String(row.source)),
        title: row.title,
        url: row.url,
        state: row.state.to_string(),
        requested_by: row.requested_by,
        project: row.project,
        created_at: row.created_at,
        updated_at: row.updated_at,
    }
}
