//! The transition function: an input handled, then the next queued turn started when the
//! workspace is free, or the idle timer armed when nothing is left to run. What people say
//! is in [`chat`]; a pull request's feedback in [`feedback`]; runs taking and giving back the workspace in [`workspace`].

mod chat;
mod feedback;
mod workspace;

use crate::text;
use crate::{
    Conversation, Effect, Input, Outcome, Rejection, Settings, Turn, TurnStatus, Work, Workspace,
};

/// Attempts a turn gets: the first, and one more after an interruption.
const MAX_ATTEMPTS: u32 = 2;

/// Applies one input to a conversation. On success the state is updated (its revision
/// raised if anything changed) and the effects to carry out are returned; on refusal the
/// state is untouched.
pub fn apply(
    settings: &Settings,
    state: &mut Conversation,
    input: Input,
) -> Result<Vec<Effect>, Rejection> {
    let mut step = Step {
        settings,
        state: state.clone(),
        effects: Vec::new(),
        freed: false,
    };
    step.handle(input)?;
    step.advance();
    if step.state != *state {
        step.state.revision = state.revision + 1;
        *state = step.state;
    }
    Ok(step.effects)
}

/// One application: a working copy of the state and the effects so far.
struct Step<'a> {
    settings: &'a Settings,
    state: Conversation,
    effects: Vec<Effect>,
    /// The workspace became free in this step: arm the idle timer if nothing starts.
    freed: bool,
}

