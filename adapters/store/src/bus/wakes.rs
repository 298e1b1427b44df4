//! Waking a consumer's subscriptions in this process when messages are committed for it,
//! and handing them what was committed.
//!
//! A woken subscription would read its due deliveries back from the tables: on SQLite a
//! round trip to a connection's thread, often a cold one, on the way to every event a
//! service applies. Where transactions publish in place (`gatehouse up`: one process, one
//! writer, so a message's position in the log is its commit order), the wake-up carries
//! the deliveries themselves. A subscription that had read everything due before takes
//! them instead of looking (see the in-process bus): they are all that was committed for
//! it since, as long as it saw the wake-up before this one.

use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use super::messages::QueuedDelivery;
use super::waiting::{Wake, Woken};
use crate::store::Store;

impl Store {
    /// A receiver that changes whenever this process commits messages for `consumer` on
    /// the in-process bus's tables, or gives one of its deliveries back.
    pub fn watch_consumer(&self, consumer: &str) -> watch::Receiver<Wake> {
        let mut wakers = self.queue_wakers.lock().unwrap_or_else(|p| p.into_inner());
        wakers
            .entry(consumer.to_owned())
            .or_insert_with(|| watch::channel(Wake::default()).0)
            .subscribe()
    }

    /// Wakes the subscriptions of `consumers` in this process, handing each consumer's
    /// the deliveries committed for it (those a transaction records only where it
    /// publishes in place).
    pub(crate) fn wake_consumers(&self, woken: Woken) {
        for (consumer, deliveries) in woken {
            self.wake(&consumer, (!deliveries.is_empty()).then_some(deliveries));
        }
    }

    /// Wakes the subscriptions of `consumer` in this process with nothing handed: they
    /// look at the tables.
    pub(crate) fn wake_consumer(&self, consumer: &str) {
        self.wake(consumer, None);
    }

    fn wake(&self, consumer: &str, handed: Option<Vec<QueuedDelivery>>) {
        let wakers = self.queue_wakers.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(waker) = wakers.get(consumer) {
            // Nothing is kept for a consumer with no subscription here to take it.
            let handed = handed.filter(|_| waker.receiver_count() > 0);
            waker.send_modify(|wake| {
                wake.count = wake.count.wrapping_add(1);
                wake.handed = Arc::new(Mutex::new(handed));
            });
        }
    }
}
