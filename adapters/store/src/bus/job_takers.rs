//! Handing a job to an idle subscription of this process in the commit that queues it.
//!
//! A job queued on the in-process bus waits for a subscription to lease it: after the
//! commit that queued it, a write of its own (on SQLite, the writer's turn and a round trip
//! to its thread) before the runner can begin the attempt. But a subscription waiting for
//! jobs in this process says how many it wants, and the transaction that queues a job knows
//! it. So, where transactions publish in place (`gatehouse up`), the transaction writes the
//! job's delivery already leased (delivered once, for the consumer's ack wait) and, once it
//! has committed, hands it to that subscription in memory.
//!
//! Nothing is lost if the hand-over fails. The delivery is leased, as if the subscription
//! had leased it: if the process dies first, the lease runs out and the job comes again. A
//! subscription that went away gives back what was handed to it, as does a transaction
//! whose subscription is gone, so those come again at once; one handed over so long ago
//! that its lease is nearly out is given back rather than run.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::mpsc;

use super::messages::QueuedDelivery;
use super::waiting::{Fanned, HandedJob, Idle};
use crate::clock::{duration_ms, now_ms};
use crate::store::Store;

/// How long before its lease runs out a job handed over is given back instead of run: by
/// then it may come again to anyone, and its runner's first renewal could come too late.
const STALE_MARGIN: Duration = Duration::from_secs(1);

/// A subscription's end of the hand-over: the jobs this process's transactions leased to
/// it. Dropping it gives back what it was handed and did not take.
pub struct JobTaker {
    id: u64,
    consumer: String,
    receiver: mpsc::UnboundedReceiver<HandedJob>,
    /// Received by [`JobTaker::handed`], not taken yet.
    received: Vec<HandedJob>,
    store: Store,
}

impl Store {
    /// Leases what of `deliveries` a subscription of this process waits for to it.
    pub(crate) fn lease_to_idle(&self, deliveries: &mut [Fanned]) {
        self.idle_takers.lease(deliveries);
    }

    /// Registers a subscription of `consumer` that leases its jobs for `ack_wait`: while
    /// it waits ([`JobTaker::wait_for`]), transactions of this store lease the jobs they
    /// queue for it to it, and hand them over when they commit.
    pub fn hand_jobs_here(&self, consumer: &str, ack_wait: Duration) -> JobTaker {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        let (sender, receiver) = mpsc::unbounded_channel();
        self.idle_takers
            .lock()
            .entry(consumer.to_owned())
            .or_default()
            .push(Idle {
                id,
                want: 0,
                ack_wait,
                sender,
            });
        JobTaker {
            id,
            consumer: consumer.to_owned(),
            receiver,
            received: Vec::new(),
            store: self.clone(),
        }
    }

    /// Gives back deliveries leased to a subscription that will not take them, so they
    /// come again at once.
    pub(crate) async fn give_back_jobs(&self, consumer: &str, deliveries: Vec<QueuedDelivery>) {
        for d in deliveries {
            if let Err(e) = self
                .queue_nak(consumer, d.seq, d.deliveries, Duration::ZERO, false)
                .await
            {
                tracing::warn!(error = %e, consumer, seq = d.seq,
                    "giving back a job handed over failed; it comes again when its lease runs out");
            }
        }
    }
}

impl JobTaker {
    /// Waits for up to `want` jobs (zero: none) from the transactions that queue them.
    pub fn wait_for(&self, want: usize) {
        self.store
            .idle_takers
            .set_want(&self.consumer, self.id, want);
    }

    /// The jobs handed over and not taken yet, oldest first, without waiting. One whose
    /// lease is nearly out is given back instead: by then it may come again to anyone.
    pub async fn take_handed(&mut self) -> Vec<QueuedDelivery> {
        let (fresh, stale): (Vec<HandedJob>, Vec<HandedJob>) = self
            .drain()
            .into_iter()
            .partition(|h| now_ms() < h.lease_until_ms.saturating_sub(duration_ms(STALE_MARGIN)));
        if !stale.is_empty() {
            let stale = stale.into_iter().map(|h| h.delivery).collect();
            self.store.give_back_jobs(&self.consumer, stale).await;
        }
        fresh.into_iter().map(|h| h.delivery).collect()
    }

    /// Everything handed over and not taken yet, oldest first.
    fn drain(&mut self) -> Vec<HandedJob> {
        let mut handed = std::mem::take(&mut self.received);
        while let Ok(h) = self.receiver.try_recv() {
            handed.push(h);
        }
        handed
    }

    /// Waits until a job is handed over (then [`JobTaker::take_handed`] has it). Safe to
    /// cancel: a job received is kept for the next take.
    pub async fn handed(&mut self) {
        match self.receiver.recv().await {
            Some(h) => self.received.push(h),
            // The registration is gone only when this is dropped.
            None => std::future::pending().await,
        }
    }
}

impl Drop for JobTaker {
    fn drop(&mut self) {
        if let Some(takers) = self.store.idle_takers.lock().get_mut(&self.consumer) {
            takers.retain(|t| t.id != self.id);
        }
        self.receiver.close();
        let waiting: Vec<QueuedDelivery> = self.drain().into_iter().map(|h| h.delivery).collect();
        if waiting.is_empty() {
            return;
        }
        // Given back from a task: dropping cannot wait for it. Without a runtime the
        // leases run out instead.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let (store, consumer) = (self.store.clone(), self.consumer.clone());
            runtime.spawn(async move { store.give_back_jobs(&consumer, waiting).await });
        }
    }
}
