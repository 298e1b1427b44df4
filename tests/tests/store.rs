//! The store suite: every test runs unchanged against Postgres (a fresh schema) and SQLite
//! (a fresh file).

use std::collections::BTreeSet;
use std::time::Duration;

use gatehouse_events::{Envelope, Event, NodeProgress, StreamKind};
use gatehouse_store::{
    Backend as StoreBackend, Claim, NewDeadLetter, OneTime, QueueMessage, Store, StoreError,
    UsageRow,
};
use gatehouse_tests::{Backend, TestDb, on_both_backends, quick_retry};
use sha2::{Digest, Sha256};
use uuid::Uuid;

#[path = "store/egress.rs"]
mod egress;
#[path = "store/homes.rs"]
mod homes;
#[path = "store/schema_parity.rs"]
mod schema_parity;
#[path = "store/spend.rs"]
mod spend;

fn event(message: &str) -> Envelope {
    let event = Event::NodeProgress(NodeProgress {
        run_id: Uuid::now_v7(),
        node: "report".into(),
        attempt: 1,
        message: message.into(),
    });
    Envelope::new(
        "store-test",
        &event,
        Some(gatehouse_events::TraceParent::new_root()),
    )
    .unwrap()
}

async fn append(store: &Store, envelopes: &[Envelope]) {
    let mut tx = store.begin().await.unwrap();
    for e in envelopes {
        tx.append_outbox(e).await.unwrap();
    }
    tx.commit().await.unwrap();
}

on_both_backends!(
    migrations_are_idempotent,
    outbox_append_is_part_of_the_transaction,
    outbox_claims_are_leased,
    a_commit_hands_its_outbox_rows_to_its_processs_relay,
    a_relay_too_far_behind_is_not_waited_for,
    concurrent_claims_never_overlap,
    outbox_sent_and_released_rows,
    inbox_records_each_event_once_per_consumer,
    inbox_concurrent_records_have_one_winner,
    dead_letters_keep_id_and_reason,
    queue_fans_out_by_filter_and_backfills_new_consumers,
    queue_leases_acks_and_work_queue_removal,
    queue_consumer_created_during_publishing_misses_nothing,
    a_run_freezes_a_setting_once,
    usage_keeps_each_attempt_and_model_once,
    a_lease_has_one_holder_until_it_runs_out,
    a_minted_login_link_is_stored_as_its_hash_only,
    a_gate_attempt_is_settled_by_one_claim,
);

async fn migrations_are_idempotent(backend: Backend) {
    let db = TestDb::new(backend).await;
    db.store.migrate().await.unwrap();
    let again = Store::connect(&db.url, quick_retry()).await.unwrap();
    again.migrate().await.unwrap();
    let expected = match backend {
        Backend::Postgres => StoreBackend::Postgres,
        Backend::Sqlite => StoreBackend::Sqlite,
    };
    assert_eq!(again.backend(), expected);
    again.close().await;
    db.cleanup().await;
}

