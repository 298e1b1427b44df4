//! When a gate opened, from what the store keeps: a gate node opens when the last node
//! it needs finishes (the run's start, for a gate that needs none); a gate at an agent or
//! deliver node opens when that node's attempt finishes. Nothing records the opening
//! itself, and a node that finished after `before` cannot have opened it.

use chrono::{DateTime, Utc};
use gatehouse_sop::{NodeKind, Sop};

/// When the gate at `node` of a run of `sop` (created at `run_created`) opened, given
/// when the run's nodes finished their attempts (`finishes`), looking only before `before`.
pub(crate) fn opened_at<'a>(
    sop: &Sop,
    node: &str,
    run_created: DateTime<Utc>,
    finishes: impl IntoIterator<Item = (&'a str, DateTime<Utc>)>,
    before: DateTime<Utc>,
) -> DateTime<Utc> {
    let opened_by: Vec<&str> = match sop.node(node) {
        Some(def) if matches!(def.kind, NodeKind::Gate(_)) => {
            def.needs.iter().map(String::as_str).collect()
        }
        _ => vec![node],
    };
    finishes
        .into_iter()
        .filter(|(n, at)| *at <= before && opened_by.contains(n))
        .map(|(_, at)| at)
        .max()
        .unwrap_or(run_created)
        .max(run_created)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(minute: u32) -> DateTime<Utc> {
        format!("2026-12-07T10:{minute:02}:00Z").parse().unwrap()
    }

    #[test]
    fn a_gate_opens_when_the_last_node_it_needs_finishes() {
        let sop = gatehouse_sop::parse(
            "x.yaml",
            "name: x
nodes:
  a: { kind: script, run: a }
  b: { kind: script, run: b }
  side: { kind: script, run: c }
  check: { kind: gate, needs: [a, b], approvers: [ana] }
  first: { kind: gate, approvers: [ana] }
",
        )
        .unwrap();
        let finishes = [("a", at(5)), ("b", at(9)), ("side", at(20)), ("b", at(40))];
        // The other branch and a redo after `before` do not count.
        assert_eq!(opened_at(&sop, "check", at(0), finishes, at(30)), at(9));
        // The redo of `b` reopened it.
        assert_eq!(opened_at(&sop, "check", at(0), finishes, at(50)), at(40));
        // A gate needing nothing opened with the run.
        assert_eq!(opened_at(&sop, "first", at(1), finishes, at(50)), at(1));
        // A node asking for a budget opened its gate when its attempt ended.
        assert_eq!(opened_at(&sop, "side", at(0), finishes, at(50)), at(20));
    }
}
