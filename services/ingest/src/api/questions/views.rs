//! Bodies of `/questions`: what agents asked people while they ran.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

/// A question an agent asked (`request_approval`, or a tool call its role's permissions
/// say to ask about). Its text and evidence are the agent's: shown, never interpreted.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct QuestionView {
    pub id: Uuid,
    /// `approval` (request_approval) or `permission` (a tool call to allow once or deny).
    pub kind: String,
    pub question: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    /// `open`, `approved`, `denied`, `expired` or `withdrawn`.
    pub status: String,
    /// The run whose node asked, for an SOP's agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<Uuid>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// The conversation whose turn asked, for the assistant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<Uuid>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<i64>,
    /// The attempt that asked last.
    pub attempt: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    pub asked_at: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<DateTime<Utc>>,
    /// Who answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    /// Where they answered (`slack`, `discord`, `api`, `console`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// Their comment, or why nobody answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<DateTime<Utc>>,
}

/// An answer to a question.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum AnswerKind {
    /// Yes: the agent goes on (the tool call runs).
    Approve,
    /// No: the agent is told the comment.
    Deny,
}

/// `POST /questions/{id}/answer`
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerQuestion {
    pub answer: AnswerKind,
    /// What the agent is told with the answer (why not, or what to mind).
    #[serde(default)]
    pub comment: Option<String>,
}

/// An answer taken.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Answered {
    pub question_id: Uuid,
    /// The event that carries it.
    pub event_id: Uuid,
}
