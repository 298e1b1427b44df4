//! Feedback on a run's pull request: taken up by the deliver node's rules once the run
//! succeeded, waiting while it works, bounded, then a person; redeliveries and ended runs
//! refused without a change.

use gatehouse_engine::{
    Decision, Effect, Input, Outcome, Rejection, RunState, apply, gate_in_force,
};
use gatehouse_events::{Feedback, FeedbackKind, GateStatus, NodeStatus, PullRef, RunStatus};
use gatehouse_sop::{Sop, parse};

const SHIP: &str = "\
name: ship
nodes:
  rebase: { kind: script, run: git rebase }
  implement: { kind: agent, role: developer, prompt: go, needs: [rebase] }
  test: { kind: script, run: make test, needs: [implement] }
  deliver:
    kind: deliver
    needs: [test]
    on_review: { send_back: implement, max: 2 }
    on_checks_failed: { send_back: implement, max: 1, approvers: [lead] }
    on_conflict: { send_back: rebase, max: 1 }
  notify: { kind: script, run: echo done, needs: [deliver] }
";

struct Run {
    sop: Sop,
    state: RunState,
}

impl Run {
    /// A run of `yaml` that went through every node once.
    fn succeeded(yaml: &str) -> Self {
        let sop = parse("ship.yaml", yaml).unwrap();
        let state = RunState::new(&sop, Some("bob".into()));
        let mut run = Self { sop, state };
        run.ok(Input::Start);
        run.work_through();
        assert_eq!(run.state.status, RunStatus::Succeeded);
        run
    }

    fn apply(&mut self, input: Input) -> Result<Vec<Effect>, Rejection> {
        apply(&self.sop, &mut self.state, input)
    }

    fn ok(&mut self, input: Input) -> Vec<Effect> {
        self.apply(input).unwrap()
    }

    /// Refused, and nothing changed.
    fn refused(&mut self, input: Input) -> Rejection {
        let before = self.state.clone();
        let rejection = self.apply(input).unwrap_err();
        assert_eq!(self.state, before, "a refusal changed the state");
        rejection
    }

    fn finish(&mut self, node: &str) -> Vec<Effect> {
        let attempt = self.state.nodes[node].attempt;
        self.ok(Input::NodeStarted {
            node: node.into(),
            attempt,
        });
        self.ok(Input::NodeFinished {
            node: node.into(),
            attempt,
            outcome: Outcome::Succeeded,
        })
    }

    /// Finishes dispatched nodes in order until none is left; the effects of the last.
    fn work_through(&mut self) -> Vec<Effect> {
        let mut last = Vec::new();
        while let Some(id) = self
            .state
            .nodes
            .iter()
            .find(|(_, n)| n.status == NodeStatus::Dispatched)
            .map(|(id, _)| id.clone())
        {
            last = self.finish(&id);
        }
        last
    }

    fn decide(&mut self, decision: Decision, comment: Option<&str>, person: &str) -> Input {
        Input::Decide {
            node: "deliver".into(),
            attempt: self.state.nodes["deliver"].attempt,
            decision,
            comment: comment.map(Into::into),
            person: person.into(),
            groups: Vec::new(),
        }
    }

    fn status(&self, node: &str) -> NodeStatus {
        self.state.nodes[node].status
    }
}

fn feedback(kind: FeedbackKind, key: &str, from: &str, text: &str) -> Feedback {
    Feedback {
        kind,
        key: key.into(),
        text: text.into(),
        pull: PullRef {
            repo: "acme/api".into(),
            number: 7,
        },
        from: from.into(),
        thread: None,
    }
}

fn review(key: &str) -> Feedback {
    feedback(FeedbackKind::Review, key, "alice", "please rename `x`")
}

fn checks(key: &str) -> Feedback {
    feedback(
        FeedbackKind::ChecksFailed,
        key,
        "",
        "job `test` failed:\nassertion failed",
    )
}

fn input(feedback: Feedback) -> Input {
    Input::Feedback { feedback }
}

fn dispatch(node: &str, attempt: u32) -> Effect {
    Effect::Dispatch {
        node: node.into(),
        attempt,
    }
}

