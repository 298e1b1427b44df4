//! Random threads: any sequence of messages, commands, runner reports, restarts, runs and
//! timers, including repeated and late ones. Whatever happens, one turn runs at a time,
//! queued messages are neither lost nor reordered, and no two effects share a key.
//!
//! `PROPTEST_CASES=20000` for a longer search.

use std::collections::{BTreeSet, VecDeque};
use std::time::Duration;

use gatehouse_conversation::{
    Conversation, Effect, Input, Outcome, Settings, TurnStatus, Workspace, apply,
};
use gatehouse_events::{Feedback, FeedbackKind, PullRef};
use proptest::prelude::*;

/// The rules as seen from outside: what must have happened, from inputs and effects alone.
struct Model {
    /// Every key emitted so far.
    keys: BTreeSet<String>,
    /// The attempt started and not yet reported ended.
    in_flight: Option<(u64, u32)>,
    /// Accepted messages not yet started, in the order they must start.
    expected: VecDeque<u64>,
    /// Turns that got a Reply.
    replied: BTreeSet<u64>,
}

impl Model {
    fn new() -> Self {
        Self {
            keys: BTreeSet::new(),
            in_flight: None,
            expected: VecDeque::new(),
            replied: BTreeSet::new(),
        }
    }

    /// Follows one input the state accepted, then checks its effects.
    fn observe(
        &mut self,
        before: &Conversation,
        after: &Conversation,
        input: &Input,
        effects: &[Effect],
    ) {
        match input {
            Input::TurnFinished { seq, attempt, .. } | Input::Interrupted { seq, attempt }
                if self.in_flight == Some((*seq, *attempt)) =>
            {
                self.in_flight = None;
            }
            _ => {}
        }
        let new_turn = after.turns.len() > before.turns.len();
        match input {
            Input::Message { .. }
            | Input::Ask { .. }
            | Input::Deliver { .. }
            | Input::Feedback { .. }
                if new_turn =>
            {
                self.expected.push_back(after.last_seq);
            }
            Input::Steer { .. } if new_turn => self.expected.push_front(after.last_seq),
            _ => {}
        }
        for effect in effects {
            assert!(
                self.keys.insert(effect.key()),
                "{} emitted twice",
                effect.key()
            );
            match effect {
                Effect::StartTurn { seq, attempt, .. } => {
                    assert_eq!(
                        self.in_flight, None,
                        "turn {seq} started while another runs"
                    );
                    self.in_flight = Some((*seq, *attempt));
                    if *attempt == 1 {
                        assert_eq!(self.expected.pop_front(), Some(*seq), "turns out of order");
                    }
                }
                Effect::Say { key, .. } if key.ends_with(":interrupted") => {
                    // The interrupted turn runs again next, in this same step.
                    let seq = key.split(':').nth(1).and_then(|s| s.parse().ok());
                    assert!(
                        matches!(effects.last(), Some(Effect::StartTurn { seq: s, attempt: 2, .. }) if Some(*s) == seq),
                        "{effects:?}"
                    );
                }
                Effect::Reply { seq, .. } => {
                    assert!(self.replied.insert(*seq));
                }
                _ => {}
            }
        }
        assert!(
            effects
                .iter()
                .filter(|e| matches!(e, Effect::StartTurn { .. }))
                .count()
                <= 1,
            "{effects:?}"
        );
    }
}

/// Checks what must hold of every state.
fn check(state: &Conversation, settings: &Settings) {
    let running: Vec<u64> = state
        .turns
        .iter()
        .filter(|t| t.status == TurnStatus::Running)
        .map(|t| t.seq)
        .collect();
    assert!(running.len() <= 1, "turns {running:?} run at once");
    match &state.workspace {
        Workspace::Turn { seq } => assert_eq!(running, [*seq]),
        _ => assert_eq!(running, [] as [u64; 0]),
    }
    let queued: Vec<u64> = state
        .turns
        .iter()
        .filter(|t| t.status == TurnStatus::Queued)
        .map(|t| t.seq)
        .collect();
    let mut in_queue = state.queue.clone();
    in_queue.sort_unstable();
    assert_eq!(in_queue, queued, "the queue holds exactly the queued turns");
    if !state.workspace.is_held() {
        assert!(state.queue.is_empty(), "turns wait on a free workspace");
    }
    // A steer takes the place of the turn it stops, so may exceed the limit by one;
    // feedback from a pull request is never refused for a full queue.
    let typed = state
        .queue
        .iter()
        .filter(|seq| state.turn(**seq).is_some_and(|t| t.feedback.is_none()))
        .count();
    assert!(typed <= settings.max_queue + 1, "{:?}", state.queue);
    for turn in &state.turns {
        if let Some(feedback) = &turn.feedback {
            assert!(turn.text.contains(&feedback.text), "{turn:?}");
            assert!(turn.work.is_assistant(), "{turn:?}");
        }
    }
    assert!(state.turns.windows(2).all(|w| w[0].seq < w[1].seq));
    assert!(state.turns.iter().all(|t| t.attempts <= 2));
    let stored = serde_json::to_string(state).expect("serializes");
    let restored: Conversation = serde_json::from_str(&stored).expect("deserializes");
    assert_eq!(&restored, state);
}

fn message(text: &str, seq: Option<u64>) -> Input {
    Input::Message {
        seq,
        text: text.to_owned(),
        person: "ana".to_owned(),
    }
}

