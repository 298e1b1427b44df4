//! Egress connections per attempt: kept per run node and per conversation turn, read back
//! in order, bounded per attempt, hostile text kept as text and cut when too long.

use chrono::{DateTime, Duration, Utc};
use gatehouse_store::{
    ConnectionOwner, ConnectionRow, ConnectionVerdict, MAX_CONNECTIONS_PER_ATTEMPT, MAX_HOST_BYTES,
};
use gatehouse_tests::{Backend, TestDb, on_both_backends};
use uuid::Uuid;

on_both_backends!(
    connections_are_read_back_per_run_and_per_conversation_in_order,
    an_attempt_keeps_at_most_the_limit_over_all_calls,
    hostile_hosts_are_kept_as_text_and_cut_when_too_long,
);

fn node(run_id: Uuid, node: &str) -> ConnectionOwner {
    ConnectionOwner::Node {
        run_id,
        node: node.into(),
    }
}

fn connection(
    owner: ConnectionOwner,
    attempt: i32,
    host: &str,
    at: DateTime<Utc>,
    refused: Option<&str>,
) -> ConnectionRow {
    ConnectionRow {
        owner,
        attempt,
        host: host.into(),
        port: 443,
        verdict: if refused.is_some() {
            ConnectionVerdict::Refused
        } else {
            ConnectionVerdict::Allowed
        },
        reason: refused.map(str::to_owned),
        bytes_up: if refused.is_some() { 0 } else { 1200 },
        bytes_down: if refused.is_some() { 0 } else { 48_000 },
        started_at: at,
        duration_ms: 35,
    }
}

async fn connections_are_read_back_per_run_and_per_conversation_in_order(backend: Backend) {
    let db = TestDb::new(backend).await;
    let (run, other_run, conversation) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
    let t0 = Utc::now();
    let later = |s: i64| t0 + Duration::seconds(s);
    let turn = |seq| ConnectionOwner::Turn {
        conversation_id: conversation,
        seq,
    };
    // Given out of order, across nodes, attempts, a turn and another run.
    let mut code_2 = connection(
        node(run, "code"),
        2,
        "pypi.org",
        later(1),
        Some("not allowed"),
    );
    code_2.port = 65535;
    code_2.bytes_up = u64::MAX;
    let rows = vec![
        code_2.clone(),
        connection(node(run, "code"), 1, "github.com", later(5), None),
        connection(turn(3), 1, "crates.io", later(2), None),
        connection(
            node(run, "build"),
            1,
            "static.rust-lang.org",
            later(9),
            None,
        ),
        connection(node(run, "code"), 1, "api.github.com", later(3), None),
        connection(node(other_run, "code"), 1, "example.com", later(0), None),
        connection(
            turn(1),
            2,
            "evil.example",
            later(4),
            Some("resolves to 10.0.0.1"),
        ),
    ];
    assert_eq!(
        db.store.record_connections(&rows).await.unwrap(),
        rows.len()
    );
    assert_eq!(db.store.record_connections(&[]).await.unwrap(), 0);

    let of_run = db.store.run_connections(run).await.unwrap();
    let order: Vec<(&str, i32, &str)> = of_run
        .iter()
        .map(|c| match &c.owner {
            ConnectionOwner::Node { node, .. } => (node.as_str(), c.attempt, c.host.as_str()),
            ConnectionOwner::Turn { .. } => panic!("a turn's connection in a run's: {c:?}"),
        })
        .collect();
    assert_eq!(
        order,
        [
            ("build", 1, "static.rust-lang.org"),
            ("code", 1, "api.github.com"),
            ("code", 1, "github.com"),
            ("code", 2, "pypi.org"),
        ]
    );
    // Read back as written (bytes past BIGINT are capped, the rest exact).
    let refused = &of_run[3];
    assert_eq!(refused.verdict, ConnectionVerdict::Refused);
    assert_eq!(refused.reason.as_deref(), Some("not allowed"));
    assert_eq!(refused.port, 65535);
    assert_eq!(refused.bytes_up, i64::MAX as u64);
    assert_eq!(
        refused.started_at.timestamp_micros(),
        code_2.started_at.timestamp_micros()
    );
    assert_eq!(of_run[2].bytes_down, 48_000);
    assert_eq!(of_run[2].reason, None);

    let of_conversation = db
        .store
        .conversation_connections(conversation)
        .await
        .unwrap();
    let hosts: Vec<(ConnectionOwner, i32, &str)> = of_conversation
        .iter()
        .map(|c| (c.owner.clone(), c.attempt, c.host.as_str()))
        .collect();
    assert_eq!(
        hosts,
        [(turn(1), 2, "evil.example"), (turn(3), 1, "crates.io")]
    );
    assert!(
        db.store
            .run_connections(Uuid::now_v7())
            .await
            .unwrap()
            .is_empty()
    );
    db.cleanup().await;
}

