//! The conversation's rules, one scenario at a time, as a thread would see them.

use std::time::Duration;

use gatehouse_conversation::{
    Conversation, Effect, Input, Outcome, Rejection, Settings, TurnStatus, Work, Workspace, apply,
};
use gatehouse_events::{Feedback, FeedbackKind, PullRef};

const SETTINGS: Settings = Settings {
    max_queue: 2,
    idle_timeout: Duration::from_secs(1800),
};

/// A conversation driven as the services would drive it.
struct Thread {
    state: Conversation,
}

impl Thread {
    fn new() -> Self {
        Self {
            state: Conversation::new(),
        }
    }

    fn apply(&mut self, input: Input) -> Vec<Effect> {
        apply(&SETTINGS, &mut self.state, input.clone())
            .unwrap_or_else(|e| panic!("{input:?} refused: {e}"))
    }

    fn say(&mut self, text: &str) -> Vec<Effect> {
        self.apply(Input::Message {
            seq: None,
            text: text.to_owned(),
            person: "ana".to_owned(),
        })
    }

    fn ask(&mut self, role: &str, text: &str) -> Vec<Effect> {
        self.apply(Input::Ask {
            seq: None,
            role: role.to_owned(),
            text: text.to_owned(),
            person: "ana".to_owned(),
        })
    }

    fn steer(&mut self, text: &str) -> Vec<Effect> {
        self.apply(Input::Steer {
            seq: None,
            text: text.to_owned(),
            person: "ana".to_owned(),
        })
    }

    fn reply(&mut self, seq: u64, attempt: u32, text: &str, session: Option<&str>) -> Vec<Effect> {
        self.apply(Input::TurnFinished {
            seq,
            attempt,
            outcome: Outcome::Replied {
                reply: text.to_owned(),
                session_id: session.map(str::to_owned),
            },
        })
    }

    fn fail(&mut self, seq: u64, attempt: u32, reason: &str) -> Vec<Effect> {
        self.apply(Input::TurnFinished {
            seq,
            attempt,
            outcome: Outcome::Failed {
                reason: reason.to_owned(),
                session_id: None,
            },
        })
    }

    fn status(&mut self, seq: u64) -> TurnStatus {
        self.state.turn(seq).expect("a turn").status
    }

    /// What a restart sees: the state as stored.
    fn restart(&mut self) {
        let stored = serde_json::to_string(&self.state).expect("state serializes");
        self.state = serde_json::from_str(&stored).expect("state deserializes");
    }
}

fn start(seq: u64, attempt: u32, text: &str, resume: Option<&str>) -> Effect {
    Effect::StartTurn {
        seq,
        attempt,
        text: text.to_owned(),
        resume_session: resume.map(str::to_owned),
        work: Work::Assistant,
        adopt_run: None,
        feedback: None,
    }
}

fn answer(seq: u64, text: &str) -> Effect {
    Effect::Say {
        key: format!("message:{seq}:answer"),
        text: text.to_owned(),
    }
}

fn idle(timer: u64) -> Effect {
    Effect::ScheduleIdle {
        timer,
        after: SETTINGS.idle_timeout,
    }
}

#[test]
fn turns_continue_the_cli_session_the_latest_turn_reported() {
    let mut t = Thread::new();
    assert_eq!(
        t.say("Add a health check"),
        [start(1, 1, "Add a health check", None)]
    );
    assert_eq!(t.state.workspace, Workspace::Turn { seq: 1 });
    assert_eq!(
        t.reply(1, 1, "Added /health.", Some("s-1")),
        [
            Effect::Reply {
                seq: 1,
                text: "Added /health.".to_owned()
            },
            Effect::Checkpoint { seq: 1 },
            idle(1),
        ]
    );
    assert_eq!(
        t.say("And a test"),
        [start(2, 1, "And a test", Some("s-1"))]
    );
    // Claude Code may name a new session when resuming: the latest one is continued.
    t.reply(2, 1, "Tested.", Some("s-2"));
    assert_eq!(t.say("Thanks"), [start(3, 1, "Thanks", Some("s-2"))]);
    // A reply without a session (a `command` executor) keeps the one there was.
    t.reply(3, 1, "You're welcome.", None);
    assert_eq!(t.state.session_id.as_deref(), Some("s-2"));
    assert_eq!(t.state.revision, 6);
}

