//! Who in this process waits for what its transactions commit: its relay (outbox rows,
//! see `handover.rs`), its subscriptions idle for jobs (`job_takers.rs`) and its consumers'
//! subscriptions (`wakes.rs`). The store keeps these for every clone of it; a transaction
//! fills them only once it has committed ([`crate::Tx::commit`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;
use uuid::Uuid;

use super::messages::{OutboxMessage, QueuedDelivery};
use crate::clock::{duration_ms, now_ms};

/// Rows one transaction committed, leased to the relay until `lease_until_ms`.
#[derive(Debug)]
pub(crate) struct HandedRows {
    pub(crate) rows: Vec<OutboxMessage>,
    pub(crate) lease_until_ms: i64,
}

/// Where this process's relay takes its rows: at most one, the one registered last.
#[derive(Clone, Default)]
pub(crate) struct RelayHere(Arc<Mutex<Option<Registration>>>);

#[derive(Clone)]
pub(crate) struct Registration {
    pub(crate) id: u64,
    pub(crate) sender: mpsc::Sender<HandedRows>,
}

impl RelayHere {
    /// The relay to lease this transaction's rows to, if there is one.
    pub(crate) fn taker(&self) -> Option<Registration> {
        self.lock().clone()
    }

    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, Option<Registration>> {
        // A panic while holding this lock leaves a plain Option behind: still usable.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Subscriptions of this process waiting for jobs, by consumer.
#[derive(Clone, Default)]
pub(crate) struct IdleTakers(Arc<Mutex<HashMap<String, Vec<Idle>>>>);

pub(crate) struct Idle {
    pub(crate) id: u64,
    /// Jobs it takes now: the free slots it asked for, less those reserved since.
    pub(crate) want: usize,
    pub(crate) ack_wait: Duration,
    pub(crate) sender: mpsc::UnboundedSender<HandedJob>,
}

/// A delivery leased to a subscription by the transaction that queued it.
#[derive(Debug)]
pub(crate) struct HandedJob {
    pub(crate) consumer: String,
    pub(crate) delivery: QueuedDelivery,
    pub(crate) lease_until_ms: i64,
}

impl IdleTakers {
    /// Leases each of `deliveries`, oldest first, to a subscription waiting for its
    /// consumer's jobs, as many as each wants; none is wanted by it again.
    pub(crate) fn lease(&self, deliveries: &mut [Fanned]) {
        let mut idle = self.lock();
        if idle
            .values()
            .all(|takers| takers.iter().all(|t| t.want == 0))
        {
            return;
        }
        for d in deliveries {
            let Some(taker) = idle
                .get_mut(&d.consumer)
                .and_then(|takers| takers.iter_mut().find(|t| t.want > 0))
            else {
                continue;
            };
            taker.want -= 1;
            d.leased = Some(LeasedTo {
                sender: taker.sender.clone(),
                lease_until_ms: now_ms().saturating_add(duration_ms(taker.ack_wait)),
            });
        }
    }

    pub(crate) fn set_want(&self, consumer: &str, id: u64, want: usize) {
        if let Some(taker) = self
            .lock()
            .get_mut(consumer)
            .and_then(|takers| takers.iter_mut().find(|t| t.id == id))
        {
            taker.want = want;
        }
    }

    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<Idle>>> {
        // A panic while holding this lock leaves a plain map behind: still usable.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A delivery being written: due at once, or leased to a subscription of this process
/// waiting for it (see `job_takers.rs`).
pub(crate) struct Fanned {
    pub(crate) consumer: String,
    pub(crate) seq: i64,
    pub(crate) id: Uuid,
    pub(crate) leased: Option<LeasedTo>,
}

/// The subscription a delivery is leased to, and until when.
pub(crate) struct LeasedTo {
    pub(crate) sender: mpsc::UnboundedSender<HandedJob>,
    pub(crate) lease_until_ms: i64,
}

/// What a consumer's subscriptions are woken with.
#[derive(Clone, Default)]
pub struct Wake {
    /// Wake-ups so far. One more than a subscription saw last means the deliveries
    /// handed with it are everything committed for its consumer in between.
    pub count: u64,
    /// The deliveries committed with this wake-up, oldest first, for the first
    /// subscription that takes them; none with a wake-up that hands nothing (a delivery
    /// given back, a store that does not publish in place).
    pub(crate) handed: Arc<Mutex<Option<Vec<QueuedDelivery>>>>,
}

impl Wake {
    /// The deliveries handed with this wake-up, unless another subscription took them.
    pub fn take_handed(&self) -> Option<Vec<QueuedDelivery>> {
        self.handed.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// Per consumer, the deliveries a transaction committed for it: its subscriptions are
/// woken with them once it has committed. Recorded only where transactions publish in
/// place; elsewhere each consumer given messages has none, and is only woken.
pub(crate) type Woken = HashMap<String, Vec<QueuedDelivery>>;