#[test]
fn a_review_sends_the_work_back_and_the_delivery_answers_it() {
    let mut run = Run::succeeded(SHIP);
    let effects = run.ok(input(review("review:1")));
    assert_eq!(effects, [dispatch("implement", 2)]);
    assert_eq!(run.state.status, RunStatus::Running);
    // The target and everything up to the deliver node are redone; the rest stands.
    let statuses: Vec<_> = ["rebase", "implement", "test", "deliver", "notify"]
        .map(|n| run.status(n))
        .to_vec();
    assert_eq!(
        statuses,
        [
            NodeStatus::Succeeded,
            NodeStatus::Dispatched,
            NodeStatus::Pending,
            NodeStatus::Pending,
            NodeStatus::Succeeded,
        ]
    );
    let implement = &run.state.nodes["implement"];
    assert_eq!(implement.rework_count, 1);
    assert_eq!(
        implement.rework_comment.as_deref(),
        Some("Review of acme/api#7 by @alice:\n\nplease rename `x`\n\nMake the changes asked for.")
    );
    let deliver = &run.state.nodes["deliver"];
    assert_eq!(deliver.answering, Some(review("review:1")));
    assert_eq!(deliver.feedback_sends["on_review"], 1);

    run.finish("implement");
    assert_eq!(run.finish("test"), [dispatch("deliver", 2)]);
    // Still answering while it delivers; answered once it has.
    assert!(run.state.nodes["deliver"].answering.is_some());
    run.finish("deliver");
    assert_eq!(run.state.status, RunStatus::Succeeded);
    assert_eq!(run.state.nodes["deliver"].answering, None);
}

#[test]
fn failing_checks_tell_the_agent_to_keep_the_tests() {
    let mut run = Run::succeeded(SHIP);
    run.ok(input(checks("checks:abc")));
    assert_eq!(
        run.state.nodes["implement"].rework_comment.as_deref(),
        Some(
            "Failing checks on acme/api#7:\n\njob `test` failed:\nassertion failed\n\nFix the cause of the failure. Never skip, delete or weaken tests to make the checks pass."
        )
    );
    let mut run = Run::succeeded(SHIP);
    assert_eq!(
        run.ok(input(feedback(
            FeedbackKind::Conflict,
            "conflict:1",
            "",
            "main moved"
        ))),
        [dispatch("rebase", 2)]
    );
    assert_eq!(
        run.state.nodes["rebase"].rework_comment.as_deref(),
        Some(
            "Conflict on acme/api#7:\n\nmain moved\n\nBring the base branch's changes into the work, resolve each conflict keeping what both sides meant, and make sure the tests still pass."
        )
    );
    // Everything from the rule's target to the deliver node is redone.
    assert_eq!(run.status("implement"), NodeStatus::Pending);
}

#[test]
fn reviews_past_max_are_refused() {
    let mut run = Run::succeeded(SHIP);
    for key in ["review:1", "review:2"] {
        run.ok(input(review(key)));
        run.work_through();
    }
    assert_eq!(run.state.status, RunStatus::Succeeded);
    assert_eq!(
        run.refused(input(review("review:3"))),
        Rejection::FeedbackLimit {
            rule: "on_review".into(),
            max: 2
        }
    );
    // Counted per rule: checks still have theirs.
    assert_eq!(
        run.ok(input(checks("checks:1"))),
        [dispatch("implement", 4)]
    );
}

#[test]
fn reviews_waiting_count_against_max() {
    let mut run = Run::succeeded(SHIP);
    run.ok(input(review("review:1")));
    assert_eq!(run.ok(input(review("review:2"))), []);
    assert_eq!(
        run.refused(input(review("review:3"))),
        Rejection::FeedbackLimit {
            rule: "on_review".into(),
            max: 2
        }
    );
}

