//! The queue loop: taking `node.dispatch` jobs (and conversations' `turn.dispatch` jobs,
//! [`crate::turns`]) from the work queue, sharing the job slots, keeping their leases
//! alive while they run and settling them ([`settle`]: ack, nak, or park the unreadable), and a graceful
//! shutdown that lets jobs in flight finish. What one node job does is elsewhere: its attempt
//! in named steps ([`attempt`], [`prepare`]), what it reports ([`report`]), the
//! repositories it works on ([`workspace`]) and delivers ([`delivery`]), and the run
//! snapshots that stop it ([`watch`]). Its settings are [`options`].

mod attempt;
mod delivery;
mod follow;
mod options;
mod prepare;
mod report;
mod seed;
mod settle;
mod watch;
mod workspace;

pub(crate) use settle::Reported;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gatehouse_bus::{
    Bus, Consumer, ConsumerOptions, ConsumerSpec, Delivery, HandlerError, count_received,
    event_span,
};
use gatehouse_events::{Envelope, Event, EventError, NodeDispatch, RunUpdated};
use gatehouse_sandbox::Sandbox;
use gatehouse_store::Store;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;
use uuid::Uuid;

use crate::artifacts::ARTIFACT_LIMIT;
use crate::checkpoint::{Checkpoints, PACK_LIMIT};
use crate::observe::InFlight;
use gatehouse_blobs::{Blobs, LocalBlobs};
pub use options::RunnerOptions;
use watch::unwanted;

/// The durable consumer of the work queue's node jobs, shared by every runner.
const JOBS: &str = "runner";
/// How long attempts stopped at the end of the shutdown grace have to report.
const REPORT_AFTER_HALT: Duration = Duration::from_secs(5);

/// Attempts running here, so a run snapshot can stop them.
type Running = Arc<Mutex<HashMap<(Uuid, String, u32), CancellationToken>>>;
/// The newest snapshot seen of each run, so a job that arrives after its run was
/// cancelled (or its node sent back) is not started at all.
type Snapshots = Arc<Mutex<HashMap<Uuid, RunUpdated>>>;

/// A runner: cheap to clone.
#[derive(Clone)]
pub struct Runner {
    pub(crate) store: Store,
    pub(crate) sandbox: Arc<dyn Sandbox>,
    pub(crate) options: RunnerOptions,
    running: Running,
    snapshots: Snapshots,
    /// Turn attempts running here, so a `turn.cancel` can stop them.
    pub(crate) turns: crate::turns::Running,
    /// Cancelled when the shutdown grace has run out: attempts stopped then are reported
    /// as interrupted by the shutdown, not as cancelled by someone.
    pub(crate) halted: CancellationToken,
    /// The most bytes an artifact may have; see [`Runner::with_artifact_limit`].
    artifact_limit: u64,
    /// Where artifacts and workspace checkpoints go; see [`Runner::with_blobs`].
    pub(crate) blobs: Blobs,
    pub(crate) checkpoints: Checkpoints,
    /// Attempts working in each run's workspace here.
    working: follow::Working,
}

impl Runner {
    /// A runner recording into `store` and running jobs in `sandbox`.
    pub fn new(store: Store, sandbox: Arc<dyn Sandbox>, options: RunnerOptions) -> Self {
        let blobs: Blobs = Arc::new(LocalBlobs::new(options.data_dir.join("blobs")));
        Self {
            checkpoints: Checkpoints::new(blobs.clone(), PACK_LIMIT),
            blobs,
            working: Arc::default(),
            store,
            sandbox,
            options,
            running: Arc::default(),
            snapshots: Arc::default(),
            turns: Arc::default(),
            halted: CancellationToken::new(),
            artifact_limit: ARTIFACT_LIMIT,
        }
    }

    /// Refuses artifacts over `bytes` (64 MiB unless set): the attempt that left one fails,
    /// and an input over it is not copied. Sizes are checked before a byte is read.
    pub fn with_artifact_limit(mut self, bytes: u64) -> Self {
        self.artifact_limit = bytes;
        self
    }

    /// Refuses checkpoint packs over `bytes` (4 GiB unless set): a workspace whose pack
    /// would be larger fails its checkpoint, and a restore fetches no pack recorded as
    /// larger, nor more of any pack than its manifest records.
    pub fn with_checkpoint_pack_limit(mut self, bytes: u64) -> Self {
        self.checkpoints.pack_limit = bytes;
        self
    }

    /// Keeps artifacts and workspace checkpoints in `blobs` (the data directory's `blobs`
    /// unless set): with a store every runner and ingest reach (NATS), runners need no
    /// shared disk.
    pub fn with_blobs(mut self, blobs: Blobs) -> Self {
        self.checkpoints = Checkpoints::new(blobs.clone(), self.checkpoints.pack_limit);
        self.blobs = blobs;
        self
    }