async fn an_attempt_keeps_at_most_the_limit_over_all_calls(backend: Backend) {
    let db = TestDb::new(backend).await;
    let run = Uuid::now_v7();
    let t0 = Utc::now();
    let many: Vec<ConnectionRow> = (0..MAX_CONNECTIONS_PER_ATTEMPT as i64 - 10)
        .map(|i| {
            connection(
                node(run, "code"),
                1,
                &format!("h{i}.example"),
                t0 + Duration::milliseconds(i),
                Some("not allowed"),
            )
        })
        .collect();
    assert_eq!(
        db.store.record_connections(&many).await.unwrap(),
        many.len()
    );
    // The next call fills the attempt up and drops the rest; another attempt has its own room.
    let more: Vec<ConnectionRow> = (0..25)
        .map(|i| {
            connection(
                node(run, "code"),
                1,
                &format!("late{i}.example"),
                t0 + Duration::seconds(10 + i),
                None,
            )
        })
        .chain([connection(node(run, "code"), 2, "next.example", t0, None)])
        .collect();
    assert_eq!(db.store.record_connections(&more).await.unwrap(), 11);
    assert_eq!(
        db.store.record_connections(&more[..3]).await.unwrap(),
        0,
        "a full attempt keeps nothing more"
    );
    let stored = db.store.run_connections(run).await.unwrap();
    let first = stored.iter().filter(|c| c.attempt == 1).count();
    assert_eq!(first, MAX_CONNECTIONS_PER_ATTEMPT);
    // The first ones given are the ones kept.
    let late: Vec<&str> = stored
        .iter()
        .filter(|c| c.host.starts_with("late"))
        .map(|c| c.host.as_str())
        .collect();
    assert_eq!(
        late,
        (0..10)
            .map(|i| format!("late{i}.example"))
            .collect::<Vec<_>>()
    );
    assert_eq!(stored.iter().filter(|c| c.attempt == 2).count(), 1);
    db.cleanup().await;
}

async fn hostile_hosts_are_kept_as_text_and_cut_when_too_long(backend: Backend) {
    let db = TestDb::new(backend).await;
    let conversation = Uuid::now_v7();
    let owner = ConnectionOwner::Turn {
        conversation_id: conversation,
        seq: 1,
    };
    let markup = "<script>alert(1)</script>\u{1b}[31m.example";
    let long = "a".repeat(10_000) + ".example";
    let rows = [
        connection(
            owner.clone(),
            1,
            markup,
            Utc::now(),
            Some("'; DROP TABLE runs; --"),
        ),
        connection(
            owner.clone(),
            1,
            &long,
            Utc::now(),
            Some(&"why ".repeat(5000)),
        ),
        connection(
            owner,
            1,
            "",
            Utc::now(),
            Some("CONNECT target `` is not host:port"),
        ),
    ];
    assert_eq!(db.store.record_connections(&rows).await.unwrap(), 3);
    let stored = db
        .store
        .conversation_connections(conversation)
        .await
        .unwrap();
    let by_host = |prefix: &str| {
        stored
            .iter()
            .find(|c| c.host.starts_with(prefix) && (prefix.is_empty() == c.host.is_empty()))
            .unwrap_or_else(|| panic!("no host {prefix:?} in {stored:?}"))
    };
    assert_eq!(by_host("<script>").host, markup);
    assert_eq!(
        by_host("<script>").reason.as_deref(),
        Some("'; DROP TABLE runs; --")
    );
    let cut = by_host("aaa");
    assert!(
        cut.host.len() <= MAX_HOST_BYTES && cut.host.ends_with('…'),
        "{}",
        cut.host
    );
    assert!(cut.reason.as_ref().unwrap().len() <= gatehouse_store::MAX_REASON_BYTES);
    assert_eq!(by_host("").port, 443);
    db.cleanup().await;
}
