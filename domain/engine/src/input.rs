//! What goes into the engine, and why it may refuse it.

use gatehouse_events::{NodeStatus, RunStatus};
use thiserror::Error;

/// How a node attempt ended, as the runner reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// It did its work.
    Succeeded,
    /// It failed; the reason is kept and shown.
    Failed(String),
    /// It ran out of time and was killed.
    TimedOut,
    /// The infrastructure lost it (its runner killed, its lease run out, a shutdown past
    /// its grace): run again as a new attempt, unless the node says `on_interrupt: fail`
    /// or it was interrupted `retries` times already; then it is a failure like any other.
    Interrupted {
        /// What happened, kept as the attempt's error.
        reason: String,
        /// How many interruptions a node may have retried since it last started afresh
        /// (`runner.interrupt_retries`: the scheduler's setting, not the SOP's).
        retries: u32,
    },
    /// A budget refused its agent's model request. Never retried: another attempt would
    /// meet the same limit, or get a fresh one no person agreed to. With `on_budget: ask`
    /// the node waits for a person to raise the budget once; else it fails.
    OverBudget {
        /// The refusal, e.g. "budget of project api reached: $20.00 today".
        reason: String,
        /// The budget reached, as the runner names it ("project api", "role coder"): what
        /// an approval raises.
        budget: String,
    },
}

/// A reviewer's decision on a gate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Let the run go on.
    Approve,
    /// Redo from an earlier node.
    SendBack {
        /// The node to redo.
        to: String,
    },
    /// Stop the run.
    Reject,
}

/// One thing that happened to a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// The run was created: activate the first nodes.
    Start,
    /// A runner began an attempt.
    NodeStarted { node: String, attempt: u32 },
    /// An attempt ended (for a `sop` node: its child run ended).
    NodeFinished {
        node: String,
        attempt: u32,
        outcome: Outcome,
    },
    /// The backoff after a failed attempt has passed.
    RetryDue {
        node: String,
        /// The attempt that failed.
        attempt: u32,
    },
    /// A person decided a gate.
    Decide {
        node: String,
        /// The gate attempt the person saw.
        attempt: u32,
        decision: Decision,
        /// Their comment (required for send back).
        comment: Option<String>,
        /// The person (`[[people]]` id).
        person: String,
        /// The person's groups, for approvers named `group:<name>`.
        groups: Vec<String>,
    },
    /// A gate's `expires_in` passed.
    GateExpired {
        node: String,
        /// The attempt that expired.
        attempt: u32,
    },
    /// Stop dispatching.
    Pause,
    /// Dispatch again.
    Resume,
    /// Stop everything.
    Cancel,
    /// Run a node again, with everything after it and everything that did not complete.
    RetryFrom { node: String },
    /// A pull request the run delivered asks for more work (a review, failing checks, a
    /// conflict): the run goes back by its deliver node's rule for the kind, or the
    /// feedback waits while the run is still working.
    Feedback {
        feedback: gatehouse_events::Feedback,
    },
}

/// Why an input was refused. Nothing changes when an input is refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Rejection {
    /// The SOP has no such node.
    #[error("this run has no node `{0}`")]
    UnknownNode(String),
    /// A decision for something that is not a gate.
    #[error("`{0}` is not a gate")]
    NotAGate(String),
    /// The gate is not open.
    #[error("gate `{node}` is not waiting for a decision (the node is {status:?})")]
    NotWaiting {
        node: String,
        /// Its node status.
        status: NodeStatus,
    },
    /// A decision made on an earlier opening of the gate.
    #[error(
        "this decision is for attempt {given} of gate `{node}`, which is now at attempt {current}"
    )]
    StaleAttempt {
        node: String,
        /// Attempt on the decision.
        given: u32,
        /// Current attempt.
        current: u32,
    },
    /// Send back to a node the gate does not list.
    #[error("gate `{gate}` cannot send work back to `{target}`; it may send back to: {}", allowed.join(", "))]
    NotASendBackTarget {
        gate: String,
        /// The requested target.
        target: String,
        /// What the gate lists.
        allowed: Vec<String>,
    },
    /// Send back without a comment.
    #[error("sending work back needs a comment for whoever redoes it")]
    CommentRequired,
    /// The gate used up its send-backs.
    #[error("gate `{gate}` has sent work back {max} times, its limit; approve or reject")]
    ReworkLimit {
        gate: String,
        /// Its `max_rework`.
        max: u32,
    },
    /// Someone the gate does not name as an approver.
    #[error("{person} may not decide gate `{gate}`; its approvers are {approvers}")]
    NotAnApprover {
        gate: String,
        person: String,
        /// The gate's approvers, for the message.
        approvers: String,
    },
    /// The requester approving their own requirement.
    #[error("the requester may not approve their own requirement at gate `{0}`")]
    RequesterMayNotApprove(String),
    /// The requirement's author approving the work done on it.
    #[error("the requirement's author may not approve the work on it at gate `{0}`")]
    AuthorMayNotApprove(String),
    /// The owner of the schedule that started the run approving its work.
    #[error("the owner of the schedule that started this run may not approve it at gate `{0}`")]
    OwnerMayNotApprove(String),
    /// A second approval by the same person.
    #[error(
        "{person} has already approved gate `{gate}`; it needs approvals from different people"
    )]
    AlreadyApproved { gate: String, person: String },
    /// Pause, resume or cancel on a run that has ended, or a decision after the end.
    #[error("the run has already ended ({0:?})")]
    Ended(RunStatus),
    /// Pause on a paused run, or resume on one that is not.
    #[error("the run is {0}")]
    PauseState(&'static str),
    /// Anything but the start, on a run asked for that the scheduler has not created yet.
    #[error("the run has not been created yet (it is `requested`); try again in a moment")]
    NotCreated,
    /// Retry from a node while part of what it would reset is in flight.
    #[error("node `{0}` is still in flight; wait for it or cancel the run first")]
    InFlight(String),
    /// The run's deliver node has no rule for this kind of feedback.
    #[error("the run's deliver node has no `{rule}`, so this feedback starts nothing")]
    NoFeedbackRule {
        /// `on_review`, `on_checks_failed` or `on_conflict`.
        rule: String,
    },
    /// A review past its rule's `max` (counting reviews still waiting): nobody is asked,
    /// the reviewer is told.
    #[error(
        "this run has taken {max} reviews of its pull request, the limit its `{rule}` sets; a person has to take it from here"
    )]
    FeedbackLimit {
        /// `on_review`.
        rule: String,
        /// The rule's `max`.
        max: u32,
    },
    /// Feedback whose key the run has taken already (waiting or taken up): a redelivery.
    #[error("feedback `{key}` has been taken already")]
    FeedbackHeard { key: String },
}