async fn outbox_append_is_part_of_the_transaction(backend: Backend) {
    let db = TestDb::new(backend).await;
    let (kept, dropped) = (event("kept"), event("rolled back"));

    let mut tx = db.store.begin().await.unwrap();
    tx.append_outbox(&dropped).await.unwrap();
    tx.rollback().await.unwrap();
    {
        let mut tx = db.store.begin().await.unwrap();
        tx.append_outbox(&dropped).await.unwrap();
        // dropped without commit
    }
    let mut woken = db.store.watch_outbox();
    woken.borrow_and_update();
    append(&db.store, std::slice::from_ref(&kept)).await;
    assert!(woken.has_changed().unwrap(), "commit wakes the relay");

    let claimed = db
        .store
        .claim_outbox(10, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    let row = &claimed[0];
    assert_eq!(row.id, kept.id);
    assert_eq!(row.topic, "node.progress");
    assert_eq!(Envelope::from_slice(&row.payload).unwrap(), kept);
    assert_eq!(
        row.traceparent,
        kept.trace.as_ref().map(ToString::to_string)
    );
    db.cleanup().await;
}

/// A relay that has 1,024 batches waiting gets no more: the commit gives the rows back for
/// claiming at once, and does so after giving up its transaction slot (on SQLite the
/// give-back waits for that slot, and a commit still holding it stalled for the 10 s a
/// write waits for its turn).
async fn a_relay_too_far_behind_is_not_waited_for(backend: Backend) {
    let db = TestDb::new(backend).await;
    let _handover = db.store.hand_outbox_here();
    for i in 0..1024 {
        append(&db.store, &[event(&i.to_string())]).await;
    }
    let beyond = [event("beyond")];
    let began = std::time::Instant::now();
    append(&db.store, &beyond).await;
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "the commit waited {:?}",
        began.elapsed()
    );
    let claimed = db
        .store
        .claim_outbox(10, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(
        claimed.iter().map(|r| r.id).collect::<Vec<_>>(),
        [beyond[0].id],
        "given back; the 1,024 handed over stay leased to the relay"
    );
    db.cleanup().await;
}

async fn a_commit_hands_its_outbox_rows_to_its_processs_relay(backend: Backend) {
    let db = TestDb::new(backend).await;
    let mut handover = db.store.hand_outbox_here();
    let events: Vec<_> = (0..3).map(|i| event(&i.to_string())).collect();
    append(&db.store, &events).await;
    // The relay gets them as committed, in order, without claiming...
    let handed = tokio::time::timeout(Duration::from_secs(5), handover.recv())
        .await
        .unwrap()
        .unwrap();
    let ids: Vec<_> = handed.iter().map(|r| r.id).collect();
    assert_eq!(ids, events.iter().map(|e| e.id).collect::<Vec<_>>());
    assert_eq!(Envelope::from_slice(&handed[0].payload).unwrap(), events[0]);
    // ...and no other relay claims them while it publishes.
    let claim = || db.store.claim_outbox(10, Duration::from_secs(30));
    assert!(claim().await.unwrap().is_empty());
    // Rows waiting for a relay that shuts down are given back, for any relay to claim.
    let more = [event("waiting")];
    append(&db.store, &more).await;
    handover.close().await;
    let claimed = claim().await.unwrap();
    assert_eq!(
        claimed.iter().map(|r| r.id).collect::<Vec<_>>(),
        [more[0].id]
    );
    // With no relay here, commits leave their rows for claiming.
    let last = [event("unhanded")];
    append(&db.store, &last).await;
    let claimed = claim().await.unwrap();
    assert_eq!(
        claimed.iter().map(|r| r.id).collect::<Vec<_>>(),
        [last[0].id]
    );
    db.cleanup().await;
}

async fn outbox_claims_are_leased(backend: Backend) {
    let db = TestDb::new(backend).await;
    let events: Vec<_> = (0..3).map(|i| event(&i.to_string())).collect();
    append(&db.store, &events).await;

    let first = db
        .store
        .claim_outbox(10, Duration::from_millis(300))
        .await
        .unwrap();
    let ids: Vec<_> = first.iter().map(|r| r.id).collect();
    assert_eq!(
        ids,
        events.iter().map(|e| e.id).collect::<Vec<_>>(),
        "oldest first"
    );
    assert!(
        db.store
            .claim_outbox(10, Duration::from_secs(30))
            .await
            .unwrap()
            .is_empty()
    );

    // The claimer died: after the lease the rows are claimable again.
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        db.store
            .claim_outbox(10, Duration::from_secs(30))
            .await
            .unwrap()
            .len(),
        3
    );
    db.cleanup().await;
}

async fn concurrent_claims_never_overlap(backend: Backend) {
    let db = TestDb::new(backend).await;
    let events: Vec<_> = (0..200).map(|i| event(&i.to_string())).collect();
    append(&db.store, &events).await;

    let claimers = (0..4).map(|_| {
        let store = db.store.clone();
        tokio::spawn(async move {
            let mut mine = Vec::new();
            loop {
                let batch = store
                    .claim_outbox(7, Duration::from_secs(60))
                    .await
                    .unwrap();
                if batch.is_empty() {
                    return mine;
                }
                mine.extend(batch.into_iter().map(|r| r.id));
            }
        })
    });
    let mut all = Vec::new();
    for c in claimers {
        all.extend(c.await.unwrap());
    }
    let unique: BTreeSet<_> = all.iter().collect();
    assert_eq!(all.len(), 200, "every row claimed once");
    assert_eq!(unique.len(), 200);
    db.cleanup().await;
}

