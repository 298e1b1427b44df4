//! A run as `GET /runs/{id}` shows it: its nodes, attempts, artifacts, decisions, the
//! schedule fire that started it, what its agents used and where their sandboxes connected.

use std::collections::BTreeMap;
use std::sync::Arc;

use gatehouse_engine::RunState;
use gatehouse_sop::Sop;
use gatehouse_store::RunRow;
use uuid::Uuid;

use crate::api::connections::by_node_attempt;
use crate::api::schedules::millis;
use crate::projects::{Reader, hidden, may_read, readable};
use crate::views::*;
use crate::{ApiError, ApiState};

/// Run `id` in full, or 404.
pub(crate) async fn detail(
    api: &ApiState,
    id: Uuid,
    reader: Reader<'_>,
) -> Result<RunDetail, ApiError> {
    Ok(loaded(api, id, reader).await?.detail)
}

/// Run `id`'s row, or 404 when there is none or `reader` may not read it (the same 404:
/// a run of a project one may not read is not confirmed to exist).
pub(crate) async fn readable_row(
    api: &ApiState,
    id: Uuid,
    reader: Reader<'_>,
) -> Result<RunRow, ApiError> {
    let missing = || ApiError::NotFound(format!("no run {id}"));
    let row = api.store.run(id).await?.ok_or_else(missing)?;
    readable(api, row.project.as_deref(), reader, missing)?;
    Ok(row)
}

/// [`readable_row`], with the run's definition and state.
pub(crate) async fn load_readable(
    api: &ApiState,
    id: Uuid,
    reader: Reader<'_>,
) -> Result<(RunRow, Arc<Sop>, RunState), ApiError> {
    let row = readable_row(api, id, reader).await?;
    api.runs.decode(row).await
}

/// A run in full, with what it was read from: the console draws its graph and gates from
/// the same read.
pub(crate) struct Loaded {
    pub(crate) detail: RunDetail,
    pub(crate) row: RunRow,
    pub(crate) sop: Arc<Sop>,
    pub(crate) run: RunState,
}

/// Run `id` in full with its row, definition and state, or 404 (also when `reader` may
/// not read it).
pub(crate) async fn loaded(
    api: &ApiState,
    id: Uuid,
    reader: Reader<'_>,
) -> Result<Loaded, ApiError> {
    // The scheduler records a decision in the transaction that applies it, so reading the
    // decisions first means every one shown is already in the state read after it.
    let decisions = api.store.decisions(id).await?;
    let (row, sop, run) = load_readable(api, id, reader).await?;
    let attempts = api.store.attempts(id).await?;
    let mut tools: BTreeMap<(String, i32), Vec<ToolCallView>> = BTreeMap::new();
    for call in api.store.tool_calls(id).await? {
        tools
            .entry((call.node, call.attempt))
            .or_default()
            .push(ToolCallView {
                tool: call.tool,
                summary: call.summary,
                started_ms: call.started_ms,
                duration_ms: call.duration_ms,
                failed: call.failed,
            });
    }
    let mut connections = by_node_attempt(api.store.run_connections(id).await?);
    let artifacts = api.store.artifacts(id).await?;
    let usage = usage(api, id, row.requirement_id, reader).await?;
    let (pull_requests, direct_merges) = delivered(api, id, row.requirement_id).await?;
    let pushed_branches = api
        .store
        .pushed_branches_of_run(id)
        .await?
        .into_iter()
        .map(crate::api::requirements::pushed_branch)
        .collect();
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
            tools: tools
                .remove(&(a.node.clone(), a.attempt))
                .unwrap_or_default(),
            connections: connections
                .remove(&(a.node.clone(), a.attempt))
                .unwrap_or_default(),
            node: a.node,
            attempt: a.attempt,
            status: a.status.to_string(),
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
    let workspace: Option<gatehouse_events::RunWorkspace> = row
        .workspace
        .as_deref()
        .and_then(|w| serde_json::from_str(w).ok());
    let repositories = workspace
        .map(|w| w.repositories)
        .unwrap_or_default()
        .into_iter()
        .map(|r| RunRepositoryView {
            repo: r.repo,
            mode: r.mode.as_str().to_owned(),
            branch: r.branch,
            branch_name: r.branch_name,
        })
        .collect();
    let budgets = super::budgets::of_run(&api.store, &row).await?;
    let skills = api
        .store
        .frozen_settings(id, gatehouse_agent::PINNED_KIND)
        .await?
        .into_iter()
        .filter_map(|(name, body)| {
            let pinned: gatehouse_agent::PinnedSkill = serde_json::from_str(&body).ok()?;
            Some(RunSkillView {
                name,
                source: pinned.source.describe(),
                digest: pinned.digest,
                description: pinned.description,
            })
        })
        .collect();
    let detail = RunDetail {
        pull_requests,
        direct_merges,
        pushed_branches,
        usage,
        budgets,
        skills,
        schedule,
        requirement_id: row.requirement_id,
        repositories,
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
        run: summary(row.clone()),
    };
    Ok(Loaded {
        detail,
        row,
        sop,
        run,
    })
}

pub(crate) fn summary(row: RunRow) -> RunSummary {
    RunSummary {
        id: row.id,
        sop: row.sop,
        sop_version: row.sop_version,
        status: row.status.to_string(),
        requested_by: row.requested_by,
        project: row.project,
        parent_run: row.parent_run,
        created_at: row.created_at,
        updated_at: row.updated_at,
    }
}

/// What a run's agent attempts used, with the run's and its requirement's sums (the
/// requirement's over its runs `reader` may read).
async fn usage(
    api: &ApiState,
    run: Uuid,
    requirement: Option<Uuid>,
    reader: Reader<'_>,
) -> Result<UsageView, ApiError> {
    let rows = api.store.usage_of_run(run).await?;
    let requirement = match requirement {
        Some(id) => {
            let mut used = api.store.usage_of_requirement(id).await?;
            // Only someone who may not read some project can meet a run of it here.
            if !hidden(api, reader).is_empty() {
                let unreadable: Vec<Uuid> = api
                    .store
                    .runs_of_requirement(id)
                    .await?
                    .into_iter()
                    .filter(|r| !may_read(api, r.project.as_deref(), reader))
                    .map(|r| r.id)
                    .collect();
                used.retain(|u| !unreadable.contains(&u.run_id));
            }
            Some(UsageTotal::of(&used))
        }
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

/// What the run delivered: the pull requests it delivered into last and its direct merges.
async fn delivered(
    api: &ApiState,
    run: Uuid,
    requirement: Option<Uuid>,
) -> Result<(Vec<PullRequestView>, Vec<DirectMergeView>), ApiError> {
    let Some(requirement) = requirement else {
        return Ok((Vec::new(), Vec::new()));
    };
    let pulls = api
        .store
        .pull_requests_of_requirement(requirement)
        .await?
        .into_iter()
        .filter(|p| p.run_id == run)
        .map(crate::api::requirements::pull_request)
        .collect();
    let merges = api
        .store
        .direct_merges_of_requirement(requirement)
        .await?
        .into_iter()
        .filter(|m| m.run_id == run)
        .map(crate::api::requirements::direct_merge)
        .collect();
    Ok((pulls, merges))
}
