//! What people say in the thread: messages, `steer`, `stop`.

use super::Step;
use crate::text;
use crate::{Effect, Turn, TurnStatus, Work, Workspace};

impl Step<'_> {
    /// A message, an `ask` or a `deliver`: a turn now, or queued behind the one running.
    pub(super) fn request(&mut self, seq: u64, text: String, person: String, work: Work) {
        if text.trim().is_empty() {
            self.effects
                .push(Effect::answer(seq, text::EMPTY.to_owned()));
            return;
        }
        if !self.state.workspace.is_held() {
            // Nothing to wait for: `advance` starts it.
            self.enqueue(seq, text, person, false, work);
            return;
        }
        if self.state.queue.len() >= self.settings.max_queue {
            let refusal = text::queue_full(self.settings);
            self.effects.push(Effect::answer(seq, refusal));
            return;
        }
        let ahead = self.state.queue.len() + usize::from(self.state.running().is_some());
        let acknowledgement = text::queued(ahead, &self.state);
        self.enqueue(seq, text, person, false, work);
        self.effects.push(Effect::Acknowledge {
            seq,
            text: acknowledgement,
        });
    }

    pub(super) fn steer(&mut self, seq: u64, text: String, person: String) {
        if text.trim().is_empty() {
            self.effects
                .push(Effect::answer(seq, text::EMPTY.to_owned()));
            return;
        }
        let Some(running) = self.state.running() else {
            let answer = text::NOTHING_TO_STEER.to_owned();
            self.effects.push(Effect::answer(seq, answer));
            return;
        };
        // A steer takes the running turn's place; once that is already going, the steer
        // is one more waiting message.
        if running.stopping && self.state.queue.len() >= self.settings.max_queue {
            let refusal = text::queue_full(self.settings);
            self.effects.push(Effect::answer(seq, refusal));
            return;
        }
        self.stop_running();
        self.enqueue(seq, text, person, true, Work::Assistant);
        self.effects.push(Effect::Acknowledge {
            seq,
            text: text::STEERING.to_owned(),
        });
    }

    pub(super) fn stop(&mut self, seq: u64) {
        let answer = match self.state.running() {
            None => text::nothing_to_stop(&self.state),
            Some(turn) if turn.stopping => text::ALREADY_STOPPING.to_owned(),
            Some(_) => {
                self.stop_running();
                text::stopping(self.state.queue.len())
            }
        };
        self.effects.push(Effect::answer(seq, answer));
    }

    /// Asks the running turn to end, unless it has been asked already.
    fn stop_running(&mut self) {
        let Workspace::Turn { seq } = self.state.workspace else {
            return;
        };
        let turn = self.turn_mut(seq);
        if !turn.stopping {
            turn.stopping = true;
            let attempt = turn.attempts;
            self.effects.push(Effect::CancelTurn { seq, attempt });
        }
    }

    /// Adds a turn to the queue: last, or first for a steer.
    fn enqueue(&mut self, seq: u64, text: String, person: String, steer: bool, work: Work) {
        self.enqueue_turn(Turn {
            seq,
            text,
            person,
            status: TurnStatus::Queued,
            attempts: 0,
            started: false,
            steer,
            work,
            feedback: None,
            stopping: false,
            failure: None,
        });
    }

    /// Adds `turn`, queued, to the queue: last, or first for a steer.
    pub(super) fn enqueue_turn(&mut self, turn: Turn) {
        let (seq, steer) = (turn.seq, turn.steer);
        self.state.turns.push(turn);
        if steer {
            self.state.queue.insert(0, seq);
        } else {
            self.state.queue.push(seq);
        }
    }
}