async fn outbox_sent_and_released_rows(backend: Backend) {
    let db = TestDb::new(backend).await;
    let events: Vec<_> = (0..3).map(|i| event(&i.to_string())).collect();
    append(&db.store, &events).await;
    assert_eq!(db.store.outbox_backlog().await.unwrap(), 3);

    let rows = db
        .store
        .claim_outbox(10, Duration::from_secs(30))
        .await
        .unwrap();
    db.store.mark_outbox_sent(&[rows[0].seq]).await.unwrap();
    db.store
        .release_outbox(rows[1].seq, Some("nats: no responders"), Duration::ZERO)
        .await
        .unwrap();
    db.store
        .release_outbox(rows[2].seq, None, Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(db.store.outbox_backlog().await.unwrap(), 2);

    let again = db
        .store
        .claim_outbox(10, Duration::from_secs(30))
        .await
        .unwrap();
    let attempts: Vec<_> = again.iter().map(|r| (r.id, r.attempts)).collect();
    assert_eq!(attempts, vec![(events[1].id, 1), (events[2].id, 0)]);

    // Sent rows are kept for inspection until pruned.
    assert_eq!(
        db.store
            .prune_outbox(Duration::from_secs(3600))
            .await
            .unwrap(),
        0
    );
    assert_eq!(db.store.prune_outbox(Duration::ZERO).await.unwrap(), 1);
    db.cleanup().await;
}

async fn inbox_records_each_event_once_per_consumer(backend: Backend) {
    let db = TestDb::new(backend).await;
    let id = Uuid::now_v7();

    let mut tx = db.store.begin().await.unwrap();
    assert!(tx.record_inbox("scheduler", id).await.unwrap());
    tx.rollback().await.unwrap();

    let mut tx = db.store.begin().await.unwrap();
    assert!(
        tx.record_inbox("scheduler", id).await.unwrap(),
        "rollback forgot it"
    );
    assert!(!tx.record_inbox("scheduler", id).await.unwrap());
    assert!(
        tx.record_inbox("notifier", id).await.unwrap(),
        "per consumer"
    );
    tx.commit().await.unwrap();

    let mut tx = db.store.begin().await.unwrap();
    assert!(!tx.record_inbox("scheduler", id).await.unwrap());
    assert!(!tx.record_inbox("notifier", id).await.unwrap());
    tx.commit().await.unwrap();
    db.cleanup().await;
}

async fn inbox_concurrent_records_have_one_winner(backend: Backend) {
    let db = TestDb::new(backend).await;
    let id = Uuid::now_v7();
    let racers = (0..4).map(|_| {
        let store = db.store.clone();
        tokio::spawn(async move {
            let mut tx = store.begin().await.unwrap();
            let won = tx.record_inbox("runner", id).await.unwrap();
            tokio::time::sleep(Duration::from_millis(50)).await;
            tx.commit().await.unwrap();
            won
        })
    });
    let mut winners = 0;
    for r in racers {
        winners += usize::from(r.await.unwrap());
    }
    assert_eq!(winners, 1);
    db.cleanup().await;
}

async fn dead_letters_keep_id_and_reason(backend: Backend) {
    let db = TestDb::new(backend).await;
    let id = Uuid::now_v7();
    for (consumer, event_id) in [("notifier", Some(id)), ("notifier", None), ("other", None)] {
        db.store
            .park_dead_letter(NewDeadLetter {
                consumer,
                event_id,
                topic: "gate.opened",
                payload: b"\xff not json",
                reason: "malformed envelope: expected value",
                deliveries: 3,
            })
            .await
            .unwrap();
    }
    let letters = db.store.dead_letters("notifier").await.unwrap();
    assert_eq!(letters.len(), 2);
    assert_eq!(letters[0].event_id, Some(id));
    assert_eq!(letters[0].payload, b"\xff not json");
    assert_eq!(letters[0].reason, "malformed envelope: expected value");
    assert_eq!(letters[0].deliveries, 3);
    assert_eq!(letters[1].event_id, None);
    db.cleanup().await;
}

fn message(id: Uuid, topic: &str) -> QueueMessage<'_> {
    QueueMessage {
        id,
        topic,
        payload: b"{}",
        traceparent: None,
    }
}

async fn queue_fans_out_by_filter_and_backfills_new_consumers(backend: Backend) {
    let db = TestDb::new(backend).await;
    let s = &db.store;
    s.queue_ensure_consumer("gates", StreamKind::Events, "gate.>")
        .await
        .unwrap();
    s.queue_ensure_consumer("runs", StreamKind::Events, "run.updated")
        .await
        .unwrap();

    let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
    assert!(s.queue_publish(message(a, "gate.opened")).await.unwrap());
    assert!(
        !s.queue_publish(message(a, "gate.opened")).await.unwrap(),
        "duplicate id"
    );
    assert!(s.queue_publish(message(b, "run.updated")).await.unwrap());
    assert_eq!(s.queue_pending("gates").await.unwrap(), 1);
    assert_eq!(s.queue_pending("runs").await.unwrap(), 1);

    // A consumer created later sees the stream's history, like a JetStream durable.
    s.queue_ensure_consumer("audit", StreamKind::Events, ">")
        .await
        .unwrap();
    assert_eq!(s.queue_pending("audit").await.unwrap(), 2);
    // Ensuring again changes nothing.
    s.queue_ensure_consumer("audit", StreamKind::Events, ">")
        .await
        .unwrap();
    assert_eq!(s.queue_pending("audit").await.unwrap(), 2);
    db.cleanup().await;
}

