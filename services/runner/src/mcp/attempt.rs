//! What one attempt's tools act on: whose attempt it is, what it may read, where it may
//! publish, how it reports progress, and how long a question of its may wait.

use std::path::PathBuf;
use std::time::Duration;

use gatehouse_store::{ConnectionOwner, Store};
use tokio::time::Instant;

/// Tells the rest of Gatehouse how the attempt is getting on (`node.progress`, or a
/// turn's progress); never fails, at most logs.
pub(crate) type Progress = Box<dyn Fn(String) + Send + Sync>;

/// One attempt, as its tools see it.
pub(crate) struct AttemptTools {
    /// The run's node or the conversation's turn.
    pub(crate) owner: ConnectionOwner,
    pub(crate) attempt: u32,
    /// The project, whose people answer its questions.
    pub(crate) project: Option<String>,
    /// `get_requirement`'s answer: the requirement as the prompt saw it.
    pub(crate) requirement: serde_json::Value,
    /// `get_inputs`'s answer: parameters, upstream artifacts' texts, a rework comment.
    pub(crate) inputs: serde_json::Value,
    /// The attempt's artifact directory on the runner's disk, which `publish_artifact`
    /// writes into; `None` for a turn, which has no artifacts.
    pub(crate) artifacts: Option<PathBuf>,
    /// The remote `[mcp.NAME]` servers its role and project attach, which it may reach at
    /// `/mcp/<NAME>`; no other.
    pub(crate) remotes: Vec<String>,
    pub(crate) progress: Progress,
    /// How long a question may wait for a person.
    pub(crate) ask_timeout: Duration,
    /// When the attempt's own time runs out, if it does: a question expires before, so
    /// the agent hears the answer (none) while it can still act on it.
    pub(crate) deadline: Option<Instant>,
    pub(crate) store: Store,
}

/// How long a question waits for a person unless the attempt's time runs out first.
pub(crate) const ASK_TIMEOUT: Duration = Duration::from_secs(60 * 60);

impl AttemptTools {
    /// When a question asked now stops waiting.
    pub(crate) fn question_deadline(&self) -> Instant {
        let asked = Instant::now() + self.ask_timeout;
        match self.deadline {
            // A little before the attempt is stopped, for the agent to act on the answer.
            Some(deadline) => asked.min(
                deadline
                    .checked_sub(Duration::from_secs(30))
                    .unwrap_or(deadline),
            ),
            None => asked,
        }
    }
}
