//! The bus contract shared by both implementations.

use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use gatehouse_events::StreamKind;
use gatehouse_store::{QueueClaim, Tx};
use uuid::Uuid;

use crate::BusError;

/// A message to publish.
#[derive(Debug, Clone, Copy)]
pub struct Outgoing<'a> {
    /// Message id (the event id). Publishing the same id twice stores it once.
    pub id: Uuid,
    /// Topic, e.g. `gate.decision`; the bus adds its deployment prefix.
    pub topic: &'a str,
    /// Raw bytes, normally an [`gatehouse_events::Envelope`].
    pub payload: &'a [u8],
    /// W3C traceparent, carried as a header.
    pub traceparent: Option<&'a str>,
}

/// What the bus did with a published message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Published {
    /// The id was seen before and the message was dropped.
    pub duplicate: bool,
}

/// A durable named consumer. Its position survives restarts; every replica subscribing
/// under the same name shares its messages.
#[derive(Debug, Clone)]
pub struct ConsumerSpec {
    /// Durable name: ASCII letters, digits, `_` or `-`.
    pub name: String,
    /// Topic filter with NATS wildcards. `node.dispatch` reads the jobs stream; every other
    /// filter reads the events stream.
    pub filter: String,
    /// How long a delivered message may stay unacknowledged before it is redelivered.
    pub ack_wait: Duration,
    /// How deliveries are handed out: leased (the default), or applied in transactions.
    pub take: Take,
}

/// How a subscription hands out its deliveries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Take {
    /// Each delivery is leased to one receiver until its ack deadline: for work done
    /// outside any transaction (a runner's job), which no one else may start meanwhile.
    #[default]
    Leased,
    /// Up to this many due deliveries at a time, each acknowledged in the transaction
    /// that applies it and records it in the consumer's inbox ([`crate::Consumer`]). A
    /// bus that keeps its deliveries in that transaction's database (the in-process bus)
    /// then writes no lease: a second receiver of the same delivery finds it in the inbox
    /// (its insert waits for the first transaction), and the delivery of a receiver that
    /// died is due again at once. Its delivery count grows with each nak, not with each
    /// look. JetStream leases as always.
    InTransaction(usize),
}

impl ConsumerSpec {
    /// A consumer of `filter` with a 30-second ack deadline.
    pub fn new(name: impl Into<String>, filter: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            filter: filter.into(),
            ack_wait: Duration::from_secs(30),
            take: Take::Leased,
        }
    }

    /// Which stream the filter reads.
    pub fn stream(&self) -> StreamKind {
        StreamKind::for_topic(&self.filter)
    }

    pub(crate) fn validate(&self) -> Result<(), BusError> {
        let valid = !self.name.is_empty()
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if valid {
            Ok(())
        } else {
            Err(BusError::InvalidConsumerName(self.name.clone()))
        }
    }
}

