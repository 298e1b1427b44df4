//! Bodies of `/gates` and gate decisions.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

/// A gate waiting for people.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct GateView {
    /// `RUN/NODE`, as the CLI takes it.
    pub id: String,
    /// Run.
    pub run_id: Uuid,
    /// SOP.
    pub sop: String,
    /// Gate node.
    pub node: String,
    /// Gate attempt; decisions are bound to it.
    pub attempt: u32,
    /// Who may decide.
    pub approvers: Vec<String>,
    /// Approvals needed.
    pub min_approvals: u32,
    /// Approvals so far.
    pub approvals: Vec<String>,
    /// Nodes it may send work back to.
    pub send_back: Vec<String>,
    /// For an agent node asking for its budget to be raised once: the refusal it met.
    /// Approving raises that budget for the run by its own amount and runs the node again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raise: Option<String>,
    /// For a deliver node's gate: what keeps coming back on its pull request (failing
    /// checks, a conflict) after the work was sent back for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<String>,
}

/// What to do at a gate.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum DecisionKind {
    /// Let the run continue.
    Approve,
    /// Redo from `to`.
    SendBack,
    /// Stop the run.
    Reject,
}

/// `POST /runs/{id}/gates/{node}/decision`
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Decide {
    /// The decision.
    pub decision: DecisionKind,
    /// Send-back target.
    #[serde(default)]
    pub to: Option<String>,
    /// Comment (required for send back).
    #[serde(default)]
    pub comment: Option<String>,
    /// The gate attempt decided; the current one when omitted.
    #[serde(default)]
    pub attempt: Option<u32>,
}