#[test]
fn feedback_during_rework_waits_then_is_taken_up_one_at_a_time() {
    let mut run = Run::succeeded(SHIP);
    run.ok(input(review("review:1")));
    let before = run.state.nodes.clone();
    assert_eq!(run.ok(input(review("review:2"))), []);
    assert_eq!(run.ok(input(checks("checks:1"))), []);
    // Nothing else started: one piece of work at a time.
    assert_eq!(run.state.nodes, before);
    assert_eq!(run.state.feedback_waiting.len(), 2);
    assert_eq!(run.state.status, RunStatus::Running);

    run.finish("implement");
    run.finish("test");
    // The delivery answering the first review succeeds: the second is taken up at once.
    assert_eq!(run.finish("deliver"), [dispatch("implement", 3)]);
    assert_eq!(run.state.status, RunStatus::Running);
    assert_eq!(
        run.state.nodes["deliver"].answering,
        Some(review("review:2"))
    );
    assert_eq!(run.state.feedback_waiting, [checks("checks:1")]);
    assert!(
        run.state.nodes["implement"]
            .rework_comment
            .as_deref()
            .is_some_and(|c| c.starts_with("Review of acme/api#7 by @alice:"))
    );
    run.finish("implement");
    run.finish("test");
    assert_eq!(run.finish("deliver"), [dispatch("implement", 4)]);
    assert_eq!(
        run.state.nodes["deliver"].answering,
        Some(checks("checks:1"))
    );
    assert!(run.state.feedback_waiting.is_empty());
    run.work_through();
    assert_eq!(run.state.status, RunStatus::Succeeded);
}

#[test]
fn feedback_waits_through_a_pause() {
    let mut run = Run::succeeded(SHIP);
    run.ok(input(review("review:1")));
    run.ok(Input::Pause);
    run.work_through();
    assert_eq!(run.state.status, RunStatus::Paused);
    run.ok(input(review("review:2")));
    assert_eq!(run.state.feedback_waiting.len(), 1);
    run.ok(Input::Resume);
    run.work_through();
    run.work_through();
    assert_eq!(run.state.status, RunStatus::Succeeded);
    assert!(run.state.feedback_waiting.is_empty());
    assert_eq!(run.state.nodes["implement"].rework_count, 2);
}

/// A run whose checks failed once (and were reworked): the next failure asks a person.
fn at_the_gate() -> Run {
    let mut run = Run::succeeded(SHIP);
    run.ok(input(checks("checks:1")));
    run.work_through();
    let effects = run.ok(input(checks("checks:2")));
    assert_eq!(
        effects,
        [Effect::OpenGate {
            node: "deliver".into(),
            attempt: 3
        }]
    );
    assert_eq!(run.state.status, RunStatus::Waiting);
    let deliver = &run.state.nodes["deliver"];
    assert_eq!(deliver.status, NodeStatus::WaitingApproval);
    assert_eq!(deliver.answering, Some(checks("checks:2")));
    assert_eq!(deliver.gate.as_ref().unwrap().status, GateStatus::Waiting);
    assert_eq!(deliver.feedback_sends["on_checks_failed"], 1);
    run
}

#[test]
fn past_max_failing_checks_ask_the_rules_approvers_to_take_the_pull_request() {
    let mut run = at_the_gate();
    let by_ana = run.decide(Decision::Approve, None, "ana");
    assert!(matches!(
        run.refused(by_ana),
        Rejection::NotAnApprover { .. }
    ));
    let by_lead = run.decide(Decision::Approve, None, "lead");
    assert_eq!(
        run.ok(by_lead),
        [Effect::CloseGate {
            node: "deliver".into(),
            attempt: 3,
            status: GateStatus::Approved
        }]
    );
    assert_eq!(run.state.status, RunStatus::Succeeded);
    assert_eq!(run.status("deliver"), NodeStatus::Succeeded);
    assert_eq!(run.state.nodes["deliver"].answering, None);

    // A later failure asks again, as a new opening: a decision on the last one is stale.
    let stale = run.decide(Decision::Approve, None, "lead");
    run.ok(input(checks("checks:3")));
    assert_eq!(run.state.nodes["deliver"].attempt, 4);
    assert!(matches!(
        run.refused(stale),
        Rejection::StaleAttempt {
            given: 3,
            current: 4,
            ..
        }
    ));
}

