//! The queue loop: taking every kind of work ([`Work`]) from the work queue, one durable
//! consumer per kind, sharing the job slots; each job decoded (or parked when it cannot be
//! read), its lease kept alive while it runs and then settled ([`settle`]: ack, nak, or
//! park); and a graceful shutdown that lets jobs in flight finish. What a job does is its
//! kind's: node jobs ([`crate::nodes`]) and conversations' turns ([`crate::turns`]), which
//! [`Runner::run`] lists.

mod settle;

use std::sync::Arc;
use std::time::Duration;

use gatehouse_bus::{Bus, ConsumerSpec, Delivery, count_received, event_span};
use gatehouse_events::{Envelope, EventError};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::observe::InFlight;
use crate::runner::Runner;
use crate::work::Work;

/// How long attempts stopped at the end of the shutdown grace have to report.
const REPORT_AFTER_HALT: Duration = Duration::from_secs(5);

/// The runner's kinds of work being taken: each one's pull and watch.
pub(crate) struct Queue {
    runner: Runner,
    bus: Arc<dyn Bus>,
    /// Jobs run at once, whatever their kind.
    slots: Arc<Semaphore>,
    shutdown: CancellationToken,
    /// Stops the watchers once the jobs in flight have finished: runs and turns keep being
    /// watched during the grace period, so a cancel still stops them.
    stop_watching: CancellationToken,
    watching: Vec<JoinHandle<()>>,
    /// Each kind's pull, giving back its jobs in flight. Jobs are tasks of these: if the
    /// queue is dropped (the process dies), they go too.
    pulls: JoinSet<JoinSet<()>>,
}

impl Queue {
    /// A queue taking jobs from `bus` until `shutdown`, with the runner's job slots.
    pub(crate) fn new(runner: &Runner, bus: Arc<dyn Bus>, shutdown: CancellationToken) -> Self {
        Self {
            slots: Arc::new(Semaphore::new(runner.options.concurrency.max(1))),
            runner: runner.clone(),
            bus,
            shutdown,
            stop_watching: CancellationToken::new(),
            watching: Vec::new(),
            pulls: JoinSet::new(),
        }
    }

    /// Starts watching and pulling `work`'s jobs.
    pub(crate) fn take<W: Work>(&mut self, work: W) {
        let work = Arc::new(work);
        if let Some(watch) = work.watch(self.bus.clone(), self.stop_watching.clone()) {
            self.watching.push(watch);
        }
        let spec = ConsumerSpec {
            ack_wait: self.runner.options.ack_wait,
            ..ConsumerSpec::new(W::CONSUMER, W::JOB.as_str())
        };
        let (runner, bus, slots, shutdown) = (
            self.runner.clone(),
            self.bus.clone(),
            self.slots.clone(),
            self.shutdown.clone(),
        );
        self.pulls
            .spawn(async move { runner.pull(&bus, work, spec, &slots, &shutdown).await });
    }

    /// Waits for the pulls to end at `shutdown`, for the jobs in flight to finish (see
    /// [`Runner::finish_in_flight`]), then for the watchers to stop.
    pub(crate) async fn finish(mut self) {
        let mut in_flight = Vec::new();
        while let Some(pulled) = self.pulls.join_next().await {
            match pulled {
                Ok(jobs) => in_flight.push(jobs),
                Err(err) => tracing::error!(error = %err, "pulling jobs failed"),
            }
        }
        self.runner.finish_in_flight(&mut in_flight).await;
        self.stop_watching.cancel();
        for watch in self.watching {
            let _ = watch.await;
        }
    }
}

impl Runner {
    /// Takes `work`'s jobs from `spec` until `shutdown`, each one a task of the set
    /// returned, once it has a slot. A queue waits for a slot to be free before it pulls
    /// (then as many jobs as slots are free, in one go) but does not hold one while it
    /// waits for a job, so an idle queue never keeps another from its slots; a job pulled
    /// just as another queue took the last slot keeps its lease until one frees.
    async fn pull<W: Work>(
        &self,
        bus: &Arc<dyn Bus>,
        work: Arc<W>,
        spec: ConsumerSpec,
        slots: &Arc<Semaphore>,
        shutdown: &CancellationToken,
    ) -> JoinSet<()> {
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
                let mut left = Duration::ZERO;
                while let Some(delivery) = deliveries.next() {
                    let delivery = match work.leave(delivery).await {
                        Ok(delivery) => delivery,
                        Err(away) => {
                            left = left.max(away);
                            continue;
                        }
                    };
                    let Some(slot) = self.slot_for(&delivery, slots, shutdown).await else {
                        // Shutting down: this job and the rest pulled with it go back now.
                        for unstarted in std::iter::once(delivery).chain(deliveries.by_ref()) {
                            let _ = unstarted.nak(Duration::ZERO).await;
                        }
                        break 'pulling;
                    };
                    let (runner, work) = (self.clone(), work.clone());
                    in_flight.spawn(async move {
                        runner.take(&*work, delivery).await;
                        drop(slot);
                    });
                }
                if !left.is_zero() {
                    // Pulls are served oldest first. Pausing for a random part of the
                    // time the job is away makes the next pull here younger than the
                    // holder's pull that waits for it — always when the holder was
                    // waiting already, and half the time when two runners each left the
                    // other's job, a fresh draw each round, where any fixed pause would
                    // hand each of them back the job it left, round after round.
                    let pause =
                        Duration::from_millis(fastrand::u64(0..left.as_millis().max(1) as u64));
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

    /// Waits out the shutdown grace for jobs in flight, then stops the rest (every
    /// attempt's stop is a child of [`Runner::halted`]) and waits for them to report. A job
    /// that cannot even report is left to its lease.
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

    /// Runs one job of `work` to its end, renewing its lease meanwhile, and settles it. All
    /// of it happens in the job's event span (its trace id, and its run and node or its
    /// conversation), and is counted like a consumer's delivery under the work's consumer
    /// name.
    async fn take<W: Work>(&self, work: &W, delivery: Delivery) {
        let _in_flight = InFlight::start();
        let envelope = Envelope::from_slice(&delivery.payload);
        let span = event_span(W::CONSUMER, &delivery, envelope.as_ref().ok());
        count_received(W::CONSUMER, &delivery);
        self.settle(work, delivery, envelope).instrument(span).await;
    }

    /// Decodes the job, parking it when it cannot be read, runs it leased, and settles it.
    async fn settle<W: Work>(
        &self,
        work: &W,
        delivery: Delivery,
        envelope: Result<Envelope, EventError>,
    ) {
        let envelope = match envelope {
            Ok(e) => e,
            Err(err) => return self.park(W::CONSUMER, delivery, err.to_string()).await,
        };
        let job = match envelope.decode().map(W::job) {
            Ok(Ok(job)) => job,
            Ok(Err(other)) => {
                let reason = format!("expected {}, got {other}", W::JOB);
                return self.park(W::CONSUMER, delivery, reason).await;
            }
            Err(err) => return self.park(W::CONSUMER, delivery, err.to_string()).await,
        };
        let result = self
            .leased(&delivery, work.run(&envelope, &job, &delivery))
            .await;
        self.settled(W::CONSUMER, delivery, result).await;
    }
}

/// Waits for every task in `sets` to end.
async fn join_all(sets: &mut [JoinSet<()>]) {
    for tasks in sets {
        while tasks.join_next().await.is_some() {}
    }
}
