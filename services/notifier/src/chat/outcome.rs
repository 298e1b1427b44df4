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

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{DateTime, Utc};
    use gatehouse_events::{NodeStatus, RunStatus};
    use uuid::Uuid;

    const SOP: &str = "name: t\nnodes:\n  draft: { kind: script, run: 'true' }\n  check: { kind: gate, needs: [draft], approvers: [group:leads], min_approvals: 2, send_back: [draft] }\n";

    fn fixture() -> (Card, RunRow, RunState) {
        let sop = gatehouse_sop::parse("t.yaml", SOP).unwrap();
        let state = RunState::new(&sop, None);
        let at = time("2026-11-30T14:00:00Z");
        let run = RunRow {
            id: Uuid::nil(),
            sop: "t".into(),
            sop_version: sop.version.clone(),
            params: "{}".into(),
            requested_by: None,
            status: gatehouse_events::RunStatus::Running,
            state: String::new(),
            revision: 1,
            parent_run: None,
            parent_node: None,
            parent_attempt: None,
            requirement_id: None,
            schedule: None,
            scheduled_ms: None,
            project: None,
            workspace: None,
            created_at: at,
            updated_at: at,
            conversation: None,
        };
        let card = Card {
            run: run.id,
            sop: "t".into(),
            node: "check".into(),
            attempt: 1,
            requirement: None,
            requirement_url: None,
            run_url: None,
            outputs: vec![],
            approvers: vec![],
            min_approvals: 2,
            approvals: vec![],
            send_back: vec!["draft".into()],
            outcome: None,
            raise: None,
            feedback: None,
        };
        (card, run, state)
    }

    fn time(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn decision(attempt: i32, decision: &str, person: &str, outcome: &str) -> DecisionRow {
        DecisionRow {
            run_id: Uuid::nil(),
            node: "check".into(),
            attempt,
            decision: decision.into(),
            target: (decision == "send_back").then(|| "draft".into()),
            comment: Some(format!("{person} says so")),
            person: person.into(),
            channel: "slack".into(),
            outcome: outcome.into(),
            decided_at: time("2026-11-30T14:05:00Z"),
        }
    }

    #[test]
    fn approvals_name_everyone_who_approved_that_attempt() {
        let (card, run, state) = fixture();
        let decisions = [
            decision(1, "approve", "ana", "applied"),
            decision(1, "approve", "cy", "refused: cy may not decide"),
            decision(1, "approve", "bo", "applied"),
        ];
        let o = outcome(&card, &run, &state, &decisions);
        assert_eq!(o.decision, "approved");
        assert_eq!(o.by, ["ana", "bo"]);
        assert_eq!(o.comment.as_deref(), Some("bo says so"));
    }

    #[test]
    fn a_send_back_names_its_target_and_only_its_attempt_counts() {
        let (card, run, state) = fixture();
        let decisions = [
            decision(1, "send_back", "ana", "applied"),
            decision(2, "reject", "bo", "applied"),
        ];
        let o = outcome(&card, &run, &state, &decisions);
        assert_eq!(o.decision, "sent back to draft");
        assert_eq!(o.by, ["ana"]);
    }

    #[test]
    fn without_a_decision_the_run_says_what_happened() {
        let (card, run, mut state) = fixture();
        let node = state.nodes.get_mut("check").unwrap();
        node.attempt = 1;
        node.status = NodeStatus::Failed;
        node.gate.as_mut().unwrap().status = GateStatus::Expired;
        let o = outcome(&card, &run, &state, &[]);
        assert_eq!((o.decision.as_str(), o.by.len()), ("expired", 0));
        assert_eq!(o.at, run.updated_at);

        state.nodes.get_mut("check").unwrap().attempt = 3;
        let o = outcome(&card, &run, &state, &[]);
        assert_eq!(o.decision, "superseded by attempt 3");

        let node = state.nodes.get_mut("check").unwrap();
        node.attempt = 1;
        node.gate.as_mut().unwrap().status = GateStatus::Cancelled;
        state.status = RunStatus::Cancelled;
        let o = outcome(&card, &run, &state, &[]);
        assert_eq!(o.decision, "closed: the run is cancelled");
    }
}
