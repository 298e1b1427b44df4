//! How a gate attempt ended, for its cards: from the decision audit trail, or from the run
//! when Gatehouse itself ended it (expiry, cancellation, a later attempt).

use gatehouse_chat::{Card, Outcome};
use gatehouse_engine::RunState;
use gatehouse_events::GateStatus;
use gatehouse_store::{DecisionRow, RunRow};

/// The outcome of `card`'s attempt.
pub(crate) fn outcome(
    card: &Card,
    run: &RunRow,
    state: &RunState,
    decisions: &[DecisionRow],
) -> Outcome {
    let applied: Vec<&DecisionRow> = decisions
        .iter()
        .filter(|d| {
            d.node == card.node
                && u32::try_from(d.attempt).ok() == Some(card.attempt)
                && d.outcome == "applied"
        })
        .collect();
    if let Some(last) = applied.last() {
        let decision = match (last.decision.as_str(), &last.target) {
            ("approve", _) => "approved".to_owned(),
            ("reject", _) => "rejected".to_owned(),
            (_, Some(target)) => format!("sent back to {target}"),
            (other, None) => other.to_owned(),
        };
        let by = if last.decision == "approve" {
            applied
                .iter()
                .filter(|d| d.decision == "approve")
                .map(|d| d.person.clone())
                .collect()
        } else {
            vec![last.person.clone()]
        };
        return Outcome {
            decision,
            by,
            at: last.decided_at,
            comment: last.comment.clone(),
        };
    }
    let decision = match state.nodes.get(&card.node) {
        Some(n) if n.attempt != card.attempt => {
            format!("superseded by attempt {}", n.attempt)
        }
        Some(n) => match n.gate.as_ref().map(|g| g.status) {
            Some(GateStatus::Expired) => "expired".into(),
            Some(GateStatus::Approved) => "approved".into(),
            Some(GateStatus::Rejected) => "rejected".into(),
            Some(GateStatus::SentBack) => "sent back".into(),
            Some(GateStatus::Cancelled) | Some(GateStatus::Waiting) | None => {
                format!("closed: the run is {}", state.status.as_str())
            }
        },
        None => "closed".into(),
    };
    Outcome {
        decision,
        by: Vec::new(),
        at: run.updated_at,
        comment: None,
    }
}
