//! The engine against DESIGN.md's rules, one scenario at a time.

use std::time::Duration;

use gatehouse_engine::{Decision, Effect, Input, Outcome, Rejection, RunState, apply};
use gatehouse_events::{GateStatus, NodeStatus, RunStatus};
use gatehouse_sop::{Catalog, Sop, parse};

fn sop(yaml: &str) -> Sop {
    parse("test.yaml", yaml).unwrap()
}

fn platform_check() -> Sop {
    Catalog::load(&[] as &[&str])
        .0
        .get("platform-check")
        .unwrap()
        .clone()
}

/// A run under test with helpers for the common inputs.
struct Run {
    sop: Sop,
    state: RunState,
}

impl Run {
    fn start(sop: Sop) -> (Self, Vec<Effect>) {
        let state = RunState::new(&sop, Some("bob".into()));
        let mut run = Self { sop, state };
        let effects = run.ok(Input::Start);
        (run, effects)
    }

    fn apply(&mut self, input: Input) -> Result<Vec<Effect>, Rejection> {
        apply(&self.sop, &mut self.state, input)
    }

    fn ok(&mut self, input: Input) -> Vec<Effect> {
        self.apply(input).unwrap()
    }

    fn finish(&mut self, node: &str, outcome: Outcome) -> Vec<Effect> {
        let attempt = self.state.nodes[node].attempt;
        self.ok(Input::NodeStarted {
            node: node.into(),
            attempt,
        });
        self.ok(Input::NodeFinished {
            node: node.into(),
            attempt,
            outcome,
        })
    }

    fn decide(
        &mut self,
        node: &str,
        decision: Decision,
        comment: Option<&str>,
        person: &str,
    ) -> Result<Vec<Effect>, Rejection> {
        let attempt = self.state.nodes[node].attempt;
        self.apply(Input::Decide {
            node: node.into(),
            attempt,
            decision,
            comment: comment.map(Into::into),
            person: person.into(),
            // Everyone in these scenarios leads, unless a test decides otherwise.
            groups: vec!["leads".into()],
        })
    }

    fn status(&self, node: &str) -> NodeStatus {
        self.state.nodes[node].status
    }
}

fn dispatch(node: &str, attempt: u32) -> Effect {
    Effect::Dispatch {
        node: node.into(),
        attempt,
    }
}

fn open(node: &str, attempt: u32) -> Effect {
    Effect::OpenGate {
        node: node.into(),
        attempt,
    }
}

fn close(node: &str, attempt: u32, status: GateStatus) -> Effect {
    Effect::CloseGate {
        node: node.into(),
        attempt,
        status,
    }
}

#[test]
fn platform_check_approved_runs_to_success() {
    let (mut run, first) = Run::start(platform_check());
    assert_eq!(first, [dispatch("report", 1)]);
    assert_eq!(run.state.status, RunStatus::Running);
    assert_eq!(
        run.finish("report", Outcome::Succeeded),
        [open("confirm", 1)]
    );
    assert_eq!(run.state.status, RunStatus::Waiting);
    assert_eq!(
        run.decide("confirm", Decision::Approve, None, "ana")
            .unwrap(),
        [
            close("confirm", 1, GateStatus::Approved),
            dispatch("finish", 1)
        ]
    );
    assert_eq!(run.finish("finish", Outcome::Succeeded), []);
    assert_eq!(run.state.status, RunStatus::Succeeded);
}

