//! The outbox relay: publishes what services wrote to the outbox, in order, at least once.

use std::sync::Arc;
use std::time::Duration;

use gatehouse_store::{OutboxMessage, Store};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::{Bus, BusError, Outgoing};

/// Tuning for a [`Relay`].
#[derive(Debug, Clone)]
pub struct RelayOptions {
    /// Rows claimed per round.
    pub batch: i64,
    /// How long a claim is held; a relay that dies releases its rows when this runs out.
    pub lease: Duration,
    /// How often to look for rows written by other processes.
    pub poll: Duration,
    /// Delay before a row whose publish failed is tried again.
    pub retry_delay: Duration,
    /// Sent rows are kept this long for inspection, then deleted.
    pub keep_sent: Duration,
}

impl Default for RelayOptions {
    fn default() -> Self {
        Self {
            batch: 128,
            lease: Duration::from_secs(30),
            poll: Duration::from_millis(500),
            retry_delay: Duration::from_secs(1),
            keep_sent: Duration::from_secs(24 * 3600),
        }
    }
}

/// Moves outbox rows onto the bus. Any number may run against one database: claims are
/// leased, so each row is normally published by one relay; a duplicate after a crash is
/// dropped by the bus (same message id) or by the consumer's inbox.
pub struct Relay {
    store: Store,
    bus: Arc<dyn Bus>,
    options: RelayOptions,
}

impl Relay {
    /// A relay from `store`'s outbox to `bus`.
    pub fn new(store: Store, bus: Arc<dyn Bus>, options: RelayOptions) -> Self {
        Self {
            store,
            bus,
            options,
        }
    }

    /// Claims one batch and publishes it ([`Relay::publish`]). Returns how many rows were
    /// published.
    pub async fn relay_once(&self) -> Result<usize, BusError> {
        let batch = self
            .store
            .claim_outbox(self.options.batch, self.options.lease)
            .await?;
        self.publish(&batch).await
    }

    /// Publishes claimed or handed rows in order, pipelined ([`Bus::publish_all`]), and
    /// marks them sent. Stops at the first failure, giving that row and the rest of the
    /// batch back for a later round, so order is kept.
    async fn publish(&self, batch: &[OutboxMessage]) -> Result<usize, BusError> {
        if batch.is_empty() {
            return Ok(0);
        }
        let outgoing: Vec<Outgoing<'_>> = batch
            .iter()
            .map(|row| Outgoing {
                id: row.id,
                topic: &row.topic,
                payload: &row.payload,
                traceparent: row.traceparent.as_deref(),
            })
            .collect();
        let mut sent = Vec::with_capacity(batch.len());
        let mut failure = None;
        for (row, published) in batch.iter().zip(self.bus.publish_all(&outgoing).await) {
            match published {
                Ok(published) => {
                    if !published.duplicate {
                        // The outbox topic is the event type: a small fixed set.
                        metrics::counter!("gatehouse_events_published_total", "type" => row.topic.clone())
                            .increment(1);
                    }
                    sent.push(row.seq);
                }
                Err(err) => {
                    failure = Some(err);
                    break;
                }
            }
        }
        // A crash before this line republishes the batch; the bus drops the repeats by
        // message id and consumers' inboxes catch any that get through.
        self.store.mark_outbox_sent(&sent).await?;
        if sent.len() < batch.len() {
            let error = failure.as_ref().map(ToString::to_string);
            let unsent = &batch[sent.len()..];
            for (n, row) in unsent.iter().enumerate() {
                let reason = if n == 0 { error.as_deref() } else { None };
                self.store
                    .release_outbox(row.seq, reason, self.options.retry_delay)
                    .await?;
            }
        }
        match failure {
            Some(err) => Err(err),
            None => Ok(sent.len()),
        }
    }

    /// Relays until `shutdown` is cancelled: what this process's transactions hand over
    /// as they commit (see [`Store::hand_outbox_here`]), at once; and by claiming, every
    /// `poll`, what other processes wrote (or this one, with no relay to hand it to).
    /// Failures are logged and retried; they never end the loop.
    pub async fn run(self, shutdown: CancellationToken) {
        let mut handover = self.store.hand_outbox_here();
        let mut written = self.store.watch_outbox();
        let mut prune =
            tokio::time::interval(self.options.keep_sent.min(Duration::from_secs(3600)));
        // When to claim next; after a failure, not before the retry delay.
        let mut look_at = Instant::now();
        let mut backing_off = false;
        loop {
            if Instant::now() >= look_at {
                written.borrow_and_update();
                let claimed = self.relay_once().await;
                backing_off = claimed.is_err();
                look_at = match claimed {
                    Ok(n) if n as i64 >= self.options.batch => Instant::now(),
                    Ok(_) => Instant::now() + self.options.poll,
                    Err(err) => self.failed(&err),
                };
            }
            tokio::select! {
                _ = shutdown.cancelled() => break,
                Some(rows) = handover.recv() => {
                    if let Err(err) = self.publish(&rows).await {
                        look_at = look_at.min(self.failed(&err));
                    }
                }
                _ = written.changed(), if !backing_off => look_at = Instant::now(),
                _ = tokio::time::sleep_until(look_at) => {}
                _ = prune.tick() => {
                    if let Err(err) = self.store.prune_outbox(self.options.keep_sent).await {
                        tracing::warn!(error = %err, "pruning sent outbox rows failed");
                    }
                }
            }
        }
        handover.close().await;
    }

    /// Logs a failed round; returns when to claim again.
    fn failed(&self, err: &BusError) -> Instant {
        tracing::warn!(error = %err, retry_in = ?self.options.retry_delay,
            "publishing from the outbox failed");
        Instant::now() + self.options.retry_delay
    }
}