    /// Takes jobs and watches runs and turns until `shutdown` is cancelled. Then it takes
    /// no more, hands back jobs pulled but not started, and gives those in flight
    /// [`RunnerOptions::shutdown_grace`] to finish; node attempts still running after that
    /// are stopped and reported as interrupted, so the engine retries them at once rather
    /// than after their lease runs out (turn attempts are stopped and handed back, and
    /// their redelivery reports them interrupted).
    pub async fn run(self, bus: Arc<dyn Bus>, shutdown: CancellationToken) {
        // Runs and turns keep being watched during the grace period, so a cancel still
        // stops them.
        let stop_watching = CancellationToken::new();
        let watch = {
            let consumer = Consumer::new(
                bus.clone(),
                self.store.clone(),
                // Snapshots waiting together in one commit: taking one is idempotent (an
                // older revision is ignored), so a batch applied again alone is harmless.
                // A few milliseconds late only for stopping an attempt: the commits that
                // start nodes go first.
                ConsumerOptions {
                    batch: 64,
                    linger: Duration::from_millis(5),
                    ..ConsumerOptions::new(ConsumerSpec::new("runner-watch", "run.updated"))
                },
            );
            let (watcher, stop) = (self.clone(), stop_watching.clone());
            tokio::spawn(async move { consumer.run(&watcher, stop).await })
        };
        let cancels = crate::turns::watch_cancels(&self, bus.clone(), stop_watching.clone());
        let slots = Arc::new(Semaphore::new(self.options.concurrency.max(1)));
        let nodes = ConsumerSpec {
            ack_wait: self.options.ack_wait,
            ..ConsumerSpec::new(JOBS, "node.dispatch")
        };
        let turns = crate::turns::spec(self.options.ack_wait);
        // Jobs are tasks of this future: if it is dropped (the process dies), they go too.
        let (node_jobs, turn_jobs) = tokio::join!(
            self.pull(
                &bus,
                nodes,
                &slots,
                &shutdown,
                |runner, delivery| async move {
                    runner.take(delivery).await;
                }
            ),
            self.pull(
                &bus,
                turns,
                &slots,
                &shutdown,
                |runner, delivery| async move {
                    runner.take_turn(delivery).await;
                }
            ),
        );
        self.finish_in_flight(&mut [node_jobs, turn_jobs]).await;
        stop_watching.cancel();
        let _ = watch.await;
        let _ = cancels.await;
    }