#[test]
fn send_back_reruns_the_target_with_the_comment_then_binds_decisions_to_the_new_attempt() {
    let (mut run, _) = Run::start(platform_check());
    run.finish("report", Outcome::Succeeded);
    let effects = run
        .decide(
            "confirm",
            Decision::SendBack {
                to: "report".into(),
            },
            Some("add the error budget"),
            "ana",
        )
        .unwrap();
    assert_eq!(
        effects,
        [
            close("confirm", 1, GateStatus::SentBack),
            dispatch("report", 2)
        ]
    );
    let report = &run.state.nodes["report"];
    assert_eq!((report.attempt, report.rework_count), (2, 1));
    assert_eq!(
        report.rework_comment.as_deref(),
        Some("add the error budget")
    );
    assert_eq!(run.status("confirm"), NodeStatus::Pending);

    assert_eq!(
        run.finish("report", Outcome::Succeeded),
        [open("confirm", 2)]
    );
    assert_eq!(
        run.state.nodes["report"].rework_comment, None,
        "consumed by the successful attempt"
    );
    let stale = run.apply(Input::Decide {
        node: "confirm".into(),
        attempt: 1,
        decision: Decision::Approve,
        comment: None,
        person: "ana".into(),
        groups: vec!["leads".into()],
    });
    assert_eq!(
        stale,
        Err(Rejection::StaleAttempt {
            node: "confirm".into(),
            given: 1,
            current: 2
        })
    );
    run.decide("confirm", Decision::Approve, None, "ana")
        .unwrap();
    run.finish("finish", Outcome::Succeeded);
    assert_eq!(run.state.status, RunStatus::Succeeded);
    assert_eq!(run.state.nodes["report"].rework_count, 1);
}

#[test]
fn everyone_accountable_for_a_run_is_held_to_the_requester_rule() {
    let (mut run, _) = Run::start(platform_check());
    run.state.requirement_author = Some("cy".into());
    run.state.schedule_owner = Some("dee".into());
    run.finish("report", Outcome::Succeeded);
    let before = run.state.clone();
    for (person, refusal) in [
        ("bob", Rejection::RequesterMayNotApprove("confirm".into())),
        ("cy", Rejection::AuthorMayNotApprove("confirm".into())),
        ("dee", Rejection::OwnerMayNotApprove("confirm".into())),
    ] {
        assert_eq!(
            run.decide("confirm", Decision::Approve, None, person),
            Err(refusal)
        );
        assert_eq!(run.state, before, "a refusal changes nothing");
    }
    run.decide("confirm", Decision::Approve, None, "ana")
        .unwrap();
}

#[test]
fn refused_decisions_change_nothing() {
    let (mut run, _) = Run::start(platform_check());
    run.finish("report", Outcome::Succeeded);
    let before = run.state.clone();
    let cases = [
        (
            Decision::SendBack {
                to: "report".into(),
            },
            None,
            "ana",
            Rejection::CommentRequired,
        ),
        (
            Decision::SendBack {
                to: "finish".into(),
            },
            Some("x"),
            "ana",
            Rejection::NotASendBackTarget {
                gate: "confirm".into(),
                target: "finish".into(),
                allowed: vec!["report".into()],
            },
        ),
        (
            Decision::Approve,
            None,
            "bob",
            Rejection::RequesterMayNotApprove("confirm".into()),
        ),
    ];
    for (decision, comment, person, expected) in cases {
        assert_eq!(
            run.decide("confirm", decision, comment, person),
            Err(expected)
        );
        assert_eq!(run.state, before);
    }
    assert_eq!(
        run.decide("report", Decision::Approve, None, "ana"),
        Err(Rejection::NotAGate("report".into()))
    );
    assert_eq!(
        run.decide("finish", Decision::Approve, None, "ana"),
        Err(Rejection::NotAGate("finish".into()))
    );
    assert_eq!(
        run.apply(Input::Decide {
            node: "nope".into(),
            attempt: 1,
            decision: Decision::Approve,
            comment: None,
            person: "ana".into(),
            groups: vec![],
        }),
        Err(Rejection::UnknownNode("nope".into()))
    );
    assert_eq!(run.state, before);
}

const TWO_APPROVERS: &str = "
name: two
nodes:
  work: { kind: script, run: ls }
  review:
    kind: gate
    needs: [work]
    approvers: [group:leads]
    min_approvals: 2
    allow_requester: true
    send_back: [work]
    max_rework: 1
";

