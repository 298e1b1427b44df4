//! Several runners on one work queue, on every bus, each with a data directory of its own
//! and the blob store they all reach: jobs spread over the runners within each one's
//! concurrency, a job longer than its lease keeps it alive and runs once, a job whose
//! runner died comes back to another runner as the engine's next attempt (no `retry`
//! needed), a runner told to stop finishes its jobs within its grace and interrupts the
//! rest, a run's workspace follows it to another runner, and the runner holding it is
//! preferred.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use gatehouse_blobs::Blobs;
use gatehouse_bus::RelayOptions;
use gatehouse_events::{Envelope, Event, GateDecision, GateDecisionKind};
use gatehouse_fleet::Fleet;
use gatehouse_runner::{Runner, RunnerOptions};
use gatehouse_sandbox::ProcessSandbox;
use gatehouse_sop::{Catalog, Library};
use gatehouse_tests::{BusKind, TestBus, actor, on_every_bus, request_runs};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// Four nodes of 2.5 s each: longer than twice the 1-second lease.
const WIDE: &str = r#"
name: wide
nodes:
  a: { kind: script, run: "sleep 2.5; touch $GATEHOUSE_ARTIFACTS/done", artifacts: [done] }
  b: { kind: script, run: "sleep 2.5; touch $GATEHOUSE_ARTIFACTS/done", artifacts: [done] }
  c: { kind: script, run: "sleep 2.5; touch $GATEHOUSE_ARTIFACTS/done", artifacts: [done] }
  d: { kind: script, run: "sleep 2.5; touch $GATEHOUSE_ARTIFACTS/done", artifacts: [done] }
"#;

/// The first attempt never ends by itself; the second finishes at once. No `retry`: an
/// interrupted attempt runs again without one.
const STUBBORN: &str = r#"
name: stubborn
nodes:
  work:
    kind: script
    run: 'if [ "$GATEHOUSE_ATTEMPT" = 1 ]; then sleep 600; fi; touch $GATEHOUSE_ARTIFACTS/done'
    artifacts: [done]
"#;

/// Files in the workspace before a gate, read (and changed) after it.
const HANDOVER: &str = r#"
name: handover
nodes:
  write: { kind: script, run: "echo first > notes.txt; mkdir -p deep/er; echo x > deep/er/file; chmod +x deep/er/file" }
  review: { kind: gate, needs: [write], approvers: [group:leads] }
  read:
    kind: script
    needs: [review]
    run: "cat notes.txt deep/er/file > $GATEHOUSE_ARTIFACTS/seen; test -x deep/er/file; echo second >> notes.txt"
    artifacts: [seen]
"#;

/// A node that must not run twice, whose first attempt never ends by itself.
const ONCE: &str = r#"
name: once
nodes:
  push:
    kind: script
    on_interrupt: fail
    run: 'if [ "$GATEHOUSE_ATTEMPT" = 1 ]; then sleep 600; fi'
"#;

/// One node that takes a moment.
const SHORT: &str = r#"
name: short
nodes:
  work: { kind: script, run: "sleep 1.5; touch $GATEHOUSE_ARTIFACTS/done", artifacts: [done] }
"#;

on_every_bus!(
    runners_share_the_queue_and_long_jobs_keep_their_lease,
    a_dead_runners_job_is_retried_on_another_as_the_next_attempt,
    a_stopped_runner_finishes_its_jobs_within_its_grace,
    a_stopped_runner_interrupts_what_outlives_its_grace,
    a_runs_workspace_follows_it_to_another_runner,
    the_runner_holding_a_workspace_takes_its_next_node,
    a_node_that_must_not_repeat_fails_when_interrupted,
);

/// The relay and the scheduler on a bus, and runners started and stopped one by one, each
/// with a data directory of its own (so where a node ran shows on disk).
struct Cluster {
    bus: TestBus,
    data: tempfile::TempDir,
    services: Fleet,
    runners: BTreeMap<&'static str, (CancellationToken, Fleet)>,
    /// The blob store every runner reaches (NATS on JetStream).
    blobs: Blobs,
}

