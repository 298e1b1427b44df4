//! What comes out of a conversation: what the services do after an input.

use std::time::Duration;

use gatehouse_events::Feedback;

use crate::Work;

/// What the conversation asks the world to do. The services store these with the new state
/// and carry each out once, by [`Effect::key`]: no two effects of one conversation share a
/// key, so a key already carried out is one to skip after a restart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Run an attempt of a turn in the workspace, creating or restoring it first if it is
    /// not there.
    StartTurn {
        seq: u64,
        attempt: u32,
        text: String,
        /// The CLI session to continue; `None` starts a new one (always, for an `ask`).
        resume_session: Option<String>,
        work: Work,
        /// A run whose workspace to take first (it gave the workspace back).
        adopt_run: Option<String>,
        /// The pull request feedback the turn answers: once the CLI replied, the work is
        /// pushed to the pull request and answered there.
        feedback: Option<Feedback>,
    },
    /// Stop a running attempt; the runner still reports
    /// [`crate::Input::TurnFinished`] once it has ended.
    CancelTurn { seq: u64, attempt: u32 },
    /// Post a turn's reply in the thread.
    Reply { seq: u64, text: String },
    /// Tell the sender their message is queued, or steering.
    Acknowledge { seq: u64, text: String },
    /// Post anything else in the thread: an answer to a command, a refusal, a notice about
    /// a turn.
    Say { key: String, text: String },
    /// Checkpoint the workspace: a turn has ended.
    Checkpoint { seq: u64 },
    /// Feed [`crate::Input::Idle`] with `timer` back after `after`.
    ScheduleIdle { timer: u64, after: Duration },
    /// Checkpoint the workspace, then release it; if the checkpoint fails, keep it.
    ReleaseWorkspace {
        timer: u64,
        /// A run whose workspace to take first (it gave the workspace back).
        adopt_run: Option<String>,
    },
}

impl Effect {
    /// The effect's identity within its conversation, e.g. `turn:3:reply`.
    pub fn key(&self) -> String {
        match self {
            Self::StartTurn { seq, attempt, .. } => format!("turn:{seq}:start:{attempt}"),
            Self::CancelTurn { seq, attempt } => format!("turn:{seq}:cancel:{attempt}"),
            Self::Reply { seq, .. } => format!("turn:{seq}:reply"),
            Self::Acknowledge { seq, .. } => format!("turn:{seq}:acknowledge"),
            Self::Say { key, .. } => key.clone(),
            Self::Checkpoint { seq } => format!("turn:{seq}:checkpoint"),
            Self::ScheduleIdle { timer, .. } => format!("idle:{timer}:schedule"),
            Self::ReleaseWorkspace { timer, .. } => format!("idle:{timer}:release"),
        }
    }
}

impl Effect {
    /// The answer to the chat input numbered `seq` that started no turn: a command's, or
    /// a refusal.
    pub(crate) fn answer(seq: u64, text: String) -> Self {
        Self::Say {
            key: format!("message:{seq}:answer"),
            text,
        }
    }

    /// A notice about turn `seq`; `what` names it, once per turn.
    pub(crate) fn notice(seq: u64, what: &str, text: String) -> Self {
        Self::Say {
            key: format!("turn:{seq}:{what}"),
            text,
        }
    }
}
