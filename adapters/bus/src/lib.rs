//! Gatehouse's message bus.
//!
//! Services publish and consume through the [`Bus`] trait, which has two implementations
//! with the same guarantees: [`JetStreamBus`] (NATS JetStream, for distributed mode) and
//! [`InProcessBus`] (tables in the store, for `gatehouse up`). Both give at-least-once
//! delivery to durable named consumers with explicit acknowledgement; [`Relay`] moves
//! events from the store's outbox onto the bus, and [`Consumer`] applies them exactly once
//! in effect through the store's inbox, parking poison messages as dead letters.

mod bus;
mod consumer;
mod error;
mod in_process;
mod jetstream;
mod relay;

pub use bus::{Bus, ConsumerSpec, Delivery, Outgoing, Published, Subscription};
pub use consumer::{Consumer, ConsumerOptions, Handler, HandlerError, Outcome};
pub use error::BusError;
pub use in_process::InProcessBus;
pub use jetstream::JetStreamBus;
pub use relay::{Relay, RelayOptions};
