//! The closed set of event types and their typed payloads.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::conversation::{
    ConversationInput, TurnCancel, TurnDispatch, TurnFinished, TurnProgress,
};
use crate::payload::*;
use crate::question::{QuestionAnswered, QuestionAsked, QuestionOwner};
use crate::{Correlation, EventError, NodeDispatch};

/// Every event type DESIGN.md names. Its string form is the topic it is published under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    /// `requirement.created`
    RequirementCreated,
    /// `requirement.updated`
    RequirementUpdated,
    /// `run.requested`
    RunRequested,
    /// `run.command`
    RunCommand,
    /// `run.updated`
    RunUpdated,
    /// `gate.opened`
    GateOpened,
    /// `gate.decision`
    GateDecision,
    /// `gate.closed`
    GateClosed,
    /// `node.dispatch`
    NodeDispatch,
    /// `node.progress`
    NodeProgress,
    /// `node.finished`
    NodeFinished,
    /// `card.posted`
    CardPosted,
    /// `conversation.input`
    ConversationInput,
    /// `turn.dispatch`
    TurnDispatch,
    /// `turn.progress`
    TurnProgress,
    /// `turn.finished`
    TurnFinished,
    /// `turn.cancel`
    TurnCancel,
    /// `question.asked`
    QuestionAsked,
    /// `question.answered`
    QuestionAnswered,
}

impl EventType {
    /// All types, for exhaustive checks (stream coverage, docs).
    pub const ALL: [EventType; 19] = [
        Self::RequirementCreated,
        Self::RequirementUpdated,
        Self::RunRequested,
        Self::RunCommand,
        Self::RunUpdated,
        Self::GateOpened,
        Self::GateDecision,
        Self::GateClosed,
        Self::NodeDispatch,
        Self::NodeProgress,
        Self::NodeFinished,
        Self::CardPosted,
        Self::ConversationInput,
        Self::TurnDispatch,
        Self::TurnProgress,
        Self::TurnFinished,
        Self::TurnCancel,
        Self::QuestionAsked,
        Self::QuestionAnswered,
    ];

    /// The wire name, which is also the topic.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::RequirementCreated => "requirement.created",
            Self::RequirementUpdated => "requirement.updated",
            Self::RunRequested => "run.requested",
            Self::RunCommand => "run.command",
            Self::RunUpdated => "run.updated",
            Self::GateOpened => "gate.opened",
            Self::GateDecision => "gate.decision",
            Self::GateClosed => "gate.closed",
            Self::NodeDispatch => "node.dispatch",
            Self::NodeProgress => "node.progress",
            Self::NodeFinished => "node.finished",
            Self::CardPosted => "card.posted",
            Self::ConversationInput => "conversation.input",
            Self::TurnDispatch => "turn.dispatch",
            Self::TurnProgress => "turn.progress",
            Self::TurnFinished => "turn.finished",
            Self::TurnCancel => "turn.cancel",
            Self::QuestionAsked => "question.asked",
            Self::QuestionAnswered => "question.answered",
        }
    }
}

impl FromStr for EventType {
    type Err = EventError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| EventError::UnknownType(s.to_owned()))
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A decoded event: the type and its payload in one value, so a `match` is exhaustive.
///
/// Serialised adjacently (`{"type": ..., "payload": ...}`), which is exactly how the
/// envelope lays them out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", content = "payload")]
#[allow(missing_docs)]
pub enum Event {
    #[serde(rename = "requirement.created")]
    RequirementCreated(RequirementCreated),
    #[serde(rename = "requirement.updated")]
    RequirementUpdated(RequirementUpdated),
    #[serde(rename = "run.requested")]
    RunRequested(RunRequested),
    #[serde(rename = "run.command")]
    RunCommand(RunCommand),
    #[serde(rename = "run.updated")]
    RunUpdated(RunUpdated),
    #[serde(rename = "gate.opened")]
    GateOpened(GateOpened),
    #[serde(rename = "gate.decision")]
    GateDecision(GateDecision),
    #[serde(rename = "gate.closed")]
    GateClosed(GateClosed),
    #[serde(rename = "node.dispatch")]
    NodeDispatch(NodeDispatch),
    #[serde(rename = "node.progress")]
    NodeProgress(NodeProgress),
    #[serde(rename = "node.finished")]
    NodeFinished(NodeFinished),
    #[serde(rename = "card.posted")]
    CardPosted(CardPosted),
    #[serde(rename = "conversation.input")]
    ConversationInput(ConversationInput),
    #[serde(rename = "turn.dispatch")]
    TurnDispatch(TurnDispatch),
    #[serde(rename = "turn.progress")]
    TurnProgress(TurnProgress),
    #[serde(rename = "turn.finished")]
    TurnFinished(TurnFinished),
    #[serde(rename = "turn.cancel")]
    TurnCancel(TurnCancel),
    #[serde(rename = "question.asked")]
    QuestionAsked(QuestionAsked),
    #[serde(rename = "question.answered")]
    QuestionAnswered(QuestionAnswered),
}