#[test]
fn ask_queues_like_a_message_and_leaves_the_assistants_session_alone() {
    let mut t = Thread::new();
    t.say("fix the bug");
    t.reply(1, 1, "fixed", Some("s-assistant"));
    // An ask starts no session of the assistant's and resumes none.
    let effects = t.ask("reviewer", "review the fix");
    assert!(effects.contains(&Effect::StartTurn {
        seq: 2,
        attempt: 1,
        text: "review the fix".into(),
        resume_session: None,
        work: Work::Ask {
            role: "reviewer".into()
        },
        adopt_run: None,
        feedback: None,
    }));
    // A message during the ask waits for it.
    let queued = t.say("now add a test");
    assert!(
        matches!(&queued[..], [Effect::Acknowledge { seq: 3, .. }]),
        "{queued:?}"
    );
    t.apply(Input::SessionStarted {
        seq: 2,
        attempt: 1,
        session_id: "s-reviewer".into(),
    });
    let next = t.reply(2, 1, "looks fine", Some("s-reviewer"));
    assert!(next.contains(&Effect::Reply {
        seq: 2,
        text: "looks fine".into()
    }));
    assert!(next.contains(&start(3, 1, "now add a test", Some("s-assistant"))));
    assert_eq!(t.state.session_id.as_deref(), Some("s-assistant"));
}

#[test]
fn deliver_is_a_turn_of_its_own_in_the_queue() {
    let mut t = Thread::new();
    t.say("fix the bug");
    let queued = t.apply(Input::Deliver {
        seq: None,
        draft: true,
        person: "ana".into(),
    });
    assert!(
        matches!(&queued[..], [Effect::Acknowledge { seq: 2, .. }]),
        "{queued:?}"
    );
    let next = t.reply(1, 1, "fixed", Some("s-1"));
    assert!(next.contains(&Effect::StartTurn {
        seq: 2,
        attempt: 1,
        text: "deliver draft".into(),
        resume_session: None,
        work: Work::Deliver { draft: true },
        adopt_run: None,
        feedback: None,
    }));
    t.reply(2, 1, "Opened acme/api#4 (draft).", None);
    assert_eq!(t.state.session_id.as_deref(), Some("s-1"));
}

#[test]
fn messages_during_a_turn_queue_in_order_up_to_max_queue() {
    let mut t = Thread::new();
    t.say("one");
    let acknowledge = |seq, text: &str| Effect::Acknowledge {
        seq,
        text: text.to_owned(),
    };
    assert_eq!(t.say("two"), [acknowledge(2, "Queued, 1 ahead.")]);
    assert_eq!(t.say("three"), [acknowledge(3, "Queued, 2 ahead.")]);
    assert_eq!(
        t.say("four"),
        [answer(
            4,
            "Not queued: 2 messages are already waiting (max_queue). Send it again once one \
             has run."
        )]
    );
    assert!(t.state.turn(4).is_none(), "a refused message is no turn");
    assert_eq!(t.state.queue, [2, 3]);

    // Each turn's end starts the next; only the last arms the idle timer.
    let effects = t.fail(1, 1, "the CLI exited with status 1");
    assert_eq!(
        effects,
        [
            Effect::Say {
                key: "turn:1:failed".to_owned(),
                text: "That turn failed: the CLI exited with status 1".to_owned()
            },
            Effect::Checkpoint { seq: 1 },
            start(2, 1, "two", None),
        ]
    );
    assert_eq!(
        t.state.turn(1).and_then(|t| t.failure.as_deref()),
        Some("the CLI exited with status 1")
    );
    assert_eq!(
        t.reply(2, 1, "2", None).last(),
        Some(&start(3, 1, "three", None))
    );
    assert_eq!(t.reply(3, 1, "3", None).last(), Some(&idle(1)));
}

