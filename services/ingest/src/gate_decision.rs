//! Gate decisions, whatever their channel (the API, the console, comments, chat): checked
//! against the run and the gate's policy, then claimed compare-and-set in the caller's
//! transaction, so of two decisions racing for one gate attempt the second is refused.

use gatehouse_engine::{Decision, Input, apply, gate_in_force};
use gatehouse_events::{Actor, GateDecision, GateDecisionKind};
use gatehouse_store::{Claim, OutcomeRow, Tx, Vote};
use uuid::Uuid;

use crate::views::{Decide, DecisionKind};
use crate::{ApiError, ApiState, projects};

/// A decision checked against the run and the gate's policy and claimed in `tx`, ready to
/// emit: what the API, comment commands and chat share. The decider's groups are those
/// of the person the request came in as (resolved once, where it came in). The claim
/// makes it compare-and-set: of two decisions racing for the same gate attempt, the second
/// is refused (409) with who decided first.
pub(crate) async fn checked_decision(
    api: &ApiState,
    tx: &mut Tx,
    id: Uuid,
    node: String,
    body: Decide,
    actor: Actor,
    groups: Vec<String>,
) -> Result<GateDecision, ApiError> {
    // Only a person known to Gatehouse decides: an unmapped account's handle could be
    // anyone's name.
    let person = actor.person.clone().ok_or_else(|| {
        ApiError::Forbidden(format!(
            "`{}` is not one of the people known to Gatehouse, so it cannot decide gates",
            actor.handle
        ))
    })?;
    let (row, sop, mut run) = api.runs.load(id).await?;
    projects::may_decide(api, row.project.as_deref(), &person, &groups)?;
    let current = run
        .nodes
        .get(&node)
        .map(|n| n.attempt)
        .ok_or_else(|| ApiError::NotFound(format!("run {id} has no node `{node}`")))?;
    let attempt = body.attempt.unwrap_or(current);
    let (decision, kind) = match body.decision {
        DecisionKind::Approve => (Decision::Approve, GateDecisionKind::Approve),
        DecisionKind::Reject => (Decision::Reject, GateDecisionKind::Reject),
        DecisionKind::SendBack => {
            let to = body.to.clone().ok_or_else(|| {
                ApiError::Unprocessable("send_back needs `to`: the node to redo".into())
            })?;
            (
                Decision::SendBack { to: to.clone() },
                GateDecisionKind::SendBack { to },
            )
        }
    };
    // Read before the decision is applied: an approval that settles a deliver node's gate
    // ends the feedback it was in force for.
    let min_approvals = sop
        .node(&node)
        .zip(run.nodes.get(&node))
        .and_then(|(def, n)| gate_in_force(def, n))
        .map_or(1, |gate| gate.min_approvals);
    let input = Input::Decide {
        node: node.clone(),
        attempt,
        decision,
        comment: body.comment.clone(),
        person: person.clone(),
        groups: groups.clone(),
    };
    apply(&sop, &mut run, input)?;
    let vote = Vote {
        run_id: id,
        node: &node,
        attempt,
        person: &person,
        decision: kind.name(),
        target: match &kind {
            GateDecisionKind::SendBack { to } => Some(to.as_str()),
            _ => None,
        },
        channel: actor.channel.as_str(),
        min_approvals,
    };
    match tx.claim_decision(&vote).await? {
        Claim::Counted | Claim::Settled => {}
        Claim::AlreadyVoted => {
            return Err(ApiError::Conflict(format!(
                "{person} already decided on attempt {attempt} of gate `{node}`"
            )));
        }
        Claim::AlreadySettled(outcome) => {
            return Err(ApiError::Conflict(settled_by(&outcome)));
        }
    }
    Ok(GateDecision {
        run_id: id,
        node,
        attempt,
        decision: kind,
        comment: body.comment,
        actor,
        groups,
    })
}

/// Who settled a gate attempt, for whoever came second.
pub(crate) fn settled_by(outcome: &OutcomeRow) -> String {
    let what = match (outcome.decision.as_str(), &outcome.target) {
        ("approve", _) => "approved".to_owned(),
        ("reject", _) => "rejected".to_owned(),
        (_, Some(target)) => format!("sent back to `{target}`"),
        (other, None) => other.to_owned(),
    };
    format!(
        "gate `{}` (attempt {}) was already {what} by {} at {} ({})",
        outcome.node,
        outcome.attempt,
        outcome.decided_by,
        outcome.decided_at.format("%Y-%m-%d %H:%M:%S UTC"),
        outcome.channel
    )
}
