//! Answers to the commands that ask (`status`, `runs`, `schedules`, `sops`).

use gatehouse_commands::IdRef;
use gatehouse_engine::gate_in_force;
use gatehouse_events::NodeStatus;
use gatehouse_store::RunRow;

use super::Scope;
use super::targets::in_scope;
use crate::projects::{self, Reader};
use crate::{ApiError, ApiState};

/// Runs with the gates that wait and who may decide: the one named, or the scope's
/// requirement's runs, newest first — those `reader` may read (a run they may not is
/// answered as one that does not exist).
pub(super) async fn status(
    api: &ApiState,
    scope: &Scope<'_>,
    reader: Reader<'_>,
    run: Option<IdRef>,
) -> Result<String, ApiError> {
    let runs = match (run, scope.requirement) {
        // Resolving reads only runs `reader` may read.
        (Some(run), _) => vec![in_scope(api, scope, reader, &run).await?],
        (None, Some(requirement)) => {
            let mut runs = api.store.runs_of_requirement(requirement.id).await?;
            runs.retain(|r| projects::may_read(api, r.project.as_deref(), reader));
            runs
        }
        (None, None) => {
            return Ok(format!(
                "No run works on this {}; name one: `status RUN`.",
                scope.place
            ));
        }
    };
    if runs.is_empty() {
        return Ok(format!("No run works on this {} yet.", scope.place));
    }
    let mut out = String::from("Runs:\n");
    for row in runs {
        out.push_str(&run_line(api, row).await?);
    }
    Ok(out)
}

/// The runs not finished yet, in every project `reader` may read (`runs` in chat).
pub(super) async fn active_runs(api: &ApiState, reader: Reader<'_>) -> Result<String, ApiError> {
    let hidden = projects::hidden(api, reader);
    let mut out = String::new();
    for status in ["running", "waiting", "paused", "queued", "requested"] {
        for row in api.store.runs(Some(status), &hidden, 20).await? {
            out.push_str(&run_line(api, row).await?);
        }
    }
    if out.is_empty() {
        return Ok("No run is active.".into());
    }
    Ok(format!("Active runs:\n{out}"))
}

/// One run as a list line: status, and each gate that waits with who may decide.
pub(super) async fn run_line(api: &ApiState, row: RunRow) -> Result<String, ApiError> {
    let (row, sop, state) = api.runs.decode(row).await?;
    let mut out = format!("- `{}` {} — {}", row.id, row.sop, row.status);
    for (node, n) in &state.nodes {
        if n.status != NodeStatus::WaitingApproval {
            continue;
        }
        let approvers = match sop.node(node).and_then(|def| gate_in_force(def, n)) {
            Some(gate) if !gate.approvers.is_empty() => gate.approvers.join(", "),
            _ => "anyone configured".into(),
        };
        out.push_str(&format!(
            "; gate `{}/{node}` (attempt {}) waits for {approvers}",
            row.id, n.attempt
        ));
    }
    out.push('\n');
    Ok(out)
}

/// The schedules of no project or of one `reader` may read, for `schedules`.
pub(super) async fn schedule_list(api: &ApiState, reader: Reader<'_>) -> Result<String, ApiError> {
    let hidden = projects::hidden(api, reader);
    let schedules = api.store.schedules(None, &hidden, 50).await?;
    if schedules.is_empty() {
        return Ok("No schedules.".into());
    }
    let mut out = String::from("Schedules:\n");
    for s in schedules {
        let state = if s.paused { " (paused)" } else { "" };
        out.push_str(&format!(
            "- `{}`: `{}` {} → {}{state}\n",
            s.name, s.cron, s.timezone, s.sop
        ));
    }
    Ok(out)
}

/// The SOPs `person` may start where the command was written, for `sops`: those of the
/// place's project (all when it names none, or the place is no project's) that can run
/// in this deployment and whose starters name them, each with its parameters.
pub(super) fn sop_list(
    api: &ApiState,
    scope: &Scope<'_>,
    person: &str,
    groups: &[String],
) -> String {
    let project = scope.project.and_then(|name| api.projects.get(name));
    let mut out = String::new();
    for sop in api.catalog.current().iter() {
        if sop.unavailable.is_some()
            || !sop.may_start(person, groups)
            || project.is_some_and(|p| !p.allows_sop(&sop.name))
        {
            continue;
        }
        out.push_str(&format!("- `{}` — {}", sop.name, sop.title));
        let params: Vec<String> = sop
            .params
            .iter()
            .map(|(name, param)| match (&param.default, param.required) {
                (Some(default), _) => format!("`{name}` (default `{default}`)"),
                (None, true) => format!("`{name}` (required)"),
                (None, false) => format!("`{name}`"),
            })
            .collect();
        if !params.is_empty() {
            out.push_str(&format!("; parameters: {}", params.join(", ")));
        }
        out.push('\n');
    }
    if out.is_empty() {
        return format!("No SOP you may start in this {}.", scope.place);
    }
    format!("SOPs you may start here (`run SOP KEY=VALUE ...`):\n{out}")
}
