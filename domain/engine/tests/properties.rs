//! Random SOP graphs driven by random inputs: the engine never reaches an invalid state,
//! refuses without side effects, and every run ends once people and runners keep deciding.
//! Feedback on the pull request comes at any time: never two pieces of work at once, each
//! rule within its `max`.
//!
//! `PROPTEST_CASES=20000` for a longer search; `SEED=<n> TRACE=1` replays one case with
//! its SOP and inputs printed.

use std::collections::BTreeSet;

use gatehouse_engine::{Decision, Effect, Input, Outcome, RunState, apply, gate_in_force};
use gatehouse_events::{Feedback, FeedbackKind, GateStatus, NodeStatus, PullRef, RunStatus};
use gatehouse_sop::{Sop, parse};
use proptest::prelude::*;

/// A small deterministic generator, so one proptest seed drives a whole run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// A random valid SOP: nodes only need earlier nodes, so the graph is acyclic; gates and
/// `on_failure` send back only to nodes upstream of them.
fn random_sop(rng: &mut Rng) -> Sop {
    let n = 1 + rng.below(7);
    let mut needs: Vec<Vec<usize>> = Vec::new();
    let mut upstreams: Vec<Vec<usize>> = Vec::new();
    let mut yaml = String::from("name: random\nnodes:\n");
    for i in 0..n {
        let mine: Vec<usize> = (0..i).filter(|_| rng.chance(40)).collect();
        let mut upstream: BTreeSet<usize> = BTreeSet::new();
        let mut stack = mine.clone();
        while let Some(u) = stack.pop() {
            if upstream.insert(u) {
                stack.extend(&needs[u]);
            }
        }
        let list = |v: &[usize]| {
            v.iter()
                .map(|u| format!("n{u}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        yaml.push_str(&format!("  n{i}:\n    needs: [{}]\n", list(&mine)));
        let upstream: Vec<usize> = upstream.into_iter().collect();
        if rng.chance(30) {
            let targets: Vec<usize> = upstream
                .iter()
                .copied()
                .filter(|_| rng.chance(60))
                .collect();
            yaml.push_str(&format!(
                "    kind: gate\n    approvers: [ana]\n    min_approvals: {}\n    max_rework: {}\n    allow_requester: {}\n",
                1 + rng.below(2),
                rng.below(3),
                rng.chance(50)
            ));
            if !targets.is_empty() {
                yaml.push_str(&format!("    send_back: [{}]\n", list(&targets)));
            }
        } else {
            if rng.chance(30) {
                // An agent that may ask for its budget to be raised.
                yaml.push_str("    kind: agent\n    role: coder\n    prompt: work\n");
                if rng.chance(50) {
                    yaml.push_str("    on_budget: { ask: [ana, bob] }\n");
                }
            } else {
                yaml.push_str("    kind: script\n    run: work\n");
            }
            yaml.push_str(&format!(
                "    retry: {{ max: {}, backoff: 1s }}\n",
                rng.below(3)
            ));
            if !upstream.is_empty() && rng.chance(30) {
                let target = upstream[rng.below(upstream.len())];
                yaml.push_str(&format!(
                    "    on_failure: {{ send_back: n{target}, max: {} }}\n",
                    1 + rng.below(2)
                ));
            }
        }
        needs.push(mine);
        upstreams.push(upstream);
    }
    if rng.chance(60) {
        // A pull request after the last node, with rules back to what comes before it.
        let last = n - 1;
        let mut before = upstreams[last].clone();
        before.push(last);
        yaml.push_str(&format!("  d:\n    kind: deliver\n    needs: [n{last}]\n"));
        for (rule, least) in [
            ("on_review", 1),
            ("on_checks_failed", 0),
            ("on_conflict", 0),
        ] {
            if rng.chance(60) {
                let target = before[rng.below(before.len())];
                let approvers = if rule != "on_review" && rng.chance(50) {
                    ", approvers: [ana]"
                } else {
                    ""
                };
                yaml.push_str(&format!(
                    "    {rule}: {{ send_back: n{target}, max: {}{approvers} }}\n",
                    least + rng.below(3)
                ));
            }
        }
    }
    parse("random.yaml", &yaml).unwrap_or_else(|e| panic!("generated an invalid SOP:\n{yaml}\n{e}"))
}

/// Inputs that make progress: runners finishing, people deciding, timers firing.
fn progress_inputs(sop: &Sop, state: &RunState, rng: &mut Rng) -> Vec<Input> {
    let mut inputs = Vec::new();
    for (id, node) in &state.nodes {
        let (node_id, attempt) = (id.clone(), node.attempt);
        match node.status {
            NodeStatus::Dispatched | NodeStatus::Running => {
                let outcome = match rng.below(6) {
                    0 => Outcome::Failed("boom".into()),
                    4 => Outcome::OverBudget {
                        reason: "budget of role coder reached".into(),
                        budget: "role coder".into(),
                    },
                    1 => Outcome::TimedOut,
                    2 => Outcome::Interrupted {
                        reason: "lost".into(),
                        retries: 2,
                    },
                    _ => Outcome::Succeeded,
                };
                if node.status == NodeStatus::Dispatched {
                    inputs.push(Input::NodeStarted {
                        node: node_id.clone(),
                        attempt,
                    });
                }
                inputs.push(Input::NodeFinished {
                    node: node_id,
                    attempt,
                    outcome,
                });
            }
            NodeStatus::Ready if node.retry_pending => inputs.push(Input::RetryDue {
                node: node_id,
                attempt,
            }),
            NodeStatus::WaitingApproval => {
                let gate = gate_in_force(sop.node(id).unwrap(), node)
                    .expect("a node that waits has a gate");
                let person = ["ana", "bob", "cy"][rng.below(3)].to_owned();
                let decision = match rng.below(6) {
                    0 if !gate.send_back.is_empty() => Decision::SendBack {
                        to: gate.send_back[rng.below(gate.send_back.len())].clone(),
                    },
                    1 => Decision::SendBack { to: id.clone() },
                    2 => Decision::Reject,
                    _ => Decision::Approve,
                };
                let comment = rng.chance(90).then(|| "please redo".to_owned());
                inputs.push(Input::Decide {
                    node: node_id.clone(),
                    attempt,
                    decision,
                    comment,
                    person,
                    groups: vec![],
                });
                if rng.chance(10) {
                    inputs.push(Input::GateExpired {
                        node: node_id,
                        attempt,
                    });
                }
            }
            _ => {}
        }
    }
    if state.paused {
        inputs.push(Input::Resume);
    }
    inputs
}

/// Anything at all, including commands from people and stale reports.
fn any_input(sop: &Sop, state: &RunState, rng: &mut Rng) -> Input {
    let node = sop.nodes[rng.below(sop.nodes.len())].id.clone();
    match rng.below(12) {
        0 => Input::Pause,
        1 => Input::Resume,
        2 if rng.chance(30) => Input::Cancel,
        3 => Input::RetryFrom { node },
        4 => Input::NodeFinished {
            node,
            attempt: rng.below(4) as u32,
            outcome: Outcome::Succeeded,
        },
        5 => Input::Decide {
            node,
            attempt: rng.below(4) as u32,
            decision: Decision::Approve,
            comment: None,
            person: "cy".into(),
            groups: vec![],
        },
        6 | 7 => Input::Feedback {
            feedback: Feedback {
                kind: [
                    FeedbackKind::Review,
                    FeedbackKind::ChecksFailed,
                    FeedbackKind::Conflict,
                ][rng.below(3)],
                // Few keys, so redeliveries happen.
                key: format!("k{}", rng.below(8)),
                text: "fix it".into(),
                pull: PullRef {
                    repo: "acme/api".into(),
                    number: 1,
                },
                from: "alice".into(),
                thread: None,
            },
        },
        _ => {
            let mut inputs = progress_inputs(sop, state, rng);
            if inputs.is_empty() {
                Input::Start
            } else {
                inputs.swap_remove(rng.below(inputs.len()))
            }
        }
    }
}

/// Applies `input` and checks every invariant against the state before it.
fn step(sop: &Sop, state: &mut RunState, input: Input) {
    if std::env::var_os("TRACE").is_some() {
        eprintln!("{input:?}");
    }
    let before = state.clone();
    let result = apply(sop, state, input.clone());
    let Ok(effects) = result else {
        assert_eq!(
            *state, before,
            "a refused input changed the state: {input:?}"
        );
        return;
    };
    let changed = *state != before;
    assert_eq!(
        state.revision,
        before.revision + u64::from(changed),
        "revision counts changes"
    );
    for (id, node) in &state.nodes {
        let old = &before.nodes[id];
        assert!(node.attempt >= old.attempt, "attempts never go back");
        assert!(
            node.rework_count >= old.rework_count,
            "rework counts never go back"
        );
        if node.is_active() {
            for need in &sop.node(id).unwrap().needs {
                assert_eq!(
                    state.nodes[need].status,
                    NodeStatus::Succeeded,
                    "`{id}` is {:?} before its need `{need}` succeeded",
                    node.status
                );
            }
        }
        if node.status == NodeStatus::WaitingApproval {
            assert_eq!(node.gate.as_ref().unwrap().status, GateStatus::Waiting);
        }
        if state.is_terminal() {
            assert!(
                !node.is_active() && node.status != NodeStatus::Ready,
                "`{id}` is {:?} in a {:?} run",
                node.status,
                state.status
            );
        }
    }
    assert!(
        state.feedback_waiting.is_empty() || state.status != RunStatus::Succeeded,
        "feedback waits on a run that has succeeded"
    );
    for waiting in &state.feedback_waiting {
        assert!(state.feedback_heard.contains(&waiting.key));
    }
    let pull_request = sop.pull_request_node().map(|(n, _)| n.id.clone());
    for (id, node) in &state.nodes {
        if Some(id) != pull_request.as_ref() {
            assert!(node.answering.is_none() && node.feedback_sends.is_empty());
            continue;
        }
        for (kind, rule) in sop
            .pull_request_node()
            .into_iter()
            .flat_map(|(_, r)| r.rules())
        {
            let used = node.feedback_sends.get(kind.rule()).copied().unwrap_or(0);
            assert!(
                used <= rule.max,
                "`{}` used {used} of {}",
                kind.rule(),
                rule.max
            );
        }
        if node.status == NodeStatus::WaitingApproval {
            assert!(
                node.answering.is_some(),
                "the deliver node asks about nothing"
            );
        }
    }
    if state.status == RunStatus::Succeeded {
        assert!(
            state
                .nodes
                .values()
                .all(|n| n.status == NodeStatus::Succeeded)
        );
    }
    for effect in &effects {
        if let Effect::Dispatch { node, attempt } | Effect::StartChild { node, attempt } = effect {
            let n = &state.nodes[node];
            assert_eq!(
                (n.status, n.attempt),
                (NodeStatus::Dispatched, *attempt),
                "{effect:?}"
            );
        }
        if let Effect::OpenGate { node, attempt } = effect {
            let n = &state.nodes[node];
            assert_eq!(
                (n.status, n.attempt),
                (NodeStatus::WaitingApproval, *attempt),
                "{effect:?}"
            );
        }
    }
}

proptest! {
    /// Random graphs, random inputs of every kind: no invalid state; then, with only
    /// runners and reviewers acting, the run ends.
    #[test]
    fn random_runs_stay_valid_and_end(seed in 1u64..u64::MAX) {
        let seed = std::env::var("SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(seed);
        let mut rng = Rng(seed);
        let sop = random_sop(&mut rng);
        if std::env::var_os("TRACE").is_some() {
            eprintln!("{sop:#?}");
        }
        let mut state = RunState::new(&sop, Some("bob".into()));
        step(&sop, &mut state, Input::Start);
        for _ in 0..60 {
            let input = any_input(&sop, &state, &mut rng);
            step(&sop, &mut state, input);
        }
        let mut steps = 0;
        while !state.is_terminal() {
            let mut inputs = progress_inputs(&sop, &state, &mut rng);
            prop_assert!(!inputs.is_empty(), "stuck: {:?}\n{state:#?}", state.status);
            let input = inputs.swap_remove(rng.below(inputs.len()));
            step(&sop, &mut state, input);
            steps += 1;
            prop_assert!(steps < 5_000, "did not end: {state:#?}");
        }
    }
}
