//! Conversations on the wire: what people say in a conversation's thread (ingest →
//! scheduler), the turn jobs the scheduler hands runners, and what runners report back.
//!
//! The scheduler owns a conversation's state (the rules are `gatehouse-conversation`'s);
//! ingest only numbers what was said in the thread, and a runner only runs one attempt of
//! one turn in the conversation's workspace, so every change to a conversation goes
//! through one consumer, in order, exactly once.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::RunWorkspace;

/// The chat thread a conversation lives in: where its messages come from and its replies,
/// acknowledgements and progress messages go.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ChatThread {
    /// `slack` or `discord`.
    pub platform: String,
    /// The channel id.
    pub channel: String,
    /// Slack's thread ts, or the Discord message the conversation replies to.
    pub thread: String,
}

/// `conversation.input`: something a person said in a conversation's thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConversationInput {
    pub conversation_id: Uuid,
    /// The message's number in the thread, from 1, given by ingest when it stored the
    /// message; a redelivered input carries the same number and changes nothing.
    pub seq: u64,
    /// The `[[people]]` id of who said it (only people who may converse get this far).
    pub person: String,
    pub said: Said,
}

/// What was said.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Said {
    /// Prose for the assistant: a turn.
    Message { text: String },
    /// `steer TEXT`: stop the running turn and run this next.
    Steer { text: String },
    /// `stop`: end the running turn.
    Stop,
    /// `status`: answered from the conversation's state.
    Status,
    /// `ask ROLE TEXT`: another of the project's roles, on the same workspace.
    Ask { role: String, text: String },
    /// `deliver [draft]`: the workspace committed and its pull requests opened or updated.
    Deliver { draft: bool },
    /// `take over RUN`: the run (of the conversation's requirement, paused by ingest in the
    /// same transaction) gives its workspace to the conversation.
    TakeOver { run: Uuid },
    /// A pull request the conversation delivered asks for more work: a turn whose text is
    /// the feedback, after which the work is pushed to the same branch and the pull
    /// request answered.
    Feedback { feedback: crate::Feedback },
}

/// `turn.dispatch`: a job for a runner on a conversation's workspace. It carries what the
/// runner needs, so runners never read the scheduler's tables.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnDispatch {
    pub conversation_id: Uuid,
    /// The requirement the conversation belongs to: its title and body are the work's
    /// context, its usage gathers the turns'.
    pub requirement_id: Uuid,
    /// Where the progress message goes.
    pub thread: ChatThread,
    /// The project's repositories, checked out when the workspace is first created.
    pub workspace: RunWorkspace,
    /// A run that gave the conversation its workspace (it ended, or was taken over): the
    /// conversation's workspace becomes a copy of the run's before the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adopt_run: Option<Uuid>,
    pub task: TurnTask,
}

/// What the runner does with the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "task", rename_all = "snake_case")]
pub enum TurnTask {
    /// One attempt of a turn: the workspace created (or restored from its checkpoint)
    /// first, checkpointed after. Reported by `turn.progress` and `turn.finished`.
    Turn {
        seq: u64,
        /// 1, or 2 after an interruption.
        attempt: u32,
        /// The role whose CLI runs: the `[assistant]` role, or the role `ask` named.
        role: String,
        /// The message.
        text: String,
        /// The CLI session to continue (`--resume`, `exec resume`, `{transcript_file}`);
        /// `None` starts one. Always `None` for `ask`, whose role has a session of its own.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resume_session: Option<String>,
        /// An `ask`: the answer is another role's, and the assistant's session is left
        /// alone.
        #[serde(default)]
        ask: bool,
        /// Wall-clock limit in seconds.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_secs: Option<u64>,
        /// A turn of feedback from a pull request: once the CLI has replied, the workspace
        /// is delivered (as `deliver` does) and the pull request answered.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        feedback: Option<Box<crate::Feedback>>,
    },
    /// A `deliver` turn's attempt: every writable repository of the workspace committed and
    /// pushed to its work branch, and its pull request opened (as a draft when asked) or
    /// updated, each linking the others and recorded with the requirement, as a `deliver`
    /// node does. Reported by `turn.finished`, the reply naming the pull requests.
    Deliver { seq: u64, attempt: u32, draft: bool },
    /// The workspace has been idle for `idle_timeout`: checkpoint it, then free its disk.
    /// When the checkpoint fails, the workspace is kept as it is.
    Release { timer: u64 },
}

/// `turn.progress`: a runner began a turn's attempt, or the attempt's CLI named its session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnProgress {
    pub conversation_id: Uuid,
    pub seq: u64,
    pub attempt: u32,
    #[serde(flatten)]
    pub kind: TurnProgressKind,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "progress", rename_all = "snake_case")]
pub enum TurnProgressKind {
    Started,
    /// The CLI's session id (Claude Code's `init`, Codex's `thread.started`), kept at once
    /// so an interrupted turn resumes it.
    Session {
        session_id: String,
    },
}

/// `turn.finished`: how one attempt of a turn ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnFinished {
    pub conversation_id: Uuid,
    pub seq: u64,
    pub attempt: u32,
    #[serde(flatten)]
    pub outcome: TurnOutcome,
    /// The CLI session the attempt ran in, when it named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Wall-clock duration in milliseconds.
    pub duration_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum TurnOutcome {
    /// The CLI's final text, to post in the thread.
    Replied { reply: String },
    /// Crashed, timed out, was stopped, or could not start; `reason` is shown in the thread.
    Failed { reason: String },
    /// A runner found the attempt begun before: its runner died mid-way.
    Interrupted,
}

/// `turn.cancel`: stop a running attempt (`stop`, `steer`). Every runner hears it; the one
/// running the attempt stops it and reports it finished.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnCancel {
    pub conversation_id: Uuid,
    pub seq: u64,
    pub attempt: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_and_reports_read_back_as_written() {
        let job = TurnDispatch {
            conversation_id: Uuid::nil(),
            requirement_id: Uuid::nil(),
            thread: ChatThread {
                platform: "slack".into(),
                channel: "C1".into(),
                thread: "1.2".into(),
            },
            workspace: RunWorkspace {
                project: "api".into(),
                repositories: vec![],
                settings: Default::default(),
            },
            adopt_run: None,
            task: TurnTask::Turn {
                seq: 3,
                attempt: 1,
                role: "assistant".into(),
                text: "fix it".into(),
                resume_session: Some("s-1".into()),
                ask: false,
                timeout_secs: None,
                feedback: None,
            },
        };
        let wire = serde_json::to_value(&job).unwrap();
        assert_eq!(wire["task"]["task"], "turn");
        assert_eq!(serde_json::from_value::<TurnDispatch>(wire).unwrap(), job);
        let finished = TurnFinished {
            conversation_id: Uuid::nil(),
            seq: 3,
            attempt: 1,
            outcome: TurnOutcome::Replied {
                reply: "done".into(),
            },
            session_id: None,
            duration_ms: 5,
        };
        let wire = serde_json::to_value(&finished).unwrap();
        assert_eq!(wire["outcome"], "replied");
        assert_eq!(
            serde_json::from_value::<TurnFinished>(wire).unwrap(),
            finished
        );
    }
}