async fn queue_leases_acks_and_work_queue_removal(backend: Backend) {
    let db = TestDb::new(backend).await;
    let s = &db.store;
    s.queue_ensure_consumer("runner", StreamKind::Jobs, "node.dispatch")
        .await
        .unwrap();
    let job = Uuid::now_v7();
    s.queue_publish(message(job, "node.dispatch"))
        .await
        .unwrap();

    let wait = Duration::from_millis(300);
    let fetch = || s.queue_fetch_up_to("runner", wait, 1);
    let first = fetch().await.unwrap().pop().unwrap();
    assert_eq!((first.id, first.deliveries), (job, 1));
    assert!(fetch().await.unwrap().is_empty(), "leased");
    assert!(s.queue_next_due("runner").await.unwrap().unwrap() > Duration::ZERO);

    tokio::time::sleep(Duration::from_millis(400)).await;
    let second = fetch().await.unwrap().pop().unwrap();
    assert_eq!(second.deliveries, 2, "redelivered after the ack deadline");
    assert!(
        !s.queue_ack("runner", StreamKind::Jobs, first.seq, first.deliveries)
            .await
            .unwrap(),
        "stale lease"
    );
    assert!(
        s.queue_ack("runner", StreamKind::Jobs, second.seq, second.deliveries)
            .await
            .unwrap()
    );
    assert_eq!(s.queue_pending("runner").await.unwrap(), 0);
    assert_eq!(s.queue_next_due("runner").await.unwrap(), None);

    // An acknowledged job is gone from the log, so publishing its id again is new work.
    assert!(
        s.queue_publish(message(job, "node.dispatch"))
            .await
            .unwrap()
    );
    db.cleanup().await;
}

