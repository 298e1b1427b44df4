//! What the in-process bus carries: messages put on it, deliveries handed out, and the
//! outbox rows a relay publishes. Plain data, so that what waits for them in memory
//! (`waiting.rs`) needs nothing else of the bus.

use gatehouse_events::StreamKind;
use uuid::Uuid;

/// A message to put on the in-process bus.
#[derive(Debug, Clone, Copy)]
pub struct QueueMessage<'a> {
    /// Message id; a second message with the same id is dropped as a duplicate.
    pub id: Uuid,
    /// Topic (event type).
    pub topic: &'a str,
    /// Raw bytes.
    pub payload: &'a [u8],
    /// W3C traceparent, if any.
    pub traceparent: Option<&'a str>,
}

impl QueueMessage<'_> {
    /// This message's first delivery, as a look at the tables would read it once it is
    /// logged at `seq`.
    pub(crate) fn delivered(&self, seq: i64) -> QueuedDelivery {
        QueuedDelivery {
            seq,
            id: self.id,
            topic: self.topic.to_owned(),
            payload: self.payload.to_vec(),
            traceparent: self.traceparent.map(str::to_owned),
            deliveries: 1,
        }
    }
}

/// A message handed to a consumer: leased until its ack deadline ([`crate::Store::queue_fetch_up_to`]),
/// or only read ([`crate::Store::queue_peek`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedDelivery {
    /// Position in the log.
    pub seq: i64,
    pub id: Uuid,
    pub topic: String,
    /// Raw bytes.
    pub payload: Vec<u8>,
    /// W3C traceparent, if any.
    pub traceparent: Option<String>,
    /// 1 on first delivery; the lease token for ack, nak and progress.
    pub deliveries: i32,
}

/// An outbox row claimed by a relay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxMessage {
    /// Position in the outbox; relays publish in this order.
    pub seq: i64,
    /// The event id, used as `Nats-Msg-Id`.
    pub id: Uuid,
    /// The topic (event type).
    pub topic: String,
    /// The envelope bytes exactly as they go on the wire.
    pub payload: Vec<u8>,
    /// The envelope's traceparent, copied so the relay can set the NATS header.
    pub traceparent: Option<String>,
    /// How many publish attempts failed before this claim.
    pub attempts: i32,
}

pub(crate) fn stream_key(kind: StreamKind) -> &'static str {
    match kind {
        StreamKind::Events => "events",
        StreamKind::Jobs => "jobs",
    }
}
