//! `/conversations`: a chat thread's conversation with the assistant, its turns and what
//! each attempt of a turn did.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::views::{ConnectionView, PullRequestView, ToolCallView, UsageTotal};

/// A conversation in a list.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ConversationSummary {
    pub id: Uuid,
    pub project: String,
    pub requirement_id: Uuid,
    /// `slack`, `discord`, or `github` for a conversation on an issue.
    pub platform: String,
    /// The chat channel's id; on GitHub the repository (`owner/name`).
    pub channel: String,
    /// Slack's thread ts, the Discord message it replies to, or the number.
    pub thread: String,
    /// Who opened it.
    pub started_by: String,
    /// new, working (a turn runs), waiting (an SOP run holds the workspace), idle or
    /// released (the workspace checkpointed and its disk freed).
    pub activity: String,
    /// Turns so far, and how many wait in the queue.
    pub turn_count: usize,
    pub queued: usize,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A conversation with its turns, workspace, pull requests and usage.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ConversationDetail {
    #[serde(flatten)]
    pub conversation: ConversationSummary,
    /// The CLI session the next turn continues.
    pub session_id: Option<String>,
    /// The project's repositories the workspace checks out.
    pub repositories: Vec<String>,
    pub turns: Vec<TurnView>,
    /// The requirement's pull requests (from the conversation or its runs).
    pub pull_requests: Vec<PullRequestView>,
    /// What the turns used, all attempts together.
    pub usage: UsageTotal,
}

/// One message to the assistant (or `ask ROLE`) and what became of it.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TurnView {
    /// Its number in the thread.
    pub seq: u64,
    /// The message, as sent (untrusted).
    pub text: String,
    pub person: String,
    /// queued, running, replied, failed or stopped.
    pub status: String,
    /// It came as `steer`.
    pub steer: bool,
    /// assistant, ask (another role answered) or deliver (pull requests opened).
    pub kind: String,
    /// The role that answers an `ask`.
    pub role: Option<String>,
    /// A `deliver draft`.
    pub draft: bool,
    pub failure: Option<String>,
    pub attempts: Vec<TurnAttemptView>,
}

/// One attempt of a turn, as the runner recorded it.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TurnAttemptView {
    pub attempt: u32,
    pub role: String,
    /// running, replied, failed or interrupted.
    pub status: String,
    pub session_id: Option<String>,
    /// The CLI's final text, as posted in the thread (untrusted).
    pub reply: Option<String>,
    pub failure: Option<String>,
    pub started_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    /// The whole attempt, and the CLI's own part of it.
    pub duration_ms: Option<i64>,
    pub cli_ms: Option<i64>,
    pub tools: Vec<ToolCallView>,
    /// Its sandbox's connections through the egress proxy, allowed and refused, in the
    /// order they started (at most 1000 are kept per attempt).
    pub connections: Vec<ConnectionView>,
    pub usage: UsageTotal,
}

/// `POST /conversations/{id}/stop` accepted: the thread is answered.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct StopAccepted {
    pub conversation_id: Uuid,
    /// The number the stop was given in the thread.
    pub seq: u64,
}