/// Publishing and durable consumption: what every service needs from the bus.
#[async_trait]
pub trait Bus: Send + Sync {
    /// Publishes a message and returns once the bus has stored it.
    async fn publish(&self, message: Outgoing<'_>) -> Result<Published, BusError>;

    /// Publishes `messages` in order and answers for each, in order, up to and including
    /// the first that fails; the rest are unanswered (not sent, or not confirmed). A bus
    /// that can pipelines them: every message is sent before any acknowledgement is
    /// awaited, so a batch costs about one round trip rather than one per message. With
    /// pipelining some unanswered ones may be stored already: whoever sends them again
    /// uses the same ids, which the bus drops as duplicates.
    async fn publish_all(&self, messages: &[Outgoing<'_>]) -> Vec<Result<Published, BusError>> {
        let mut results = Vec::with_capacity(messages.len());
        for message in messages {
            let result = self.publish(*message).await;
            let failed = result.is_err();
            results.push(result);
            if failed {
                break;
            }
        }
        results
    }

    /// Creates the durable consumer if needed and starts receiving its messages.
    async fn subscribe(&self, spec: &ConsumerSpec) -> Result<Box<dyn Subscription>, BusError>;

    /// Whether the bus answers now, for `/readyz`. The in-process bus lives in the store,
    /// which is checked on its own.
    async fn check_ready(&self) -> Result<(), BusError> {
        Ok(())
    }
}

/// A stream of deliveries for one consumer.
#[async_trait]
pub trait Subscription: Send {
    /// Waits for the next delivery.
    async fn next(&mut self) -> Result<Delivery, BusError>;

    /// Waits for the next delivery, and takes up to `limit` in all of those due with it:
    /// for a receiver with that many free hands (a runner's free slots). A bus that cannot
    /// take several in one go gives one.
    async fn next_up_to(&mut self, limit: usize) -> Result<Vec<Delivery>, BusError> {
        let _ = limit;
        Ok(vec![self.next().await?])
    }

    /// A delivery received already and waiting, without waiting for one: what a consumer
    /// applying several events in one transaction takes after [`Subscription::next`].
    /// `None` when nothing waits, or when the bus cannot tell without waiting.
    async fn ready(&mut self) -> Option<Delivery> {
        None
    }

    /// At shutdown: gives back, for redelivery at once, what was pulled ahead of
    /// processing, so other replicas take it now instead of after its ack wait.
    async fn hand_back(&mut self) {}
}

/// How a delivery is settled; one implementation per bus.
#[async_trait]
pub(crate) trait Settle: Send + Sync {
    /// Acknowledges as part of `tx`, when the bus lives in its database; `false` when it
    /// does not, and [`Settle::ack`] follows the commit.
    async fn ack_within(&self, _tx: &mut Tx) -> Result<bool, BusError> {
        Ok(false)
    }
    /// The delivery to claim in `tx` ([`Tx::queue_claim`]): an event of the bus that lives
    /// in `tx`'s database. `None` for anything else, which the inbox deduplicates.
    fn claim_in(&self, _tx: &Tx) -> Option<QueueClaim> {
        None
    }
    async fn ack(&self) -> Result<(), BusError>;
    async fn nak(&self, delay: Duration) -> Result<(), BusError>;
    async fn in_progress(&self) -> Result<(), BusError>;
    async fn term(&self) -> Result<(), BusError>;
}

/// A received message. Settle it with exactly one of [`Delivery::ack`], [`Delivery::nak`]
/// or [`Delivery::term`]; an unsettled delivery comes back after the ack deadline.
pub struct Delivery {
    /// Message id, when the publisher gave one.
    pub id: Option<Uuid>,
    /// Topic without the deployment prefix.
    pub topic: String,
    pub payload: Bytes,
    /// W3C traceparent header, if any.
    pub traceparent: Option<String>,
    /// 1 on first delivery, then counting redeliveries.
    pub deliveries: u32,
    pub(crate) settle: Box<dyn Settle>,
}

impl std::fmt::Debug for Delivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delivery")
            .field("id", &self.id)
            .field("topic", &self.topic)
            .field("deliveries", &self.deliveries)
            .finish_non_exhaustive()
    }
}

impl Delivery {
    /// Done, if `tx` commits: acknowledges within the transaction that records the
    /// delivery's effect when the bus keeps its deliveries in the same database (the
    /// in-process bus), saving a commit. `false`: this bus cannot, and the caller acks
    /// after the commit ([`Delivery::ack`]).
    pub async fn ack_within(&self, tx: &mut Tx) -> Result<bool, BusError> {
        self.settle.ack_within(tx).await
    }

    /// This delivery as `tx` can claim it ([`Tx::queue_claim`]), instead of an inbox row and
    /// an acknowledgement: an event of the in-process bus whose database `tx` is in.
    pub fn claim_in(&self, tx: &Tx) -> Option<QueueClaim> {
        self.settle.claim_in(tx)
    }

    /// Done: never deliver this message to this consumer again.
    pub async fn ack(self) -> Result<(), BusError> {
        self.settle.ack().await
    }

    /// Not now: deliver it again after `delay`, letting later messages go first.
    pub async fn nak(self, delay: Duration) -> Result<(), BusError> {
        self.settle.nak(delay).await
    }

    /// Still working: push the ack deadline out by another ack wait.
    pub async fn in_progress(&self) -> Result<(), BusError> {
        self.settle.in_progress().await
    }

    /// Give up: never deliver it again (the caller has parked it as a dead letter).
    pub async fn term(self) -> Result<(), BusError> {
        self.settle.term().await
    }
}
