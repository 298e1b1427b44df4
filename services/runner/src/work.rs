//! The job abstraction: a kind of work the runner takes from the work queue (node jobs,
//! [`crate::nodes`]; conversations' turns, [`crate::turns`]), and what a job's run gives
//! back to be settled. The queue loop ([`crate::queue`]) is written once over it: it pulls
//! each kind from its own durable consumer, sharing the job slots, decodes each job or
//! parks it, keeps its lease while it runs, and settles what it reported. A kind of work
//! only prepares, runs and reports its jobs.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use gatehouse_bus::{Bus, Delivery, HandlerError};
use gatehouse_events::{Envelope, Event, EventType};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A kind of work the runner takes from the work queue.
///
/// Its attempts stop when the shutdown grace runs out: the stop of each is a child of
/// [`Runner::halted`](crate::runner::Runner::halted), which the queue cancels then.
#[async_trait]
pub(crate) trait Work: Send + Sync + 'static {
    /// The durable consumer its jobs come from, shared by every runner; jobs are counted
    /// and parked under its name.
    const CONSUMER: &'static str;
    /// The event its jobs are, and the subject they come on.
    const JOB: EventType;
    /// A job, decoded.
    type Job: Send + Sync;

    /// The job `event` is; `Err`: the type of event it is instead (the job is parked).
    fn job(event: Event) -> Result<Self::Job, EventType>;

    /// Starts watching what stops its attempts, until `stop`: the queue stops it only once
    /// the jobs in flight have finished, so a cancel still stops them during the shutdown
    /// grace. `None`: nothing does.
    fn watch(&self, _bus: Arc<dyn Bus>, _stop: CancellationToken) -> Option<JoinHandle<()>> {
        None
    }

    /// Gives a job back for a moment instead of taking it here (another runner should):
    /// `Err(away)` when it was given back, to come again after `away`; else the job, to
    /// take. Anything unreadable is taken, and parked by the queue.
    async fn leave(&self, delivery: Delivery) -> Result<Delivery, Duration> {
        Ok(delivery)
    }

    /// Runs the job to its end — prepare, run, report — and says what it reported. The
    /// queue keeps its lease meanwhile and settles it by the result: acknowledged once
    /// reported, handed back when reporting failed.
    async fn run(
        &self,
        envelope: &Envelope,
        job: &Self::Job,
        delivery: &Delivery,
    ) -> Result<Reported, HandlerError>;
}

/// A job's result, recorded.
pub(crate) struct Reported {
    /// `false`: an earlier delivery of the job had recorded its result.
    pub(crate) first: bool,
    /// Acknowledged in the transaction that recorded it ([`Delivery::ack_within`]).
    pub(crate) acked: bool,
}
