//! The SOP engine: `(definition, state, input) → (state, effects)`.
//!
//! It does no I/O, so every rule below is tested directly, including with random graphs and
//! random decisions; the scheduler service persists what it returns and turns the effects
//! into events, and the API uses it to refuse a decision before it is sent.
//!
//! Rules, as DESIGN.md states them:
//! - a node is ready when all its `needs` succeeded; ready nodes are dispatched (gates are
//!   opened) unless the run is paused;
//! - every execution of a node is an attempt, numbered from 1;
//! - a failed attempt is retried `retry.max` times with doubling backoff; then
//!   `on_failure.send_back` sends the work back (at most `on_failure.max` times); then the
//!   node fails and the run fails, stopping what is still in flight;
//! - an attempt the infrastructure lost (a runner killed, a lease run out) is run again as
//!   a new attempt, up to the scheduler's `interrupt_retries` times since the node last
//!   started afresh and without counting against `retry`, unless the node says
//!   `on_interrupt: fail`; past that it is a failure like any other;
//! - a gate is decided by approve (`min_approvals` distinct people, the requester only if
//!   the gate allows it), send back (only to a node the gate lists, with a comment, at most
//!   `max_rework` times) or reject;
//! - send back resets the target and every node between it and the sender, raises the
//!   target's `rework_count` and hands it the comment; work already running downstream of
//!   the target is stopped, since it started from output that is being redone;
//! - pause stops new dispatches, resume restarts them, cancel stops everything, retry
//!   restarts a node, everything after it and everything that did not complete;
//! - feedback on the run's pull request (a review, failing checks, a conflict) is taken up
//!   by the rule for its kind on the last `mode: pr` deliver node once the run has
//!   succeeded: the work is sent back to the rule's target as a gate's send-back is, with
//!   the feedback as the comment, and the deliver node answers it when it next succeeds.
//!   Past the rule's `max` a review is refused; failing checks and conflicts open a gate at
//!   the deliver node (approve takes the pull request as it is, send back redoes the work,
//!   reject fails the run). Feedback that comes while the run works waits, and is taken up
//!   in order, one piece at a time, when it succeeds; a key heard before is refused.
//!
//! Inputs that arrive late or twice (a result for an earlier attempt, a second "finished")
//! are ignored, so redelivered events are harmless.

mod apply;
mod effect;
mod gate;
mod input;
mod state;

pub use apply::apply;
pub use effect::Effect;
pub use gate::gate_in_force;
pub use input::{Decision, Input, Outcome, Rejection};
pub use state::{GateState, NodeState, RunState};
