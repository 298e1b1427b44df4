//! The in-process bus: the store's queue tables, so `gatehouse up` needs no NATS and still
//! survives a crash with nothing lost.

use std::collections::VecDeque;
use std::time::Duration;

use async_trait::async_trait;
use gatehouse_events::{StreamKind, StreamSpec};
use gatehouse_store::{JobTaker, QueueClaim, QueueMessage, QueuedDelivery, Store, Tx, Wake};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::bus::Settle;
use crate::{Bus, BusError, ConsumerSpec, Delivery, Outgoing, Published, Subscription, Take};

/// How often an idle subscription looks at the tables anyway, to see messages published by
/// another process on the same database.
const POLL: Duration = Duration::from_millis(250);
/// How often old events are pruned.
const PRUNE_EVERY: Duration = Duration::from_secs(3600);

/// A [`Bus`] on the store's tables, with JetStream's semantics: durable consumers, ack
/// deadlines, nak with delay, work-queue removal of acknowledged jobs, and duplicate
/// suppression by message id.
pub struct InProcessBus {
    store: Store,
    pruner: JoinHandle<()>,
}

impl InProcessBus {
    /// A bus on `store`. Starts a background task that drops events older than the events
    /// stream's `max_age`, as JetStream would.
    pub fn new(store: Store) -> Self {
        let max_age = StreamSpec::all(&Default::default())
            .into_iter()
            .find_map(|s| s.max_age);
        let pruner = tokio::spawn({
            let store = store.clone();
            async move {
                let Some(max_age) = max_age else { return };
                let mut every = tokio::time::interval(PRUNE_EVERY);
                loop {
                    every.tick().await;
                    match store.queue_prune(max_age).await {
                        Ok(0) => {}
                        Ok(n) => tracing::info!(pruned = n, "pruned old events from the bus"),
                        Err(err) => tracing::warn!(error = %err, "pruning old events failed"),
                    }
                }
            }
        });
        Self { store, pruner }
    }

    /// The bus on `store` for a process that runs every service on it (`gatehouse up`):
    /// on SQLite its transactions publish their events in place
    /// ([`Store::publish_in_place`]), so an event is taken as soon as its producer
    /// commits, with no relay between.
    pub fn in_place(store: Store) -> Self {
        if store.publish_in_place() {
            tracing::debug!("events are published in place, in their producers' transactions");
        }
        Self::new(store)
    }
}

impl Drop for InProcessBus {
    fn drop(&mut self) {
        self.pruner.abort();
    }
}

#[async_trait]
impl Bus for InProcessBus {
    async fn publish(&self, message: Outgoing<'_>) -> Result<Published, BusError> {
        let inserted = self
            .store
            .queue_publish(QueueMessage {
                id: message.id,
                topic: message.topic,
                payload: message.payload,
                traceparent: message.traceparent,
            })
            .await?;
        Ok(Published {
            duplicate: !inserted,
        })
    }

    async fn subscribe(&self, spec: &ConsumerSpec) -> Result<Box<dyn Subscription>, BusError> {
        spec.validate()?;
        self.store
            .queue_ensure_consumer(&spec.name, spec.stream(), &spec.filter)
            .await?;
        let wake = self.store.watch_consumer(&spec.name);
        let seen = wake.borrow().count;
        let jobs = (spec.take == Take::Leased)
            .then(|| self.store.hand_jobs_here(&spec.name, spec.ack_wait));
        Ok(Box::new(InProcessSubscription {
            store: self.store.clone(),
            spec: spec.clone(),
            jobs,
            wake,
            seen,
            newest: 0,
            taken: VecDeque::new(),
            drained: false,
        }))
    }
}

struct InProcessSubscription {
    store: Store,
    spec: ConsumerSpec,
    /// Leased: the jobs transactions lease to this subscription while it waits, handed
    /// over as they commit (see the store's `bus/job_takers.rs`).
    jobs: Option<JobTaker>,
    wake: watch::Receiver<Wake>,
    /// The count of the last wake-up seen.
    seen: u64,
    /// The position of the newest delivery handed out: a delivery handed over with a
    /// wake-up that is no newer was read by the look before (applied in transactions only).
    newest: i64,
    /// Due deliveries read with the one [`Subscription::next`] returned, for
    /// [`Subscription::ready`] (applied in transactions only).
    taken: VecDeque<QueuedDelivery>,
    /// The last look took fewer than it could (a batch read, or the limit leased):
    /// everything due then was taken.
    drained: bool,
}