impl Cluster {
    async fn start(kind: BusKind) -> Self {
        let bus = TestBus::new(kind).await;
        let data = tempfile::tempdir().unwrap();
        let sops = data.path().join("sops");
        std::fs::create_dir_all(&sops).unwrap();
        std::fs::write(sops.join("wide.yaml"), WIDE).unwrap();
        std::fs::write(sops.join("stubborn.yaml"), STUBBORN).unwrap();
        std::fs::write(sops.join("short.yaml"), SHORT).unwrap();
        std::fs::write(sops.join("handover.yaml"), HANDOVER).unwrap();
        std::fs::write(sops.join("once.yaml"), ONCE).unwrap();
        let (catalog, errors) = Catalog::load(&[&sops]);
        assert!(errors.is_empty(), "{errors:?}");
        let services = Fleet::builder(bus.db.store.clone(), bus.bus.clone())
            .catalog(Arc::new(Library::fixed(catalog)))
            .relay(RelayOptions {
                poll: Duration::from_millis(50),
                ..RelayOptions::default()
            })
            .scheduler()
            .spawn(CancellationToken::new());
        let blobs = bus.blobs(&data.path().join("blobs")).await;
        Self {
            bus,
            data,
            services,
            runners: BTreeMap::new(),
            blobs,
        }
    }

    fn dir(&self, runner: &str) -> PathBuf {
        self.data.path().join(runner)
    }

    /// Starts a runner of concurrency 2 and a 1-second lease, on its own bus connection.
    async fn runner(&mut self, name: &'static str) {
        self.runner_with_grace(name, Duration::from_secs(20)).await;
    }

    /// Starts a runner as [`Cluster::runner`] does, with `grace` for its jobs at shutdown.
    async fn runner_with_grace(&mut self, name: &'static str, grace: Duration) {
        let options = RunnerOptions {
            concurrency: 2,
            ack_wait: Duration::from_secs(1),
            shutdown_grace: grace,
            id: name.to_owned(),
            ..RunnerOptions::new(self.dir(name))
        };
        let runner = Runner::new(
            self.bus.db.store.clone(),
            Arc::new(ProcessSandbox::default()),
            options,
        )
        .with_blobs(self.blobs.clone());
        // A runner process of its own: its own bus connection, relaying its own outbox (on
        // a short claim, so rows a killed one had claimed are soon published by another).
        let stop = CancellationToken::new();
        let process = Fleet::builder(self.bus.db.store.clone(), self.bus.reopen().await)
            .relay(RelayOptions {
                poll: Duration::from_millis(50),
                lease: Duration::from_secs(1),
                ..RelayOptions::default()
            })
            .runner(runner)
            .spawn(stop.clone());
        self.runners.insert(name, (stop, process));
    }

    /// Waits until `run`'s first attempt has begun on some runner.
    async fn wait_for_first_attempt(&self, run: Uuid) {
        self.wait_until("attempt 1 to start", async || {
            !self.bus.db.store.attempts(run).await.unwrap().is_empty()
        })
        .await;
    }

    /// Stops a runner as a crash would leave its jobs: unacknowledged, their scripts gone.
    fn kill(&mut self, name: &str) {
        if let Some((_, process)) = self.runners.remove(name) {
            process.abort();
        }
    }

    /// Tells a runner to stop, as SIGTERM does; the handle ends when the runner has.
    fn shut_down(&mut self, name: &str) -> JoinHandle<()> {
        let (stop, process) = self.runners.remove(name).unwrap();
        stop.cancel();
        tokio::spawn(process.join())
    }

    async fn request(&self, sop: &str) -> Uuid {
        request_runs(&self.bus.db.store, sop, 1, "bob").await[0]
    }