    /// Takes `spec`'s jobs until `shutdown`, each one a task of the set returned, run by
    /// `take` once it has a slot. A queue waits for a slot to be free before it pulls (then
    /// as many jobs as slots are free, in one go) but does not hold one while it waits for
    /// a job, so an idle queue never keeps the other from its slots; a job pulled just as
    /// the other queue took the last slot keeps its lease until one frees.
    async fn pull<F, Fut>(
        &self,
        bus: &Arc<dyn Bus>,
        spec: ConsumerSpec,
        slots: &Arc<Semaphore>,
        shutdown: &CancellationToken,
        take: F,
    ) -> JoinSet<()>
    where
        F: Fn(Runner, Delivery) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let mut in_flight = JoinSet::new();
        while !shutdown.is_cancelled() {
            let mut jobs = tokio::select! {
                () = shutdown.cancelled() => break,
                s = bus.subscribe(&spec) => match s {
                    Ok(s) => s,
                    Err(err) => {
                        tracing::warn!(consumer = %spec.name, error = %err, "subscribing to jobs failed; retrying");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        continue;
                    }
                },
            };
            'pulling: loop {
                while in_flight.try_join_next().is_some() {}
                let free = tokio::select! {
                    () = shutdown.cancelled() => break,
                    free = slots.acquire() => free,
                };
                let Ok(free) = free else { break };
                drop(free);
                // As many as there are free slots, in one go when several are due.
                let wanted = slots.available_permits().max(1);
                let deliveries = tokio::select! {
                    () = shutdown.cancelled() => break,
                    d = jobs.next_up_to(wanted) => d,
                };
                let mut deliveries = match deliveries {
                    Ok(deliveries) => deliveries.into_iter(),
                    Err(err) => {
                        tracing::warn!(consumer = %spec.name, error = %err, "receiving jobs failed; subscribing again");
                        break;
                    }
                };
                let mut left = false;
                while let Some(delivery) = deliveries.next() {
                    let Some(delivery) = self.leave_to_holder(delivery).await else {
                        left = true;
                        continue;
                    };
                    let Some(slot) = self.slot_for(&delivery, slots, shutdown).await else {
                        // Shutting down: this job and the rest pulled with it go back now.
                        for unstarted in std::iter::once(delivery).chain(deliveries.by_ref()) {
                            let _ = unstarted.nak(Duration::ZERO).await;
                        }
                        break 'pulling;
                    };
                    let job = take(self.clone(), delivery);
                    in_flight.spawn(async move {
                        job.await;
                        drop(slot);
                    });
                }
                if left {
                    // Pulls are served oldest first. Pausing for a random part of the
                    // time the job is away makes the next pull here younger than the
                    // holder's pull that waits for it — always when the holder was
                    // waiting already, and half the time when two runners each left the
                    // other's job, a fresh draw each round, where any fixed pause would
                    // hand each of them back the job it left, round after round.
                    let pause = Duration::from_millis(fastrand::u64(
                        0..follow::LEAVE_FOR.as_millis() as u64,
                    ));
                    tokio::select! {
                        () = shutdown.cancelled() => break,
                        () = tokio::time::sleep(pause) => {}
                    }
                }
            }
            if shutdown.is_cancelled() {
                jobs.hand_back().await;
            }
        }
        in_flight
    }

    /// A slot for `delivery`, its lease kept meanwhile; `None` when `shutdown` comes first.
    async fn slot_for(
        &self,
        delivery: &Delivery,
        slots: &Arc<Semaphore>,
        shutdown: &CancellationToken,
    ) -> Option<OwnedSemaphorePermit> {
        tokio::select! {
            slot = slots.clone().acquire_owned() => slot.ok(),
            () = shutdown.cancelled() => None,
            never = self.keep_lease(delivery) => match never {},
        }
    }

    /// Waits out the shutdown grace for jobs in flight, then stops the rest and waits for
    /// them to report. A job that cannot even report is left to its lease.
    async fn finish_in_flight(&self, in_flight: &mut [JoinSet<()>]) {
        for set in in_flight.iter_mut() {
            while set.try_join_next().is_some() {}
        }
        let count = |sets: &[JoinSet<()>]| sets.iter().map(JoinSet::len).sum::<usize>();
        if count(in_flight) == 0 {
            return;
        }
        let grace = self.options.shutdown_grace;
        tracing::info!(
            jobs = count(in_flight),
            ?grace,
            "waiting for jobs in flight to finish"
        );
        if tokio::time::timeout(grace, join_all(in_flight))
            .await
            .is_ok()
        {
            return;
        }
        tracing::warn!(
            jobs = count(in_flight),
            "the shutdown grace ran out; interrupting jobs in flight"
        );
        self.halted.cancel();
        for token in self
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
        {
            token.cancel();
        }
        if tokio::time::timeout(REPORT_AFTER_HALT, join_all(in_flight))
            .await
            .is_err()
        {
            tracing::warn!(
                jobs = count(in_flight),
                "jobs did not report in time; their leases will run out and they will be reported as interrupted"
            );
        }
    }

    /// Runs one job to its end, renewing its lease meanwhile, and settles it. All of it
    /// happens in the job's event span (its trace id, run and node), and is counted like a
    /// consumer's delivery under the consumer name `runner`.
    async fn take(&self, delivery: Delivery) {
        let _in_flight = InFlight::start();
        let envelope = Envelope::from_slice(&delivery.payload);
        let span = event_span(JOBS, &delivery, envelope.as_ref().ok());
        count_received(JOBS, &delivery);
        self.settle(delivery, envelope).instrument(span).await;
    }

    async fn settle(&self, delivery: Delivery, envelope: Result<Envelope, EventError>) {
        let envelope = match envelope {
            Ok(e) => e,
            Err(err) => return self.park(JOBS, delivery, err.to_string()).await,
        };
        let dispatch = match envelope.decode() {
            Ok(Event::NodeDispatch(d)) => d,
            Ok(other) => {
                let reason = format!("expected node.dispatch, got {}", other.event_type());
                return self.park(JOBS, delivery, reason).await;
            }
            Err(err) => return self.park(JOBS, delivery, err.to_string()).await,
        };
        let result = self
            .leased(&delivery, self.execute(&envelope, &dispatch, &delivery))
            .await;
        self.settled(JOBS, delivery, result).await;
    }

    /// Runs the attempt unless a runner already began it, and records the result with the
    /// job's inbox entry in one transaction.
    async fn execute(
        &self,
        envelope: &Envelope,
        job: &NodeDispatch,
        delivery: &Delivery,
    ) -> Result<Reported, HandlerError> {
        let attempt = i32::try_from(job.attempt).unwrap_or(i32::MAX);
        // Registered before anything is announced, so a cancel that follows cannot miss it.
        let cancel = CancellationToken::new();
        let key = (job.run_id, job.node.clone(), job.attempt);
        self.running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.clone(), cancel.clone());
        if let Some(snapshot) = self
            .snapshots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&job.run_id)
            && unwanted(snapshot, &job.node, job.attempt)
        {
            cancel.cancel();
        }
        let result = self.report(envelope, job, attempt, cancel, delivery).await;
        self.running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&key);
        result
    }
}

/// Waits for every task in `sets` to end.
async fn join_all(sets: &mut [JoinSet<()>]) {
    for tasks in sets {
        while tasks.join_next().await.is_some() {}
    }
}