#[async_trait]
impl Subscription for InProcessSubscription {
    async fn next(&mut self) -> Result<Delivery, BusError> {
        let mut taken = self.take(1).await?.into_iter();
        match taken.next() {
            Some(first) => Ok(first),
            // `take` returns only with something taken.
            None => Err(BusError::Closed(self.spec.name.clone())),
        }
    }

    async fn next_up_to(&mut self, limit: usize) -> Result<Vec<Delivery>, BusError> {
        self.take(limit).await
    }

    async fn ready(&mut self) -> Option<Delivery> {
        let next = self.taken.pop_front()?;
        Some(self.delivery(next))
    }
}

impl InProcessSubscription {
    /// Waits until something is due and takes it: leased, up to `limit` deliveries; or
    /// applied in transactions, the first of up to the batch read (the rest wait in
    /// `taken` for [`Subscription::ready`]).
    ///
    /// Each statement costs a round trip to the database's thread, so none is spent on
    /// an answer known already. A subscription tries to take at once when it was woken
    /// for its consumer's deliveries or was told something is due; otherwise (after a short
    /// batch, all of it taken, or a poll) it first asks when the next one is due. One
    /// that had taken everything due, woken with the deliveries committed since, takes
    /// those without looking (see the store's `bus/wakes.rs`).
    async fn take(&mut self, limit: usize) -> Result<Vec<Delivery>, BusError> {
        if let Some(handed) = self.take_handed(limit).await {
            return Ok(handed);
        }
        // Whatever the last batch left untaken is read again, as it may be settled now.
        let mut caught_up = self.drained && self.taken.is_empty();
        let mut try_now = !caught_up;
        self.taken.clear();
        loop {
            // Mark wake-ups seen before looking, so a publish between the look and the
            // wait is not missed.
            let wake = self.wake.borrow_and_update().clone();
            let next_after_seen = wake.count == self.seen.wrapping_add(1);
            self.seen = wake.count;
            if caught_up
                && next_after_seen
                && let Some(handed) = self.handed(&wake)
            {
                return Ok(handed);
            }
            if std::mem::take(&mut try_now) {
                let taken = self.try_take(limit).await?;
                if !taken.is_empty() {
                    return Ok(taken);
                }
                // Nothing was due at this look, made after the wake-up just seen.
                caught_up = true;
            }
            let wait = match self.store.queue_next_due(&self.spec.name).await? {
                // Due now: take it, unless another task of this consumer wins first.
                Some(Duration::ZERO) => {
                    try_now = true;
                    tokio::task::yield_now().await;
                    continue;
                }
                Some(due) => POLL.min(due),
                None => POLL,
            };
            // Jobs a commit leases to this subscription meanwhile are handed over.
            if let Some(jobs) = &self.jobs {
                jobs.wait_for(limit);
            }
            tokio::select! {
                _ = self.wake.changed() => try_now = true,
                _ = tokio::time::sleep(wait) => {}
                () = handed(&mut self.jobs) => {}
            }
            if let Some(jobs) = &self.jobs {
                jobs.wait_for(0);
            }
            if let Some(handed) = self.take_handed(limit).await {
                return Ok(handed);
            }
        }
    }

    /// The jobs handed to this subscription since it last took, if any.
    async fn take_handed(&mut self, limit: usize) -> Option<Vec<Delivery>> {
        let handed = self.jobs.as_mut()?.take_handed().await;
        if handed.is_empty() {
            return None;
        }
        // As many as it waited for: more may be due.
        self.drained = handed.len() < limit;
        Some(handed.into_iter().map(|d| self.delivery(d)).collect())
    }

    /// Takes what is due now, if anything: leases up to `limit`, or reads up to a batch
    /// (applied in transactions, which acknowledge what they apply) and hands out the first.
    async fn try_take(&mut self, limit: usize) -> Result<Vec<Delivery>, BusError> {
        let Take::InTransaction(batch) = self.spec.take else {
            let leased = self
                .store
                .queue_fetch_up_to(&self.spec.name, self.spec.ack_wait, limit)
                .await?;
            // The next take then asks when something is due (a read) before it leases
            // (a write, which on SQLite waits for the writer's turn and holds it): the job
            // just leased is about to begin its attempt, a write of its own.
            self.drained = leased.len() < limit;
            return Ok(leased.into_iter().map(|d| self.delivery(d)).collect());
        };
        let peeked = self.store.queue_peek(&self.spec.name, batch).await?;
        self.drained = peeked.len() < batch;
        Ok(self.hand_out(peeked))
    }