    async fn wait_until(&self, what: &str, done: impl AsyncFn() -> bool) {
        for _ in 0..1500 {
            if done().await {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("timed out waiting for {what}");
    }

    async fn wait_status(&self, run: Uuid, status: &str) {
        self.wait_until(status, async || {
            self.bus
                .db
                .store
                .run(run)
                .await
                .unwrap()
                .is_some_and(|r| r.status == status)
        })
        .await;
    }

    /// Approves `run`'s gate `node` as a lead.
    async fn approve(&self, run: Uuid, node: &str) {
        let decision = Event::GateDecision(GateDecision {
            run_id: run,
            node: node.into(),
            attempt: 1,
            decision: GateDecisionKind::Approve,
            comment: None,
            actor: actor("ana"),
            groups: vec!["leads".into()],
        });
        let mut tx = self.bus.db.store.begin().await.unwrap();
        tx.append_outbox(&Envelope::new("test", &decision, None).unwrap())
            .await
            .unwrap();
        tx.commit().await.unwrap();
    }

    /// The runners whose data directory holds the inputs of `node`'s `attempt` of `run`.
    fn ran_on(&self, run: Uuid, node: &str, attempt: u32) -> Vec<&'static str> {
        ["one", "two"]
            .into_iter()
            .filter(|r| {
                self.dir(r)
                    .join(format!("runs/{run}/inputs/{node}/{attempt}"))
                    .exists()
            })
            .collect()
    }

    /// A stored artifact's text, from the blob store.
    async fn artifact(&self, run: Uuid, node: &str, name: &str) -> String {
        let rows = self.bus.db.store.artifacts(run).await.unwrap();
        let row = rows
            .iter()
            .find(|a| a.node == node && a.name == name)
            .unwrap_or_else(|| panic!("no artifact {node}/{name}: {rows:?}"));
        let bytes = self
            .blobs
            .get_bytes(&row.sha256.parse().unwrap(), 1 << 20)
            .await
            .unwrap();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    /// Every line `run` logged, joined.
    async fn log(&self, run: Uuid) -> String {
        let lines = self.bus.db.store.logs(run, 0, 10_000).await.unwrap();
        lines
            .iter()
            .map(|l| l.line.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    }

    async fn stop(self) {
        for (_, process) in self.runners.into_values() {
            process.abort();
        }
        self.services.stop().await;
        self.bus.cleanup().await;
    }
}

/// How the runner's log says it restored a workspace (both the test that expects it and the
/// one that must not see it use this, so a change of wording cannot silence the latter).
const RESTORED: &str = "[gatehouse] workspace restored from the checkpoint";

/// Whether `node`'s `attempt` left its artifact in `dir`.
fn ran_in(dir: &Path, run: Uuid, node: &str, attempt: u32) -> bool {
    dir.join(format!("runs/{run}/artifacts/{node}/{attempt}/done"))
        .exists()
}

async fn runners_share_the_queue_and_long_jobs_keep_their_lease(kind: BusKind) {
    let mut cluster = Cluster::start(kind).await;
    cluster.runner("one").await;
    cluster.runner("two").await;
    let run = cluster.request("wide").await;
    cluster.wait_status(run, "succeeded").await;

    let attempts = cluster.bus.db.store.attempts(run).await.unwrap();
    let seen: Vec<(&str, i32, &str)> = attempts
        .iter()
        .map(|a| (a.node.as_str(), a.attempt, a.status.as_str()))
        .collect();
    assert_eq!(seen.len(), 4, "{seen:?}");
    assert!(
        seen.iter()
            .all(|(_, attempt, status)| *attempt == 1 && *status == "succeeded"),
        "every job ran once, its lease kept while it ran: {seen:?}"
    );
    let mut per_runner = BTreeMap::new();
    for node in ["a", "b", "c", "d"] {
        let ran: Vec<&str> = ["one", "two"]
            .into_iter()
            .filter(|r| ran_in(&cluster.dir(r), run, node, 1))
            .collect();
        assert_eq!(ran.len(), 1, "{node} ran on exactly one runner: {ran:?}");
        *per_runner.entry(ran[0]).or_insert(0) += 1;
    }
    // Each runner takes at most two at once, and all four ran side by side.
    assert_eq!(per_runner, BTreeMap::from([("one", 2), ("two", 2)]));
    cluster.stop().await;
}

async fn a_dead_runners_job_is_retried_on_another_as_the_next_attempt(kind: BusKind) {
    let mut cluster = Cluster::start(kind).await;
    cluster.runner("one").await;
    let run = cluster.request("stubborn").await;
    cluster.wait_for_first_attempt(run).await;
    cluster.kill("one");
    cluster.runner("two").await;
    cluster.wait_status(run, "succeeded").await;

    let attempts = cluster.bus.db.store.attempts(run).await.unwrap();
    let seen: Vec<(i32, &str, Option<&str>)> = attempts
        .iter()
        .map(|a| (a.attempt, a.status.as_str(), a.error.as_deref()))
        .collect();
    assert_eq!(
        seen,
        [
            (
                1,
                "interrupted",
                Some("interrupted: the runner stopped during this attempt")
            ),
            (2, "succeeded", None)
        ]
    );
    assert!(ran_in(&cluster.dir("two"), run, "work", 2));
    assert!(!ran_in(&cluster.dir("one"), run, "work", 2));
    cluster.stop().await;
}

async fn a_stopped_runner_finishes_its_jobs_within_its_grace(kind: BusKind) {
    let mut cluster = Cluster::start(kind).await;
    cluster.runner("one").await;
    let run = cluster.request("short").await;
    cluster.wait_for_first_attempt(run).await;
    let stopped = cluster.shut_down("one");
    tokio::time::timeout(Duration::from_secs(15), stopped)
        .await
        .expect("the runner stops once its job is done")
        .unwrap();
    // Reported before the runner returned: no other runner was needed.
    cluster.wait_status(run, "succeeded").await;
    let attempts = cluster.bus.db.store.attempts(run).await.unwrap();
    let seen: Vec<(i32, &str)> = attempts
        .iter()
        .map(|a| (a.attempt, a.status.as_str()))
        .collect();
    assert_eq!(seen, [(1, "succeeded")]);
    assert!(ran_in(&cluster.dir("one"), run, "work", 1));
    cluster.stop().await;
}

async fn a_stopped_runner_interrupts_what_outlives_its_grace(kind: BusKind) {
    let mut cluster = Cluster::start(kind).await;
    cluster
        .runner_with_grace("one", Duration::from_millis(300))
        .await;
    let run = cluster.request("stubborn").await;
    cluster.wait_for_first_attempt(run).await;
    let stopped = cluster.shut_down("one");
    tokio::time::timeout(Duration::from_secs(10), stopped)
        .await
        .expect("the runner stops soon after its grace")
        .unwrap();
    let attempts = cluster.bus.db.store.attempts(run).await.unwrap();
    assert_eq!(
        attempts[0].status, "interrupted",
        "reported by the runner itself"
    );
    assert_eq!(
        attempts[0].error.as_deref(),
        Some(
            "interrupted: the runner shut down and the attempt did not finish within its 300ms grace"
        )
    );
    cluster.runner("two").await;
    cluster.wait_status(run, "succeeded").await;
    let attempts = cluster.bus.db.store.attempts(run).await.unwrap();
    assert_eq!(attempts.len(), 2);
    assert!(ran_in(&cluster.dir("two"), run, "work", 2));
    cluster.stop().await;
}

async fn a_runs_workspace_follows_it_to_another_runner(kind: BusKind) {
    let mut cluster = Cluster::start(kind).await;
    cluster.runner("one").await;
    let run = cluster.request("handover").await;
    cluster.wait_status(run, "waiting").await;
    // The runner that wrote the workspace is gone with its disk's copy.
    cluster.kill("one");
    std::fs::remove_dir_all(cluster.dir("one")).unwrap();
    cluster.runner("two").await;
    cluster.approve(run, "review").await;
    cluster.wait_status(run, "succeeded").await;

    assert_eq!(cluster.artifact(run, "read", "seen").await, "first\nx\n");
    assert_eq!(cluster.ran_on(run, "read", 1), ["two"]);
    let log = cluster.log(run).await;
    assert!(
        log.contains(&format!(
            "{RESTORED} taken after node write, attempt 1 on one (this runner did not hold it)"
        )),
        "{log}"
    );
    // What `read` changed is the run's latest checkpoint, held by two.
    let latest = cluster
        .bus
        .db
        .store
        .latest_checkpoint(&format!("run:{run}"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(latest.runner, "two");
    assert_eq!(latest.taken_after, "node read, attempt 1");
    cluster.stop().await;
}

async fn the_runner_holding_a_workspace_takes_its_next_node(kind: BusKind) {
    let mut cluster = Cluster::start(kind).await;
    cluster.runner("one").await;
    cluster.runner("two").await;
    let runs = request_runs(&cluster.bus.db.store, "handover", 4, "bob").await;
    for &run in &runs {
        cluster.wait_status(run, "waiting").await;
    }
    for &run in &runs {
        cluster.approve(run, "review").await;
    }
    for &run in &runs {
        cluster.wait_status(run, "succeeded").await;
        let wrote = cluster.ran_on(run, "write", 1);
        assert_eq!(wrote.len(), 1, "{wrote:?}");
        assert_eq!(cluster.ran_on(run, "read", 1), wrote, "run {run}");
        assert!(!cluster.log(run).await.contains(RESTORED));
    }
    cluster.stop().await;
}

async fn a_node_that_must_not_repeat_fails_when_interrupted(kind: BusKind) {
    let mut cluster = Cluster::start(kind).await;
    cluster.runner("one").await;
    let run = cluster.request("once").await;
    cluster.wait_for_first_attempt(run).await;
    cluster.kill("one");
    cluster.runner("two").await;
    cluster.wait_status(run, "failed").await;
    let attempts = cluster.bus.db.store.attempts(run).await.unwrap();
    assert_eq!(attempts.len(), 1, "never run again: {attempts:?}");
    assert_eq!(attempts[0].status, "interrupted");
    cluster.stop().await;
}
