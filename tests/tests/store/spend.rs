//! The budget ledger: charges add up across restarts, a reached limit refuses, holds of a
//! dead runner expire, and many tasks admitting against one scope at once overshoot it by
//! at most one request.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use gatehouse_store::{SpendAdmission, SpendLimit, Store};
use gatehouse_tests::{Backend, TestDb, on_both_backends};

on_both_backends!(
    charges_add_up_and_a_reached_limit_refuses,
    a_dead_runners_hold_expires,
    concurrent_admission_overshoots_by_at_most_one_request,
);

fn limit(scope: &str, tokens: Option<u64>, usd_micros: Option<u64>) -> SpendLimit {
    SpendLimit {
        scope: scope.into(),
        label: format!("project {scope}"),
        period: "today".into(),
        tokens,
        usd_micros,
    }
}

async fn charges_add_up_and_a_reached_limit_refuses(backend: Backend) {
    let db = TestDb::new(backend).await;
    let store = &db.store;
    let day = limit("project:api:2026-12-06", None, Some(1_000_000));
    let run = limit("run:r1", Some(500), None);
    let both = [run.clone(), day.clone()];
    assert_eq!(
        store.admit_spend("h1", &both, 0, 60_000).await.unwrap(),
        SpendAdmission::Admitted
    );
    assert_eq!(store.spend_holds(&day.scope).await.unwrap(), 1);
    let rows = store
        .charge_spend("h1", &both, 300, 600_000, 10)
        .await
        .unwrap();
    assert_eq!(store.spend_holds(&day.scope).await.unwrap(), 0);
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].scope, day.scope, "in scope order");
    assert_eq!(
        (rows[0].usd_micros, rows[0].limit_usd_micros),
        (600_000, Some(1_000_000))
    );
    assert_eq!(
        (rows[1].tokens, rows[1].requests, rows[1].largest_tokens),
        (300, 1, 300)
    );
    // Under both limits: admitted, then charged past the dollar limit.
    assert_eq!(
        store.admit_spend("h2", &both, 20, 60_000).await.unwrap(),
        SpendAdmission::Admitted
    );
    store
        .charge_spend("h2", &both, 100, 500_000, 30)
        .await
        .unwrap();
    match store.admit_spend("h3", &both, 40, 60_000).await.unwrap() {
        SpendAdmission::Reached(row) => {
            assert_eq!(row.scope, day.scope);
            assert_eq!(row.usd_micros, 1_100_000);
            assert_eq!(row.label, "project project:api:2026-12-06");
        }
        other => panic!("expected the day's limit reached, got {other:?}"),
    }
    assert_eq!(
        store.spend_holds(&run.scope).await.unwrap(),
        0,
        "no hold on a refusal"
    );
    // Another scope is untouched; a release counts no request.
    let other = [limit("project:web:2026-12-06", None, Some(1_000_000))];
    assert_eq!(
        store.admit_spend("h4", &other, 50, 60_000).await.unwrap(),
        SpendAdmission::Admitted
    );
    let rows = store.charge_spend("h4", &other, 0, 0, 60).await.unwrap();
    assert_eq!((rows[0].requests, rows[0].tokens), (0, 0));
    // Read back, also by prefix.
    let read = store
        .spend(&[run.scope.clone(), "run:none".into()])
        .await
        .unwrap();
    assert_eq!(read.len(), 1);
    assert_eq!(read[0].tokens, 400);
    let under = store.spend_under("project:", 10).await.unwrap();
    assert_eq!(under.len(), 2);
    assert!(
        store.spend_under("project:_", 10).await.unwrap().is_empty(),
        "no wildcards"
    );
}

async fn a_dead_runners_hold_expires(backend: Backend) {
    let db = TestDb::new(backend).await;
    let store = &db.store;
    let scope = [limit("run:r2", Some(1_000), None)];
    // Nothing charged yet, so a second request waits for the first.
    assert_eq!(
        store.admit_spend("dead", &scope, 0, 1_000).await.unwrap(),
        SpendAdmission::Admitted
    );
    assert!(matches!(
        store
            .admit_spend("next", &scope, 500, 60_000)
            .await
            .unwrap(),
        SpendAdmission::Busy(_)
    ));
    // Once the dead runner's hold has expired, the scope goes on.
    assert_eq!(
        store
            .admit_spend("next", &scope, 1_001, 60_000)
            .await
            .unwrap(),
        SpendAdmission::Admitted
    );
    assert_eq!(store.spend_holds("run:r2").await.unwrap(), 1);
}

/// Tasks on two stores (two runners) each loop admitting and charging a fixed request
/// against one scope until refused; the total may pass the limit by one request at most.
async fn concurrent_admission_overshoots_by_at_most_one_request(backend: Backend) {
    let db = TestDb::new(backend).await;
    let second = Store::connect(&db.url, gatehouse_tests::quick_retry())
        .await
        .expect("a second store");
    const LIMIT: u64 = 1_000;
    const REQUEST: u64 = 70;
    let scope = [limit("project:api:2026-12-07", Some(LIMIT), None)];
    let charged = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for task in 0..8u32 {
        let store: Store = if task % 2 == 0 {
            db.store.clone()
        } else {
            second.clone()
        };
        let (scope, charged) = (scope.clone(), charged.clone());
        tasks.push(tokio::spawn(async move {
            for n in 0..200u32 {
                let hold = format!("t{task}-{n}");
                loop {
                    match store.admit_spend(&hold, &scope, 0, i64::MAX).await.unwrap() {
                        SpendAdmission::Admitted => break,
                        SpendAdmission::Busy(_) => {
                            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
                        }
                        SpendAdmission::Reached(_) => return,
                    }
                }
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                store
                    .charge_spend(&hold, &scope, REQUEST, 0, 0)
                    .await
                    .unwrap();
                charged.fetch_add(REQUEST, Ordering::SeqCst);
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let total = charged.load(Ordering::SeqCst);
    let row = db.store.spend(&[scope[0].scope.clone()]).await.unwrap();
    assert_eq!(row[0].tokens, total, "the ledger holds every charge once");
    assert!(total >= LIMIT, "the limit was reached: {total}");
    assert!(
        total < LIMIT + REQUEST,
        "overshoot of more than one request: {total} against {LIMIT}"
    );
    assert_eq!(db.store.spend_holds(&scope[0].scope).await.unwrap(), 0);
}
