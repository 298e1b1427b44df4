//! Round-trip and snapshot tests for the wire format. The snapshots are the contract: a diff
//! in them is a change to what other services (and older versions) read.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use gatehouse_events::*;
use uuid::Uuid;

fn at(s: &str) -> DateTime<Utc> {
    s.parse().unwrap()
}

fn ana() -> Actor {
    Actor {
        channel: Channel::Slack,
        handle: "U0ANA".into(),
        person: Some("ana".into()),
    }
}

fn run_id() -> Uuid {
    "01937c3e-8c1a-7000-8000-000000000001".parse().unwrap()
}

fn requirement_id() -> Uuid {
    "01937c3e-8c1a-7000-8000-0000000000aa".parse().unwrap()
}

/// One sample of every event type.
fn samples() -> Vec<Event> {
    let artifact = Artifact {
        name: "welcome.md".into(),
        sha256: "a".repeat(64),
        size: 12,
    };
    vec![
        Event::RequirementCreated(RequirementCreated {
            requirement_id: requirement_id(),
            source: RequirementSource::Github {
                repo: "acme/api".into(),
                number: 42,
                pull_request: false,
            },
            title: "Fix the login redirect".into(),
            body: "It loops.".into(),
            url: Some("https://github.com/acme/api/issues/42".into()),
            requested_by: Actor {
                channel: Channel::Github,
                handle: "ana-gh".into(),
                person: Some("ana".into()),
            },
        }),
        Event::RequirementUpdated(RequirementUpdated {
            requirement_id: requirement_id(),
            title: Some("Fix the login redirect loop".into()),
            body: None,
            state: RequirementState::Open,
        }),
        Event::RunRequested(RunRequested {
            run_id: run_id(),
            sop: "platform-check".into(),
            params: BTreeMap::from([("repo".into(), "acme/api".into())]),
            requirement_id: Some(requirement_id()),
            requested_by: ana(),
            schedule: Some(ScheduleFire {
                schedule: "nightly-triage".into(),
                scheduled_time: at("2026-11-30T02:00:00Z"),
                owner: None,
            }),
            parent: None,
            workspace: None,
        }),
        Event::RunCommand(RunCommand {
            run_id: run_id(),
            command: RunCommandKind::Retry {
                node: "report".into(),
            },
            actor: ana(),
        }),
        Event::RunUpdated(RunUpdated {
            run_id: run_id(),
            sop: "platform-check".into(),
            sop_version: "sha256:abc".into(),
            requirement_id: None,
            status: RunStatus::Waiting,
            nodes: vec![NodeSnapshot {
                node: "confirm".into(),
                status: NodeStatus::WaitingApproval,
                attempt: 1,
                rework_count: 0,
            }],
            revision: 7,
        }),
        Event::GateOpened(GateOpened {
            run_id: run_id(),
            node: "confirm".into(),
            attempt: 2,
            approvers: vec!["group:leads".into()],
            min_approvals: 1,
            send_back_targets: vec!["report".into()],
            artifacts: vec![artifact.clone()],
            expires_at: Some(at("2026-12-01T00:00:00Z")),
            raise: None,
        }),
        Event::GateDecision(GateDecision {
            run_id: run_id(),
            node: "confirm".into(),
            attempt: 2,
            decision: GateDecisionKind::SendBack {
                to: "report".into(),
            },
            comment: Some("Add the error budget.".into()),
            actor: ana(),
            groups: vec![],
        }),
        Event::GateClosed(GateClosed {
            run_id: run_id(),
            node: "confirm".into(),
            attempt: 2,
            status: GateStatus::SentBack,
            decided_by: vec![ana()],
            comment: Some("Add the error budget.".into()),
        }),
        Event::NodeDispatch(NodeDispatch {
            run_id: run_id(),
            node: "report".into(),
            attempt: 3,
            sandbox: "default".into(),
            spec: NodeSpec::Script(ScriptSpec {
                run: "echo hi".into(),
                work: SandboxWork::default(),
            }),
            env: BTreeMap::from([("GREETING".into(), "hi".into())]),
            secrets: vec!["GITHUB_TOKEN".into()],
            timeout_secs: Some(600),
        }),
        Event::NodeProgress(NodeProgress {
            run_id: run_id(),
            node: "report".into(),
            attempt: 3,
            message: "cloning acme/api".into(),
        }),
        Event::NodeFinished(NodeFinished {
            run_id: run_id(),
            node: "report".into(),
            attempt: 3,
            outcome: NodeOutcome::Failed {
                reason: "exit code 2".into(),
            },
            exit_code: Some(2),
            duration_ms: 1532,
            artifacts: vec![artifact],
            interrupted: false,
            over_budget: None,
        }),
        Event::CardPosted(CardPosted {
            run_id: run_id(),
            node: "confirm".into(),
            attempt: 2,
            channel: Channel::Slack,
            location: "C0123456".into(),
            message_id: "1700000000.000100".into(),
        }),
        Event::ConversationInput(ConversationInput {
            conversation_id: conversation_id(),
            seq: 2,
            person: "ana".into(),
            said: Said::Steer {
                text: "use the v2 endpoint".into(),
            },
        }),
        Event::TurnDispatch(TurnDispatch {
            conversation_id: conversation_id(),
            requirement_id: requirement_id(),
            thread: ChatThread {
                platform: "slack".into(),
                channel: "C0API".into(),
                thread: "1700000000.000100".into(),
            },
            workspace: RunWorkspace {
                project: "api".into(),
                repositories: vec![RepositoryCheckout {
                    repo: "acme/api".into(),
                    branch: Some("main".into()),
                    mode: RepositoryMode::Auto,
                    branch_name: None,
                    url: None,
                    forge: None,
                    path: None,
                    history: Default::default(),
                }],
                settings: BTreeMap::new(),
            },
            adopt_run: None,
            task: TurnTask::Turn {
                seq: 2,
                attempt: 1,
                role: "assistant".into(),
                text: "use the v2 endpoint".into(),
                resume_session: Some("9a3c1f0e-session".into()),
                ask: false,
                timeout_secs: Some(1800),
                feedback: None,
            },
        }),
        Event::TurnProgress(TurnProgress {
            conversation_id: conversation_id(),
            seq: 2,
            attempt: 1,
            kind: TurnProgressKind::Session {
                session_id: "9a3c1f0e-session".into(),
            },
        }),
        Event::TurnFinished(TurnFinished {
            conversation_id: conversation_id(),
            seq: 2,
            attempt: 1,
            outcome: TurnOutcome::Replied {
                reply: "Done: the client calls /v2/orders.".into(),
            },
            session_id: Some("9a3c1f0e-session".into()),
            duration_ms: 8120,
        }),
        Event::TurnCancel(TurnCancel {
            conversation_id: conversation_id(),
            seq: 2,
            attempt: 1,
        }),
        Event::QuestionAsked(QuestionAsked {
            question_id: question_id(),
            owner: QuestionOwner::Node {
                run_id: run_id(),
                node: "implement".into(),
            },
            attempt: 2,
            kind: QuestionKind::Approval,
            question: "May I drop the legacy_users table?".into(),
            evidence: Some("nothing has read it since v3".into()),
        }),
        Event::QuestionAnswered(QuestionAnswered {
            question_id: question_id(),
            owner: QuestionOwner::Turn {
                conversation_id: conversation_id(),
                seq: 2,
            },
            answer: QuestionAnswer::Denied,
            comment: Some("not before the v4 migration".into()),
            actor: Some(Actor {
                channel: Channel::Slack,
                handle: "U0ANA".into(),
                person: Some("ana".into()),
            }),
        }),
    ]
}