#[test]
fn steer_stops_the_running_turn_and_runs_first() {
    let mut t = Thread::new();
    t.say("refactor the parser");
    t.say("then update the docs");
    assert_eq!(
        t.steer("only the lexer, keep the parser"),
        [
            Effect::CancelTurn { seq: 1, attempt: 1 },
            Effect::Acknowledge {
                seq: 3,
                text: "Stopping the current turn; this runs next.".to_owned()
            },
        ]
    );
    assert_eq!(t.state.queue, [3, 2]);
    // Still one turn at a time: the steer waits for the stopped turn to end.
    assert_eq!(t.state.workspace, Workspace::Turn { seq: 1 });
    // The killed CLI reports a failure; the stop was asked for, so none is posted.
    assert_eq!(
        t.fail(1, 1, "killed"),
        [
            Effect::Checkpoint { seq: 1 },
            start(3, 1, "only the lexer, keep the parser", None),
        ]
    );
    assert_eq!(t.status(1), TurnStatus::Stopped);
    assert!(t.state.turn(3).is_some_and(|turn| turn.steer));
    assert_eq!(
        t.reply(3, 1, "Done.", None).last(),
        Some(&start(2, 1, "then update the docs", None))
    );
}

#[test]
fn steer_while_a_stop_is_under_way_is_one_more_waiting_message() {
    let mut t = Thread::new();
    t.say("a");
    t.steer("b");
    // No second cancel for the same attempt; the newest steer goes first.
    assert_eq!(
        t.steer("c"),
        [Effect::Acknowledge {
            seq: 3,
            text: "Stopping the current turn; this runs next.".to_owned()
        }]
    );
    assert_eq!(t.state.queue, [3, 2]);
    assert_eq!(
        t.steer("d"),
        [answer(
            4,
            "Not queued: 2 messages are already waiting (max_queue). Send it again once one \
             has run."
        )]
    );
}

#[test]
fn steer_and_stop_with_nothing_running_are_answered() {
    let mut t = Thread::new();
    assert_eq!(
        t.steer("faster"),
        [answer(1, "Nothing is running; send it as a message.")]
    );
    assert_eq!(
        t.apply(Input::Stop { seq: None }),
        [answer(2, "Nothing is running.")]
    );
    t.apply(Input::RunTookWorkspace {
        run: "r-7".to_owned(),
    });
    assert_eq!(
        t.apply(Input::Stop { seq: None }),
        [answer(
            3,
            "Nothing is running here; run r-7 has the workspace."
        )]
    );
    assert!(t.state.turns.is_empty());
}

#[test]
fn stop_ends_the_running_turn_once_and_the_queue_goes_on() {
    let mut t = Thread::new();
    t.say("a");
    t.say("b");
    assert_eq!(
        t.apply(Input::Stop { seq: None }),
        [
            Effect::CancelTurn { seq: 1, attempt: 1 },
            answer(
                3,
                "Stopping the current turn; 1 queued message runs after it."
            ),
        ]
    );
    assert_eq!(
        t.apply(Input::Stop { seq: None }),
        [answer(4, "Already stopping the current turn.")]
    );
    // It finished before the kill landed: its reply is real and is posted.
    let effects = t.reply(1, 1, "Done anyway.", Some("s"));
    assert_eq!(
        effects[0],
        Effect::Reply {
            seq: 1,
            text: "Done anyway.".to_owned()
        }
    );
    assert_eq!(t.status(1), TurnStatus::Replied);
    assert_eq!(effects.last(), Some(&start(2, 1, "b", Some("s"))));
}

#[test]
fn status_is_answered_from_the_state() {
    let mut t = Thread::new();
    let status = |t: &mut Thread| match t.apply(Input::Status { seq: None }).as_slice() {
        [Effect::Say { text, .. }] => text.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        status(&mut t),
        "Nothing is running.\nNothing queued.\nNo CLI session yet.\nWorkspace: not created yet."
    );
    t.say("a");
    t.apply(Input::SessionStarted {
        seq: 2,
        attempt: 1,
        session_id: "40e7b02d".to_owned(),
    });
    t.say("b");
    assert_eq!(
        status(&mut t),
        "Working on turn 2 for ana (attempt 1).\n1 queued (at most 2).\nCLI session 40e7b02d.\n\
         Workspace: held by turn 2."
    );
    t.apply(Input::Stop { seq: None });
    t.fail(2, 1, "killed");
    t.reply(3, 1, "b", None);
    t.apply(Input::Idle { timer: 1 });
    assert_eq!(
        status(&mut t),
        "Nothing is running.\nNothing queued.\nCLI session 40e7b02d.\n\
         Workspace: released after being idle; the next message restores it."
    );
    assert!(t.state.turns.iter().all(|turn| turn.status.is_final()));
}