impl Event {
    pub fn event_type(&self) -> EventType {
        match self {
            Self::RequirementCreated(_) => EventType::RequirementCreated,
            Self::RequirementUpdated(_) => EventType::RequirementUpdated,
            Self::RunRequested(_) => EventType::RunRequested,
            Self::RunCommand(_) => EventType::RunCommand,
            Self::RunUpdated(_) => EventType::RunUpdated,
            Self::GateOpened(_) => EventType::GateOpened,
            Self::GateDecision(_) => EventType::GateDecision,
            Self::GateClosed(_) => EventType::GateClosed,
            Self::NodeDispatch(_) => EventType::NodeDispatch,
            Self::NodeProgress(_) => EventType::NodeProgress,
            Self::NodeFinished(_) => EventType::NodeFinished,
            Self::CardPosted(_) => EventType::CardPosted,
            Self::ConversationInput(_) => EventType::ConversationInput,
            Self::TurnDispatch(_) => EventType::TurnDispatch,
            Self::TurnProgress(_) => EventType::TurnProgress,
            Self::TurnFinished(_) => EventType::TurnFinished,
            Self::TurnCancel(_) => EventType::TurnCancel,
            Self::QuestionAsked(_) => EventType::QuestionAsked,
            Self::QuestionAnswered(_) => EventType::QuestionAnswered,
        }
    }

    /// The correlation ids this payload implies, so producers cannot forget them.
    pub fn correlation(&self) -> Correlation {
        let run_node = |run_id: Uuid, node: &str, attempt: u32| Correlation {
            requirement_id: None,
            run_id: Some(run_id),
            node_id: Some(node.to_owned()),
            attempt: Some(attempt),
        };
        let question = |owner: &QuestionOwner, attempt: Option<u32>| match owner {
            QuestionOwner::Node { run_id, node } => Correlation {
                node_id: Some(node.clone()),
                attempt,
                ..Correlation::run(*run_id)
            },
            QuestionOwner::Turn { .. } => Correlation::default(),
        };
        match self {
            Self::RequirementCreated(e) => Correlation::requirement(e.requirement_id),
            Self::RequirementUpdated(e) => Correlation::requirement(e.requirement_id),
            Self::RunRequested(e) => Correlation {
                requirement_id: e.requirement_id,
                ..Correlation::run(e.run_id)
            },
            Self::RunCommand(e) => Correlation::run(e.run_id),
            Self::RunUpdated(e) => Correlation {
                requirement_id: e.requirement_id,
                ..Correlation::run(e.run_id)
            },
            Self::GateOpened(e) => run_node(e.run_id, &e.node, e.attempt),
            Self::GateDecision(e) => run_node(e.run_id, &e.node, e.attempt),
            Self::GateClosed(e) => run_node(e.run_id, &e.node, e.attempt),
            Self::NodeDispatch(e) => run_node(e.run_id, &e.node, e.attempt),
            Self::NodeProgress(e) => run_node(e.run_id, &e.node, e.attempt),
            Self::NodeFinished(e) => run_node(e.run_id, &e.node, e.attempt),
            Self::CardPosted(e) => run_node(e.run_id, &e.node, e.attempt),
            Self::TurnDispatch(e) => Correlation::requirement(e.requirement_id),
            Self::QuestionAsked(e) => question(&e.owner, Some(e.attempt)),
            Self::QuestionAnswered(e) => question(&e.owner, None),
            // A conversation is no run; its id travels in the payload.
            Self::ConversationInput(_)
            | Self::TurnProgress(_)
            | Self::TurnFinished(_)
            | Self::TurnCancel(_) => Correlation::default(),
        }
    }
}