#[test]
fn only_the_gates_approvers_may_decide() {
    let (mut run, _) = Run::start(sop(TWO_APPROVERS));
    run.finish("work", Outcome::Succeeded);
    let outsider = |decision| Input::Decide {
        node: "review".into(),
        attempt: 1,
        decision,
        comment: Some("looks fine to me".into()),
        person: "mallory".into(),
        groups: vec!["interns".into()],
    };
    for decision in [
        Decision::Approve,
        Decision::Reject,
        Decision::SendBack { to: "work".into() },
    ] {
        assert_eq!(
            run.apply(outsider(decision)),
            Err(Rejection::NotAnApprover {
                gate: "review".into(),
                person: "mallory".into(),
                approvers: "group:leads".into(),
            })
        );
    }
    assert_eq!(run.status("review"), NodeStatus::WaitingApproval);
}

#[test]
fn min_approvals_counts_distinct_people_and_rework_is_bounded() {
    let (mut run, _) = Run::start(sop(TWO_APPROVERS));
    run.finish("work", Outcome::Succeeded);
    assert_eq!(
        run.decide("review", Decision::Approve, None, "bob")
            .unwrap(),
        [],
        "the requester may, here"
    );
    assert_eq!(
        run.decide("review", Decision::Approve, None, "bob"),
        Err(Rejection::AlreadyApproved {
            gate: "review".into(),
            person: "bob".into()
        })
    );
    run.decide(
        "review",
        Decision::SendBack { to: "work".into() },
        Some("redo"),
        "ana",
    )
    .unwrap();
    run.finish("work", Outcome::Succeeded);
    assert!(
        run.state.nodes["review"]
            .gate
            .as_ref()
            .unwrap()
            .approvals
            .is_empty(),
        "approvals start over"
    );
    assert_eq!(
        run.decide(
            "review",
            Decision::SendBack { to: "work".into() },
            Some("again"),
            "ana"
        ),
        Err(Rejection::ReworkLimit {
            gate: "review".into(),
            max: 1
        })
    );
    run.decide("review", Decision::Approve, None, "ana")
        .unwrap();
    assert_eq!(run.status("review"), NodeStatus::WaitingApproval);
    assert_eq!(
        run.decide("review", Decision::Approve, None, "cy").unwrap(),
        [close("review", 2, GateStatus::Approved)]
    );
    assert_eq!(run.state.status, RunStatus::Succeeded);
}

const RETRIES: &str = "
name: retries
nodes:
  flaky: { kind: script, run: ls, retry: { max: 2, backoff: 10s } }
  slow: { kind: script, run: sleep 1 }
  after: { kind: script, run: ls, needs: [flaky, slow] }
";

#[test]
fn retries_back_off_then_fail_the_run_and_stop_what_is_in_flight() {
    let (mut run, first) = Run::start(sop(RETRIES));
    assert_eq!(
        first,
        [dispatch("flaky", 1), dispatch("slow", 1)],
        "parallel branches"
    );
    let retry = |attempt, secs| Effect::ScheduleRetry {
        node: "flaky".into(),
        attempt,
        after: Duration::from_secs(secs),
    };
    assert_eq!(
        run.finish("flaky", Outcome::Failed("exit code 1".into())),
        [retry(1, 10)]
    );
    assert_eq!(run.status("flaky"), NodeStatus::Ready);
    assert_eq!(
        run.ok(Input::RetryDue {
            node: "flaky".into(),
            attempt: 1
        }),
        [dispatch("flaky", 2)]
    );
    assert_eq!(
        run.ok(Input::RetryDue {
            node: "flaky".into(),
            attempt: 1
        }),
        [],
        "a second timer is ignored"
    );
    assert_eq!(run.finish("flaky", Outcome::TimedOut), [retry(2, 20)]);
    run.ok(Input::RetryDue {
        node: "flaky".into(),
        attempt: 2,
    });
    let effects = run.finish("flaky", Outcome::Failed("exit code 1".into()));
    assert_eq!(
        effects,
        [Effect::CancelAttempt {
            node: "slow".into(),
            attempt: 1
        }]
    );
    assert_eq!(run.state.status, RunStatus::Failed);
    assert_eq!(
        run.state.failure.as_deref(),
        Some("node `flaky` failed: exit code 1")
    );
    assert_eq!(
        [run.status("flaky"), run.status("slow"), run.status("after")],
        [
            NodeStatus::Failed,
            NodeStatus::Cancelled,
            NodeStatus::Skipped
        ]
    );
    // The cancelled attempt reporting in late changes nothing.
    let before = run.state.clone();
    run.ok(Input::NodeFinished {
        node: "slow".into(),
        attempt: 1,
        outcome: Outcome::Succeeded,
    });
    assert_eq!(run.state, before);
}

