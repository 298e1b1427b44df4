//! What a command acts on: the run or gate it names, checked against where it was
//! written, or the one its place implies.

use gatehouse_commands::IdRef;
use gatehouse_events::NodeStatus;
use gatehouse_store::{IdKind, RunRow};
use uuid::Uuid;

use super::Scope;
use crate::ids::resolve_ref;
use crate::projects::Reader;
use crate::{ApiError, ApiState};

/// A named run (its id or a prefix, among the runs `reader` may read), refused when the
/// scope does not reach it: a comment acts on its own issue's runs only.
pub(super) async fn in_scope(
    api: &ApiState,
    scope: &Scope<'_>,
    reader: Reader<'_>,
    run: &IdRef,
) -> Result<RunRow, ApiError> {
    let run = resolve_ref(api, IdKind::Run, run, reader).await?;
    let row = api
        .store
        .run(run)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no run {run}")))?;
    if !scope.anywhere && row.requirement_id != scope.requirement.map(|r| r.id) {
        return Err(ApiError::Forbidden(format!(
            "run {run} does not work on this {}",
            scope.place
        )));
    }
    Ok(row)
}

/// The scope requirement's runs, newest first; none without a requirement.
pub(super) async fn scope_runs(api: &ApiState, scope: &Scope<'_>) -> Result<Vec<RunRow>, ApiError> {
    match scope.requirement {
        Some(requirement) => Ok(api.store.runs_of_requirement(requirement.id).await?),
        None => Ok(Vec::new()),
    }
}

/// The scope's newest run.
pub(super) async fn latest_run(api: &ApiState, scope: &Scope<'_>) -> Result<Uuid, ApiError> {
    scope_runs(api, scope)
        .await?
        .first()
        .map(|r| r.id)
        .ok_or_else(|| {
            ApiError::NotFound(format!("no run works on this {}; name one", scope.place))
        })
}

/// The one gate waiting in the scope's runs; several must be named.
pub(super) async fn waiting_gate(
    api: &ApiState,
    scope: &Scope<'_>,
) -> Result<(Uuid, String), ApiError> {
    let mut waiting = Vec::new();
    for row in scope_runs(api, scope).await? {
        if row.status != "waiting" {
            continue;
        }
        let (row, _, state) = api.runs.decode(row).await?;
        for (node, n) in &state.nodes {
            if n.status == NodeStatus::WaitingApproval {
                waiting.push((row.id, node.clone()));
            }
        }
    }
    match waiting.len() {
        0 => Err(ApiError::Conflict(format!(
            "no gate is waiting on this {}; name one: RUN/NODE",
            scope.place
        ))),
        1 => Ok(waiting.remove(0)),
        _ => Err(ApiError::Conflict(format!(
            "several gates wait on this {}; name one: {}",
            scope.place,
            waiting
                .iter()
                .map(|(run, node)| format!("{run}/{node}"))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}
