//! A deliver node's rules for feedback on its pull request: what they read as, the gate
//! each implies, and where a wrong one is reported.

use gatehouse_events::FeedbackKind;
use gatehouse_sop::{FeedbackRule, NodeKind, parse};

mod common;
use common::errors;

const SHIP: &str = "\
name: ship
nodes:
  rebase: { kind: script, run: git rebase }
  implement: { kind: agent, role: developer, prompt: go, needs: [rebase] }
  test: { kind: script, run: make test, needs: [implement] }
  deliver:
    kind: deliver
    needs: [test]
    mode: pr
    on_review: { send_back: implement }
    on_checks_failed: { send_back: implement, max: 4, approvers: [lead, group:ops] }
    on_conflict: { send_back: rebase, approvers: [ana, lead] }
";

fn rule(send_back: &str, max: u32, approvers: &[&str]) -> FeedbackRule {
    FeedbackRule {
        send_back: send_back.into(),
        max,
        approvers: approvers.iter().map(|a| (*a).to_owned()).collect(),
    }
}

#[test]
fn rules_read_with_their_defaults_and_each_gating_rule_implies_its_gate() {
    let sop = parse("sops/ship.yaml", SHIP).unwrap();
    let (node, rules) = sop.pull_request_node().expect("a pull request node");
    assert_eq!(node.id, "deliver");
    assert_eq!(rules.on_review, Some(rule("implement", 3, &[])));
    assert_eq!(
        rules.on_checks_failed,
        Some(rule("implement", 4, &["lead", "group:ops"]))
    );
    assert_eq!(rules.on_conflict, Some(rule("rebase", 1, &["ana", "lead"])));
    // The definition alone fixes no gate: each opening is held to the rule that opened it.
    assert_eq!(node.gate(), None);
    assert!(node.has_gate());
    let checks = rules.gate_for(FeedbackKind::ChecksFailed).unwrap();
    assert_eq!(checks.approvers, ["lead", "group:ops"]);
    assert_eq!(checks.send_back, ["implement"]);
    assert_eq!((checks.min_approvals, checks.expires_in), (1, None));
    let conflict = rules.gate_for(FeedbackKind::Conflict).unwrap();
    assert_eq!(conflict.approvers, ["ana", "lead"]);
    assert_eq!(conflict.send_back, ["rebase"]);
    assert_eq!(rules.gate_for(FeedbackKind::Review), None);
    assert_eq!(
        sop.feedback_rule(FeedbackKind::Conflict)
            .map(|(n, r)| (n.id.as_str(), r.send_back.as_str())),
        Some(("deliver", "rebase"))
    );
}

#[test]
fn a_gating_rule_without_approvers_lets_anyone_decide() {
    let sop = parse(
        "sops/x.yaml",
        "name: x\nnodes:\n  a: { kind: script, run: ls }\n  d:\n    kind: deliver\n    needs: [a]\n    on_checks_failed: { send_back: a, approvers: [lead] }\n    on_conflict: { send_back: a, max: 0 }\n",
    )
    .unwrap();
    let NodeKind::Deliver { feedback, .. } = &sop.node("d").unwrap().kind else {
        panic!("d delivers")
    };
    let conflict = feedback.gate_for(FeedbackKind::Conflict).unwrap();
    assert!(conflict.approvers.is_empty(), "{conflict:?}");
    assert_eq!(conflict.send_back, ["a"]);
    // The other rule's approvers stay its own.
    let checks = feedback.gate_for(FeedbackKind::ChecksFailed).unwrap();
    assert_eq!(checks.approvers, ["lead"]);
    assert_eq!(sop.feedback_rule(FeedbackKind::Conflict).unwrap().1.max, 0);
}

