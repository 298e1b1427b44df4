//! `/gates` and gate decisions.

mod opened;
pub(crate) mod views;

pub(crate) use opened::opened_at;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use std::borrow::Cow;
use std::sync::Arc;

use gatehouse_engine::{Decision, Input, NodeState, RunState, apply, gate_in_force};
use gatehouse_events::{Event, NodeStatus, RunStatus};
use gatehouse_sop::{Gate, Sop};
use gatehouse_store::RunRow;

use crate::error::ErrorBody;
use crate::gate_decision::checked_decision;
use crate::ids;
use crate::rights::Caller;
use crate::views::*;
use crate::{ApiError, ApiState, outbox, projects};
use gatehouse_store::IdKind;

/// Query of `GET /gates`.
#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
pub struct ListQuery {
    /// Only the gates the caller may decide now (as the console's buttons are judged):
    /// none for a token without `decide` or made for an agent.
    #[serde(default)]
    pub for_me: bool,
    /// Only the gates of this run (an id or a unique prefix of one), as `gatehouse run
    /// watch` asks when the run waits.
    pub run: Option<String>,
}

/// Gates waiting for a decision, in all unfinished runs the caller may read.
#[utoipa::path(get, path = "/gates", params(ListQuery), responses((status = 200, body = [GateView]), (status = 400, body = ErrorBody),
    (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub async fn list(
    State(api): State<ApiState>,
    caller: Caller,
    Query(q): Query<ListQuery>,
) -> Result<Json<Vec<GateView>>, ApiError> {
    let run = match &q.run {
        Some(run) => Some(ids::resolve(&api, IdKind::Run, run, caller.reader()).await?),
        None => None,
    };
    Ok(Json(
        waiting(&api, caller.reader())
            .await?
            .into_iter()
            .filter(|w| run.is_none_or(|run| w.row.id == run))
            .filter(|w| {
                !q.for_me
                    || !open_decisions(&api, &caller, &w.row, &w.sop, &w.run, &w.view.node)
                        .is_empty()
            })
            .map(|w| w.view)
            .collect(),
    ))
}

/// A gate waiting for people, with the run it is in.
pub(crate) struct Waiting {
    pub(crate) row: RunRow,
    pub(crate) sop: Arc<Sop>,
    pub(crate) run: RunState,
    pub(crate) view: GateView,
}

/// Every gate waiting for a decision, in all unfinished runs `reader` may read (however
/// many: none may be left out of anyone's inbox).
pub(crate) async fn waiting(
    api: &ApiState,
    reader: projects::Reader<'_>,
) -> Result<Vec<Waiting>, ApiError> {
    let mut gates = Vec::new();
    for status in [RunStatus::Waiting, RunStatus::Running, RunStatus::Paused] {
        for row in api.store.all_runs_with_status(status).await? {
            if !projects::may_read(api, row.project.as_deref(), reader) {
                continue;
            }
            let (row, sop, run) = api.runs.decode(row).await?;
            for (node, n, gate) in waiting_in(&sop, &run) {
                let view = view(&row, node, n, &gate);
                gates.push(Waiting {
                    row: row.clone(),
                    sop: sop.clone(),
                    run: run.clone(),
                    view,
                });
            }
        }
    }
    Ok(gates)
}

/// The gates of one run waiting for people: each gate's id, state and the gate in force.
pub(crate) fn waiting_in<'a>(
    sop: &'a Sop,
    run: &'a RunState,
) -> impl Iterator<Item = (&'a str, &'a NodeState, Cow<'a, Gate>)> {
    run.nodes.iter().filter_map(|(node, n)| {
        if n.status != NodeStatus::WaitingApproval {
            return None;
        }
        let gate = gate_in_force(sop.node(node)?, n)?;
        Some((node.as_str(), n, gate))
    })
}

/// Gate `node` of the run in `row`, in state `n`, as the API and the console show it.
pub(crate) fn view(row: &RunRow, node: &str, n: &NodeState, gate: &Gate) -> GateView {
    GateView {
        id: format!("{}/{node}", row.id),
        run_id: row.id,
        sop: row.sop.clone(),
        node: node.to_owned(),
        attempt: n.attempt,
        approvers: gate.approvers.clone(),
        min_approvals: gate.min_approvals,
        approvals: n
            .gate
            .as_ref()
            .map(|g| g.approvals.clone())
            .unwrap_or_default(),
        send_back: gate.send_back.clone(),
        raise: n.budget_ask().map(str::to_owned),
        feedback: n.feedback_ask(),
    }
}

/// The decisions `caller` may make on gate `node` of this run now, each judged as it would
/// be made (the `decide` scope, the project's approvers, the gate's own rules: a requester
/// may not approve their own work but may send it back or reject it): the console offers
/// exactly these buttons.
pub(crate) fn open_decisions(
    api: &ApiState,
    caller: &Caller,
    row: &RunRow,
    sop: &Sop,
    run: &RunState,
    node: &str,
) -> Vec<DecisionKind> {
    if caller.require(crate::rights::Scope::Decide).is_err()
        || projects::may_decide(api, row.project.as_deref(), &caller.person, &caller.groups)
            .is_err()
    {
        return Vec::new();
    }
    let Some(state) = run.nodes.get(node) else {
        return Vec::new();
    };
    let send_back_to = sop
        .node(node)
        .and_then(|def| gate_in_force(def, state))
        .and_then(|gate| gate.send_back.first().cloned());
    let mut tries = vec![
        (DecisionKind::Approve, Decision::Approve),
        (DecisionKind::Reject, Decision::Reject),
    ];
    if let Some(to) = send_back_to {
        tries.push((DecisionKind::SendBack, Decision::SendBack { to }));
    }
    tries
        .into_iter()
        .filter(|(_, decision)| {
            let input = Input::Decide {
                node: node.to_owned(),
                attempt: state.attempt,
                decision: decision.clone(),
                comment: Some("(checking)".into()),
                person: caller.person.clone(),
                groups: caller.groups.clone(),
            };
            apply(sop, &mut run.clone(), input).is_ok()
        })
        .map(|(kind, _)| kind)
        .collect()
}

/// Decides a gate. The decision is checked against the run first: a gate that is not
/// waiting, an earlier attempt, a second approval by the same person or a send-back the
/// gate does not allow is refused here (409, 422, 403) and changes nothing.
#[utoipa::path(post, path = "/runs/{id}/gates/{node}/decision", request_body = Decide, responses(
    (status = 202, body = Accepted), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
    (status = 409, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn decide(
    State(api): State<ApiState>,
    caller: Caller,
    Path((id, node)): Path<(String, String)>,
    Json(body): Json<Decide>,
) -> Result<(StatusCode, Json<Accepted>), ApiError> {
    let id = ids::resolve(&api, IdKind::Run, &id, caller.reader()).await?;
    let mut tx = api.store.begin().await?;
    let decision =
        checked_decision(&api, &mut tx, id, node, body, caller.actor(), caller.groups).await?;
    let event_id = outbox::append(&mut tx, Event::GateDecision(decision)).await?;
    tx.commit().await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(Accepted {
            run_id: id,
            event_id,
        }),
    ))
}
