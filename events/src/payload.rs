//! Typed payloads, one struct per event type.
//!
//! Fields are added, never renamed: consumers ignore fields they do not know, so an older
//! service keeps working next to a newer one. Breaking changes bump [`crate::SCHEMA_VERSION`].

use std::collections::BTreeMap;
use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::{Actor, Artifact, GateStatus, NodeStatus, RunStatus};

/// Where a requirement came from, so replies and status go back to the same place.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RequirementSource {
    /// A GitHub issue or pull request.
    Github {
        /// `owner/name`.
        repo: String,
        /// Issue or pull request number.
        number: u64,
        /// Whether it is a pull request (commands and delivery differ).
        #[serde(default)]
        pull_request: bool,
    },
    /// A Slack message thread.
    Slack {
        /// Channel id.
        channel: String,
        /// Timestamp of the thread's root message.
        thread_ts: String,
    },
    /// A Discord message thread.
    Discord {
        /// Channel id.
        channel: String,
        /// Id of the message that started it.
        message_id: String,
    },
    /// Created through the HTTP API or CLI.
    Api,
    /// Created by a schedule firing.
    Schedule { schedule: String },
}

/// Lifecycle of a requirement as its source reports it. The store keeps it in a text
/// column, under the same names as on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(
    feature = "sqlx",
    derive(sqlx::Type),
    sqlx(type_name = "text", rename_all = "snake_case")
)]
pub enum RequirementState {
    /// Open and workable.
    Open,
    /// Closed without delivery.
    Closed,
    /// Delivered (its pull request merged).
    Delivered,
}

impl RequirementState {
    /// The wire name (`open`, `closed`, `delivered`), as stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Closed => "closed",
            Self::Delivered => "delivered",
        }
    }
}

impl fmt::Display for RequirementState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A state equals its wire name, so tests can compare with the text.
impl PartialEq<&str> for RequirementState {
    fn eq(&self, name: &&str) -> bool {
        self.as_str() == *name
    }
}

/// `requirement.created`: an issue, PR or chat message became a requirement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequirementCreated {
    /// Gatehouse's id for the requirement.
    pub requirement_id: Uuid,
    pub source: RequirementSource,
    /// One-line title.
    pub title: String,
    /// Full text (issue body, chat message).
    #[serde(default)]
    pub body: String,
    /// Link back to the source, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    pub requested_by: Actor,
}

/// `requirement.updated`: title, body or state changed at the source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequirementUpdated {
    pub requirement_id: Uuid,
    /// New title, if it changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// New body, if it changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    pub state: RequirementState,
}

/// The schedule occurrence that caused a run, so runs link back to their schedule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduleFire {
    pub schedule: String,
    /// The cron time this fire belongs to (not when it actually fired).
    pub scheduled_time: DateTime<Utc>,
    /// The schedule's owner when it fired (who created or last changed it): the run's
    /// gates hold them to the requester rule, whoever triggered the fire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
}

/// `run.requested`: someone or something asked for an SOP to run.
///
/// The run id is chosen by the requester so a redelivered request creates the run once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunRequested {
    /// Id the new run will have.
    pub run_id: Uuid,
    pub sop: String,
    /// Parameters given by the requester.
    #[serde(default)]
    pub params: BTreeMap<String, String>,
    /// The requirement the run works on, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requirement_id: Option<Uuid>,
    pub requested_by: Actor,
    /// Set when a schedule fired it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<ScheduleFire>,
    /// Set when a `sop` node of another run started it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<ParentNode>,
    /// The project and repositories it works on; none for a run without code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<crate::RunWorkspace>,
}

impl RunRequested {
    /// Who the run answers to, as its row records it: the person, or for someone not in
    /// `[[people]]`, their handle.
    pub fn requester(&self) -> String {
        self.requested_by
            .person
            .clone()
            .unwrap_or_else(|| self.requested_by.handle.clone())
    }
}

/// The node of a parent run that a child run belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParentNode {
    /// Parent run.
    pub run_id: Uuid,
    /// Its `sop` node.
    pub node: String,
    /// That node's attempt.
    pub attempt: u32,
}

/// What a person asks of an existing run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "command", rename_all = "snake_case")]
pub enum RunCommandKind {
    /// Stop dispatching new nodes.
    Pause,
    /// Undo a pause.
    Resume,
    /// Stop the run and everything in flight.
    Cancel,
    /// Run a node again, and everything after it.
    Retry {
        /// The node to start from.
        node: String,
    },
    /// A pull request the run delivered asks for more work: send the run back by its
    /// deliver node's rule, or queue it while the run is still working.
    Feedback { feedback: crate::Feedback },
}

/// `run.command`: pause, resume, cancel or retry a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunCommand {
    pub run_id: Uuid,
    #[serde(flatten)]
    pub command: RunCommandKind,
    /// Who asked.
    pub actor: Actor,
}

/// One node's state inside a [`RunUpdated`] snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeSnapshot {
    pub node: String,
    pub status: NodeStatus,
    /// Current attempt, starting at 1 once it has run.
    pub attempt: u32,
    /// How many times a reviewer sent work back to it.
    #[serde(default)]
    pub rework_count: u32,
}

/// `run.updated`: a full snapshot after every change, so a notifier that missed an update
/// still shows the truth with the next one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunUpdated {
    pub run_id: Uuid,
    pub sop: String,
    /// Content hash of the frozen SOP definition.
    pub sop_version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requirement_id: Option<Uuid>,
    pub status: RunStatus,
    /// Every node, in definition order.
    pub nodes: Vec<NodeSnapshot>,
    /// Monotonic per run; lets consumers drop out-of-order snapshots.
    pub revision: u64,
}