fn question_id() -> Uuid {
    "01937c3e-8c1a-7000-8000-0000000000dd".parse().unwrap()
}

fn conversation_id() -> Uuid {
    "01937c3e-8c1a-7000-8000-0000000000cc".parse().unwrap()
}

/// An envelope with a fixed id and time so snapshots are stable.
fn envelope(event: &Event) -> Envelope {
    let mut e = Envelope::new(
        "test",
        event,
        Some(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
                .parse()
                .unwrap(),
        ),
    )
    .unwrap();
    e.id = "01937c3e-8c1a-7000-8000-00000000ffff".parse().unwrap();
    e.occurred_at = at("2026-11-30T09:00:00Z");
    e
}

#[test]
fn samples_cover_every_event_type() {
    let types: Vec<_> = samples().iter().map(Event::event_type).collect();
    assert_eq!(types, EventType::ALL);
}

#[test]
fn every_event_round_trips_through_bytes() {
    for event in samples() {
        let sent = envelope(&event);
        let received = Envelope::from_slice(&sent.to_bytes().unwrap()).unwrap();
        assert_eq!(received, sent);
        assert_eq!(received.decode().unwrap(), event);
        assert_eq!(received.event_type, event.event_type().as_str());
    }
}

#[test]
fn wire_format_snapshots() {
    for event in samples() {
        let name = event.event_type().as_str().replace('.', "_");
        insta::assert_json_snapshot!(name, envelope(&event));
    }
}

