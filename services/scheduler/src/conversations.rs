//! Conversations: the scheduler owns their state as it owns runs'. What was said in a thread
//! (from ingest) and what runners report about turns are applied with the pure
//! [`gatehouse_conversation::apply`]; the new state, the chat messages it wants posted,
//! the jobs and cancels for runners and the idle timer are written in the consumer's one
//! transaction, so each effect happens once however often an event is delivered.
//! The idle timer fires from [`crate::timers`].

mod effects;

use std::time::Duration;

use gatehouse_conversation::{Conversation, Input, Outcome, Workspace, apply};
use gatehouse_events::{
    ConversationInput, Said, TraceParent, TurnFinished, TurnOutcome, TurnProgress, TurnProgressKind,
};
use gatehouse_store::{Activity, ConversationUpdate, Tx};
use uuid::Uuid;

use crate::{Scheduler, SchedulerError};

/// `[assistant]`: the role every turn runs and the conversation's limits.
#[derive(Debug, Clone)]
pub struct AssistantSettings {
    /// A role under `[roles]`.
    pub role: String,
    pub rules: gatehouse_conversation::Settings,
    /// A turn's wall-clock limit.
    pub turn_timeout: Duration,
}

impl AssistantSettings {
    /// `role` with a queue of 5, a 2-hour idle timeout and 30 minutes per turn.
    pub fn new(role: impl Into<String>) -> Self {
        Self {
            role: role.into(),
            rules: gatehouse_conversation::Settings {
                max_queue: 5,
                idle_timeout: Duration::from_secs(2 * 3600),
            },
            turn_timeout: Duration::from_secs(30 * 60),
        }
    }
}

impl Scheduler {
    /// What a person said in a thread, as the conversation's input.
    pub(crate) async fn conversation_input(
        &self,
        tx: &mut Tx,
        said: ConversationInput,
        trace: Option<&TraceParent>,
    ) -> Result<(), SchedulerError> {
        let id = said.conversation_id;
        self.converse(tx, id, chat_input(said), trace).await
    }

    pub(crate) async fn turn_progress(
        &self,
        tx: &mut Tx,
        p: TurnProgress,
        trace: Option<&TraceParent>,
    ) -> Result<(), SchedulerError> {
        let (seq, attempt) = (p.seq, p.attempt);
        let input = match p.kind {
            TurnProgressKind::Started => Input::TurnStarted { seq, attempt },
            TurnProgressKind::Session { session_id } => Input::SessionStarted {
                seq,
                attempt,
                session_id,
            },
        };
        self.converse(tx, p.conversation_id, input, trace).await
    }

    pub(crate) async fn turn_finished(
        &self,
        tx: &mut Tx,
        f: TurnFinished,
        trace: Option<&TraceParent>,
    ) -> Result<(), SchedulerError> {
        let (seq, attempt, session_id) = (f.seq, f.attempt, f.session_id);
        let input = match f.outcome {
            TurnOutcome::Replied { reply } => Input::TurnFinished {
                seq,
                attempt,
                outcome: Outcome::Replied { reply, session_id },
            },
            TurnOutcome::Failed { reason } => Input::TurnFinished {
                seq,
                attempt,
                outcome: Outcome::Failed { reason, session_id },
            },
            TurnOutcome::Interrupted => {
                // The session the lost attempt named is the one its second attempt resumes.
                if let Some(session_id) = session_id {
                    let named = Input::SessionStarted {
                        seq,
                        attempt,
                        session_id,
                    };
                    self.converse(tx, f.conversation_id, named, trace).await?;
                }
                Input::Interrupted { seq, attempt }
            }
        };
        self.converse(tx, f.conversation_id, input, trace).await
    }

    /// Applies `input` to a stored conversation and carries out what follows, in `tx`. An
    /// input the conversation refuses changes nothing and is only logged: it is a late or
    /// stray report, never something a person is waiting on.
    pub(crate) async fn converse(
        &self,
        tx: &mut Tx,
        id: Uuid,
        input: Input,
        trace: Option<&TraceParent>,
    ) -> Result<(), SchedulerError> {
        let Some(assistant) = &self.assistant else {
            tracing::warn!(conversation = %id, "a conversation event, but [assistant] is not configured; ignored");
            return Ok(());
        };
        let Some(row) = tx.load_conversation(id).await? else {
            tracing::warn!(conversation = %id, ?input, "event for an unknown conversation; ignored");
            return Ok(());
        };
        let corrupt = |message: String| SchedulerError::Conversation { id, message };
        let mut state: Conversation = serde_json::from_str(&row.state)
            .map_err(|e| corrupt(format!("stored state does not decode: {e}")))?;
        let revision = state.revision;
        let effects = match apply(&assistant.rules, &mut state, input) {
            Ok(effects) => effects,
            Err(rejection) => {
                tracing::info!(conversation = %id, %rejection, "refused");
                return Ok(());
            }
        };
        let mut step = effects::Step::new(&row, assistant, trace);
        step.carry_out(tx, &effects).await?;
        if state.revision == revision && effects.is_empty() {
            return Ok(());
        }
        let update = ConversationUpdate {
            state: &crate::service::json(&state),
            activity: activity(&state.workspace),
            read_revision: row.revision,
            new_revision: row.revision + 1,
            arm_idle: step.arm_idle,
            disarm_idle: state.workspace.is_held(),
        };
        if !tx.update_conversation(id, &update).await? {
            return Err(corrupt("changed by another writer; retrying".into()));
        }
        Ok(())
    }
}

/// What was said in a thread, as the conversation's input.
fn chat_input(said: ConversationInput) -> Input {
    let seq = Some(said.seq);
    let person = said.person;
    match said.said {
        Said::Message { text } => Input::Message { seq, text, person },
        Said::Steer { text } => Input::Steer { seq, text, person },
        Said::Stop => Input::Stop { seq },
        Said::Status => Input::Status { seq },
        Said::Ask { role, text } => Input::Ask {
            seq,
            role,
            text,
            person,
        },
        Said::Deliver { draft } => Input::Deliver { seq, draft, person },
        Said::TakeOver { run } => Input::TakeOver {
            seq,
            run: run.to_string(),
        },
        Said::Feedback { feedback } => Input::Feedback {
            seq,
            feedback,
            person,
        },
    }
}

fn activity(workspace: &Workspace) -> Activity {
    match workspace {
        Workspace::None => Activity::New,
        Workspace::Turn { .. } => Activity::Working,
        Workspace::Run { .. } => Activity::Waiting,
        Workspace::Kept => Activity::Idle,
        Workspace::Released => Activity::Released,
    }
}

#[cfg(test)]
mod tests {
    use gatehouse_events::{Feedback, FeedbackKind, PullRef};

    use super::*;

    #[test]
    fn feedback_said_in_a_thread_is_the_conversations_feedback_input() {
        let feedback = Feedback {
            kind: FeedbackKind::ChecksFailed,
            key: "checks:abc".into(),
            text: "job `test` failed".into(),
            pull: PullRef {
                repo: "acme/api".into(),
                number: 7,
            },
            from: String::new(),
            thread: None,
        };
        let said = ConversationInput {
            conversation_id: Uuid::nil(),
            seq: 5,
            person: "alice".into(),
            said: Said::Feedback {
                feedback: feedback.clone(),
            },
        };
        assert_eq!(
            chat_input(said),
            Input::Feedback {
                seq: Some(5),
                feedback,
                person: "alice".into(),
            }
        );
    }
}
