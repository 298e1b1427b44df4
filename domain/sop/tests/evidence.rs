//! A gate's `evidence`: the artifacts of upstream nodes shown where it is decided.

use gatehouse_sop::{NodeKind, parse};

mod common;
use common::errors;

fn evidence(text: &str, gate: &str) -> Vec<String> {
    let sop = parse("sops/x.yaml", text).expect("valid SOP");
    match &sop.node(gate).expect("the gate").kind {
        NodeKind::Gate(g) => g.evidence.clone(),
        other => panic!("not a gate: {other:?}"),
    }
}

#[test]
fn a_gate_shows_the_artifacts_it_names() {
    let text = "name: x
nodes:
  plan: { kind: script, run: a, artifacts: [plan.md, notes/log.txt] }
  build: { kind: script, run: b, needs: [plan], artifacts: [out.txt] }
  check:
    kind: gate
    needs: [build]
    approvers: [ana]
    evidence: [plan/notes/log.txt, build/out.txt]
";
    assert_eq!(
        evidence(text, "check"),
        ["plan/notes/log.txt", "build/out.txt"]
    );
}

#[test]
fn without_the_key_a_gate_shows_what_the_nodes_it_needs_keep() {
    let text = "name: x
nodes:
  plan: { kind: script, run: a, artifacts: [plan.md] }
  child: { kind: sop, sop: other, import: [work/report.md] }
  build: { kind: script, run: b, needs: [plan], artifacts: [out.txt] }
  check: { kind: gate, needs: [build, child], approvers: [ana] }
  quiet: { kind: gate, needs: [plan], approvers: [ana], evidence: [] }
";
    assert_eq!(
        evidence(text, "check"),
        ["build/out.txt", "child/report.md"]
    );
    assert!(evidence(text, "quiet").is_empty());
}

#[test]
fn evidence_must_name_an_upstream_node_and_one_of_its_artifacts() {
    let text = "name: x
nodes:
  plan: { kind: script, run: a, artifacts: [plan.md] }
  side: { kind: script, run: a, artifacts: [side.md] }
  check:
    kind: gate
    needs: [plan]
    approvers: [ana]
    evidence: [plan/other.md, side/side.md, nowhere/x.md, plain]
  after: { kind: script, run: a, needs: [check], evidence: [plan/plan.md] }
";
    let errors = errors(text);
    for expected in [
        "`evidence` names `other.md`, which is not an artifact of `plan`; it keeps plan.md",
        "`evidence` of `check` names `side`, which is not upstream of it",
        "`evidence` names `nowhere`, which is not a node of this SOP",
        "`evidence` entry `plain` must be NODE/FILE",
        "`evidence` does not apply to script nodes",
    ] {
        assert!(
            errors.iter().any(|e| e.contains(expected)),
            "no `{expected}` in {errors:#?}"
        );
    }
}