const INTERRUPTIONS: &str = "
name: interruptions
nodes:
  build: { kind: script, run: ls, retry: { max: 1, backoff: 10s } }
  push: { kind: script, run: ls, needs: [build], on_interrupt: fail }
";

fn interrupted(retries: u32) -> Outcome {
    Outcome::Interrupted {
        reason: "interrupted: the runner stopped during this attempt".into(),
        retries,
    }
}

#[test]
fn interruptions_run_again_at_once_apart_from_retry_then_count_as_failures() {
    let (mut run, _) = Run::start(sop(INTERRUPTIONS));
    // Two interruptions: each a new attempt at once, no backoff, `retry` untouched.
    assert_eq!(run.finish("build", interrupted(2)), [dispatch("build", 2)]);
    assert_eq!(run.finish("build", interrupted(2)), [dispatch("build", 3)]);
    assert_eq!(run.state.nodes["build"].failures, 0);
    assert_eq!(run.state.nodes["build"].interruptions, 2);
    assert_eq!(
        run.state.nodes["build"].last_error.as_deref(),
        Some("interrupted: the runner stopped during this attempt")
    );
    // The third is past `interrupt_retries`: a failure, which the node's own retry takes.
    let retry = Effect::ScheduleRetry {
        node: "build".into(),
        attempt: 3,
        after: Duration::from_secs(10),
    };
    assert_eq!(run.finish("build", interrupted(2)), [retry]);
    assert_eq!(run.state.nodes["build"].failures, 1);
    run.ok(Input::RetryDue {
        node: "build".into(),
        attempt: 3,
    });
    assert_eq!(
        run.finish("build", Outcome::Succeeded),
        [dispatch("push", 1)]
    );

    // `on_interrupt: fail`: the first interruption fails the node (no retry), and the run.
    run.finish("push", interrupted(2));
    assert_eq!(run.status("push"), NodeStatus::Failed);
    assert_eq!(run.state.status, RunStatus::Failed);
    assert_eq!(
        run.state.failure.as_deref(),
        Some("node `push` failed: interrupted: the runner stopped during this attempt")
    );
}

#[test]
fn a_node_started_afresh_may_be_interrupted_again() {
    let (mut run, _) = Run::start(sop(INTERRUPTIONS));
    assert_eq!(run.finish("build", interrupted(1)), [dispatch("build", 2)]);
    run.finish("build", Outcome::Succeeded);
    // Retrying from the node resets its count: one more interruption is run again.
    run.finish("push", Outcome::Failed("exit code 1".into()));
    run.ok(Input::RetryFrom {
        node: "build".into(),
    });
    assert_eq!(run.state.nodes["build"].interruptions, 0);
    assert_eq!(run.finish("build", interrupted(1)), [dispatch("build", 4)]);
    // With no interruption retries configured, the first is a failure at once.
    let effects = run.finish("build", interrupted(0));
    assert!(
        matches!(effects.as_slice(), [Effect::ScheduleRetry { .. }]),
        "{effects:?}"
    );
}

#[test]
fn a_join_waits_for_every_branch() {
    let (mut run, _) = Run::start(sop(RETRIES));
    assert_eq!(run.finish("slow", Outcome::Succeeded), []);
    assert_eq!(
        run.finish("flaky", Outcome::Succeeded),
        [dispatch("after", 1)]
    );
}

const ON_FAILURE: &str = "
name: on-failure
nodes:
  implement: { kind: script, run: ls }
  test:
    kind: script
    run: make test
    needs: [implement]
    on_failure: { send_back: implement, max: 1 }
";