#[test]
fn new_envelopes_get_v7_ids_and_correlation_from_the_payload() {
    let event = &samples()[6];
    let e = Envelope::new("ingest", event, None).unwrap();
    assert_eq!(e.id.get_version_num(), 7);
    assert_eq!(e.schema_version, SCHEMA_VERSION);
    assert_eq!(e.correlation.run_id, Some(run_id()));
    assert_eq!(e.correlation.node_id.as_deref(), Some("confirm"));
    assert_eq!(e.correlation.attempt, Some(2));
}

#[test]
fn unknown_fields_are_tolerated_at_every_level() {
    let mut json = serde_json::to_value(envelope(&samples()[6])).unwrap();
    json["added_by_a_newer_version"] = serde_json::json!(true);
    json["correlation"]["tenant"] = serde_json::json!("x");
    json["payload"]["channel_hint"] = serde_json::json!({ "nested": [1, 2] });
    let e = Envelope::from_slice(&serde_json::to_vec(&json).unwrap()).unwrap();
    assert_eq!(e.decode().unwrap(), samples()[6]);
}

#[test]
fn unknown_event_type_is_surfaced_not_a_panic() {
    let mut e = envelope(&samples()[0]);
    e.event_type = "requirement.teleported".into();
    let e = Envelope::from_slice(&e.to_bytes().unwrap()).unwrap();
    match e.decode() {
        Err(EventError::UnknownType(t)) => assert_eq!(t, "requirement.teleported"),
        other => panic!("expected UnknownType, got {other:?}"),
    }
}

#[test]
fn future_schema_version_is_refused_with_both_versions_named() {
    let mut e = envelope(&samples()[0]);
    e.schema_version = SCHEMA_VERSION + 1;
    let err = Envelope::from_slice(&e.to_bytes().unwrap()).unwrap_err();
    assert!(matches!(err, EventError::FutureSchema { found, supported }
        if found == SCHEMA_VERSION + 1 && supported == SCHEMA_VERSION));
    assert!(err.to_string().contains("newer than the supported version"));
}

#[test]
fn corrupt_bytes_and_wrong_payloads_are_errors() {
    for junk in [&b""[..], b"{", b"\xff\xfe", b"[]", b"{\"id\": 3}"] {
        assert!(matches!(
            Envelope::from_slice(junk),
            Err(EventError::Malformed(_))
        ));
    }
    let mut e = envelope(&samples()[6]);
    e.payload = serde_json::json!({ "run_id": "not-a-uuid" });
    assert!(matches!(e.decode(), Err(EventError::Payload { .. })));
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// No byte string makes the decoder panic.
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            if let Ok(e) = Envelope::from_slice(&bytes) {
                let _ = e.decode();
            }
        }

        /// Free-text fields survive the round trip whatever they contain.
        #[test]
        fn free_text_round_trips(message in ".*", node in "[a-z][a-z0-9_-]{0,20}", attempt in 1u32..1000) {
            let event = Event::NodeProgress(NodeProgress { run_id: run_id(), node, attempt, message });
            let e = Envelope::new("p", &event, None).unwrap();
            let back = Envelope::from_slice(&e.to_bytes().unwrap()).unwrap();
            prop_assert_eq!(back.decode().unwrap(), event);
        }
    }
}
