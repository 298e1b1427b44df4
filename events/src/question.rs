//! An agent asking a person mid-run: `question.asked` when its attempt starts waiting in a
//! tool call (`request_approval`, or a tool call its role's permissions say to ask about),
//! `question.answered` when a person answers it (or it expires, or its run ends), so the
//! notifier can post the card and then show the answer on it.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::Actor;

/// Whose attempt asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "owner", rename_all = "snake_case")]
pub enum QuestionOwner {
    /// An agent node of an SOP run.
    Node { run_id: Uuid, node: String },
    /// A turn of a conversation.
    Turn { conversation_id: Uuid, seq: i64 },
}

/// What made the agent ask. The store keeps it in a text column, under the same names as
/// on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(
    feature = "sqlx",
    derive(sqlx::Type),
    sqlx(type_name = "text", rename_all = "snake_case")
)]
pub enum QuestionKind {
    /// The agent called `request_approval`.
    Approval,
    /// A tool call its role's permissions say to ask about ("allow once / deny").
    Permission,
}

impl QuestionKind {
    /// The wire name, as the store's column and the API's views hold it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Approval => "approval",
            Self::Permission => "permission",
        }
    }
}

/// `question.asked`: an agent waits for a person's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionAsked {
    /// The question's id, which its answer names.
    pub question_id: Uuid,
    #[serde(flatten)]
    pub owner: QuestionOwner,
    /// The attempt that asked.
    pub attempt: u32,
    pub kind: QuestionKind,
    /// As the agent wrote it (untrusted text: shown, never interpreted).
    pub question: String,
    /// What it showed with the question, if anything (untrusted, bounded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
}

/// How a question was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QuestionAnswer {
    /// Yes: the agent goes on (the tool call runs, for a permission).
    Approved,
    /// No: the agent is told the comment.
    Denied,
    /// Nobody answered in time.
    Expired,
    /// The run or conversation ended while the question waited.
    Withdrawn,
}

impl QuestionAnswer {
    /// The wire name, as the store keeps it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Approved => "approved",
            Self::Denied => "denied",
            Self::Expired => "expired",
            Self::Withdrawn => "withdrawn",
        }
    }
}

/// `question.answered`: the question is closed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionAnswered {
    pub question_id: Uuid,
    #[serde(flatten)]
    pub owner: QuestionOwner,
    pub answer: QuestionAnswer,
    /// The person's comment, or why it expired or was withdrawn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// Who answered; `None` when nobody did (expired, withdrawn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<Actor>,
}