#[test]
fn on_failure_sends_the_work_back_once_then_fails() {
    let (mut run, _) = Run::start(sop(ON_FAILURE));
    run.finish("implement", Outcome::Succeeded);
    assert_eq!(
        run.finish("test", Outcome::Failed("3 tests failed".into())),
        [dispatch("implement", 2)]
    );
    let implement = &run.state.nodes["implement"];
    assert_eq!(implement.rework_count, 1);
    assert_eq!(
        implement.rework_comment.as_deref(),
        Some("`test` failed: 3 tests failed")
    );
    assert_eq!(
        run.finish("implement", Outcome::Succeeded),
        [dispatch("test", 2)]
    );
    run.finish("test", Outcome::Failed("2 tests failed".into()));
    assert_eq!(run.state.status, RunStatus::Failed);
}

#[test]
fn pause_holds_new_work_and_resume_releases_it() {
    let (mut run, _) = Run::start(platform_check());
    run.ok(Input::Pause);
    assert_eq!(
        run.apply(Input::Pause),
        Err(Rejection::PauseState("already paused"))
    );
    assert_eq!(run.state.status, RunStatus::Paused);
    assert_eq!(
        run.finish("report", Outcome::Succeeded),
        [],
        "the gate waits for resume"
    );
    assert_eq!(run.status("confirm"), NodeStatus::Ready);
    assert_eq!(run.ok(Input::Resume), [open("confirm", 1)]);
    assert_eq!(
        run.apply(Input::Resume),
        Err(Rejection::PauseState("not paused"))
    );
}

#[test]
fn cancel_stops_everything_and_retry_restarts_the_run() {
    let (mut run, _) = Run::start(platform_check());
    run.finish("report", Outcome::Succeeded);
    assert_eq!(
        run.ok(Input::Cancel),
        [close("confirm", 1, GateStatus::Cancelled)]
    );
    assert_eq!(run.state.status, RunStatus::Cancelled);
    assert_eq!(
        run.apply(Input::Cancel),
        Err(Rejection::Ended(RunStatus::Cancelled))
    );
    assert_eq!(
        run.decide("confirm", Decision::Approve, None, "ana"),
        Err(Rejection::Ended(RunStatus::Cancelled))
    );

    assert_eq!(
        run.ok(Input::RetryFrom {
            node: "report".into()
        }),
        [dispatch("report", 2)]
    );
    assert_eq!(run.state.status, RunStatus::Running);
    run.finish("report", Outcome::Succeeded);
    run.decide("confirm", Decision::Approve, None, "ana")
        .unwrap();
    run.finish("finish", Outcome::Succeeded);
    assert_eq!(run.state.status, RunStatus::Succeeded);
}

#[test]
fn retry_from_refuses_while_its_nodes_are_in_flight() {
    let (mut run, _) = Run::start(platform_check());
    assert_eq!(
        run.apply(Input::RetryFrom {
            node: "report".into()
        }),
        Err(Rejection::InFlight("report".into()))
    );
    // Retrying a finished node reruns it and everything after it.
    run.finish("report", Outcome::Succeeded);
    run.decide("confirm", Decision::Approve, None, "ana")
        .unwrap();
    run.finish("finish", Outcome::Succeeded);
    assert_eq!(
        run.ok(Input::RetryFrom {
            node: "confirm".into()
        }),
        [open("confirm", 2)]
    );
    assert_eq!(run.status("finish"), NodeStatus::Pending);
}

const EXPIRING: &str = "
name: expiring
nodes:
  ask: { kind: gate, approvers: [ana], expires_in: 1h, on_expire: approve }
  then: { kind: script, run: ls, needs: [ask] }
";

#[test]
fn gate_expiry_follows_on_expire_and_late_expiries_are_ignored() {
    let (mut run, first) = Run::start(sop(EXPIRING));
    assert_eq!(first, [open("ask", 1)]);
    assert_eq!(
        run.ok(Input::GateExpired {
            node: "ask".into(),
            attempt: 1
        }),
        [close("ask", 1, GateStatus::Expired), dispatch("then", 1)]
    );
    let before = run.state.clone();
    run.ok(Input::GateExpired {
        node: "ask".into(),
        attempt: 1,
    });
    assert_eq!(run.state, before);

    let (mut run, _) = Run::start(sop(
        &EXPIRING.replace("on_expire: approve", "on_expire: reject")
    ));
    run.ok(Input::GateExpired {
        node: "ask".into(),
        attempt: 1,
    });
    assert_eq!(run.state.status, RunStatus::Failed);
    assert_eq!(
        run.state.failure.as_deref(),
        Some("gate `ask` expired without a decision")
    );
}