impl Step<'_> {
    fn handle(&mut self, input: Input) -> Result<(), Rejection> {
        match input {
            Input::Message { seq, text, person } => {
                if let Some(seq) = self.number(seq) {
                    self.request(seq, text, person, Work::Assistant);
                }
                Ok(())
            }
            Input::Ask {
                seq,
                role,
                text,
                person,
            } => {
                if let Some(seq) = self.number(seq) {
                    let work = Work::Ask { role };
                    self.request(seq, text, person, work);
                }
                Ok(())
            }
            Input::Deliver { seq, draft, person } => {
                if let Some(seq) = self.number(seq) {
                    let text = if draft { "deliver draft" } else { "deliver" };
                    self.request(seq, text.to_owned(), person, Work::Deliver { draft });
                }
                Ok(())
            }
            Input::Feedback {
                seq,
                feedback,
                person,
            } => {
                if let Some(seq) = self.number(seq) {
                    self.feedback(seq, feedback, person);
                }
                Ok(())
            }
            Input::Steer { seq, text, person } => {
                if let Some(seq) = self.number(seq) {
                    self.steer(seq, text, person);
                }
                Ok(())
            }
            Input::Stop { seq } => {
                if let Some(seq) = self.number(seq) {
                    self.stop(seq);
                }
                Ok(())
            }
            Input::Status { seq } => {
                if let Some(seq) = self.number(seq) {
                    let status = text::status(&self.state, self.settings);
                    self.effects.push(Effect::answer(seq, status));
                }
                Ok(())
            }
            Input::TurnStarted { seq, attempt } => {
                if let Some(turn) = self.current(seq, attempt)? {
                    turn.started = true;
                }
                Ok(())
            }
            Input::SessionStarted {
                seq,
                attempt,
                session_id,
            } => {
                if self
                    .current(seq, attempt)?
                    .is_some_and(|t| t.work.is_assistant())
                {
                    self.state.session_id = Some(session_id);
                }
                Ok(())
            }
            Input::TurnFinished {
                seq,
                attempt,
                outcome,
            } => {
                if self.current(seq, attempt)?.is_some() {
                    self.finished(seq, outcome);
                }
                Ok(())
            }
            Input::Interrupted { seq, attempt } => {
                if self.current(seq, attempt)?.is_some() {
                    self.interrupted(seq);
                }
                Ok(())
            }
            Input::TakeOver { seq, run } => {
                if let Some(seq) = self.number(seq) {
                    let answer = match self.run_released(run.clone()) {
                        Ok(()) => text::took_over(&run),
                        Err(refused) => text::cannot_take_over(&run, &refused),
                    };
                    self.effects.push(Effect::answer(seq, answer));
                }
                Ok(())
            }
            Input::RunTookWorkspace { run } => self.run_took(run),
            Input::RunReleasedWorkspace { run } => self.run_released(run),
            Input::Idle { timer } => {
                if timer == self.state.idle_timer && self.state.workspace == Workspace::Kept {
                    self.state.workspace = Workspace::Released;
                    let adopt_run = self.state.adopt.take();
                    self.effects
                        .push(Effect::ReleaseWorkspace { timer, adopt_run });
                }
                Ok(())
            }
        }
    }

    /// The seq of a chat input, or `None` for a redelivery.
    fn number(&mut self, seq: Option<u64>) -> Option<u64> {
        let seq = match seq {
            Some(seq) if seq <= self.state.last_seq => return None,
            Some(seq) => seq,
            None => self.state.last_seq + 1,
        };
        self.state.last_seq = seq;
        Some(seq)
    }

    /// The turn a runner's report is about when that report is for its current attempt,
    /// still running; `None` for a late or repeated report.
    fn current(&mut self, seq: u64, attempt: u32) -> Result<Option<&mut Turn>, Rejection> {
        let i = self.index(seq).ok_or(Rejection::UnknownTurn(seq))?;
        let turn = &mut self.state.turns[i];
        let current = turn.status == TurnStatus::Running && turn.attempts == attempt;
        Ok(current.then_some(turn))
    }

    fn index(&self, seq: u64) -> Option<usize> {
        // Seqs only grow, so the turns are sorted by them.
        self.state.turns.binary_search_by_key(&seq, |t| t.seq).ok()
    }

    fn turn_mut(&mut self, seq: u64) -> &mut Turn {
        // Only called with the seq of a turn in the queue or the workspace, which the
        // state holds.
        let i = self
            .index(seq)
            .unwrap_or_else(|| unreachable!("turn {seq} is referenced but not in the state"));
        &mut self.state.turns[i]
    }

    fn finished(&mut self, seq: u64, outcome: Outcome) {
        let assistant = self.turn_mut(seq).work.is_assistant();
        let (session_id, effect) = match outcome {
            Outcome::Replied { reply, session_id } => {
                self.turn_mut(seq).status = TurnStatus::Replied;
                let text = if reply.trim().is_empty() {
                    text::NO_REPLY.to_owned()
                } else {
                    reply
                };
                (session_id, Some(Effect::Reply { seq, text }))
            }
            Outcome::Failed { reason, session_id } => {
                let turn = self.turn_mut(seq);
                if turn.stopping {
                    // Stopping it was asked for, and was answered then.
                    turn.status = TurnStatus::Stopped;
                    (session_id, None)
                } else {
                    turn.status = TurnStatus::Failed;
                    let effect = Effect::notice(seq, "failed", text::failed(&reason));
                    turn.failure = Some(reason);
                    (session_id, Some(effect))
                }
            }
        };
        // Another role's session is not the assistant's to continue.
        if session_id.is_some() && assistant {
            self.state.session_id = session_id;
        }
        self.effects.extend(effect);
        self.end(seq);
    }

    fn interrupted(&mut self, seq: u64) {
        let turn = self.turn_mut(seq);
        if turn.stopping {
            turn.status = TurnStatus::Stopped;
            self.end(seq);
        } else if turn.attempts < MAX_ATTEMPTS {
            turn.status = TurnStatus::Queued;
            turn.started = false;
            self.state.queue.insert(0, seq);
            let notice = Effect::notice(seq, "interrupted", text::INTERRUPTED.to_owned());
            self.effects.push(notice);
            self.free();
        } else {
            turn.status = TurnStatus::Failed;
            turn.failure = Some(text::INTERRUPTED_TWICE_REASON.to_owned());
            let notice = Effect::notice(seq, "failed", text::INTERRUPTED_TWICE.to_owned());
            self.effects.push(notice);
            self.end(seq);
        }
    }

    /// A turn is over: checkpoint the workspace and free it.
    fn end(&mut self, seq: u64) {
        self.effects.push(Effect::Checkpoint { seq });
        self.free();
    }

    fn free(&mut self) {
        self.state.workspace = Workspace::Kept;
        self.freed = true;
    }

    /// Starts the next queued turn if nobody holds the workspace; with nothing queued,
    /// arms the idle timer for a workspace that has just been freed.
    fn advance(&mut self) {
        if self.state.workspace.is_held() {
            return;
        }
        if self.state.queue.is_empty() {
            if self.freed && self.state.workspace == Workspace::Kept {
                self.state.idle_timer += 1;
                self.effects.push(Effect::ScheduleIdle {
                    timer: self.state.idle_timer,
                    after: self.settings.idle_timeout,
                });
            }
            return;
        }
        let seq = self.state.queue.remove(0);
        let session_id = self.state.session_id.clone();
        let turn = self.turn_mut(seq);
        turn.status = TurnStatus::Running;
        turn.attempts += 1;
        turn.started = false;
        let (attempt, text, work) = (turn.attempts, turn.text.clone(), turn.work.clone());
        let feedback = turn.feedback.clone();
        let resume_session = session_id.filter(|_| work.is_assistant());
        self.state.workspace = Workspace::Turn { seq };
        let adopt_run = self.state.adopt.take();
        self.effects.push(Effect::StartTurn {
            seq,
            attempt,
            text,
            resume_session,
            work,
            adopt_run,
            feedback,
        });
    }
}
