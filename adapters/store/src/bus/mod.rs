//! The in-process bus's machinery, over the store's tables: the queue (a message log,
//! durable consumers, a delivery per consumer), claims in the applying transaction,
//! publishing inside a transaction, and the hand-overs that follow a commit (outbox rows
//! to this process's relay, jobs to its idle subscriptions, wake-ups to its consumers).
//!
//! It sits above the store's pools and transactions: a transaction knows nothing of it
//! but the hooks this registers to run before and after its commit ([`crate::Tx::commit`]),
//! and the store keeps only what waits here in memory (`waiting.rs`).

mod handover;
mod job_takers;
mod messages;
mod outbox;
mod publish;
mod queue;
mod queue_claim;
mod waiting;
mod wakes;

pub use handover::Handover;
pub use job_takers::JobTaker;
pub use messages::{OutboxMessage, QueueMessage, QueuedDelivery};
pub use queue_claim::QueueClaim;
pub use waiting::Wake;
pub(crate) use waiting::{IdleTakers, RelayHere};
