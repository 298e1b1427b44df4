//! How long gates waited for people, over time: each gate attempt settled in a run of the
//! window, from when it opened (see `gates::opened_at`) to the decision that settled it,
//! averaged per bucket of when it was settled and per group of its run. Pure.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use chrono::NaiveDate;
use gatehouse_sop::Sop;
use gatehouse_store::{NodeFinish, RunOutline, SettledGate};
use uuid::Uuid;

use super::By;
use crate::api::gates::opened_at;

/// Per group, the mean seconds gates settled in each of `buckets` waited; NaN in a
/// bucket where none was settled. Groups are the report's; by model (which gates do not
/// have), by SOP. Gates of runs not in `runs` (not readable, or outside the window) and
/// of SOP versions not in `sops` are left out.
pub(crate) fn gate_waits(
    by: By,
    runs: &[RunOutline],
    gates: &[SettledGate],
    finishes: &[NodeFinish],
    sops: &HashMap<String, Arc<Sop>>,
    buckets: &[NaiveDate],
) -> BTreeMap<String, Vec<f64>> {
    let by_id: HashMap<Uuid, &RunOutline> = runs.iter().map(|r| (r.id, r)).collect();
    let mut finished: HashMap<Uuid, Vec<(&str, chrono::DateTime<chrono::Utc>)>> = HashMap::new();
    for f in finishes {
        finished
            .entry(f.run_id)
            .or_default()
            .push((f.node.as_str(), f.finished_at));
    }
    // (total seconds, gates) per group and bucket.
    let mut sums: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for gate in gates {
        let Some(run) = by_id.get(&gate.run_id) else {
            continue;
        };
        let Some(sop) = sops.get(&run.sop_version) else {
            continue;
        };
        let day = gate.decided_at.date_naive();
        let Some(i) = buckets.partition_point(|b| *b <= day).checked_sub(1) else {
            continue;
        };
        let opened = opened_at(
            sop,
            &gate.node,
            run.created_at,
            finished.get(&gate.run_id).into_iter().flatten().copied(),
            gate.decided_at,
        );
        let waited = (gate.decided_at - opened).num_milliseconds().max(0) as f64 / 1000.0;
        let key = by.key(run).unwrap_or_else(|| run.sop.clone());
        let slots = sums
            .entry(key)
            .or_insert_with(|| vec![(0.0, 0.0); buckets.len()]);
        slots[i].0 += waited;
        slots[i].1 += 1.0;
    }
    sums.into_iter()
        .map(|(key, slots)| {
            let means = slots
                .into_iter()
                .map(|(total, n)| if n > 0.0 { total / n } else { f64::NAN })
                .collect();
            (key, means)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{DateTime, Utc};
    use gatehouse_events::RunStatus;

    fn at(text: &str) -> DateTime<Utc> {
        text.parse().unwrap()
    }

    #[test]
    fn gates_wait_from_the_end_of_what_they_need_to_their_decision() {
        let sop = gatehouse_sop::parse(
            "x.yaml",
            "name: x
nodes:
  draft: { kind: script, run: a }
  check: { kind: gate, needs: [draft], approvers: [ana] }
",
        )
        .unwrap();
        let run = RunOutline {
            id: Uuid::now_v7(),
            sop: "x".into(),
            sop_version: sop.version.clone(),
            requested_by: None,
            status: RunStatus::Succeeded,
            project: None,
            created_at: at("2026-12-01T09:00:00Z"),
            updated_at: at("2026-12-03T09:00:00Z"),
        };
        let settled = |attempt, decided: &str| SettledGate {
            run_id: run.id,
            node: "check".into(),
            attempt,
            decided_at: at(decided),
        };
        let finish = |finished: &str| NodeFinish {
            run_id: run.id,
            node: "draft".into(),
            finished_at: at(finished),
        };
        let buckets: Vec<NaiveDate> = ["2026-12-01", "2026-12-02", "2026-12-03"]
            .map(|d| d.parse().unwrap())
            .to_vec();
        let sops = HashMap::from([(sop.version.clone(), Arc::new(sop))]);
        let waits = gate_waits(
            By::Project,
            std::slice::from_ref(&run),
            // Sent back after an hour on the 1st; the redo waited two hours on the 3rd.
            &[
                settled(1, "2026-12-01T11:00:00Z"),
                settled(2, "2026-12-03T12:00:00Z"),
            ],
            &[
                finish("2026-12-01T10:00:00Z"),
                finish("2026-12-03T10:00:00Z"),
            ],
            &sops,
            &buckets,
        );
        let means = &waits["no project"];
        assert_eq!(means[0], 3600.0);
        assert!(means[1].is_nan(), "no gate settled on the 2nd: a gap");
        assert_eq!(means[2], 7200.0);
    }
}
