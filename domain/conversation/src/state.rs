//! A conversation's state; stored as JSON beside the conversation, with the effects of the
//! input that produced it.

use gatehouse_events::Feedback;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Conversation {
    /// Every turn, in the order the messages arrived.
    pub turns: Vec<Turn>,
    /// The seqs of the turns waiting to run, the next first.
    pub queue: Vec<u64>,
    /// The CLI session the latest turn reported; the next turn resumes it.
    pub session_id: Option<String>,
    pub workspace: Workspace,
    /// The highest message seq so far: a message numbered at or below it is a redelivery.
    pub last_seq: u64,
    /// The idle timer armed last; an [`crate::Input::Idle`] for an earlier one is stale.
    pub idle_timer: u64,
    /// The run that last gave the workspace back, so a repeated release is recognised.
    pub last_run: Option<String>,
    /// A run that gave the conversation its workspace (its end, or `take over`) and whose
    /// files the workspace has not taken yet: the next task on the workspace takes them
    /// first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adopt: Option<String>,
    /// Raised on every change, so observers can order snapshots.
    pub revision: u64,
}

/// One message to the assistant and what became of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Turn {
    /// The message's seq in the thread; effects about the turn are keyed by it.
    pub seq: u64,
    pub text: String,
    /// Who sent it (a `[[people]]` id).
    pub person: String,
    pub status: TurnStatus,
    /// Attempts begun: 1, or 2 after an interruption (the only reason a turn runs again).
    pub attempts: u32,
    /// The runner reported that the current attempt began.
    pub started: bool,
    /// It came as `steer`.
    pub steer: bool,
    /// What the turn does: the assistant's work, another role's answer, or a delivery.
    #[serde(default, skip_serializing_if = "Work::is_assistant")]
    pub work: Work,
    /// The pull request feedback it answers (its text is the feedback's prompt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<Feedback>,
    /// `stop` or a steer asked for it to end: it ends as stopped unless it replies first.
    pub stopping: bool,
    /// Why it failed.
    pub failure: Option<String>,
}

/// What a turn does in the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Work {
    /// A message for the assistant, continuing its CLI session.
    #[default]
    Assistant,
    /// `ask ROLE`: that role answers, in a session of its own.
    Ask { role: String },
    /// `deliver [draft]`: the workspace committed and its pull requests opened or updated.
    Deliver { draft: bool },
}

impl Work {
    pub fn is_assistant(&self) -> bool {
        *self == Self::Assistant
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnStatus {
    /// Waiting for the turn before it, or for a run to give the workspace back; or, having
    /// been interrupted by a restart, for its second attempt.
    Queued,
    /// Holding the workspace: started, or about to be.
    Running,
    Replied,
    Failed,
    /// Ended by `stop` or a steer.
    Stopped,
}

impl TurnStatus {
    /// Whether the turn is over: nothing more happens to it.
    pub fn is_final(self) -> bool {
        matches!(self, Self::Replied | Self::Failed | Self::Stopped)
    }
}

/// The conversation's workspace and who holds its lease.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Workspace {
    /// Not created yet; the first turn creates it.
    #[default]
    None,
    /// Kept between turns; nobody holds it.
    Kept,
    /// Held by the running turn.
    Turn { seq: u64 },
    /// Held by an SOP run (`run SOP`); turns wait until it is given back.
    Run { run: String },
    /// Checkpointed and released after `idle_timeout`; the next turn restores it.
    Released,
}

impl Workspace {
    /// Whether a turn or a run holds it, so a new turn must wait.
    pub fn is_held(&self) -> bool {
        matches!(self, Self::Turn { .. } | Self::Run { .. })
    }
}

impl Conversation {
    /// A thread's conversation before its first message.
    pub fn new() -> Self {
        Self::default()
    }

    pub fn turn(&self, seq: u64) -> Option<&Turn> {
        // Seqs only grow, so the turns are sorted by them.
        let i = self.turns.binary_search_by_key(&seq, |t| t.seq).ok()?;
        self.turns.get(i)
    }

    /// The turn holding the workspace, if any.
    pub fn running(&self) -> Option<&Turn> {
        match self.workspace {
            Workspace::Turn { seq } => self.turn(seq),
            _ => None,
        }
    }
}
