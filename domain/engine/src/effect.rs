//! What comes out of the engine: the effects an input has on the world.

use std::time::Duration;

use gatehouse_events::GateStatus;

/// What the engine asks the world to do after an input: the scheduler carries these out
/// (as events and timers) in the transaction that stores the new state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Send a script, agent or deliver attempt to a runner.
    Dispatch {
        /// Node id.
        node: String,
        /// Attempt.
        attempt: u32,
    },
    /// Start the child run of a `sop` node.
    StartChild {
        /// Node id.
        node: String,
        /// Attempt.
        attempt: u32,
    },
    /// A gate opened: notify the people who may decide it.
    OpenGate {
        /// The gate.
        node: String,
        /// Attempt.
        attempt: u32,
    },
    /// A gate closed: update its cards.
    CloseGate {
        /// The gate.
        node: String,
        /// The attempt that closed.
        attempt: u32,
        /// Outcome.
        status: GateStatus,
    },
    /// Feed [`crate::Input::RetryDue`] back after `after`.
    ScheduleRetry {
        /// Node id.
        node: String,
        /// The attempt that failed.
        attempt: u32,
        /// Backoff.
        after: Duration,
    },
    /// Stop an attempt that is in flight.
    CancelAttempt {
        /// Node id.
        node: String,
        /// Attempt.
        attempt: u32,
    },
}