#[test]
fn a_turn_killed_by_a_restart_runs_once_more_resuming_its_session() {
    let mut t = Thread::new();
    t.say("migrate the database");
    t.apply(Input::TurnStarted { seq: 1, attempt: 1 });
    t.apply(Input::SessionStarted {
        seq: 1,
        attempt: 1,
        session_id: "s-1".to_owned(),
    });
    t.say("then deploy");
    t.restart();
    assert_eq!(
        t.apply(Input::Interrupted { seq: 1, attempt: 1 }),
        [
            Effect::Say {
                key: "turn:1:interrupted".to_owned(),
                text: "Gatehouse restarted during this turn; running it again, continuing its \
                       session."
                    .to_owned()
            },
            start(1, 2, "migrate the database", Some("s-1")),
        ]
    );
    // The dead attempt's report, should it come, changes nothing.
    assert_eq!(t.reply(1, 1, "late", None), []);
    // A second restart during it fails it, and the queue goes on in order.
    t.restart();
    assert_eq!(
        t.apply(Input::Interrupted { seq: 1, attempt: 2 }),
        [
            Effect::Say {
                key: "turn:1:failed".to_owned(),
                text: "Gatehouse restarted twice during this turn, so it is not run again. \
                       Send the message again to retry."
                    .to_owned()
            },
            Effect::Checkpoint { seq: 1 },
            start(2, 1, "then deploy", Some("s-1")),
        ]
    );
    assert_eq!(t.status(1), TurnStatus::Failed);
    assert_eq!(t.state.turn(1).map(|turn| turn.attempts), Some(2));
}

#[test]
fn a_turn_being_stopped_when_the_restart_came_stays_stopped() {
    let mut t = Thread::new();
    t.say("a");
    t.steer("b");
    t.restart();
    assert_eq!(
        t.apply(Input::Interrupted { seq: 1, attempt: 1 }),
        [Effect::Checkpoint { seq: 1 }, start(2, 1, "b", None)]
    );
    assert_eq!(t.status(1), TurnStatus::Stopped);
}

#[test]
fn redelivered_and_late_inputs_change_nothing() {
    let mut t = Thread::new();
    let message = Input::Message {
        seq: Some(7),
        text: "hello".to_owned(),
        person: "ana".to_owned(),
    };
    assert_eq!(t.apply(message.clone()), [start(7, 1, "hello", None)]);
    let stored = t.state.clone();
    assert_eq!(t.apply(message), []);
    assert_eq!(
        t.apply(Input::Status { seq: Some(3) }),
        [],
        "below the highest seq: a redelivery"
    );
    assert_eq!(t.state, stored);
    assert_eq!(t.reply(7, 1, "hi", None).len(), 3);
    let stored = t.state.clone();
    assert_eq!(t.reply(7, 1, "hi", None), [], "the reply is posted once");
    assert_eq!(t.apply(Input::TurnStarted { seq: 7, attempt: 1 }), []);
    assert_eq!(t.apply(Input::Interrupted { seq: 7, attempt: 1 }), []);
    assert_eq!(t.state, stored);
    // A chat input without a seq is numbered after the highest.
    assert_eq!(t.say("again"), [start(8, 1, "again", None)]);
}

#[test]
fn an_empty_message_is_answered_and_runs_nothing() {
    let mut t = Thread::new();
    assert_eq!(
        t.say("  \n"),
        [answer(1, "That message is empty; say what you need.")]
    );
    assert_eq!(
        t.steer(""),
        [answer(2, "That message is empty; say what you need.")]
    );
    assert!(t.state.turns.is_empty());
    // An agent that replies with nothing still gets its turn closed in the thread.
    t.say("a");
    assert_eq!(
        t.reply(3, 1, " ", None)[0],
        Effect::Reply {
            seq: 3,
            text: "Done; the agent wrote no reply.".to_owned()
        }
    );
}

