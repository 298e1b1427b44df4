//! Firing schedules with the clock in the test's hands: fires happen once however many
//! schedulers race, downtime is caught up by the window, and each overlap policy holds
//! against a run that is still going. Times are in 2030, after the real clock, so the
//! services' own schedule loop never fires them.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use gatehouse_events::{Actor, Channel, Envelope, Event, GateDecision, GateDecisionKind};
use gatehouse_scheduler::Scheduler;
use gatehouse_sop::{Catalog, Library};
use gatehouse_store::ScheduleRow;
use gatehouse_tests::{Backend, Gatehouse, on_both_backends};
use jiff::Timestamp;

const QUICK: &str = "name: quick\nnodes:\n  work: { kind: script, run: \"true\" }\n";
const HOLD: &str = "name: hold\nnodes:\n  ask: { kind: gate, approvers: [ana] }\n";

struct Setup {
    gh: Gatehouse,
    catalog: Arc<Library>,
}

/// The harness's fields (`db`) on the suite's own.
impl std::ops::Deref for Setup {
    type Target = Gatehouse;
    fn deref(&self) -> &Gatehouse {
        &self.gh
    }
}

impl Setup {
    async fn start(backend: Backend) -> Self {
        let sops = [("quick", QUICK), ("hold", HOLD)];
        let gh = Gatehouse::builder(backend)
            .sops(&sops)
            .lease(Duration::from_secs(5))
            .start()
            .await;
        // The same SOPs, for schedulers the tests drive by hand.
        let (catalog, errors) = Catalog::load(&[gh.data.path().join("sops")]);
        assert!(errors.is_empty());
        Self {
            gh,
            catalog: Arc::new(Library::fixed(catalog)),
        }
    }

    fn scheduler(&self) -> Scheduler {
        Scheduler::new(self.db.store.clone(), self.catalog.clone())
    }

    async fn schedule(&self, name: &str, cron: &str, sop: &str, overlap: &str, window: Duration) {
        self.insert(row(name, cron, sop, overlap, window)).await;
    }

    async fn insert(&self, row: ScheduleRow) {
        assert!(self.db.store.insert_schedule(&row).await.unwrap());
    }

    async fn outcomes(&self, name: &str) -> Vec<String> {
        let mut fires = self.db.store.fires(name, 1000).await.unwrap();
        fires.reverse();
        fires.into_iter().map(|f| f.outcome.to_string()).collect()
    }