/// SQLite connections do not checkpoint inside a commit (every writer here would wait for
/// it); the store checkpoints beside them shortly after a write. With neither, what is
/// written here would stay in the log and the database file would not grow.
#[tokio::test]
async fn sqlite_checkpoints_its_log_beside_the_commits() {
    let db = TestDb::new(Backend::Sqlite).await;
    let file = std::path::PathBuf::from(db.url.strip_prefix("sqlite:").unwrap());
    let before = std::fs::metadata(&file).unwrap().len();
    let body = "x".repeat(5_000);
    for _ in 0..300 {
        append(&db.store, &[event(&body)]).await;
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let grown = loop {
        let now = std::fs::metadata(&file).unwrap().len();
        if now > before + 1_000_000 || std::time::Instant::now() > deadline {
            break now;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        grown > before + 1_000_000,
        "the database file went from {before} to {grown} bytes: the log was not checkpointed"
    );
    db.cleanup().await;
}

/// Checkpoints beside the writers never catch up while they keep writing, so the log
/// could only grow; past a bound one waits for their turn, and the log starts over.
#[tokio::test]
async fn sqlite_starts_its_log_over_while_writers_keep_writing() {
    let db = TestDb::new(Backend::Sqlite).await;
    let log = std::path::PathBuf::from(format!("{}-wal", db.url.strip_prefix("sqlite:").unwrap()));
    let body = "x".repeat(16_000);
    for _ in 0..2_000 {
        append(&db.store, &[event(&body)]).await;
    }
    // 2,000 commits of 16 kB: 32 MB of log, had it not started over.
    let size = std::fs::metadata(&log).unwrap().len();
    assert!(size < 26_000_000, "the log grew to {size} bytes");
    db.cleanup().await;
}

#[tokio::test]
async fn unsupported_and_malformed_urls_are_clear_errors() {
    for url in [
        "mysql://root@localhost/db",
        "postgres://root@localhost:notaport/db",
    ] {
        let err = Store::connect(url, quick_retry()).await.err().unwrap();
        assert!(
            matches!(
                err,
                StoreError::UnsupportedUrl(_) | StoreError::InvalidUrl { .. }
            ),
            "{url}: {err}"
        );
    }
}

#[tokio::test]
async fn an_unreachable_postgres_is_retried_then_reported() {
    let err = Store::connect("postgres://root@127.0.0.1:1/test", quick_retry())
        .await
        .err()
        .unwrap();
    match &err {
        StoreError::Unreachable {
            attempts, target, ..
        } => {
            assert_eq!(*attempts, 3, "first try plus two retries");
            assert_eq!(target, "127.0.0.1:1/test");
        }
        other => panic!("expected Unreachable, got {other}"),
    }
    assert!(
        err.to_string()
            .starts_with("Postgres at 127.0.0.1:1/test is unreachable after 3 attempts")
    );
}

async fn queue_consumer_created_during_publishing_misses_nothing(backend: Backend) {
    let db = TestDb::new(backend).await;
    let publishers: Vec<_> = (0..8)
        .map(|_| {
            let store = db.store.clone();
            tokio::spawn(async move {
                for _ in 0..25 {
                    store
                        .queue_publish(message(Uuid::now_v7(), "run.updated"))
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    // Consumers created while the publishers run, each must see every message.
    for i in 0..20 {
        tokio::time::sleep(Duration::from_millis(5)).await;
        db.store
            .queue_ensure_consumer(&format!("late{i}"), StreamKind::Events, "run.>")
            .await
            .unwrap();
    }
    for p in publishers {
        p.await.unwrap();
    }
    for i in 0..20 {
        assert_eq!(
            db.store.queue_pending(&format!("late{i}")).await.unwrap(),
            200
        );
    }
    db.cleanup().await;
}

async fn a_run_freezes_a_setting_once(backend: Backend) {
    let db = TestDb::new(backend).await;
    let (run, other) = (Uuid::now_v7(), Uuid::now_v7());
    assert_eq!(
        db.store
            .frozen_setting(run, "profile", "box")
            .await
            .unwrap(),
        None
    );
    let first = db
        .store
        .freeze_setting(run, "profile", "box", "v1", false)
        .await
        .unwrap();
    let second = db
        .store
        .freeze_setting(run, "profile", "box", "v2", false)
        .await
        .unwrap();
    assert_eq!(
        (first.as_str(), second.as_str()),
        ("v1", "v1"),
        "the first one stays, also against a write that did not look first"
    );
    assert_eq!(
        db.store
            .freeze_setting(other, "profile", "box", "v2", true)
            .await
            .unwrap(),
        "v2",
        "another run freezes its own"
    );
    assert_eq!(
        db.store
            .freeze_setting(run, "role", "box", "r", true)
            .await
            .unwrap(),
        "r",
        "kinds are apart"
    );
    assert_eq!(
        db.store
            .frozen_setting(run, "profile", "box")
            .await
            .unwrap()
            .as_deref(),
        Some("v1")
    );
    db.cleanup().await;
}

async fn usage_keeps_each_attempt_and_model_once(backend: Backend) {
    let db = TestDb::new(backend).await;
    let run = Uuid::now_v7();
    let row = |attempt: i32, model: &str, cost: Option<f64>| UsageRow {
        run_id: run,
        node: "code".into(),
        attempt,
        model: model.into(),
        input_tokens: 10,
        output_tokens: 20,
        cache_read_tokens: 30,
        cache_write_tokens: 40,
        cost_usd: cost,
    };
    db.store
        .record_usage(&row(1, "m", Some(0.25)))
        .await
        .unwrap();
    db.store
        .record_usage(&row(1, "m", Some(9.0)))
        .await
        .unwrap();
    db.store.record_usage(&row(1, "n", None)).await.unwrap();
    db.store
        .record_usage(&row(2, "m", Some(0.5)))
        .await
        .unwrap();
    let rows = db.store.usage_of_run(run).await.unwrap();
    assert_eq!(
        rows,
        [
            row(1, "m", Some(0.25)),
            row(1, "n", None),
            row(2, "m", Some(0.5))
        ],
        "a repeated row is ignored"
    );
    assert!(
        db.store
            .usage_of_run(Uuid::now_v7())
            .await
            .unwrap()
            .is_empty()
    );
    db.cleanup().await;
}

async fn a_lease_has_one_holder_until_it_runs_out(backend: Backend) {
    let db = TestDb::new(backend).await;
    let (long, short) = (Duration::from_secs(60), Duration::from_millis(200));
    assert!(db.store.hold_lease("posters", "a", short).await.unwrap());
    assert!(
        !db.store.hold_lease("posters", "b", long).await.unwrap(),
        "a holds it"
    );
    assert!(
        db.store.hold_lease("posters", "a", short).await.unwrap(),
        "a renews"
    );
    assert!(
        db.store.hold_lease("other", "b", long).await.unwrap(),
        "names are apart"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        db.store.hold_lease("posters", "b", long).await.unwrap(),
        "a's ran out"
    );
    assert!(!db.store.hold_lease("posters", "a", long).await.unwrap());
    db.store.release_lease("posters", "b").await.unwrap();
    assert!(
        db.store.hold_lease("posters", "a", long).await.unwrap(),
        "b let go"
    );
    db.cleanup().await;
}

async fn a_minted_login_link_is_stored_as_its_hash_only(backend: Backend) {
    let db = TestDb::new(backend).await;
    let expires_at = chrono::Utc::now() + chrono::Duration::minutes(15);
    let secret = db
        .store
        .mint_login_link("ana", "ana", "read,run,decide", expires_at)
        .await
        .unwrap();
    assert!(secret.starts_with("gh_") && secret.len() == 67, "{secret}");
    let again = db
        .store
        .mint_login_link("ana", "ana", "read,run,decide", expires_at)
        .await
        .unwrap();
    assert_ne!(secret, again, "every link is new");
    // The console looks links up by the hash, as ingest computes it.
    let hash = hex::encode(Sha256::digest(secret.as_bytes()));
    assert_eq!(hash, gatehouse_ingest::hash_token(&secret));
    let row = db.store.login_link(&hash).await.unwrap().expect("found");
    assert_eq!(
        (
            row.person.as_str(),
            row.created_by.as_str(),
            row.scopes.as_str()
        ),
        ("ana", "ana", "read,run,decide")
    );
    assert_eq!(row.used_at, None);
    assert!(
        db.store.login_link(&secret).await.unwrap().is_none(),
        "the secret itself is no key"
    );
    assert!(matches!(
        db.store.use_login_link(&hash).await.unwrap(),
        OneTime::Claimed(_)
    ));
    assert!(matches!(
        db.store.use_login_link(&hash).await.unwrap(),
        OneTime::Used(_)
    ));
    db.cleanup().await;
}

async fn a_gate_attempt_is_settled_by_one_claim(backend: Backend) {
    let db = TestDb::new(backend).await;
    let run_id = Uuid::now_v7();
    let vote = |person, decision, attempt, min_approvals| gatehouse_store::Vote {
        run_id,
        node: "gate",
        attempt,
        person,
        decision,
        target: None,
        channel: "api",
        min_approvals,
    };
    let claim = |vote| {
        let store = db.store.clone();
        async move {
            let mut tx = store.begin().await.unwrap();
            let claim = tx.claim_decision(&vote).await.unwrap();
            tx.commit().await.unwrap();
            claim
        }
    };
    let settled_by = |claim: Claim| match claim {
        Claim::AlreadySettled(outcome) => (outcome.decided_by, outcome.decision),
        other => panic!("expected it settled, got {other:?}"),
    };
    // One approval is enough: the first claim settles it, any later one finds who did.
    assert_eq!(claim(vote("ana", "approve", 1, 1)).await, Claim::Settled);
    let later = claim(vote("bo", "reject", 1, 1)).await;
    assert_eq!(settled_by(later), ("ana".to_owned(), "approve".to_owned()));
    let again = claim(vote("ana", "approve", 1, 1)).await;
    assert_eq!(settled_by(again), ("ana".to_owned(), "approve".to_owned()));
    // Two needed: the first counts, the same person again does nothing (not even a
    // rejection, which would settle by itself), a second person settles it.
    assert_eq!(claim(vote("ana", "approve", 2, 2)).await, Claim::Counted);
    assert_eq!(
        claim(vote("ana", "approve", 2, 2)).await,
        Claim::AlreadyVoted
    );
    assert_eq!(
        claim(vote("ana", "reject", 2, 2)).await,
        Claim::AlreadyVoted
    );
    let mut tx = db.store.begin().await.unwrap();
    assert_eq!(tx.outcome(run_id, "gate", 2).await.unwrap(), None);
    drop(tx);
    assert_eq!(claim(vote("bo", "approve", 2, 2)).await, Claim::Settled);
    let late = claim(vote("cy", "approve", 2, 2)).await;
    assert_eq!(settled_by(late), ("bo".to_owned(), "approve".to_owned()));
    db.cleanup().await;
}
