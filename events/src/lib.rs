//! Gatehouse's wire contracts.
//!
//! Every service speaks to every other only through the types in this crate: the
//! [`Envelope`] every message travels in, the typed [`Event`] payloads it can carry, the
//! subject ([`Topic`]) each event is published under, and the two JetStream streams
//! ([`StreamSpec`]) that hold them. Keeping these in one dependency-light crate lets the
//! services evolve independently while agreeing on the bytes on the wire.

mod common;
mod conversation;
mod dispatch;
mod envelope;
mod error;
mod event;
mod feedback;
mod payload;
mod question;
mod stream;
mod topic;
mod trace;
mod workspace;

pub use common::{Actor, Artifact, Channel, GateStatus, NodeStatus, RunStatus};
pub use conversation::{
    ChatThread, ConversationInput, Said, TurnCancel, TurnDispatch, TurnFinished, TurnOutcome,
    TurnProgress, TurnProgressKind, TurnTask,
};
pub use dispatch::{
    AgentSpec, DeliverMode, DeliverSpec, NodeDispatch, NodeSpec, SandboxWork, ScriptSpec,
};
pub use envelope::{Correlation, Envelope, SCHEMA_VERSION};
pub use error::EventError;
pub use event::{Event, EventType};
pub use feedback::{Feedback, FeedbackKind, PullRef};
pub use payload::{
    CardPosted, GateClosed, GateDecision, GateDecisionKind, GateOpened, NodeFinished, NodeOutcome,
    NodeProgress, NodeSnapshot, ParentNode, RequirementCreated, RequirementSource,
    RequirementState, RequirementUpdated, RunCommand, RunCommandKind, RunRequested, RunUpdated,
    ScheduleFire,
};
pub use question::{QuestionAnswer, QuestionAnswered, QuestionAsked, QuestionKind, QuestionOwner};
pub use stream::{StreamKind, StreamSpec};
pub use topic::{Prefix, topic_matches};
pub use trace::TraceParent;
pub use workspace::{History, RepositoryCheckout, RepositoryMode, RunWorkspace};