    /// Waits until every started fire's run exists with `status`.
    async fn wait_runs(&self, name: &str, status: &str, count: usize) -> Vec<uuid::Uuid> {
        for _ in 0..500 {
            let fires = self.db.store.fires(name, 1000).await.unwrap();
            let mut ids = Vec::new();
            for f in fires.iter().filter(|f| f.outcome == "started") {
                if let Some(run) = self.db.store.run(f.run_id.unwrap()).await.unwrap()
                    && run.status == status
                {
                    ids.push(run.id);
                }
            }
            if ids.len() == count {
                return ids;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!(
            "{name}: never had {count} runs {status}: {:?}",
            self.db.store.fires(name, 1000).await.unwrap()
        );
    }

    async fn approve(&self, run_id: uuid::Uuid) {
        let event = Event::GateDecision(GateDecision {
            run_id,
            node: "ask".into(),
            attempt: 1,
            decision: GateDecisionKind::Approve,
            comment: None,
            actor: Actor {
                channel: Channel::Api,
                handle: "ana".into(),
                person: Some("ana".into()),
            },
            groups: vec![],
        });
        let mut tx = self.db.store.begin().await.unwrap();
        tx.append_outbox(&Envelope::new("test", &event, None).unwrap())
            .await
            .unwrap();
        tx.commit().await.unwrap();
    }

    async fn stop(self) {
        self.gh.stop().await;
    }
}

/// A schedule owing fires from 2030-01-01T00:00Z.
fn row(name: &str, cron: &str, sop: &str, overlap: &str, window: Duration) -> ScheduleRow {
    ScheduleRow {
        name: name.into(),
        cron: cron.into(),
        timezone: "UTC".into(),
        sop: sop.into(),
        params: "{}".into(),
        overlap: overlap.parse().unwrap(),
        catchup_window_ms: window.as_millis() as i64,
        jitter_ms: 0,
        starts_ms: None,
        ends_ms: None,
        paused: false,
        pause_note: None,
        source: "api".into(),
        owner: "admin".into(),
        project: None,
        since_ms: at("2030-01-01T00:00:00Z").as_millisecond(),
        next_due_ms: Some(0),
        revision: 0,
        created_at: Utc::now(),
        updated_at: Utc::now(),
    }
}

fn at(s: &str) -> Timestamp {
    s.parse().unwrap()
}

const HOUR: Duration = Duration::from_secs(3600);
const POLICIES: [&str; 5] = [
    "skip",
    "buffer_one",
    "buffer_all",
    "cancel_other",
    "allow_all",
];

on_both_backends!(
    racing_schedulers_fire_each_time_once,
    downtime_is_caught_up_within_the_window_only,
    overlap_policies_against_a_run_still_going,
    jitter_delays_each_fire_and_lateness_counts_from_the_delay,
    fires_stay_inside_the_start_and_end_window,
    paused_fires_are_not_owed_after_resume,
    manual_triggers_obey_the_overlap_policy,
    backfill_runs_missed_times_one_after_another,
    fires_of_a_schedule_whose_sop_is_gone_are_skipped,
);

async fn racing_schedulers_fire_each_time_once(backend: Backend) {
    let setup = Setup::start(backend).await;
    setup
        .schedule("minutely", "* * * * *", "quick", "allow_all", HOUR)
        .await;
    let now = at("2030-01-01T00:10:30Z");
    let (a, b) = (setup.scheduler(), setup.scheduler());
    let (x, y) = tokio::join!(a.fire_schedules(now), b.fire_schedules(now));
    x.unwrap();
    y.unwrap();
    assert_eq!(setup.outcomes("minutely").await, vec!["started"; 10]);
    let fires = setup.db.store.fires("minutely", 100).await.unwrap();
    // Lateness is the pass's clock (00:10:30) advanced by the time the pass took.
    assert!(
        (30_000..40_000).contains(&fires[0].lateness_ms),
        "lateness is measured: {}",
        fires[0].lateness_ms
    );
    setup.wait_runs("minutely", "succeeded", 10).await;
    // Again later: nothing new is owed.
    a.fire_schedules(now).await.unwrap();
    assert_eq!(setup.outcomes("minutely").await.len(), 10);
    setup.stop().await;
}

async fn downtime_is_caught_up_within_the_window_only(backend: Backend) {
    let setup = Setup::start(backend).await;
    for (name, window) in [("none", Duration::ZERO), ("hour", HOUR), ("four", 4 * HOUR)] {
        setup
            .schedule(name, "0 * * * *", "quick", "allow_all", window)
            .await;
    }
    // Down from 00:00 to 03:05: the fires at 01:00, 02:00 and 03:00 were missed.
    setup
        .scheduler()
        .fire_schedules(at("2030-01-01T03:05:00Z"))
        .await
        .unwrap();
    assert_eq!(setup.outcomes("none").await, ["skipped_missed"; 3]);
    assert_eq!(
        setup.outcomes("hour").await,
        ["skipped_missed", "skipped_missed", "started"]
    );
    assert_eq!(setup.outcomes("four").await, ["started"; 3]);
    setup.stop().await;
}

async fn overlap_policies_against_a_run_still_going(backend: Backend) {
    let setup = Setup::start(backend).await;
    for policy in POLICIES {
        setup
            .schedule(policy, "* * * * *", "hold", policy, HOUR)
            .await;
    }
    let scheduler = setup.scheduler();
    scheduler
        .fire_schedules(at("2030-01-01T00:01:00Z"))
        .await
        .unwrap();
    for policy in POLICIES {
        setup.wait_runs(policy, "waiting", 1).await;
    }
    scheduler
        .fire_schedules(at("2030-01-01T00:03:00Z"))
        .await
        .unwrap();
    assert_eq!(
        setup.outcomes("skip").await,
        ["started", "skipped_overlap", "skipped_overlap"]
    );
    assert_eq!(
        setup.outcomes("buffer_one").await,
        ["started", "buffered", "skipped_overlap"]
    );
    assert_eq!(
        setup.outcomes("buffer_all").await,
        ["started", "buffered", "buffered"]
    );
    assert_eq!(
        setup.outcomes("cancel_other").await,
        ["started", "started", "started"]
    );
    assert_eq!(
        setup.outcomes("allow_all").await,
        ["started", "started", "started"]
    );
    setup.wait_runs("allow_all", "waiting", 3).await;
    setup.wait_runs("cancel_other", "waiting", 1).await;
    setup.wait_runs("cancel_other", "cancelled", 2).await;

    // The buffered fire starts once the running run ends.
    let first = setup.wait_runs("buffer_one", "waiting", 1).await[0];
    setup.approve(first).await;
    setup.wait_runs("buffer_one", "succeeded", 1).await;
    scheduler
        .fire_schedules(at("2030-01-01T00:03:10Z"))
        .await
        .unwrap();
    assert_eq!(
        setup.outcomes("buffer_one").await,
        ["started", "started", "skipped_overlap"]
    );
    setup.wait_runs("buffer_one", "waiting", 1).await;
    setup.stop().await;
}

async fn jitter_delays_each_fire_and_lateness_counts_from_the_delay(backend: Backend) {
    let setup = Setup::start(backend).await;
    let mut jittered = row("jittered", "0 * * * *", "quick", "allow_all", HOUR);
    jittered.jitter_ms = 30 * 60 * 1000;
    setup.insert(jittered).await;
    let scheduler = setup.scheduler();
    scheduler
        .fire_schedules(at("2030-01-01T01:00:00Z"))
        .await
        .unwrap();
    let due = setup
        .db
        .store
        .schedule("jittered")
        .await
        .unwrap()
        .unwrap()
        .next_due_ms
        .unwrap();
    let cron = at("2030-01-01T01:00:00Z").as_millisecond();
    // The jitter is a fixed function of the name and the cron time: this one is not zero.
    assert!(
        due > cron && due < cron + 30 * 60 * 1000,
        "jitter within its bound: {}",
        due - cron
    );
    assert!(setup.outcomes("jittered").await.is_empty(), "not due yet");
    let late = Timestamp::from_millisecond(due + 5_000).unwrap();
    scheduler.fire_schedules(late).await.unwrap();
    let fires = setup.db.store.fires("jittered", 10).await.unwrap();
    assert_eq!(fires.len(), 1);
    assert_eq!(fires[0].scheduled_ms, cron, "the fire keeps its cron time");
    assert!(
        (5_000..15_000).contains(&fires[0].lateness_ms),
        "lateness is counted from the due time: {}",
        fires[0].lateness_ms
    );
    setup.stop().await;
}

async fn fires_stay_inside_the_start_and_end_window(backend: Backend) {
    let setup = Setup::start(backend).await;
    let mut windowed = row("windowed", "0 * * * *", "quick", "allow_all", 10 * HOUR);
    windowed.starts_ms = Some(at("2030-01-01T02:00:00Z").as_millisecond());
    windowed.ends_ms = Some(at("2030-01-01T04:30:00Z").as_millisecond());
    setup.insert(windowed).await;
    setup
        .scheduler()
        .fire_schedules(at("2030-01-01T08:00:00Z"))
        .await
        .unwrap();
    let mut times: Vec<i64> = setup
        .db
        .store
        .fires("windowed", 100)
        .await
        .unwrap()
        .iter()
        .map(|f| f.scheduled_ms)
        .collect();
    times.sort();
    let expected: Vec<i64> = ["02", "03", "04"]
        .iter()
        .map(|h| at(&format!("2030-01-01T{h}:00:00Z")).as_millisecond())
        .collect();
    assert_eq!(times, expected);
    let stored = setup.db.store.schedule("windowed").await.unwrap().unwrap();
    assert_eq!(
        stored.next_due_ms, None,
        "an ended schedule is never read again"
    );
    setup.stop().await;
}

async fn paused_fires_are_not_owed_after_resume(backend: Backend) {
    let setup = Setup::start(backend).await;
    setup
        .schedule("pausable", "0 * * * *", "quick", "allow_all", 10 * HOUR)
        .await;
    let store = &setup.db.store;
    let scheduler = setup.scheduler();
    scheduler
        .fire_schedules(at("2030-01-01T01:00:00Z"))
        .await
        .unwrap();
    assert_eq!(setup.outcomes("pausable").await, ["started"]);
    let paused_at = chrono::DateTime::parse_from_rfc3339("2030-01-01T01:30:00Z")
        .unwrap()
        .to_utc();
    assert!(
        store
            .set_schedule_paused("pausable", true, Some("deploy freeze"), paused_at)
            .await
            .unwrap()
    );
    scheduler
        .fire_schedules(at("2030-01-01T05:00:00Z"))
        .await
        .unwrap();
    assert_eq!(setup.outcomes("pausable").await, ["started"], "paused");
    let resumed_at = chrono::DateTime::parse_from_rfc3339("2030-01-01T05:10:00Z")
        .unwrap()
        .to_utc();
    store
        .set_schedule_paused("pausable", false, None, resumed_at)
        .await
        .unwrap();
    scheduler
        .fire_schedules(at("2030-01-01T06:00:00Z"))
        .await
        .unwrap();
    let fires = store.fires("pausable", 10).await.unwrap();
    assert_eq!(
        fires.iter().map(|f| f.scheduled_ms).collect::<Vec<_>>(),
        [
            at("2030-01-01T06:00:00Z").as_millisecond(),
            at("2030-01-01T01:00:00Z").as_millisecond()
        ],
        "02:00 to 05:00 fell due while paused and are not caught up"
    );
    setup.stop().await;
}

async fn manual_triggers_obey_the_overlap_policy(backend: Backend) {
    let setup = Setup::start(backend).await;
    setup
        .schedule("manual", "0 0 1 1 *", "hold", "skip", HOUR)
        .await;
    let trigger = |ms: i64| gatehouse_store::FireRow {
        schedule: "manual".into(),
        scheduled_ms: ms,
        kind: gatehouse_store::FireKind::Manual,
        outcome: gatehouse_store::FireOutcome::Requested,
        run_id: None,
        fired_ms: ms,
        lateness_ms: 0,
        requested_by: Some("ana".into()),
    };
    let store = setup.db.store.clone();
    let request = |ms| {
        let store = store.clone();
        async move {
            let mut tx = store.begin().await.unwrap();
            assert!(tx.record_fire(&trigger(ms)).await.unwrap());
            tx.commit().await.unwrap();
        }
    };
    let now = at("2030-06-01T12:00:00Z");
    request(now.as_millisecond()).await;
    let (a, b) = (setup.scheduler(), setup.scheduler());
    let (x, y) = tokio::join!(a.fire_schedules(now), b.fire_schedules(now));
    x.unwrap();
    y.unwrap();
    assert_eq!(setup.outcomes("manual").await, ["started"], "decided once");
    let run = setup.wait_runs("manual", "waiting", 1).await[0];
    let run = setup.db.store.run(run).await.unwrap().unwrap();
    assert_eq!(
        run.requested_by.as_deref(),
        Some("ana"),
        "a manual trigger's run answers to whoever triggered it"
    );
    // A second trigger while the first run waits at its gate: skip says no.
    request(now.as_millisecond() + 1).await;
    a.fire_schedules(now).await.unwrap();
    assert_eq!(
        setup.outcomes("manual").await,
        ["started", "skipped_overlap"]
    );
    let fires = setup.db.store.fires("manual", 10).await.unwrap();
    assert!(fires.iter().all(|f| f.kind == "manual"));
    // A manual trigger is not a cron time: the yearly cron fire is still owed.
    assert_eq!(
        setup.db.store.last_cron_fire_ms("manual").await.unwrap(),
        None
    );
    setup.stop().await;
}

async fn backfill_runs_missed_times_one_after_another(backend: Backend) {
    let setup = Setup::start(backend).await;
    setup
        .schedule("nightly", "0 3 * * *", "hold", "skip", Duration::ZERO)
        .await;
    let scheduler = setup.scheduler();
    // Down for three nights with no catch-up window: all three are skipped.
    scheduler
        .fire_schedules(at("2030-01-03T12:00:00Z"))
        .await
        .unwrap();
    assert_eq!(setup.outcomes("nightly").await, ["skipped_missed"; 3]);
    let mut tx = setup.db.store.begin().await.unwrap();
    let now = at("2030-01-03T12:00:00Z").as_millisecond();
    for night in ["01", "02"] {
        let t = at(&format!("2030-01-{night}T03:00:00Z")).as_millisecond();
        assert!(tx.backfill_fire("nightly", t, now, "admin").await.unwrap());
        assert!(
            !tx.backfill_fire("nightly", t, now, "admin").await.unwrap(),
            "once"
        );
    }
    tx.commit().await.unwrap();
    assert_eq!(
        setup.outcomes("nightly").await,
        ["buffered", "buffered", "skipped_missed"]
    );
    // The services' own loop starts the oldest; the next waits for it to end.
    let first = setup.wait_runs("nightly", "waiting", 1).await[0];
    let run = setup.db.store.run(first).await.unwrap().unwrap();
    assert_eq!(
        run.requested_by.as_deref(),
        Some("admin"),
        "who backfilled it"
    );
    assert_eq!(
        setup.outcomes("nightly").await,
        ["started", "buffered", "skipped_missed"]
    );
    setup.approve(first).await;
    setup.wait_runs("nightly", "succeeded", 1).await;
    setup.wait_runs("nightly", "waiting", 1).await;
    assert_eq!(
        setup.outcomes("nightly").await,
        ["started", "started", "skipped_missed"]
    );
    setup.stop().await;
}

async fn fires_of_a_schedule_whose_sop_is_gone_are_skipped(backend: Backend) {
    let setup = Setup::start(backend).await;
    setup
        .schedule("orphan", "* * * * *", "gone", "skip", HOUR)
        .await;
    setup
        .scheduler()
        .fire_schedules(at("2030-01-01T00:03:00Z"))
        .await
        .unwrap();
    // Never "started" with a run that cannot exist, which would block `skip` for ever.
    assert_eq!(setup.outcomes("orphan").await, ["skipped_invalid"; 3]);
    assert!(
        setup
            .db
            .store
            .active_schedule_runs("orphan")
            .await
            .unwrap()
            .is_empty()
    );
    setup.stop().await;
}