#[test]
fn the_gate_in_force_is_the_rule_of_the_feedback_the_deliver_node_answers() {
    let in_force = |run: &Run| {
        let def = run.sop.node("deliver").unwrap();
        gate_in_force(def, &run.state.nodes["deliver"]).map(|g| g.into_owned())
    };
    let mut run = Run::succeeded(SHIP);
    assert_eq!(in_force(&run), None, "answering nothing");
    run.ok(input(review("review:1")));
    assert_eq!(in_force(&run), None, "a review opens no gate");
    // Yet its rules may open one: a decision now is early, not misdirected.
    let early = run.decide(Decision::Approve, None, "lead");
    assert!(matches!(
        run.refused(early),
        Rejection::NotWaiting {
            status: NodeStatus::Pending,
            ..
        }
    ));

    let checks = in_force(&at_the_gate()).expect("the checks rule's gate");
    assert_eq!(
        (checks.approvers, checks.send_back),
        (vec!["lead".to_owned()], vec!["implement".to_owned()])
    );

    let mut run = Run::succeeded(SHIP);
    let conflict = |key| feedback(FeedbackKind::Conflict, key, "", "main moved");
    run.ok(input(conflict("conflict:1")));
    run.work_through();
    run.ok(input(conflict("conflict:2")));
    assert_eq!(run.status("deliver"), NodeStatus::WaitingApproval);
    let gate = in_force(&run).expect("the conflict rule's gate");
    // Not the checks rule's approver: the conflict rule names nobody, so anyone decides.
    assert!(gate.approvers.is_empty(), "{gate:?}");
    assert_eq!(gate.send_back, ["rebase"]);
    let by_ana = run.decide(Decision::Approve, None, "ana");
    run.ok(by_ana);
    assert_eq!(run.state.status, RunStatus::Succeeded);
    assert_eq!(in_force(&run), None, "approved: answering nothing again");
}

#[test]
fn the_gate_sends_back_to_its_rules_target_with_the_feedback() {
    let mut run = at_the_gate();
    let elsewhere = run.decide(
        Decision::SendBack {
            to: "rebase".into(),
        },
        Some("rebase it"),
        "lead",
    );
    assert_eq!(
        run.refused(elsewhere),
        Rejection::NotASendBackTarget {
            gate: "deliver".into(),
            target: "rebase".into(),
            allowed: vec!["implement".into()],
        }
    );
    let silent = run.decide(
        Decision::SendBack {
            to: "implement".into(),
        },
        None,
        "lead",
    );
    assert_eq!(run.refused(silent), Rejection::CommentRequired);
    let back = run.decide(
        Decision::SendBack {
            to: "implement".into(),
        },
        Some("the flaky test is real"),
        "lead",
    );
    let effects = run.ok(back);
    assert!(effects.contains(&dispatch("implement", 3)), "{effects:?}");
    let comment = run.state.nodes["implement"].rework_comment.clone().unwrap();
    // What came back, worded as the rule's send-back words it, then the person's word.
    assert_eq!(
        comment,
        format!(
            "{}\n\nlead sent it back: the flaky test is real",
            checks("checks:2").prompt()
        )
    );
    // The delivery still answers the checks; a person's send-back is not the rule's.
    assert_eq!(
        run.state.nodes["deliver"].answering,
        Some(checks("checks:2"))
    );
    assert_eq!(
        run.state.nodes["deliver"].feedback_sends["on_checks_failed"],
        1
    );
    run.work_through();
    assert_eq!(run.state.status, RunStatus::Succeeded);
    assert_eq!(run.state.nodes["deliver"].answering, None);
}

#[test]
fn rejecting_at_the_gate_fails_the_run_naming_who() {
    let mut run = at_the_gate();
    let reject = run.decide(Decision::Reject, Some("not worth it"), "lead");
    run.ok(reject);
    assert_eq!(run.state.status, RunStatus::Failed);
    assert_eq!(
        run.state.failure.as_deref(),
        Some("gate `deliver` was rejected by lead: not worth it")
    );
}

#[test]
fn feedback_while_the_gate_waits_is_taken_up_after_it() {
    let mut run = at_the_gate();
    assert_eq!(run.ok(input(review("review:1"))), []);
    let approve = run.decide(Decision::Approve, None, "lead");
    let effects = run.ok(approve);
    assert!(effects.contains(&dispatch("implement", 3)), "{effects:?}");
    assert_eq!(
        run.state.nodes["deliver"].answering,
        Some(review("review:1"))
    );
}