#[test]
fn reject_fails_the_run_with_who_and_why() {
    let (mut run, _) = Run::start(platform_check());
    run.finish("report", Outcome::Succeeded);
    run.decide("confirm", Decision::Reject, Some("wrong repo"), "ana")
        .unwrap();
    assert_eq!(run.state.status, RunStatus::Failed);
    assert_eq!(
        run.state.failure.as_deref(),
        Some("gate `confirm` was rejected by ana: wrong repo")
    );
    assert_eq!(run.status("finish"), NodeStatus::Skipped);
}

#[test]
fn child_sop_nodes_start_a_child_run() {
    let (mut run, first) = Run::start(sop("
name: parent
nodes:
  child: { kind: sop, sop: platform-check, import: [report/welcome.md] }
  after: { kind: script, run: ls, needs: [child] }
"));
    assert_eq!(
        first,
        [Effect::StartChild {
            node: "child".into(),
            attempt: 1
        }]
    );
    assert_eq!(
        run.finish("child", Outcome::Succeeded),
        [dispatch("after", 1)]
    );
}

#[test]
fn duplicate_and_stale_reports_are_ignored_and_revisions_count_changes() {
    let (mut run, _) = Run::start(platform_check());
    let revision = run.state.revision;
    run.ok(Input::NodeStarted {
        node: "report".into(),
        attempt: 1,
    });
    assert_eq!(run.state.revision, revision + 1);
    run.ok(Input::NodeStarted {
        node: "report".into(),
        attempt: 1,
    });
    assert_eq!(
        run.state.revision,
        revision + 1,
        "no change, no new revision"
    );
    run.ok(Input::NodeFinished {
        node: "report".into(),
        attempt: 1,
        outcome: Outcome::Succeeded,
    });
    let before = run.state.clone();
    run.ok(Input::NodeFinished {
        node: "report".into(),
        attempt: 1,
        outcome: Outcome::Failed("late".into()),
    });
    run.ok(Input::NodeFinished {
        node: "report".into(),
        attempt: 7,
        outcome: Outcome::Succeeded,
    });
    assert_eq!(run.state, before);
}

#[test]
fn send_back_stops_work_that_started_from_the_old_output() {
    let (mut run, _) = Run::start(sop("
name: side
nodes:
  draft: { kind: script, run: ls }
  docs: { kind: script, run: ls, needs: [draft] }
  review: { kind: gate, needs: [draft], approvers: [ana], send_back: [draft] }
"));
    run.finish("draft", Outcome::Succeeded);
    assert_eq!(run.status("docs"), NodeStatus::Dispatched);
    let effects = run
        .decide(
            "review",
            Decision::SendBack { to: "draft".into() },
            Some("shorter"),
            "ana",
        )
        .unwrap();
    assert_eq!(
        effects,
        [
            close("review", 1, GateStatus::SentBack),
            Effect::CancelAttempt {
                node: "docs".into(),
                attempt: 1
            },
            dispatch("draft", 2),
        ]
    );
}

/// An agent node under a budget, asking leads to raise it, then a script.
fn asks_for_budget() -> Sop {
    sop(r#"
name: spend
nodes:
  code:
    kind: agent
    role: coder
    prompt: go
    retry: { max: 3 }
    on_budget: { ask: ["group:leads"] }
  after: { kind: script, run: "true", needs: [code] }
"#)
}

fn over_budget() -> Outcome {
    Outcome::OverBudget {
        reason: "budget of project api reached: $20.00 today".into(),
        budget: "project api".into(),
    }
}

#[test]
fn a_budget_reached_without_ask_fails_the_run_at_once_despite_retries() {
    let (mut run, _) = Run::start(sop(r#"
name: spend
nodes:
  code: { kind: agent, role: coder, prompt: go, retry: { max: 3 } }
"#));
    assert_eq!(run.finish("code", over_budget()), []);
    assert_eq!(run.status("code"), NodeStatus::Failed);
    assert_eq!(run.state.status, RunStatus::Failed);
    assert_eq!(
        run.state.failure.as_deref(),
        Some("node `code` failed: budget of project api reached: $20.00 today")
    );
    // No gate to decide.
    assert_eq!(
        run.decide("code", Decision::Approve, None, "ana"),
        Err(Rejection::NotAGate("code".into()))
    );
}

#[test]
fn an_approved_budget_ask_raises_it_once_and_runs_the_node_again() {
    let (mut run, _) = Run::start(asks_for_budget());
    assert_eq!(run.finish("code", over_budget()), [open("code", 1)]);
    assert_eq!(run.status("code"), NodeStatus::WaitingApproval);
    assert_eq!(run.state.status, RunStatus::Waiting);
    // Not a gate with rework: nowhere to send it.
    assert!(matches!(
        run.decide(
            "code",
            Decision::SendBack { to: "code".into() },
            Some("x"),
            "ana"
        ),
        Err(Rejection::NotASendBackTarget { .. })
    ));
    // The requester may not raise their own run's budget unless the ask allows it.
    assert_eq!(
        run.decide("code", Decision::Approve, None, "bob"),
        Err(Rejection::RequesterMayNotApprove("code".into()))
    );
    let effects = run.decide("code", Decision::Approve, None, "ana").unwrap();
    assert_eq!(
        effects,
        [
            close("code", 1, GateStatus::Approved),
            Effect::RaiseBudget {
                node: "code".into(),
                attempt: 1,
                budget: "project api".into(),
            },
            dispatch("code", 2),
        ]
    );
    // A second approval of the same ask, or the first attempt's late result, is refused
    // or ignored.
    assert!(run.decide("code", Decision::Approve, None, "cy").is_err());
    assert_eq!(
        run.ok(Input::NodeFinished {
            node: "code".into(),
            attempt: 1,
            outcome: Outcome::Succeeded
        }),
        []
    );
    assert_eq!(
        run.finish("code", Outcome::Succeeded),
        [dispatch("after", 1)]
    );
}

#[test]
fn a_declined_or_expired_budget_ask_fails_the_run_saying_so() {
    let (mut run, _) = Run::start(asks_for_budget());
    run.finish("code", over_budget());
    assert_eq!(
        run.decide("code", Decision::Reject, Some("too dear"), "ana")
            .unwrap(),
        [close("code", 1, GateStatus::Rejected)]
    );
    assert_eq!(
        run.state.failure.as_deref(),
        Some(
            "node `code` failed: budget of project api reached: $20.00 today; ana declined to raise it: too dear"
        )
    );

    let (mut run, _) = Run::start(asks_for_budget());
    run.finish("code", over_budget());
    run.ok(Input::GateExpired {
        node: "code".into(),
        attempt: 1,
    });
    assert_eq!(run.status("code"), NodeStatus::Failed);
    assert!(
        run.state
            .failure
            .as_deref()
            .is_some_and(|f| f.ends_with("nobody raised it before the ask expired")),
        "{:?}",
        run.state.failure
    );
}

#[test]
fn a_budget_ask_is_cancelled_with_the_run_and_forgotten_on_retry() {
    let (mut run, _) = Run::start(asks_for_budget());
    run.finish("code", over_budget());
    assert_eq!(
        run.ok(Input::Cancel),
        [close("code", 1, GateStatus::Cancelled)]
    );
    run.ok(Input::RetryFrom {
        node: "code".into(),
    });
    assert_eq!(run.state.nodes["code"].over_budget, None);
    assert_eq!(run.status("code"), NodeStatus::Dispatched);
    // It may ask again, and the gate it opens is bound to the new attempt.
    assert_eq!(run.finish("code", over_budget()), [open("code", 2)]);
}