/// `gate.opened`: a gate waits for people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GateOpened {
    pub run_id: Uuid,
    pub node: String,
    /// Decisions are bound to this attempt.
    pub attempt: u32,
    /// Who may decide (`group:x` or person ids).
    pub approvers: Vec<String>,
    /// Distinct approvals needed.
    pub min_approvals: u32,
    /// Nodes a reviewer may send the work back to.
    #[serde(default)]
    pub send_back_targets: Vec<String>,
    /// Outputs under review.
    #[serde(default)]
    pub artifacts: Vec<Artifact>,
    /// When the gate expires, if it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<DateTime<Utc>>,
    /// For an agent node asking for its budget to be raised once: the refusal it met
    /// ("budget of project api reached: $20.00 today"). Approving raises that budget for
    /// the run by its own amount again and runs the node again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raise: Option<String>,
}

/// A reviewer's choice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum GateDecisionKind {
    /// Let the run continue.
    Approve,
    /// Rework from an earlier node.
    SendBack {
        /// The node to rework; must be one the gate lists.
        to: String,
    },
    /// Stop the run.
    Reject,
}

impl GateDecisionKind {
    /// The wire name (`approve`, `send_back`, `reject`), as stored in audit rows.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Approve => "approve",
            Self::SendBack { .. } => "send_back",
            Self::Reject => "reject",
        }
    }
}

/// `gate.decision`: a person decided a gate from chat, GitHub or the API.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GateDecision {
    pub run_id: Uuid,
    pub node: String,
    /// The attempt the decider saw; a stale attempt is refused.
    pub attempt: u32,
    #[serde(flatten)]
    pub decision: GateDecisionKind,
    /// The reviewer's comment, carried into rework.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// Who decided.
    pub actor: Actor,
    /// The decider's `[[people]]` groups when they decided: gates name approvers as
    /// `group:<name>`, and the scheduler checks against these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
}

/// `gate.closed`: the gate's outcome, so every card can show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GateClosed {
    pub run_id: Uuid,
    pub node: String,
    /// The attempt that closed.
    pub attempt: u32,
    pub status: GateStatus,
    /// Who decided (several with `min_approvals` > 1; empty on expiry or cancel).
    #[serde(default)]
    pub decided_by: Vec<Actor>,
    /// The deciding comment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// `node.progress`: a line of output or a stage change from a running node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeProgress {
    pub run_id: Uuid,
    pub node: String,
    pub attempt: u32,
    /// Human-readable progress.
    pub message: String,
}

/// How a node attempt ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum NodeOutcome {
    /// Exit code 0 (or the executor's success).
    Succeeded,
    /// The node failed; `reason` says why in one line.
    Failed { reason: String },
    /// The wall-clock limit was reached and the node was killed.
    TimedOut,
    /// The run was cancelled while the node ran.
    Cancelled,
}

/// `node.finished`: the result of one node attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeFinished {
    pub run_id: Uuid,
    pub node: String,
    pub attempt: u32,
    #[serde(flatten)]
    pub outcome: NodeOutcome,
    /// Process exit code, when there was a process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Wall-clock duration in milliseconds.
    pub duration_ms: u64,
    /// Files it produced.
    #[serde(default)]
    pub artifacts: Vec<Artifact>,
    /// The infrastructure lost the attempt (its runner was killed, its lease ran out, a
    /// shutdown outlasted its grace); the outcome is `failed` with the reason. The engine
    /// retries such an attempt apart from the node's own `retry`. A field rather than an
    /// outcome of its own, so a scheduler from before it reads the failure it always was.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// A budget refused the agent's model request (the outcome is `failed` with the
    /// refusal): the budget, as the runner names it ("project api"). With `on_budget: ask`
    /// the node asks a person to raise it rather than failing. A field, like
    /// `interrupted`, so a scheduler from before it reads the failure it always was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over_budget: Option<String>,
}

/// `card.posted`: an approval card now exists in a chat channel; recorded so it is never
/// posted twice and can be updated after the decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CardPosted {
    pub run_id: Uuid,
    pub node: String,
    /// The gate attempt the card belongs to.
    pub attempt: u32,
    /// `slack` or `discord`.
    pub channel: crate::Channel,
    /// Chat channel id.
    pub location: String,
    /// Message id (Slack `ts`, Discord message id).
    pub message_id: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scheduler from before the field reads an interruption as the failure it always
    /// was, and a runner from before it sends failures this one reads as not interrupted.
    #[test]
    fn interrupted_is_a_field_old_readers_and_writers_agree_on() {
        let old = r#"{"run_id":"00000000-0000-0000-0000-000000000000","node":"n","attempt":1,"outcome":"failed","reason":"lost","duration_ms":0}"#;
        let read: NodeFinished = serde_json::from_str(old).unwrap();
        assert!(!read.interrupted);
        let lost = NodeFinished {
            interrupted: true,
            ..read.clone()
        };
        let json = serde_json::to_value(&lost).unwrap();
        assert_eq!(json["interrupted"], true);
        assert_eq!(json["outcome"], "failed");
        assert!(
            serde_json::to_value(&read)
                .unwrap()
                .get("interrupted")
                .is_none()
        );
    }

    #[test]
    fn requirement_states_are_named_as_on_the_wire() {
        use RequirementState::*;
        for state in [Open, Closed, Delivered] {
            assert_eq!(serde_json::to_value(state).unwrap(), state.as_str());
        }
    }
}
