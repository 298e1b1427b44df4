//! Applying events exactly once in effect: each delivery claimed in the transaction that
//! applies it (the inbox, or on the in-process bus its delivery row), retries with backoff,
//! and dead letters for poison messages.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use gatehouse_events::Envelope;
use gatehouse_store::{NewDeadLetter, QueueClaim, Store, Tx};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::observe::{count_handled, count_received, event_span};
use crate::{Bus, BusError, ConsumerSpec, Delivery, Take};

/// What a handler reports when it cannot apply an event.
pub type HandlerError = Box<dyn std::error::Error + Send + Sync>;

/// A service's reaction to one event.
#[async_trait]
pub trait Handler: Send + Sync {
    /// Applies `event` inside `tx`: state changes and emitted events ([`Tx::append_outbox`])
    /// go in this transaction, which commits together with the event's claim. An error rolls
    /// everything back and the event is retried.
    async fn handle(&self, tx: &mut Tx, event: &Envelope) -> Result<(), HandlerError>;

    /// Called once `event`'s transaction has committed: the place to wake whoever acts on
    /// what it wrote, which before the commit would find nothing yet.
    async fn committed(&self, _event: &Envelope) {}
}

/// How a delivery was claimed in the transaction that applies it.
#[derive(Debug, Clone, Copy)]
struct Claimed {
    /// Not applied before: apply it.
    fresh: bool,
    /// Acknowledged in the transaction; otherwise acknowledged after it commits.
    acked: bool,
}

/// Tuning for a [`Consumer`].
#[derive(Debug, Clone)]
pub struct ConsumerOptions {
    pub spec: ConsumerSpec,
    /// Deliveries after which a failing event is parked as a dead letter.
    pub max_deliveries: u32,
    /// Delay before the first retry; doubles per delivery up to `max_retry_delay`.
    pub retry_delay: Duration,
    /// Longest delay between retries.
    pub max_retry_delay: Duration,
    /// Events applied in one transaction when several are waiting (group commit): one
    /// durable commit for them all, each with its inbox row, acknowledged after it. 1
    /// applies each alone. Only for handlers whose every effect is in the transaction: a
    /// failing event rolls the batch back, and each is then applied alone.
    pub batch: usize,
    /// How long a woken consumer waits before it applies what woke it: for one whose
    /// effects nobody waits for (status text, snapshots), so its commit steps aside from
    /// the ones that start work (and on JetStream, which pulls ahead meanwhile, more
    /// events share it). Zero applies at once.
    pub linger: Duration,
}

impl ConsumerOptions {
    /// Five deliveries, retried after 1 s, 2 s, 4 s, 8 s; one at a time, at once.
    pub fn new(spec: ConsumerSpec) -> Self {
        Self {
            spec,
            max_deliveries: 5,
            retry_delay: Duration::from_secs(1),
            max_retry_delay: Duration::from_secs(60),
            batch: 1,
            linger: Duration::ZERO,
        }
    }

    fn backoff(&self, deliveries: u32) -> Duration {
        let doublings = deliveries.saturating_sub(1).min(16);
        self.retry_delay
            .saturating_mul(1 << doublings)
            .min(self.max_retry_delay)
    }
}

/// What happened to one delivery; returned for logs, metrics and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The handler applied it and the transaction committed.
    Applied,
    /// The inbox had it already: a redelivery or duplicate, acknowledged without effect.
    Duplicate,
    /// The handler failed; it comes back after `retry_in`.
    Retrying { retry_in: Duration },
    /// Parked in the dead-letter table with this reason.
    DeadLettered { reason: String },
}

/// Runs a [`Handler`] over a durable consumer.
pub struct Consumer {
    bus: Arc<dyn Bus>,
    store: Store,
    options: ConsumerOptions,
}

impl Consumer {
    /// A consumer reading from `bus` and recording into `store`. It acknowledges every
    /// delivery in the transaction that applies it, so it takes them as
    /// [`Take::InTransaction`], up to its batch at a time.
    pub fn new(bus: Arc<dyn Bus>, store: Store, mut options: ConsumerOptions) -> Self {
        options.spec.take = Take::InTransaction(options.batch.max(1));
        Self {
            bus,
            store,
            options,
        }
    }