#[test]
fn a_run_holding_the_workspace_makes_messages_wait() {
    let mut t = Thread::new();
    t.say("prepare");
    t.say("and check it");
    let took = Input::RunTookWorkspace {
        run: "r-1".to_owned(),
    };
    assert_eq!(
        apply(&SETTINGS, &mut t.state.clone(), took.clone()),
        Err(Rejection::TurnHoldsWorkspace { seq: 1 })
    );
    t.reply(1, 1, "ready", None);
    t.reply(2, 1, "checked", None);
    assert_eq!(t.apply(took.clone()), []);
    assert_eq!(t.apply(took), [], "taken twice by the same run");
    assert_eq!(
        apply(
            &SETTINGS,
            &mut t.state.clone(),
            Input::RunTookWorkspace {
                run: "r-2".to_owned()
            }
        ),
        Err(Rejection::RunHoldsWorkspace {
            run: "r-1".to_owned()
        })
    );
    assert_eq!(
        t.say("what did the run do?"),
        [Effect::Acknowledge {
            seq: 3,
            text: "Queued; it starts when run r-1 gives the workspace back.".to_owned()
        }]
    );
    assert_eq!(
        t.say("and why?"),
        [Effect::Acknowledge {
            seq: 4,
            text: "Queued, 1 ahead; run r-1 has the workspace.".to_owned()
        }]
    );
    // The idle timer armed before the run took the workspace changes nothing now.
    assert_eq!(t.apply(Input::Idle { timer: 1 }), []);
    let released = Input::RunReleasedWorkspace {
        run: "r-1".to_owned(),
    };
    // The next turn takes the run's files first.
    let mut takes_the_runs = start(3, 1, "what did the run do?", None);
    if let Effect::StartTurn { adopt_run, .. } = &mut takes_the_runs {
        *adopt_run = Some("r-1".to_owned());
    }
    assert_eq!(t.apply(released.clone()), [takes_the_runs]);
    assert_eq!(t.apply(released), [], "a repeated release");
    // Only that one: the turn after it works on the workspace as it is.
    let next = t.reply(3, 1, "it refactored", None);
    assert!(next.contains(&start(4, 1, "and why?", None)), "{next:?}");
}

#[test]
fn take_over_gives_the_conversation_the_runs_workspace() {
    let mut t = Thread::new();
    assert_eq!(
        t.apply(Input::RunReleasedWorkspace {
            run: "r-9".to_owned()
        }),
        [idle(1)]
    );
    assert_eq!(t.state.workspace, Workspace::Kept);
    assert!(matches!(
        &t.say("continue where the run stopped")[..],
        [Effect::StartTurn { adopt_run: Some(run), .. }] if run == "r-9"
    ));
    assert_eq!(
        apply(
            &SETTINGS,
            &mut t.state.clone(),
            Input::RunReleasedWorkspace {
                run: "r-10".to_owned()
            }
        ),
        Err(Rejection::TurnHoldsWorkspace { seq: 1 })
    );
}

#[test]
fn take_over_is_answered_and_refused_while_a_turn_works() {
    let mut t = Thread::new();
    t.say("a long one");
    let refused = t.apply(Input::TakeOver {
        seq: None,
        run: "r-3".into(),
    });
    assert_eq!(
        refused,
        [answer(
            2,
            "Cannot take over run r-3: the conversation is working on turn 1; wait for it or `stop` it first."
        )]
    );
    t.reply(1, 1, "done", None);
    let took = t.apply(Input::TakeOver {
        seq: None,
        run: "r-3".into(),
    });
    assert_eq!(
        took[0],
        answer(
            3,
            "Took over run r-3's workspace; it stays paused. The next message here works on it."
        )
    );
    assert!(matches!(
        &t.say("go on")[..],
        [Effect::StartTurn { adopt_run: Some(run), .. }] if run == "r-3"
    ));
}