#[test]
fn redelivered_feedback_changes_nothing() {
    let mut run = Run::succeeded(SHIP);
    run.ok(input(review("review:1")));
    // Taken up, then heard again.
    assert_eq!(
        run.refused(input(review("review:1"))),
        Rejection::FeedbackHeard {
            key: "review:1".into()
        }
    );
    // Waiting, then heard again.
    run.ok(input(checks("checks:1")));
    assert_eq!(
        run.refused(input(checks("checks:1"))),
        Rejection::FeedbackHeard {
            key: "checks:1".into()
        }
    );
    assert_eq!(run.state.feedback_waiting.len(), 1);
}

#[test]
fn ended_runs_refuse_feedback() {
    let mut run = Run::succeeded(SHIP);
    run.ok(input(review("review:1")));
    run.ok(Input::Cancel);
    assert_eq!(
        run.refused(input(review("review:2"))),
        Rejection::Ended(RunStatus::Cancelled)
    );
    let mut run = at_the_gate();
    let reject = run.decide(Decision::Reject, None, "lead");
    run.ok(reject);
    assert_eq!(
        run.refused(input(review("review:2"))),
        Rejection::Ended(RunStatus::Failed)
    );
}

#[test]
fn feedback_without_a_rule_starts_nothing() {
    let mut run = Run::succeeded(
        "name: x\nnodes:\n  a: { kind: script, run: ls }\n  d: { kind: deliver, needs: [a], on_review: { send_back: a } }\n",
    );
    assert_eq!(
        run.refused(input(checks("checks:1"))),
        Rejection::NoFeedbackRule {
            rule: "on_checks_failed".into()
        }
    );
    let mut direct = Run::succeeded(
        "name: x\nnodes:\n  a: { kind: script, run: ls }\n  d: { kind: deliver, needs: [a], mode: direct }\n",
    );
    assert_eq!(
        direct.refused(input(review("review:1"))),
        Rejection::NoFeedbackRule {
            rule: "on_review".into()
        }
    );
}

#[test]
fn a_rule_of_max_zero_asks_at_once() {
    let mut run = Run::succeeded(
        "name: x\nnodes:\n  a: { kind: script, run: ls }\n  d: { kind: deliver, needs: [a], on_conflict: { send_back: a, max: 0 } }\n",
    );
    let effects = run.ok(input(feedback(
        FeedbackKind::Conflict,
        "c:1",
        "",
        "main moved",
    )));
    assert_eq!(
        effects,
        [Effect::OpenGate {
            node: "d".into(),
            attempt: 2
        }]
    );
    // Anyone who may decide gates may decide it: the rule names nobody.
    let approve = Input::Decide {
        node: "d".into(),
        attempt: 2,
        decision: Decision::Approve,
        comment: None,
        person: "zoe".into(),
        groups: Vec::new(),
    };
    run.ok(approve);
    assert_eq!(run.state.status, RunStatus::Succeeded);
}

#[test]
fn a_run_stored_before_feedback_still_loads() {
    let mut run = Run::succeeded(SHIP);
    run.ok(input(review("review:1")));
    run.ok(input(review("review:2")));
    let mut json: serde_json::Value = serde_json::to_value(&run.state).unwrap();
    let object = json.as_object_mut().unwrap();
    assert!(object.remove("feedback_waiting").is_some());
    assert!(object.remove("feedback_heard").is_some());
    let deliver = json["nodes"]["deliver"].as_object_mut().unwrap();
    assert!(deliver.remove("answering").is_some());
    assert!(deliver.remove("feedback_sends").is_some());
    let loaded: RunState = serde_json::from_value(json).unwrap();
    assert!(loaded.feedback_waiting.is_empty() && loaded.feedback_heard.is_empty());
    assert_eq!(loaded.nodes["deliver"].answering, None);
    assert!(loaded.nodes["deliver"].feedback_sends.is_empty());
    assert_eq!(loaded.nodes["implement"], run.state.nodes["implement"]);
}
