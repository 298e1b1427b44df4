//! What a run's effects carry for feedback on its pull request: the delivery answering it,
//! and the gate it opens past `max` held to its rule.

use std::collections::BTreeMap;

use chrono::Utc;
use gatehouse_engine::{Effect, Input, Outcome, RunState, apply};
use gatehouse_events::{Feedback, FeedbackKind, NodeSpec, NodeStatus, PullRef, RunStatus};
use gatehouse_sop::{Sop, parse};
use gatehouse_store::RunRow;
use uuid::Uuid;

use super::Context;

const SHIP: &str = "\
name: ship
nodes:
  rebase: { kind: script, run: git rebase }
  implement: { kind: script, run: make, needs: [rebase] }
  deliver:
    kind: deliver
    needs: [implement]
    on_checks_failed: { send_back: implement, max: 1, approvers: [lead] }
    on_conflict: { send_back: rebase, max: 1, approvers: [ana] }
";

fn row(sop: &Sop) -> RunRow {
    RunRow {
        id: Uuid::now_v7(),
        sop: sop.name.clone(),
        sop_version: sop.version.clone(),
        params: "{}".into(),
        requested_by: Some("bob".into()),
        status: RunStatus::Running,
        state: String::new(),
        revision: 0,
        parent_run: None,
        parent_node: None,
        parent_attempt: None,
        requirement_id: None,
        schedule: None,
        scheduled_ms: None,
        project: None,
        workspace: None,
        created_at: Utc::now(),
        updated_at: Utc::now(),
        conversation: None,
    }
}

fn checks(key: &str) -> Feedback {
    Feedback {
        kind: FeedbackKind::ChecksFailed,
        key: key.into(),
        text: "job `test` failed".into(),
        pull: PullRef {
            repo: "acme/api".into(),
            number: 7,
        },
        from: String::new(),
        thread: None,
    }
}

/// Runs every dispatched node to success.
fn work_through(sop: &Sop, state: &mut RunState) {
    while let Some((id, attempt)) = (state.nodes.iter())
        .find(|(_, n)| n.status == NodeStatus::Dispatched)
        .map(|(id, n)| (id.clone(), n.attempt))
    {
        let finished = Input::NodeFinished {
            node: id,
            attempt,
            outcome: Outcome::Succeeded,
        };
        apply(sop, state, finished).expect("a current attempt finishes");
    }
}

fn feedback(sop: &Sop, state: &mut RunState, key: &str) -> Vec<Effect> {
    let input = Input::Feedback {
        feedback: checks(key),
    };
    apply(sop, state, input).expect("feedback taken")
}

#[test]
fn a_delivery_sent_back_by_feedback_answers_it() {
    let sop = parse("ship.yaml", SHIP).expect("valid SOP");
    let mut state = RunState::new(&sop, Some("bob".into()));
    apply(&sop, &mut state, Input::Start).expect("started");
    work_through(&sop, &mut state);
    feedback(&sop, &mut state, "checks:1");
    apply(
        &sop,
        &mut state,
        Input::NodeFinished {
            node: "implement".into(),
            attempt: 2,
            outcome: Outcome::Succeeded,
        },
    )
    .expect("implemented");
    let (run, params) = (row(&sop), BTreeMap::new());
    let context = Context {
        run: &run,
        sop: &sop,
        state: &state,
        params: &params,
        imports: None,
        trace: None,
    };
    let job = context.dispatch("deliver", 2).expect("a deliver job");
    let NodeSpec::Deliver(spec) = job.spec else {
        panic!("a deliver job: {job:?}")
    };
    assert_eq!(spec.answer, Some(checks("checks:1")));
}

#[test]
fn the_gate_past_max_opens_for_its_rule() {
    let sop = parse("ship.yaml", SHIP).expect("valid SOP");
    let mut state = RunState::new(&sop, Some("bob".into()));
    apply(&sop, &mut state, Input::Start).expect("started");
    work_through(&sop, &mut state);
    feedback(&sop, &mut state, "checks:1");
    work_through(&sop, &mut state);
    let effects = feedback(&sop, &mut state, "checks:2");
    assert_eq!(
        effects,
        [Effect::OpenGate {
            node: "deliver".into(),
            attempt: 3
        }]
    );
    let (run, params) = (row(&sop), BTreeMap::new());
    let context = Context {
        run: &run,
        sop: &sop,
        state: &state,
        params: &params,
        imports: None,
        trace: None,
    };
    let gate = context.opening("deliver").expect("the deliver node's gate");
    assert_eq!(gate.approvers, ["lead"]);
    assert_eq!(gate.send_back, ["implement"]);
    // Not the other rule's approvers: the definition alone names no deliver gate.
    assert_eq!(sop.node("deliver").and_then(|n| n.gate()), None);
}