    /// The deliveries handed over with `wake` that this subscription has not read, if
    /// it applies in transactions and no other subscription took them.
    fn handed(&mut self, wake: &Wake) -> Option<Vec<Delivery>> {
        let Take::InTransaction(batch) = self.spec.take else {
            return None;
        };
        let handed: Vec<QueuedDelivery> = wake
            .take_handed()?
            .into_iter()
            .filter(|d| d.seq > self.newest)
            .collect();
        if handed.is_empty() {
            return None;
        }
        // More than a batch: the rest are read again at the next look.
        self.drained = handed.len() <= batch;
        Some(self.hand_out(handed))
    }

    /// Hands out the first of `batch` (oldest first); the rest wait in `taken` for
    /// [`Subscription::ready`].
    fn hand_out(&mut self, batch: Vec<QueuedDelivery>) -> Vec<Delivery> {
        if let Some(last) = batch.last() {
            self.newest = self.newest.max(last.seq);
        }
        self.taken = batch.into();
        self.taken
            .pop_front()
            .map(|first| self.delivery(first))
            .into_iter()
            .collect()
    }

    fn delivery(&self, d: QueuedDelivery) -> Delivery {
        let leased = self.spec.take == Take::Leased;
        Delivery {
            id: Some(d.id),
            topic: d.topic,
            payload: d.payload.into(),
            traceparent: d.traceparent,
            deliveries: u32::try_from(d.deliveries).unwrap_or(u32::MAX),
            settle: Box::new(Lease {
                store: self.store.clone(),
                consumer: self.spec.name.clone(),
                stream: self.spec.stream(),
                ack_wait: self.spec.ack_wait,
                seq: d.seq,
                // A leased delivery's count was raised by the fetch; a peeked one's count
                // is raised by its nak.
                token: if leased {
                    d.deliveries
                } else {
                    d.deliveries - 1
                },
                leased,
            }),
        }
    }
}

/// Waits until a job is handed to `jobs`, if it takes jobs; else forever.
async fn handed(jobs: &mut Option<JobTaker>) {
    match jobs {
        Some(jobs) => jobs.handed().await,
        None => std::future::pending().await,
    }
}

/// One delivery's settlement; the delivery count stored is the token that says it is
/// still this receiver's to settle.
struct Lease {
    store: Store,
    consumer: String,
    /// Where the message is: a job's is deleted with its last acknowledgement.
    stream: StreamKind,
    ack_wait: Duration,
    seq: i64,
    token: i32,
    /// Leased until its ack deadline ([`Take::Leased`]), or only read
    /// ([`Take::InTransaction`]).
    leased: bool,
}

impl Lease {
    fn report_lost(&self, held: bool, action: &str) {
        if !held {
            tracing::debug!(consumer = %self.consumer, seq = self.seq, action,
                "settled by another receiver (a redelivery); ignored");
        }
    }
}

#[async_trait]
impl Settle for Lease {
    async fn ack_within(&self, tx: &mut Tx) -> Result<bool, BusError> {
        if !tx.store().is(&self.store) {
            return Ok(false);
        }
        let held = tx
            .queue_ack(&self.consumer, self.stream, self.seq, self.token)
            .await?;
        self.report_lost(held, "ack");
        Ok(true)
    }

    fn claim_in(&self, tx: &Tx) -> Option<QueueClaim> {
        (self.stream == StreamKind::Events && tx.store().is(&self.store)).then_some(QueueClaim {
            seq: self.seq,
            deliveries: self.token,
        })
    }

    async fn ack(&self) -> Result<(), BusError> {
        let held = self
            .store
            .queue_ack(&self.consumer, self.stream, self.seq, self.token)
            .await?;
        self.report_lost(held, "ack");
        Ok(())
    }

    async fn nak(&self, delay: Duration) -> Result<(), BusError> {
        // A lease's fetch counted the delivery; a look did not, so its nak does.
        let held = self
            .store
            .queue_nak(&self.consumer, self.seq, self.token, delay, !self.leased)
            .await?;
        self.report_lost(held, "nak");
        Ok(())
    }

    async fn in_progress(&self) -> Result<(), BusError> {
        // Nothing to extend on a delivery only read.
        if !self.leased {
            return Ok(());
        }
        let held = self
            .store
            .queue_defer(&self.consumer, self.seq, self.token, self.ack_wait)
            .await?;
        self.report_lost(held, "in_progress");
        Ok(())
    }

    async fn term(&self) -> Result<(), BusError> {
        self.ack().await
    }
}