#[test]
fn a_review_rule_alone_opens_no_gate_and_no_rules_mean_none() {
    let sop = parse(
        "sops/x.yaml",
        "name: x\nnodes:\n  a: { kind: script, run: ls }\n  d: { kind: deliver, needs: [a], on_review: { send_back: a, max: 1 } }\n",
    )
    .unwrap();
    assert!(!sop.node("d").unwrap().has_gate());
    assert!(sop.feedback_rule(FeedbackKind::ChecksFailed).is_none());
    let plain = parse("sops/x.yaml", "name: x\nnodes:\n  d: { kind: deliver }\n").unwrap();
    let NodeKind::Deliver { feedback, .. } = &plain.node("d").unwrap().kind else {
        panic!("d delivers")
    };
    assert!(feedback.is_empty());
    assert_eq!(feedback.rules().count(), 0);
}

#[test]
fn rules_apply_to_pull_request_deliver_nodes_only() {
    assert_eq!(
        errors(
            "name: x\nnodes:\n  a:\n    kind: script\n    run: ls\n    on_review: { send_back: a }\n  d:\n    kind: deliver\n    needs: [a]\n    mode: direct\n    on_conflict: { send_back: a }\n"
        ),
        [
            "sops/x.yaml:6:29: `on_review` does not apply to script nodes: only a deliver node opens a pull request",
            "sops/x.yaml:11:31: `on_conflict` needs `mode: pr`: a direct merge opens no pull request to come back from",
        ]
    );
}

#[test]
fn targets_must_be_upstream_and_values_usable() {
    assert_eq!(
        errors(
            "name: x\nnodes:\n  a: { kind: script, run: ls }\n  d:\n    kind: deliver\n    needs: [a]\n    on_review: { send_back: z, max: 0, approvers: [ana] }\n    on_checks_failed: { send_back: nowhere, approvers: [] }\n    on_conflict: { send_back: a, approvers: [\"group:\"] }\n  z: { kind: script, run: ls, needs: [d] }\n"
        ),
        [
            "sops/x.yaml:7:29: `on_review.send_back` of `d` names `z`, which is not upstream of it; work can only be sent back to an earlier node",
            "sops/x.yaml:7:37: `on_review.max` must be at least 1; leave `on_review` out to take no reviews",
            "sops/x.yaml:7:51: `on_review.approvers` does not apply: a review past `max` is refused, no gate opens",
            "sops/x.yaml:8:36: `on_checks_failed.send_back` names `nowhere`, which is not a node of this SOP",
            "sops/x.yaml:8:56: `on_checks_failed.approvers` names nobody; name person ids or group:<name>, or leave it out to let anyone who may decide gates decide",
            "sops/x.yaml:9:46: `on_conflict.approvers`: `group:` names no group; write group:<name>",
        ]
    );
}

#[test]
fn only_the_last_pull_request_node_takes_rules() {
    assert_eq!(
        errors(
            "name: x\nnodes:\n  a: { kind: script, run: ls }\n  first: { kind: deliver, needs: [a], on_review: { send_back: a } }\n  last: { kind: deliver, needs: [first] }\n"
        ),
        [
            "sops/x.yaml:4:63: `on_review` of `first` is never used: feedback on the pull request goes to `last`, the last deliver node with `mode: pr`",
        ]
    );
    // A direct merge after the pull request does not take them over.
    let sop = parse(
        "sops/x.yaml",
        "name: x\nnodes:\n  a: { kind: script, run: ls }\n  pr: { kind: deliver, needs: [a], on_review: { send_back: a } }\n  merge: { kind: deliver, needs: [pr], mode: direct }\n",
    )
    .unwrap();
    assert_eq!(
        sop.pull_request_node().map(|(n, _)| n.id.as_str()),
        Some("pr")
    );
}

#[test]
fn a_rule_takes_only_its_own_keys() {
    let e = errors(
        "name: x\nnodes:\n  a: { kind: script, run: ls }\n  d: { kind: deliver, needs: [a], on_review: { send_back: a, tries: 2 } }\n",
    );
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(e[0].starts_with("sops/x.yaml:4:"), "{e:?}");
    assert!(e[0].contains("unknown key `tries`"), "{e:?}");
}