/// Picks an input from a choice, against the current state so most are meaningful.
fn input(state: &Conversation, kind: u8, arg: u8) -> Input {
    let n = u64::from(arg);
    let running = state.running().map(|t| (t.seq, t.attempts));
    let (seq, attempt) = running.unwrap_or((1 + n % 8, 1));
    let session = || Some(format!("s-{}", n % 3));
    let run = format!("r-{}", n % 2);
    match kind % 14 {
        0 if n % 5 == 0 => Input::Ask {
            seq: None,
            role: "reviewer".into(),
            text: "review".into(),
            person: "ana".into(),
        },
        0 if n % 5 == 1 => Input::Deliver {
            seq: None,
            draft: n % 2 == 0,
            person: "ana".into(),
        },
        0 if n % 5 == 2 => Input::Feedback {
            seq: if n % 2 == 0 {
                None
            } else {
                Some(n % (state.last_seq + 2))
            },
            feedback: Feedback {
                kind: FeedbackKind::Review,
                key: format!("review:{n}"),
                text: "rename it".into(),
                pull: PullRef {
                    repo: "acme/api".into(),
                    number: 7,
                },
                from: "alice".into(),
                thread: None,
            },
            person: "alice".into(),
        },
        0 | 1 => message(if n % 7 == 0 { " " } else { "work" }, None),
        2 => message("again", Some(n % (state.last_seq + 2))),
        3 => Input::Steer {
            seq: None,
            text: "instead".to_owned(),
            person: "bo".to_owned(),
        },
        4 if n % 3 == 0 => Input::TakeOver {
            seq: None,
            run: run.clone(),
        },
        4 => Input::Stop { seq: None },
        5 => Input::Status { seq: None },
        6 => Input::TurnStarted { seq, attempt },
        7 => Input::SessionStarted {
            seq,
            attempt,
            session_id: format!("s-{n}"),
        },
        8 | 9 => Input::TurnFinished {
            seq,
            attempt,
            outcome: if n % 2 == 0 {
                Outcome::Replied {
                    reply: "done".to_owned(),
                    session_id: session(),
                }
            } else {
                Outcome::Failed {
                    reason: "crashed".to_owned(),
                    session_id: session().filter(|_| n % 4 == 1),
                }
            },
        },
        10 => Input::Interrupted { seq, attempt },
        // Late or repeated reports, for any turn and attempt.
        11 => Input::TurnFinished {
            seq: 1 + n % 8,
            attempt: u32::from(arg % 3),
            outcome: Outcome::Replied {
                reply: "late".to_owned(),
                session_id: None,
            },
        },
        12 => match n % 3 {
            0 => Input::RunTookWorkspace { run },
            _ => Input::RunReleasedWorkspace { run },
        },
        _ => Input::Idle {
            timer: state.idle_timer.saturating_sub(n % 2),
        },
    }
}

/// Applies one input, checking what a refusal and an acceptance must each leave.
fn step(settings: &Settings, state: &mut Conversation, model: &mut Model, input: Input) {
    let before = state.clone();
    match apply(settings, state, input.clone()) {
        Ok(effects) => {
            if *state == before {
                assert!(
                    effects.is_empty(),
                    "{input:?} changed nothing yet did {effects:?}"
                );
            } else {
                assert_eq!(state.revision, before.revision + 1);
            }
            model.observe(&before, state, &input, &effects);
        }
        Err(_) => assert_eq!(*state, before, "a refused {input:?} changed the state"),
    }
    check(state, settings);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_threads_keep_the_rules(
        max_queue in 0usize..4,
        choices in prop::collection::vec((any::<u8>(), any::<u8>()), 0..160),
    ) {
        let settings = Settings { max_queue, idle_timeout: Duration::from_secs(60) };
        let mut state = Conversation::new();
        let mut model = Model::new();
        for (kind, arg) in choices {
            if kind == 255 {
                // A restart: only what was stored survives.
                let stored = serde_json::to_string(&state).expect("serializes");
                state = serde_json::from_str(&stored).expect("deserializes");
                continue;
            }
            let input = input(&state, kind, arg);
            step(&settings, &mut state, &mut model, input);
        }

        // Runs give the workspace back and every turn is answered: everything accepted
        // runs, in order, and ends.
        for _ in 0..1000 {
            let input = match (&state.workspace, state.running()) {
                (Workspace::Run { run }, _) => Input::RunReleasedWorkspace { run: run.clone() },
                (_, Some(turn)) => Input::TurnFinished {
                    seq: turn.seq,
                    attempt: turn.attempts,
                    outcome: Outcome::Replied { reply: "done".to_owned(), session_id: None },
                },
                _ => break,
            };
            step(&settings, &mut state, &mut model, input);
        }
        prop_assert!(model.expected.is_empty(), "never started: {:?}", model.expected);
        prop_assert!(state.queue.is_empty());
        prop_assert!(state.turns.iter().all(|t| t.status.is_final() && t.attempts >= 1));
        let checkpoints = model.keys.iter().filter(|k| k.ends_with(":checkpoint")).count();
        prop_assert_eq!(checkpoints, state.turns.len(), "one checkpoint per ended turn");
        let replied = state.turns.iter().filter(|t| t.status == TurnStatus::Replied);
        prop_assert!(replied.map(|t| t.seq).eq(model.replied.iter().copied()));
    }
}