#[test]
fn an_idle_workspace_is_released_and_the_next_turn_restores_it() {
    let mut t = Thread::new();
    t.say("a");
    assert_eq!(
        t.apply(Input::Idle { timer: 0 }),
        [],
        "no timer while a turn runs"
    );
    t.reply(1, 1, "a", None);
    t.say("b");
    t.reply(2, 1, "b", None);
    assert_eq!(t.apply(Input::Idle { timer: 1 }), [], "armed before turn 2");
    assert_eq!(
        t.apply(Input::Idle { timer: 2 }),
        [Effect::ReleaseWorkspace {
            timer: 2,
            adopt_run: None
        }]
    );
    assert_eq!(t.state.workspace, Workspace::Released);
    assert_eq!(t.apply(Input::Idle { timer: 2 }), [], "released once");
    assert_eq!(t.say("c"), [start(3, 1, "c", None)]);
}

#[test]
fn reports_about_unknown_turns_are_refused_without_change() {
    let mut t = Thread::new();
    t.say("a");
    let stored = t.state.clone();
    assert_eq!(
        apply(
            &SETTINGS,
            &mut t.state,
            Input::TurnStarted { seq: 9, attempt: 1 }
        ),
        Err(Rejection::UnknownTurn(9))
    );
    assert_eq!(t.state, stored);
    assert_eq!(
        Rejection::UnknownTurn(9).to_string(),
        "this conversation has no turn 9"
    );
}

#[test]
fn effect_keys_name_what_they_are_about() {
    let keys: Vec<String> = [
        start(3, 2, "x", None),
        Effect::CancelTurn { seq: 3, attempt: 1 },
        Effect::Reply {
            seq: 3,
            text: String::new(),
        },
        Effect::Acknowledge {
            seq: 3,
            text: String::new(),
        },
        answer(4, ""),
        Effect::Checkpoint { seq: 3 },
        idle(5),
        Effect::ReleaseWorkspace {
            timer: 5,
            adopt_run: None,
        },
    ]
    .iter()
    .map(Effect::key)
    .collect();
    assert_eq!(
        keys,
        [
            "turn:3:start:2",
            "turn:3:cancel:1",
            "turn:3:reply",
            "turn:3:acknowledge",
            "message:4:answer",
            "turn:3:checkpoint",
            "idle:5:schedule",
            "idle:5:release",
        ]
    );
}

#[test]
fn the_state_is_stored_as_plain_json() {
    let mut t = Thread::new();
    t.say("a");
    let json = serde_json::to_value(&t.state).expect("serializes");
    assert_eq!(
        json["workspace"],
        serde_json::json!({"state": "turn", "seq": 1})
    );
    assert_eq!(json["turns"][0]["status"], "running");
}

fn review(key: &str, from: &str) -> Feedback {
    Feedback {
        kind: FeedbackKind::Review,
        key: key.to_owned(),
        text: "src/lib.rs:3: rename `x` to `count`".to_owned(),
        pull: PullRef {
            repo: "acme/api".to_owned(),
            number: 7,
        },
        from: from.to_owned(),
        thread: None,
    }
}

fn feedback(seq: Option<u64>, feedback: Feedback) -> Input {
    Input::Feedback {
        seq,
        feedback,
        person: "alice".to_owned(),
    }
}

#[test]
fn feedback_on_an_idle_conversation_is_a_turn_that_carries_it() {
    let mut t = Thread::new();
    t.say("add a health check");
    t.reply(1, 1, "added", Some("s-1"));
    let said = review("review:100", "alice");
    let effects = t.apply(feedback(Some(2), said.clone()));
    let [
        Effect::Acknowledge { seq: 2, text: ack },
        Effect::StartTurn {
            seq: 2,
            attempt: 1,
            text,
            resume_session,
            work: Work::Assistant,
            adopt_run: None,
            feedback: Some(carried),
        },
    ] = &effects[..]
    else {
        panic!("{effects:?}");
    };
    assert_eq!(ack, "Review of acme/api#7 by @alice: working on it.");
    assert!(
        text.starts_with(
            "Review of acme/api#7 by @alice:\n\n\
             src/lib.rs:3: rename `x` to `count`\n\nMake the changes asked for."
        ),
        "{text}"
    );
    // It continues the assistant's session: the agent knows the work it reviews.
    assert_eq!(resume_session.as_deref(), Some("s-1"));
    assert_eq!(carried, &said);
    let turn = t.state.turn(2).expect("the feedback's turn");
    assert_eq!(turn.feedback.as_ref(), Some(&said));
    assert_eq!(turn.person, "alice");
}

