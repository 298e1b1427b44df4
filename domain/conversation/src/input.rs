//! What goes into a conversation, what it is configured with, and why it may refuse an
//! input.

use std::time::Duration;

use gatehouse_events::Feedback;
use thiserror::Error;

/// `[assistant]` in the configuration, as far as the conversation's rules read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// Messages that may wait while a turn runs; more are refused.
    pub max_queue: usize,
    /// How long the workspace is kept with nobody holding it before it is checkpointed and
    /// released.
    pub idle_timeout: Duration,
}

/// How a turn's attempt ended, as the runner reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The CLI finished; `reply` is its final text.
    Replied {
        reply: String,
        /// The CLI session it ran in, for the next turn to resume (none from a `command`).
        session_id: Option<String>,
    },
    /// The CLI failed, crashed, timed out or was stopped.
    Failed {
        /// Shown in the thread.
        reason: String,
        /// The session, when the CLI got as far as naming one: the next turn still
        /// continues it.
        session_id: Option<String>,
    },
}

/// One thing that happened to a conversation.
///
/// `seq` on a chat input numbers it in the thread (ingest's order of the thread's
/// messages, from 1); one at or below the highest seen is a redelivery and is ignored.
/// `None` numbers it after the highest. Effects answering it are keyed by it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// A message for the assistant: a turn, now or once those before it have run.
    Message {
        seq: Option<u64>,
        text: String,
        person: String,
    },
    /// `ask ROLE <text>`: a turn of another of the project's roles, in the same workspace
    /// and in the same queue; it neither continues nor changes the assistant's session.
    Ask {
        seq: Option<u64>,
        role: String,
        text: String,
        person: String,
    },
    /// `deliver [draft]`: commit the workspace and open or update its pull requests, in
    /// the queue like a message.
    Deliver {
        seq: Option<u64>,
        draft: bool,
        person: String,
    },
    /// A pull request the conversation delivered asks for more work: a turn of the
    /// assistant, in the queue like a message (never refused for a full queue: it comes
    /// from GitHub, once per piece of feedback, not from someone typing), after which the
    /// runner pushes the work to the pull request and answers there. The thread is told
    /// either way.
    Feedback {
        seq: Option<u64>,
        feedback: Feedback,
        person: String,
    },
    /// `steer <text>`: stop the running turn and run this next.
    Steer {
        seq: Option<u64>,
        text: String,
        person: String,
    },
    /// `stop`: end the running turn.
    Stop { seq: Option<u64> },
    /// `status`: answered from the state, without running the agent.
    Status { seq: Option<u64> },
    /// The runner began an attempt.
    TurnStarted { seq: u64, attempt: u32 },
    /// The running attempt's CLI named its session (Claude Code's `init`, Codex's
    /// `thread.started`): kept at once, so a turn interrupted mid-way resumes it.
    SessionStarted {
        seq: u64,
        attempt: u32,
        session_id: String,
    },
    /// An attempt ended.
    TurnFinished {
        seq: u64,
        attempt: u32,
        outcome: Outcome,
    },
    /// A restart found this attempt still running: its runner is gone.
    Interrupted { seq: u64, attempt: u32 },
    /// `take over RUN`: the run (paused by whoever asked) gives its workspace to the
    /// conversation; answered in the thread either way.
    TakeOver { seq: Option<u64>, run: String },
    /// An SOP run takes the workspace (`run SOP` on the conversation's requirement).
    RunTookWorkspace { run: String },
    /// A run gives a workspace to the conversation: the one it took, when it ends, or its
    /// own, by `take over RUN`.
    RunReleasedWorkspace { run: String },
    /// The idle timer of [`crate::Effect::ScheduleIdle`] went off.
    Idle { timer: u64 },
}

/// Why an input was refused. Nothing changes when an input is refused. Answers people
/// should see in the thread are effects, not refusals; these are for the service that
/// sent the input (the `run SOP` or `take over` handler tells its requester).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Rejection {
    /// A runner's report for a turn the conversation does not have.
    #[error("this conversation has no turn {0}")]
    UnknownTurn(u64),
    /// A run asked for the workspace while a turn holds it.
    #[error("the conversation is working on turn {seq}; wait for it or `stop` it first")]
    TurnHoldsWorkspace { seq: u64 },
    /// A run asked for the workspace, or gave one, while another run holds it.
    #[error("run {run} holds the conversation's workspace; wait for it to end")]
    RunHoldsWorkspace { run: String },
}
