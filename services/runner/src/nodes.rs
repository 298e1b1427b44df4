//! Node jobs: `node.dispatch` from the work queue, on the `runner` consumer. Each runs one
//! attempt of a node in a sandbox, stores its output and artifacts, and reports
//! `node.progress` when it starts and `node.finished` when it ends; an attempt begun
//! before (its runner died) is reported interrupted and never run twice. Run snapshots
//! stop the attempts the scheduler no longer wants ([`watch`]).
//!
//! The attempt in named steps is in [`attempt`] and [`prepare`]; what it reports in
//! [`report`]; the repositories it works on in [`workspace`] and delivers in
//! [`delivery`]; the run's workspace following it between runners in [`follow`], started
//! from a conversation's in [`seed`].

mod attempt;
mod budget;
mod delivery;
mod follow;
mod prepare;
mod report;
mod seed;
mod watch;
mod workspace;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use gatehouse_bus::{Bus, Consumer, ConsumerOptions, ConsumerSpec, Delivery, HandlerError};
use gatehouse_events::{Envelope, Event, EventType, NodeDispatch, RunUpdated};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::runner::Runner;
use crate::running::Running;
use crate::work::{Reported, Work};
use watch::unwanted;

/// The durable consumer of the work queue's node jobs, shared by every runner.
const JOBS: &str = "runner";

/// The newest snapshot seen of each run, so a job that arrives after its run was
/// cancelled (or its node sent back) is not started at all.
type Snapshots = Arc<Mutex<HashMap<Uuid, RunUpdated>>>;

/// The runner's node jobs: cheap to clone.
#[derive(Clone)]
pub(crate) struct Nodes {
    runner: Runner,
    /// Attempts running here, so a run snapshot can stop them.
    running: Running<(Uuid, String, u32)>,
    snapshots: Snapshots,
    /// Attempts working in each run's workspace here.
    working: follow::Working,
}

impl Nodes {
    pub(crate) fn new(runner: &Runner) -> Self {
        Self {
            runner: runner.clone(),
            running: Running::default(),
            snapshots: Arc::default(),
            working: Arc::default(),
        }
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
        let cancel = self.runner.halted.child_token();
        let _running = self
            .running
            .register((job.run_id, job.node.clone(), job.attempt), cancel.clone());
        if let Some(snapshot) = self
            .snapshots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&job.run_id)
            && unwanted(snapshot, &job.node, job.attempt)
        {
            cancel.cancel();
        }
        self.report(envelope, job, attempt, cancel, delivery).await
    }
}

#[async_trait]
impl Work for Nodes {
    const CONSUMER: &'static str = JOBS;
    const JOB: EventType = EventType::NodeDispatch;
    type Job = NodeDispatch;

    fn job(event: Event) -> Result<NodeDispatch, EventType> {
        match event {
            Event::NodeDispatch(job) => Ok(job),
            other => Err(other.event_type()),
        }
    }

    /// Watches run snapshots on a consumer of their own (`runner-watch`).
    fn watch(&self, bus: Arc<dyn Bus>, stop: CancellationToken) -> Option<JoinHandle<()>> {
        let consumer = Consumer::new(
            bus,
            self.runner.store.clone(),
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
        let watcher = self.clone();
        Some(tokio::spawn(
            async move { consumer.run(&watcher, stop).await },
        ))
    }

    /// Leaves a job to the runner holding its run's workspace for a moment
    /// ([`Nodes::leave_to_holder`]).
    async fn leave(&self, delivery: Delivery) -> Result<Delivery, Duration> {
        self.leave_to_holder(delivery).await
    }

    async fn run(
        &self,
        envelope: &Envelope,
        job: &NodeDispatch,
        delivery: &Delivery,
    ) -> Result<Reported, HandlerError> {
        self.execute(envelope, job, delivery).await
    }
}
