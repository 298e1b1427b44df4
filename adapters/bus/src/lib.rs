//! Gatehouse's message bus.
//!
//! Services publish and consume through the [`Bus`] trait, which has two implementations
//! with the same guarantees: [`JetStreamBus`] (NATS JetStream, for distributed mode) and
//! [`InProcessBus`] (tables in the store, for `gatehouse up`). Both give at-least-once
//! delivery to durable named consumers with explicit acknowledgement; [`Relay`] moves
//! events from the store's outbox onto the bus, and [`Consumer`] applies them exactly once
//! in effect through the store's inbox, parking poison messages as dead letters.
//!
//! Every delivery is handled inside an [`event_span`] carrying the event's trace id (the
//! `traceparent` the envelope and the message header carry), so one trace id shows in the
//! logs of every service that works on it; the relay and the consumers count what they do
//! in the `gatehouse_events_*` metrics.

mod bus;
mod consumer;
mod error;
mod in_process;
mod jetstream;
mod observe;
mod redact;
mod relay;

pub use bus::{Bus, ConsumerSpec, Delivery, Outgoing, Published, Subscription, Take};
pub use consumer::{Consumer, ConsumerOptions, Handler, HandlerError, Outcome};
pub use error::BusError;
pub use in_process::InProcessBus;
pub use jetstream::JetStreamBus;
pub use observe::{count_handled, count_received, event_span};
pub use redact::redact_url;
pub use relay::{Relay, RelayOptions};
