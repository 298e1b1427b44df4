//! What a run's gates approved, as delivery holds the workspace to it.
//!
//! Each applied approval bound the workspace's trees as they stood (the scheduler copies
//! them beside the decision). The approval delivery answers to is the run's latest one:
//! a later gate saw the work as it is after what ran since the earlier gate, so an SOP that
//! approves a plan, works on, and approves the code delivers the approved code. Work that
//! changed after the latest approval — a node after the gate, a process still writing, a
//! hand in the workspace — is refused, naming the gate and the repository.

use std::collections::BTreeMap;

use gatehouse_store::{DecisionRow, TreeRow};

use super::trees::{UNVERIFIABLE, short};

/// The approval delivery answers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Approval {
    /// The gate node.
    pub gate: String,
    pub attempt: i32,
    /// `owner/name` → the tree it saw.
    pub trees: BTreeMap<String, String>,
}

/// The run's latest applied approval that bound trees, if any (a run whose gates saw no
/// repository binds none).
pub(crate) fn latest(decisions: &[DecisionRow], approved: &[TreeRow]) -> Option<Approval> {
    decisions
        .iter()
        .rev()
        .filter(|d| d.decision == "approve" && d.outcome == "applied")
        .find_map(|d| {
            let trees: BTreeMap<String, String> = approved
                .iter()
                .filter(|t| t.node == d.node && t.attempt == d.attempt)
                .map(|t| (t.repo.clone(), t.tree.clone()))
                .collect();
            (!trees.is_empty()).then(|| Approval {
                gate: d.node.clone(),
                attempt: d.attempt,
                trees,
            })
        })
}

impl Approval {
    /// `Ok` when `repo`'s tree is `now` the one approved; else the refusal.
    pub(crate) fn check(&self, repo: &str, now: &str) -> Result<(), String> {
        let approved = self.trees.get(repo);
        if approved.is_some_and(|a| a == now && !a.starts_with(UNVERIFIABLE)) {
            return Ok(());
        }
        let was = match approved {
            Some(tree) if tree.starts_with(UNVERIFIABLE) => {
                format!("its tree could not be verified when it was approved ({tree})")
            }
            Some(tree) => format!("approved tree {}", short(tree)),
            None => "the approval saw no tree of it".to_owned(),
        };
        Err(format!(
            "the workspace changed after gate `{}` approved it: {repo} is not what was approved ({was}, now {}); deliver pushes only approved work — send the run back to the gate to approve the change",
            self.gate,
            short(now)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decision(node: &str, attempt: i32, decision: &str, outcome: &str) -> DecisionRow {
        DecisionRow {
            run_id: uuid::Uuid::nil(),
            node: node.into(),
            attempt,
            decision: decision.into(),
            target: None,
            comment: None,
            person: "ana".into(),
            channel: "api".into(),
            outcome: outcome.into(),
            decided_at: Default::default(),
        }
    }

    fn tree(node: &str, attempt: i32, repo: &str, tree: &str) -> TreeRow {
        TreeRow {
            node: node.into(),
            attempt,
            repo: repo.into(),
            tree: tree.into(),
        }
    }

    const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

    #[test]
    fn the_latest_applied_approval_is_the_one_delivery_answers_to() {
        let decisions = [
            decision("plan", 1, "approve", "applied"),
            decision("review", 1, "send_back", "applied"),
            decision("review", 2, "approve", "refused: not an approver"),
            decision("review", 2, "approve", "applied"),
        ];
        let approved = [
            tree("plan", 1, "acme/api", A),
            tree("review", 2, "acme/api", B),
        ];
        let approval = latest(&decisions, &approved).unwrap();
        assert_eq!((approval.gate.as_str(), approval.attempt), ("review", 2));
        assert_eq!(approval.check("acme/api", B), Ok(()));
        assert!(
            latest(&decisions[..1], &[]).is_none(),
            "no trees bound, nothing to answer to"
        );
    }

    #[test]
    fn a_changed_missing_or_unverifiable_tree_is_refused_naming_gate_and_repository() {
        let approval = Approval {
            gate: "review".into(),
            attempt: 1,
            trees: BTreeMap::from([
                ("acme/api".to_owned(), A.to_owned()),
                (
                    "acme/web".to_owned(),
                    format!("{UNVERIFIABLE}`.git` is a symbolic link"),
                ),
            ]),
        };
        assert_eq!(
            approval.check("acme/api", B).unwrap_err(),
            "the workspace changed after gate `review` approved it: acme/api is not what was approved (approved tree aaaaaaaaaaaa, now bbbbbbbbbbbb); deliver pushes only approved work — send the run back to the gate to approve the change"
        );
        let unverifiable = approval
            .check("acme/web", &approval.trees["acme/web"])
            .unwrap_err();
        assert!(
            unverifiable
                .contains("acme/web is not what was approved (its tree could not be verified"),
            "{unverifiable}"
        );
        let unseen = approval.check("acme/docs", A).unwrap_err();
        assert!(unseen.contains("acme/docs is not what was approved (the approval saw no tree of it, now aaaaaaaaaaaa)"), "{unseen}");
    }
}
