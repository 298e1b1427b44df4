//! The turn a job asks for: who answers, what was said, the session to continue, and how
//! long it may take.

use gatehouse_events::{Feedback, TurnTask};

/// A turn's wall-clock limit when the dispatch sets none.
const DEFAULT_TIMEOUT_SECS: u64 = 30 * 60;

/// The turn a job asks for.
#[derive(Debug, Clone, Copy)]
pub(super) struct Turn<'a> {
    pub seq: u64,
    pub attempt: u32,
    pub role: &'a str,
    pub text: &'a str,
    /// The session to continue; never for an `ask`.
    pub resume: Option<&'a str>,
    pub ask: bool,
    pub timeout_secs: u64,
    /// The pull request feedback it answers: once the CLI replied, the workspace is
    /// delivered and the pull request answered.
    pub feedback: Option<&'a Feedback>,
}

impl<'a> Turn<'a> {
    /// The turn `task` asks for; `None` for a delivery or a release.
    pub(super) fn of(task: &'a TurnTask) -> Option<Self> {
        match task {
            TurnTask::Turn {
                seq,
                attempt,
                role,
                text,
                resume_session,
                ask,
                timeout_secs,
                feedback,
            } => Some(Self {
                seq: *seq,
                attempt: *attempt,
                role,
                text,
                // An `ask` never continues the assistant's session.
                resume: resume_session.as_deref().filter(|_| !ask),
                ask: *ask,
                timeout_secs: timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS),
                // Another role's answer delivers nothing.
                feedback: feedback.as_deref().filter(|_| !ask),
            }),
            TurnTask::Deliver { .. } | TurnTask::Release { .. } => None,
        }
    }
}