    /// Subscribes and processes deliveries until `shutdown` is cancelled. A delivery in
    /// flight at shutdown is finished first; those pulled ahead of it are handed back. Errors talking to the bus or the store are
    /// logged and retried (a lost subscription is re-established); they never end the loop.
    pub async fn run(&self, handler: &dyn Handler, shutdown: CancellationToken) {
        let name = &self.options.spec.name;
        loop {
            let subscribed = tokio::select! {
                _ = shutdown.cancelled() => return,
                s = self.bus.subscribe(&self.options.spec) => s,
            };
            match subscribed {
                Ok(mut subscription) => loop {
                    let delivery = tokio::select! {
                        _ = shutdown.cancelled() => {
                            subscription.hand_back().await;
                            return;
                        }
                        d = subscription.next() => d,
                    };
                    match delivery {
                        Ok(delivery) => {
                            if !self.options.linger.is_zero() {
                                tokio::time::sleep(self.options.linger).await;
                            }
                            let mut batch = vec![delivery];
                            while batch.len() < self.options.batch {
                                match subscription.ready().await {
                                    Some(next) => batch.push(next),
                                    None => break,
                                }
                            }
                            // `process` logs its errors, in the delivery's span.
                            let _ = self.process_all(handler, batch).await;
                        }
                        Err(err) => {
                            tracing::warn!(consumer = %name, error = %err,
                                "receiving failed; subscribing again");
                            break;
                        }
                    }
                },
                Err(err) => {
                    tracing::warn!(consumer = %name, error = %err, "subscribing failed; retrying");
                }
            }
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(self.options.retry_delay) => {}
            }
        }
    }

    /// Processes deliveries that were waiting together: in one transaction when there are
    /// several and all decode and apply, else each alone ([`Consumer::process`]). The
    /// outcome of each, in order.
    pub async fn process_all(
        &self,
        handler: &dyn Handler,
        deliveries: Vec<Delivery>,
    ) -> Vec<Result<Outcome, BusError>> {
        let decoded: Option<Vec<Envelope>> = (deliveries.len() > 1)
            .then(|| {
                deliveries
                    .iter()
                    .map(|d| Envelope::from_slice(&d.payload).ok())
                    .collect()
            })
            .flatten();
        let applied = match &decoded {
            Some(envelopes) => self.apply_together(handler, &deliveries, envelopes).await,
            None => Ok(None),
        };
        let (Ok(Some(claimed)), Some(envelopes)) = (applied, decoded) else {
            // One delivery, or something did not decode or apply: each on its own, with
            // its own retries.
            let mut outcomes = Vec::with_capacity(deliveries.len());
            for delivery in deliveries {
                outcomes.push(self.process(handler, delivery).await);
            }
            return outcomes;
        };
        let name = self.options.spec.name.as_str();
        let mut acks = Vec::with_capacity(deliveries.len());
        for ((delivery, envelope), Claimed { fresh, acked }) in
            deliveries.into_iter().zip(&envelopes).zip(claimed)
        {
            count_received(name, &delivery);
            let outcome = if fresh {
                handler.committed(envelope).await;
                Outcome::Applied
            } else {
                Outcome::Duplicate
            };
            count_handled(name, Some(&outcome));
            acks.push(async move {
                if !acked {
                    delivery.ack().await?;
                }
                Ok(outcome)
            });
        }
        // The batch is committed: its acknowledgements go out together, not one round
        // trip after another.
        futures::future::join_all(acks).await
    }

    /// Applies `envelopes` in one transaction, each claimed once ([`Consumer::claim`]); for
    /// each, whether it was new (a repeat is not applied) and whether its delivery was
    /// acknowledged in the transaction. `None`: one failed, and nothing was kept.
    async fn apply_together(
        &self,
        handler: &dyn Handler,
        deliveries: &[Delivery],
        envelopes: &[Envelope],
    ) -> Result<Option<Vec<Claimed>>, BusError> {
        let name = self.options.spec.name.as_str();
        let mut tx = self.store.begin().await?;
        let claimed = self.claim(&mut tx, deliveries, envelopes).await?;
        for ((delivery, envelope), claimed) in deliveries.iter().zip(envelopes).zip(&claimed) {
            // Each in its own event's span, as alone: its trace id and run in the logs.
            let span = event_span(name, delivery, Some(envelope));
            if claimed.fresh
                && let Err(err) = handler.handle(&mut tx, envelope).instrument(span).await
            {
                tracing::debug!(consumer = %self.options.spec.name, id = %envelope.id,
                    error = %err, "an event of a batch failed; applying each alone");
                tx.rollback().await?;
                return Ok(None);
            }
        }
        tx.commit().await?;
        Ok(Some(claimed))
    }

    /// Makes sure each of `envelopes` is applied once, in `tx`. Deliveries of the
    /// in-process bus in `tx`'s database are claimed in one statement that acknowledges
    /// them too ([`Tx::queue_claim`]); anything else is recorded in the inbox, and
    /// acknowledged in `tx` where it can be.
    async fn claim(
        &self,
        tx: &mut Tx,
        deliveries: &[Delivery],
        envelopes: &[Envelope],
    ) -> Result<Vec<Claimed>, BusError> {
        let name = self.options.spec.name.as_str();
        let claims: Option<Vec<QueueClaim>> = deliveries.iter().map(|d| d.claim_in(tx)).collect();
        if let Some(claims) = claims {
            let held = tx.queue_claim(name, &claims).await?;
            return Ok(claims
                .iter()
                .map(|c| Claimed {
                    fresh: held.contains(&c.seq),
                    acked: true,
                })
                .collect());
        }
        let mut claimed = Vec::with_capacity(deliveries.len());
        for (delivery, envelope) in deliveries.iter().zip(envelopes) {
            claimed.push(Claimed {
                fresh: tx.record_inbox(name, envelope.id).await?,
                acked: delivery.ack_within(tx).await?,
            });
        }
        Ok(claimed)
    }

    /// Processes one delivery: decode, deduplicate, apply, settle. It runs in the
    /// delivery's [`event_span`], so everything logged while handling it carries the
    /// event's trace id and run, and is counted in the consumer metrics.
    pub async fn process(
        &self,
        handler: &dyn Handler,
        delivery: Delivery,
    ) -> Result<Outcome, BusError> {
        let name = self.options.spec.name.as_str();
        let envelope = Envelope::from_slice(&delivery.payload);
        let span = event_span(name, &delivery, envelope.as_ref().ok());
        count_received(name, &delivery);
        let id = delivery.id;
        async {
            let result = match envelope {
                Ok(envelope) => self.apply(handler, delivery, envelope).await,
                Err(err) => self.park(delivery, err.to_string()).await,
            };
            count_handled(name, result.as_ref().ok());
            // The span names the consumer and the event.
            match &result {
                Ok(outcome) => tracing::debug!(?id, ?outcome, "processed"),
                Err(err) => tracing::warn!(?id, error = %err,
                    "processing failed; the message will be redelivered"),
            }
            result
        }
        .instrument(span)
        .await
    }

    /// Deduplicates and applies a decoded event, then settles its delivery.
    async fn apply(
        &self,
        handler: &dyn Handler,
        delivery: Delivery,
        envelope: Envelope,
    ) -> Result<Outcome, BusError> {
        let mut tx = self.store.begin().await?;
        let claimed = self
            .claim(
                &mut tx,
                std::slice::from_ref(&delivery),
                std::slice::from_ref(&envelope),
            )
            .await?
            .pop()
            // One claim per delivery; none would be a repeat, acknowledged after the commit.
            .unwrap_or(Claimed {
                fresh: false,
                acked: false,
            });
        if !claimed.fresh {
            // Nothing applied; an acknowledgement in `tx` is kept.
            tx.commit().await?;
            if !claimed.acked {
                delivery.ack().await?;
            }
            return Ok(Outcome::Duplicate);
        }
        match handler.handle(&mut tx, &envelope).await {
            Ok(()) => {
                tx.commit().await?;
                handler.committed(&envelope).await;
                if !claimed.acked {
                    delivery.ack().await?;
                }
                Ok(Outcome::Applied)
            }
            Err(err) => {
                tx.rollback().await?;
                let n = delivery.deliveries;
                if n >= self.options.max_deliveries {
                    self.park(
                        delivery,
                        format!("failed {n} deliveries; last error: {err}"),
                    )
                    .await
                } else {
                    let retry_in = self.options.backoff(n);
                    tracing::info!(consumer = %self.options.spec.name, id = %envelope.id,
                        deliveries = n, error = %err, ?retry_in, "handler failed; will retry");
                    delivery.nak(retry_in).await?;
                    Ok(Outcome::Retrying { retry_in })
                }
            }
        }
    }

    async fn park(&self, delivery: Delivery, reason: String) -> Result<Outcome, BusError> {
        tracing::warn!(consumer = %self.options.spec.name, id = ?delivery.id,
            topic = %delivery.topic, %reason, "parking a dead letter");
        self.store
            .park_dead_letter(NewDeadLetter {
                consumer: &self.options.spec.name,
                event_id: delivery.id,
                topic: &delivery.topic,
                payload: &delivery.payload,
                reason: &reason,
                deliveries: delivery.deliveries,
            })
            .await?;
        delivery.term().await?;
        Ok(Outcome::DeadLettered { reason })
    }
}
