//! Handing a transaction's outbox rows to its own process's relay.
//!
//! Without this, an event a transaction wrote to the outbox waits for a relay to claim it:
//! a read to find it, then a write (on Postgres, a commit and a flush of the log) to lease
//! it, before the publish and the mark-sent. But the process that wrote the rows has a
//! relay of its own, and it knows exactly which rows it just committed. So a transaction
//! writes its rows already leased to that relay, for a short while ([`HANDOVER_LEASE`]),
//! and after the commit hands them over in memory: the relay publishes them at once and
//! marks them sent, one statement instead of three.
//!
//! Nothing is lost if the hand-over fails. A row is leased, not taken: if the process dies
//! before its relay marks the row sent, the lease runs out and any relay claims the row, as
//! it would have claimed it anyway. A relay that is gone, or too far behind, gives the rows
//! back instead (the lease is cleared), so they are claimed at once.

use std::time::Duration;

use tokio::sync::mpsc;

use super::messages::OutboxMessage;
use super::waiting::{HandedRows, Registration};
use crate::clock::now_ms;
use crate::error::StoreError;
use crate::store::Store;

/// How long rows handed to this process's relay stay leased to it. Long enough that the
/// relay is never racing the lease (it publishes within milliseconds), short enough that
/// the events of a process killed in between go out soon after, from another relay or from
/// this one restarted.
pub(crate) const HANDOVER_LEASE: Duration = Duration::from_secs(5);

/// Batches waiting for the relay at most; beyond that it is far behind (the bus is down,
/// say) and further rows are given back to be claimed when it catches up.
const WAITING_BATCHES: usize = 1024;

/// A relay's end of the hand-over: the rows this process's transactions committed for it.
/// Dropping it stops the hand-over; rows waiting in it are claimed once their lease runs out
/// ([`Handover::close`] gives them back at once).
pub struct Handover {
    id: u64,
    receiver: mpsc::Receiver<HandedRows>,
    store: Store,
}

impl Store {
    /// Makes the caller this process's relay: from now on, transactions of this store (and
    /// of its clones) lease the outbox rows they write to it and hand them over when they
    /// commit. The relay registered last takes them.
    pub fn hand_outbox_here(&self) -> Handover {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (sender, receiver) = mpsc::channel(WAITING_BATCHES);
        *self.relay_here.lock() = Some(Registration { id, sender });
        Handover {
            id,
            receiver,
            store: self.clone(),
        }
    }

    /// Hands rows committed by a transaction to the relay they were leased to; if it is
    /// gone or too far behind, gives them back to be claimed. Called after the commit, so a
    /// failure here is only logged: the rows are safe in the outbox either way.
    pub(crate) async fn hand_over(&self, taker: Registration, handed: HandedRows) {
        let Err(refused) = taker.sender.try_send(handed) else {
            return;
        };
        let rows = match refused {
            mpsc::error::TrySendError::Full(handed) | mpsc::error::TrySendError::Closed(handed) => {
                handed.rows
            }
        };
        if let Err(e) = self.give_back_outbox(&rows).await {
            tracing::warn!(error = %e, rows = rows.len(),
                "giving back outbox rows the relay did not take failed; they go out when their lease runs out");
        }
        // The relay may be polling rather than gone: tell it there is something to claim.
        self.wake_relay();
    }

    /// Gives back rows handed to a relay that did not publish them, as a relay gives back
    /// rows it did not try ([`Store::release_outbox`]), so that any relay claims them at
    /// once. Rare: the relay stopped, or fell far behind.
    async fn give_back_outbox(&self, rows: &[OutboxMessage]) -> Result<(), StoreError> {
        for row in rows {
            self.release_outbox(row.seq, None, Duration::ZERO).await?;
        }
        Ok(())
    }
}

impl Handover {
    /// The next rows handed over, oldest first; `None` once the store has another relay.
    /// Rows whose lease is about to run out are skipped: by then another relay may claim
    /// them, and publishing them here too would only be a duplicate for the bus to drop.
    pub async fn recv(&mut self) -> Option<Vec<OutboxMessage>> {
        loop {
            let handed = self.receiver.recv().await?;
            let margin = crate::clock::duration_ms(HANDOVER_LEASE) / 5;
            if now_ms() < handed.lease_until_ms.saturating_sub(margin) {
                return Some(handed.rows);
            }
        }
    }

    /// Stops the hand-over and gives back the rows still waiting, so they are claimed at
    /// once rather than after their lease; for a relay shutting down.
    pub async fn close(mut self) {
        self.unregister();
        self.receiver.close();
        let mut waiting = Vec::new();
        while let Ok(handed) = self.receiver.try_recv() {
            waiting.extend(handed.rows);
        }
        if let Err(e) = self.store.give_back_outbox(&waiting).await {
            tracing::warn!(error = %e, rows = waiting.len(),
                "giving back outbox rows at shutdown failed; they go out when their lease runs out");
        }
    }

    fn unregister(&self) {
        let mut here = self.store.relay_here.lock();
        if here.as_ref().is_some_and(|r| r.id == self.id) {
            *here = None;
        }
    }
}

impl Drop for Handover {
    fn drop(&mut self) {
        self.unregister();
    }
}
