//! Feedback from a pull request the conversation delivered: a turn queued like a message,
//! the thread told what it is and when it runs.

use gatehouse_events::Feedback;

use super::Step;
use crate::{Effect, Turn, TurnStatus, Work, feedback, text};

impl Step<'_> {
    /// Queues the feedback's turn (started by `advance` when nothing holds the workspace)
    /// and tells the thread: working on it, or what it waits behind.
    pub(super) fn feedback(&mut self, seq: u64, feedback: Feedback, person: String) {
        let label = feedback.label();
        let acknowledgement = if self.state.workspace.is_held() {
            let behind = self
                .state
                .queue
                .last()
                .copied()
                .or_else(|| self.state.running().map(|t| t.seq));
            text::feedback_queued(&label, behind, &self.state)
        } else {
            text::feedback_working(&label)
        };
        self.enqueue_turn(Turn {
            seq,
            text: feedback::prompt(&feedback),
            person,
            status: TurnStatus::Queued,
            attempts: 0,
            started: false,
            steer: false,
            work: Work::Assistant,
            feedback: Some(feedback),
            stopping: false,
            failure: None,
        });
        self.effects.push(Effect::Acknowledge {
            seq,
            text: acknowledgement,
        });
    }
}
