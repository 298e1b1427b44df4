//! Carrying out a conversation's effects inside the transaction that stores its new state:
//! chat messages wanted in the thread (posted once each by the notifier, by key), turn jobs
//! and cancels for runners, and the idle timer.

use chrono::Utc;
use gatehouse_conversation::{Effect, Work};
use gatehouse_events::{
    ChatThread, Event, RunWorkspace, TraceParent, TurnCancel, TurnDispatch, TurnTask,
};
use gatehouse_store::{ConversationRow, Tx, WantChat};
use uuid::Uuid;

use super::AssistantSettings;
use crate::SchedulerError;
use crate::effects::emit;

/// One step's effects, and the idle timer they arm.
pub(super) struct Step<'a> {
    row: &'a ConversationRow,
    assistant: &'a AssistantSettings,
    trace: Option<&'a TraceParent>,
    /// `(timer, due ms)`, when the step armed the idle timer.
    pub(super) arm_idle: Option<(i64, i64)>,
}

impl<'a> Step<'a> {
    pub(super) fn new(
        row: &'a ConversationRow,
        assistant: &'a AssistantSettings,
        trace: Option<&'a TraceParent>,
    ) -> Self {
        Self {
            row,
            assistant,
            trace,
            arm_idle: None,
        }
    }

    pub(super) async fn carry_out(
        &mut self,
        tx: &mut Tx,
        effects: &[Effect],
    ) -> Result<(), SchedulerError> {
        for effect in effects {
            match effect {
                Effect::StartTurn { adopt_run, .. } => {
                    if let Some(task) = start_task(self.assistant, effect) {
                        self.dispatch(tx, task, adopt_run.as_deref()).await?;
                    }
                }
                Effect::CancelTurn { seq, attempt } => {
                    let cancel = TurnCancel {
                        conversation_id: self.row.id,
                        seq: *seq,
                        attempt: *attempt,
                    };
                    emit(tx, Event::TurnCancel(cancel), self.trace).await?;
                }
                Effect::Reply { text, .. }
                | Effect::Acknowledge { text, .. }
                | Effect::Say { text, .. } => self.say(tx, &effect.key(), text).await?,
                // The runner checkpoints the workspace at the end of every attempt, before
                // it reports the attempt finished.
                Effect::Checkpoint { .. } => {}
                Effect::ScheduleIdle { timer, after } => {
                    let after = i64::try_from(after.as_millis()).unwrap_or(i64::MAX);
                    let due = Utc::now().timestamp_millis().saturating_add(after);
                    self.arm_idle = Some((i64::try_from(*timer).unwrap_or(i64::MAX), due));
                }
                Effect::ReleaseWorkspace { timer, adopt_run } => {
                    let task = TurnTask::Release { timer: *timer };
                    self.dispatch(tx, task, adopt_run.as_deref()).await?;
                }
            }
        }
        Ok(())
    }

    /// A job on the workspace; `adopt_run` is the run (by id, as the conversation names
    /// it) whose files the workspace takes first.
    async fn dispatch(
        &self,
        tx: &mut Tx,
        task: TurnTask,
        adopt_run: Option<&str>,
    ) -> Result<(), SchedulerError> {
        let adopt_run = match adopt_run.map(Uuid::parse_str).transpose() {
            Ok(run) => run,
            Err(e) => {
                return Err(SchedulerError::Conversation {
                    id: self.row.id,
                    message: format!("the run it adopts is no run id: {e}"),
                });
            }
        };
        let workspace: RunWorkspace = serde_json::from_str(&self.row.workspace).map_err(|e| {
            SchedulerError::Conversation {
                id: self.row.id,
                message: format!("its frozen workspace does not decode: {e}"),
            }
        })?;
        let job = TurnDispatch {
            conversation_id: self.row.id,
            requirement_id: self.row.requirement_id,
            thread: ChatThread {
                platform: self.row.platform.clone(),
                channel: self.row.channel.clone(),
                thread: self.row.thread.clone(),
            },
            workspace,
            adopt_run,
            task,
        };
        emit(tx, Event::TurnDispatch(job), self.trace).await
    }

    /// Wants a message in the conversation's thread, keyed by the effect so it is posted
    /// once.
    async fn say(&self, tx: &mut Tx, key: &str, text: &str) -> Result<(), SchedulerError> {
        let key = format!("conversation:{}:{key}", self.row.id);
        let body = serde_json::to_string(&gatehouse_chat::Body::text(text)).map_err(|e| {
            SchedulerError::Conversation {
                id: self.row.id,
                message: format!("a message does not encode: {e}"),
            }
        })?;
        tx.want_chat_message(&WantChat {
            key: &key,
            platform: &self.row.platform,
            channel: &self.row.channel,
            thread: Some(&self.row.thread),
            recipient: None,
            run_id: None,
            body: &body,
        })
        .await?;
        Ok(())
    }
}

/// The job a [`Effect::StartTurn`] asks runners for: the assistant's turn (carrying the
/// pull request feedback it answers, if any), another role's answer, or a delivery.
/// `None` for any other effect.
fn start_task(assistant: &AssistantSettings, effect: &Effect) -> Option<TurnTask> {
    let Effect::StartTurn {
        seq,
        attempt,
        text,
        resume_session,
        work,
        feedback,
        ..
    } = effect
    else {
        return None;
    };
    let (seq, attempt) = (*seq, *attempt);
    let timeout_secs = Some(assistant.turn_timeout.as_secs().max(1));
    Some(match work {
        Work::Assistant => TurnTask::Turn {
            seq,
            attempt,
            role: assistant.role.clone(),
            text: text.clone(),
            resume_session: resume_session.clone(),
            ask: false,
            timeout_secs,
            feedback: feedback.clone().map(Box::new),
        },
        Work::Ask { role } => TurnTask::Turn {
            seq,
            attempt,
            role: role.clone(),
            text: text.clone(),
            resume_session: None,
            ask: true,
            timeout_secs,
            feedback: None,
        },
        Work::Deliver { draft } => TurnTask::Deliver {
            seq,
            attempt,
            draft: *draft,
        },
    })
}

#[cfg(test)]
mod tests {
    use gatehouse_events::{Feedback, FeedbackKind, PullRef};

    use super::*;

    #[test]
    fn a_feedback_turn_is_the_assistants_turn_carrying_the_feedback() {
        let assistant = AssistantSettings::new("assistant");
        let feedback = Feedback {
            kind: FeedbackKind::Review,
            key: "review:9".into(),
            text: "rename it".into(),
            pull: PullRef {
                repo: "acme/api".into(),
                number: 7,
            },
            from: "alice".into(),
            thread: None,
        };
        let effect = Effect::StartTurn {
            seq: 4,
            attempt: 1,
            text: "@alice reviewed …".into(),
            resume_session: Some("s-1".into()),
            work: Work::Assistant,
            adopt_run: None,
            feedback: Some(feedback.clone()),
        };
        assert_eq!(
            start_task(&assistant, &effect),
            Some(TurnTask::Turn {
                seq: 4,
                attempt: 1,
                role: "assistant".into(),
                text: "@alice reviewed …".into(),
                resume_session: Some("s-1".into()),
                ask: false,
                timeout_secs: Some(30 * 60),
                feedback: Some(Box::new(feedback)),
            })
        );
        let mut message = effect;
        if let Effect::StartTurn { feedback, .. } = &mut message {
            *feedback = None;
        }
        assert!(matches!(
            start_task(&assistant, &message),
            Some(TurnTask::Turn { feedback: None, .. })
        ));
        assert_eq!(start_task(&assistant, &Effect::Checkpoint { seq: 4 }), None);
    }
}
