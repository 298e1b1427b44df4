//! What comes out of the engine: the effects an input has on the world.

use std::time::Duration;

use gatehouse_events::GateStatus;

/// What the engine asks the world to do after an input: the scheduler carries these out
/// (as events and timers) in the transaction that stores the new state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Send a script, agent or deliver attempt to a runner.
    Dispatch { node: String, attempt: u32 },
    /// Start the child run of a `sop` node.
    StartChild { node: String, attempt: u32 },
    /// A gate opened: notify the people who may decide it.
    OpenGate { node: String, attempt: u32 },
    /// A gate closed: update its cards.
    CloseGate {
        node: String,
        /// The attempt that closed.
        attempt: u32,
        status: GateStatus,
    },
    /// Feed [`crate::Input::RetryDue`] back after `after`.
    ScheduleRetry {
        node: String,
        /// The attempt that failed.
        attempt: u32,
        /// Backoff.
        after: Duration,
    },
    /// A person approved raising `budget` for this run once, at the ask that followed
    /// `attempt`: record it, so the node's next attempt is allowed that much more.
    RaiseBudget {
        node: String,
        /// The attempt that reached the budget.
        attempt: u32,
        /// The budget, as [`crate::Outcome::OverBudget`] names it.
        budget: String,
    },
    /// Stop an attempt that is in flight.
    CancelAttempt { node: String, attempt: u32 },
}
