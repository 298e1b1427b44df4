//! The run tables: every test runs unchanged against Postgres and SQLite.

use chrono::Utc;
use gatehouse_events::RunStatus;
use gatehouse_store::{
    ArtifactRow, AttemptEnd, AttemptStatus, DecisionRow, RunRow, Store, TimerKind, TimerRow, Tx,
};
use gatehouse_tests::{Backend, TestDb, on_both_backends};
use uuid::Uuid;

fn run(id: Uuid, status: RunStatus) -> RunRow {
    RunRow {
        id,
        sop: "platform-check".into(),
        sop_version: "sha256:abc".into(),
        params: "{}".into(),
        requested_by: Some("ana".into()),
        status,
        state: "{\"n\":1}".into(),
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

/// Saves the version every run here is on, in `tx`.
async fn save_version(tx: &mut Tx) {
    tx.save_sop_version(
        "sha256:abc",
        "platform-check",
        "builtin:platform-check",
        "name: x",
    )
    .await
    .unwrap();
}

async fn insert(store: &Store, row: &RunRow) -> bool {
    let mut tx = store.begin().await.unwrap();
    save_version(&mut tx).await;
    let inserted = tx.create_run(row).await.unwrap().is_some();
    tx.commit().await.unwrap();
    inserted
}

on_both_backends!(
    runs_are_created_once_and_updated_by_compare_and_set,
    a_created_run_comes_back_as_stored_over_its_requested_row,
    runs_are_listed_newest_first_and_filtered,
    timers_are_upserted_and_come_due,
    decisions_are_audited_in_order,
    attempts_are_begun_once_and_keep_results_artifacts_and_logs,
    tokens_are_found_by_hash_only,
    a_sop_version_is_saved_until_a_commit_has_stored_it,
);

/// A process saves a SOP version once: after a commit stored it, saving it again writes
/// nothing. One saved by a transaction that rolled back is not stored, and is saved again
/// (else the run on it would name a version that is not there).
async fn a_sop_version_is_saved_until_a_commit_has_stored_it(backend: Backend) {
    let db = TestDb::new(backend).await;
    let mut tx = db.store.begin().await.unwrap();
    save_version(&mut tx).await;
    tx.rollback().await.unwrap();
    assert_eq!(db.store.sop_version_body("sha256:abc").await.unwrap(), None);

    assert!(insert(&db.store, &run(Uuid::now_v7(), RunStatus::Queued)).await);
    assert!(
        insert(&db.store, &run(Uuid::now_v7(), RunStatus::Queued)).await,
        "a second run on the stored version"
    );
    assert_eq!(
        db.store.sop_version_body("sha256:abc").await.unwrap(),
        Some(("builtin:platform-check".into(), "name: x".into()))
    );
    db.cleanup().await;
}

async fn runs_are_created_once_and_updated_by_compare_and_set(backend: Backend) {
    let db = TestDb::new(backend).await;
    let id = Uuid::now_v7();
    let row = run(id, RunStatus::Queued);
    assert!(insert(&db.store, &row).await);
    assert!(
        !insert(&db.store, &row).await,
        "a repeated request creates nothing"
    );
    assert_eq!(
        db.store.sop_version_body("sha256:abc").await.unwrap(),
        Some(("builtin:platform-check".into(), "name: x".into()))
    );

    let mut tx = db.store.begin().await.unwrap();
    let loaded = tx.load_run(id).await.unwrap().unwrap();
    assert_eq!(
        (loaded.sop.as_str(), loaded.revision),
        ("platform-check", 0)
    );
    assert!(
        tx.update_run(id, RunStatus::Running, "{\"n\":2}", 0, 1)
            .await
            .unwrap()
    );
    assert!(
        !tx.update_run(id, RunStatus::Failed, "{}", 0, 1)
            .await
            .unwrap(),
        "stale revision"
    );
    tx.commit().await.unwrap();
    let stored = db.store.run(id).await.unwrap().unwrap();
    assert_eq!(
        (
            stored.status.as_str(),
            stored.state.as_str(),
            stored.revision
        ),
        ("running", "{\"n\":2}", 1)
    );
    assert!(db.store.run(Uuid::now_v7()).await.unwrap().is_none());
    db.cleanup().await;
}

/// The scheduler takes a run's first step from the row `create_run` returns, without
/// reading it again: it must be the row as stored, the `requested` row's time kept.
async fn a_created_run_comes_back_as_stored_over_its_requested_row(backend: Backend) {
    let db = TestDb::new(backend).await;
    let id = Uuid::now_v7();
    let mut requested = run(id, RunStatus::Requested);
    requested.created_at = Utc::now() - chrono::Duration::seconds(5);
    let mut tx = db.store.begin().await.unwrap();
    tx.save_sop_version(
        "sha256:abc",
        "platform-check",
        "builtin:platform-check",
        "x",
    )
    .await
    .unwrap();
    assert!(tx.request_run(&requested).await.unwrap());
    let created = tx
        .create_run(&run(id, RunStatus::Queued))
        .await
        .unwrap()
        .expect("a requested row is replaced");
    assert_eq!(created.status, RunStatus::Queued);
    assert_eq!(
        created.created_at.timestamp_millis(),
        requested.created_at.timestamp_millis(),
        "the requested row's time is kept"
    );
    let loaded = tx.load_run(id).await.unwrap().unwrap();
    assert_eq!(
        (loaded.state, loaded.revision, loaded.created_at),
        (created.state, created.revision, created.created_at)
    );
    assert!(
        tx.create_run(&run(id, RunStatus::Queued))
            .await
            .unwrap()
            .is_none(),
        "a created run is not created again"
    );
    tx.commit().await.unwrap();
}

async fn runs_are_listed_newest_first_and_filtered(backend: Backend) {
    let db = TestDb::new(backend).await;
    let ids: Vec<Uuid> = (0..3).map(|_| Uuid::now_v7()).collect();
    for (i, id) in ids.iter().enumerate() {
        let status = if i == 1 {
            RunStatus::Waiting
        } else {
            RunStatus::Running
        };
        let mut row = run(*id, status);
        row.created_at = Utc::now() + chrono::Duration::milliseconds(i as i64);
        insert(&db.store, &row).await;
    }
    let all: Vec<Uuid> = db
        .store
        .runs(None, &[], 10)
        .await
        .unwrap()
        .iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(all, [ids[2], ids[1], ids[0]]);
    let waiting: Vec<Uuid> = db
        .store
        .runs(Some("waiting"), &[], 10)
        .await
        .unwrap()
        .iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(waiting, [ids[1]]);
    assert_eq!(db.store.runs(None, &[], 1).await.unwrap().len(), 1);
    db.cleanup().await;
}

async fn timers_are_upserted_and_come_due(backend: Backend) {
    let db = TestDb::new(backend).await;
    let timer = |kind, due_ms| TimerRow {
        run_id: Uuid::nil(),
        node: "n".into(),
        attempt: 1,
        kind,
        due_ms,
    };
    let mut tx = db.store.begin().await.unwrap();
    tx.set_timer(&timer(TimerKind::Retry, 5_000)).await.unwrap();
    tx.set_timer(&timer(TimerKind::Retry, 1_000)).await.unwrap();
    tx.set_timer(&timer(TimerKind::Expire, 9_000))
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(db.store.next_timer_ms().await.unwrap(), Some(1_000));
    assert_eq!(
        db.store.due_timers(2_000).await.unwrap(),
        [timer(TimerKind::Retry, 1_000)]
    );
    let mut tx = db.store.begin().await.unwrap();
    assert!(
        tx.delete_timer(&timer(TimerKind::Retry, 1_000))
            .await
            .unwrap()
    );
    assert!(
        !tx.delete_timer(&timer(TimerKind::Retry, 1_000))
            .await
            .unwrap(),
        "taken once"
    );
    tx.commit().await.unwrap();
    assert_eq!(
        db.store.due_timers(10_000).await.unwrap(),
        [timer(TimerKind::Expire, 9_000)]
    );
    db.cleanup().await;
}

async fn decisions_are_audited_in_order(backend: Backend) {
    let db = TestDb::new(backend).await;
    let run_id = Uuid::now_v7();
    let decision = |person: &str, outcome: &str| DecisionRow {
        run_id,
        node: "confirm".into(),
        attempt: 1,
        decision: "send_back".into(),
        target: Some("report".into()),
        comment: Some("more detail".into()),
        person: person.into(),
        channel: "api".into(),
        outcome: outcome.into(),
        decided_at: Utc::now(),
    };
    let mut tx = db.store.begin().await.unwrap();
    tx.record_decision(&decision("ana", "applied"))
        .await
        .unwrap();
    tx.record_decision(&decision("bo", "refused: gate `confirm` is not waiting"))
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let audit = db.store.decisions(run_id).await.unwrap();
    assert_eq!(
        audit.iter().map(|d| d.person.as_str()).collect::<Vec<_>>(),
        ["ana", "bo"]
    );
    assert_eq!(audit[0].target.as_deref(), Some("report"));
    db.cleanup().await;
}

async fn attempts_are_begun_once_and_keep_results_artifacts_and_logs(backend: Backend) {
    let db = TestDb::new(backend).await;
    let s = &db.store;
    let run_id = Uuid::now_v7();
    assert!(s.begin_attempt(run_id, "report", 1).await.unwrap());
    assert!(
        !s.begin_attempt(run_id, "report", 1).await.unwrap(),
        "a second runner must not start it"
    );
    let finish = |end: AttemptEnd| async move {
        let mut tx = s.begin().await.unwrap();
        tx.finish_attempt(run_id, "report", 1, &end).await.unwrap();
        tx.commit().await.unwrap();
    };
    finish(AttemptEnd {
        status: AttemptStatus::Failed,
        exit_code: Some(2),
        error: Some("exit code 2".into()),
        duration_ms: Some(1234),
    })
    .await;
    // An attempt ends once: a job redelivered after its result was reported (the ack was
    // lost) is seen as interrupted, and must not overwrite what was recorded.
    finish(AttemptEnd {
        status: AttemptStatus::Interrupted,
        exit_code: None,
        error: Some("interrupted".into()),
        duration_ms: None,
    })
    .await;
    let attempts = s.attempts(run_id).await.unwrap();
    assert_eq!(attempts.len(), 1);
    assert_eq!(
        (
            attempts[0].status.as_str(),
            attempts[0].exit_code,
            attempts[0].duration_ms
        ),
        ("failed", Some(2), Some(1234))
    );

    let artifact = |sha: &str| ArtifactRow {
        location: format!("runs/{run_id}/artifacts/report/1/welcome.md"),
        run_id,
        node: "report".into(),
        attempt: 1,
        name: "welcome.md".into(),
        sha256: sha.into(),
        size: 12,
    };
    s.record_artifact(&artifact("aa")).await.unwrap();
    s.record_artifact(&artifact("bb")).await.unwrap();
    assert_eq!(s.artifacts(run_id).await.unwrap(), [artifact("bb")]);

    for line in ["one", "two", "three"] {
        s.append_log(run_id, "report", 1, "stdout", line)
            .await
            .unwrap();
    }
    let first = s.logs(run_id, 0, 2).await.unwrap();
    assert_eq!(
        first.iter().map(|l| l.line.as_str()).collect::<Vec<_>>(),
        ["one", "two"]
    );
    let rest = s.logs(run_id, first[1].seq, 10).await.unwrap();
    assert_eq!(
        rest.iter().map(|l| l.line.as_str()).collect::<Vec<_>>(),
        ["three"]
    );
    db.cleanup().await;
}

async fn tokens_are_found_by_hash_only(backend: Backend) {
    let db = TestDb::new(backend).await;
    let token = |name: &'static str, hash: &'static str| gatehouse_store::NewToken {
        name,
        person: "ana",
        created_by: "admin",
        scopes: "read",
        expires_at: None,
        hash,
        for_agent: false,
    };
    let created = db
        .store
        .create_token(&token("ana", "hash-1"))
        .await
        .unwrap();
    assert_eq!(created.map(|t| t.person).as_deref(), Some("ana"));
    let found = db.store.token_by_hash("hash-1").await.unwrap().unwrap();
    assert_eq!(
        (found.name.as_str(), found.scopes.as_str()),
        ("ana", "read")
    );
    assert_eq!(db.store.token_by_hash("hash-2").await.unwrap(), None);
    assert_eq!(
        db.store
            .create_token(&token("again", "hash-1"))
            .await
            .unwrap(),
        None,
        "hashes are unique"
    );
    assert_eq!(
        db.store
            .create_token(&token("ana", "hash-3"))
            .await
            .unwrap(),
        None,
        "names are unique"
    );
    assert!(db.store.revoke_token("ana").await.unwrap());
    assert!(!db.store.revoke_token("ana").await.unwrap(), "once");
    let revoked = db.store.token_by_hash("hash-1").await.unwrap().unwrap();
    assert!(revoked.revoked_at.is_some());
    assert!(db.store.tokens(Some("ana")).await.unwrap().is_empty());
    db.cleanup().await;
}
