//! Settling a job, whichever kind of work it is: its lease kept alive while it is handled,
//! then acknowledged once its result is recorded, handed back when recording failed, or
//! parked as a dead letter when it cannot be read.

use std::convert::Infallible;
use std::future::Future;
use std::time::Duration;

use gatehouse_bus::{Delivery, HandlerError, Outcome, count_handled};
use gatehouse_store::NewDeadLetter;

use crate::runner::Runner;
use crate::work::Reported;

impl Runner {
    /// Runs `work` while renewing `delivery`'s lease.
    pub(super) async fn leased<T>(&self, delivery: &Delivery, work: impl Future<Output = T>) -> T {
        tokio::select! {
            result = work => result,
            never = self.keep_lease(delivery) => match never {},
        }
    }

    /// Renews `delivery`'s lease every third of it, for as long as it is polled.
    pub(super) async fn keep_lease(&self, delivery: &Delivery) -> Infallible {
        let mut every = tokio::time::interval(self.options.ack_wait / 3);
        every.tick().await;
        loop {
            every.tick().await;
            if let Err(err) = delivery.in_progress().await {
                tracing::warn!(error = %err, "renewing a job's lease failed");
            }
        }
    }

    /// Settles a job of `consumer` by what handling it gave: acknowledged once its result
    /// is recorded (unless that did already), handed back to come again when recording
    /// failed.
    pub(super) async fn settled(
        &self,
        consumer: &'static str,
        delivery: Delivery,
        result: Result<Reported, HandlerError>,
    ) {
        match result {
            Ok(Reported { first, acked }) => {
                let outcome = if first {
                    Outcome::Applied
                } else {
                    Outcome::Duplicate
                };
                count_handled(consumer, Some(&outcome));
                if !acked && let Err(err) = delivery.ack().await {
                    tracing::warn!(error = %err, "acknowledging a job failed; it will be reported as interrupted");
                }
            }
            Err(err) => {
                count_handled(consumer, None);
                tracing::warn!(error = %err, "recording a job failed; it will come back");
                let _ = delivery.nak(Duration::from_secs(1)).await;
            }
        }
    }

    /// Parks a job of `consumer` that cannot be read as a dead letter.
    pub(super) async fn park(&self, consumer: &'static str, delivery: Delivery, reason: String) {
        tracing::error!(%reason, "parking an unreadable job");
        let parked = self
            .store
            .park_dead_letter(NewDeadLetter {
                consumer,
                event_id: delivery.id,
                topic: &delivery.topic,
                payload: &delivery.payload,
                reason: &reason,
                deliveries: delivery.deliveries,
            })
            .await;
        if parked.is_ok() {
            count_handled(consumer, Some(&Outcome::DeadLettered { reason }));
            let _ = delivery.term().await;
        } else {
            count_handled(consumer, None);
        }
    }
}
