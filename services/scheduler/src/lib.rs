//! The scheduler service.
//!
//! It owns run state. Each event it consumes (a run requested, a person's command, a gate
//! decision, a runner's progress or result) is applied to the run with the pure
//! [`gatehouse_engine`], inside one transaction that also records the event in the inbox
//! and appends what follows to the outbox: jobs for runners, gate notices, and a snapshot of
//! the run. Retries and gate expiries wait in a timer table that survives restarts.
//!
//! It owns conversations' state the same way: what people say in a thread and what
//! runners report about turns, applied with [`gatehouse_conversation`] ([`conversations`]).

mod consume;
mod conversations;
mod effects;
mod error;
mod observe;
mod schedules;
mod service;
mod timers;

pub use conversations::AssistantSettings;
pub use error::SchedulerError;
pub use service::Scheduler;