#[test]
fn feedback_during_a_turn_waits_behind_it_and_the_queue() {
    let mut t = Thread::new();
    t.say("fix the bug");
    assert_eq!(
        t.apply(feedback(None, review("review:1", "alice"))),
        [Effect::Acknowledge {
            seq: 2,
            text: "Review of acme/api#7 by @alice: queued behind turn 1.".to_owned()
        }]
    );
    t.say("and a test");
    let checks = Feedback {
        kind: FeedbackKind::ChecksFailed,
        key: "checks:abc".to_owned(),
        text: "job `test` failed:\nassertion failed".to_owned(),
        from: String::new(),
        ..review("", "")
    };
    assert_eq!(
        t.apply(feedback(None, checks.clone())),
        [Effect::Acknowledge {
            seq: 4,
            text: "Failing checks on acme/api#7: queued behind turn 3.".to_owned()
        }],
        "never refused for a full queue (max_queue is 2 here)"
    );
    assert_eq!(t.state.queue, [2, 3, 4]);
    // They run in the order they came, each carrying its own feedback.
    let next = t.reply(1, 1, "fixed", Some("s-1"));
    let started = next.iter().find_map(|e| match e {
        Effect::StartTurn { seq, feedback, .. } => Some((*seq, feedback.clone())),
        _ => None,
    });
    assert_eq!(started, Some((2, Some(review("review:1", "alice")))));
    t.reply(2, 1, "renamed", Some("s-1"));
    let next = t.reply(3, 1, "tested", Some("s-1"));
    let Some(Effect::StartTurn {
        seq: 4,
        text,
        feedback: Some(carried),
        ..
    }) = next.last()
    else {
        panic!("{next:?}");
    };
    assert_eq!(carried, &checks);
    assert!(
        text.contains("Never skip, delete or weaken tests"),
        "{text}"
    );
}

#[test]
fn feedback_while_a_run_holds_the_workspace_waits_for_it() {
    let mut t = Thread::new();
    t.apply(Input::RunTookWorkspace {
        run: "r-1".to_owned(),
    });
    assert_eq!(
        t.apply(feedback(None, review("review:1", ""))),
        [Effect::Acknowledge {
            seq: 1,
            text: "Review of acme/api#7: queued; it starts when run r-1 gives the workspace back."
                .to_owned()
        }]
    );
    let released = t.apply(Input::RunReleasedWorkspace {
        run: "r-1".to_owned(),
    });
    assert!(
        matches!(
            &released[..],
            [Effect::StartTurn {
                seq: 1,
                feedback: Some(_),
                adopt_run: Some(_),
                ..
            }]
        ),
        "{released:?}"
    );
}

#[test]
fn redelivered_feedback_changes_nothing_and_an_interrupted_one_runs_again_with_it() {
    let mut t = Thread::new();
    let said = review("review:1", "alice");
    t.apply(feedback(Some(1), said.clone()));
    let revision = t.state.revision;
    assert_eq!(t.apply(feedback(Some(1), said.clone())), []);
    assert_eq!(t.state.revision, revision);
    t.restart();
    assert_eq!(
        t.state.turn(1).and_then(|t| t.feedback.clone()),
        Some(said.clone())
    );
    let again = t.apply(Input::Interrupted { seq: 1, attempt: 1 });
    assert!(
        matches!(again.last(), Some(Effect::StartTurn { seq: 1, attempt: 2, feedback: Some(f), .. }) if *f == said),
        "{again:?}"
    );
}

#[test]
fn a_turn_stored_before_feedback_existed_reads_back_without_it() {
    let mut t = Thread::new();
    t.say("a");
    let mut json = serde_json::to_value(&t.state).expect("serializes");
    assert!(json["turns"][0].get("feedback").is_none(), "{json}");
    json["turns"][0]
        .as_object_mut()
        .expect("a turn")
        .remove("feedback");
    let read: Conversation = serde_json::from_value(json).expect("deserializes");
    assert_eq!(read, t.state);
}
