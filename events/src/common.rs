//! Small value types shared by several payloads.

use serde::{Deserialize, Serialize};

/// Where a person or system acted from; decides how their identity is resolved to a person.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Channel {
    /// A GitHub webhook (comment, label, review).
    Github,
    /// Slack Events API or interactivity.
    Slack,
    /// Discord gateway or interactions endpoint.
    Discord,
    /// The HTTP API or the CLI on top of it.
    Api,
    /// A cron schedule firing.
    Schedule,
    /// Gatehouse itself (recovery, expiry, retries).
    System,
}

/// Who caused an event: the configured person when known, and the raw handle always.
///
/// The raw handle is kept even when it resolves to a person so the audit trail shows exactly
/// which account acted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Actor {
    /// The channel the action came through.
    pub channel: Channel,
    /// The account on that channel (GitHub login, Slack user id, Discord user id, token name).
    pub handle: String,
    /// The `[[people]]` id this handle resolved to, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub person: Option<String>,
}

/// A file a node produced, identified by content so reruns and imports can be verified.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Artifact {
    /// Path relative to the node's artifact directory.
    pub name: String,
    /// Lower-case hex SHA-256 of the content.
    pub sha256: String,
    /// Size in bytes.
    pub size: u64,
}

/// Run statuses, exactly as DESIGN.md lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Accepted, no node dispatched yet.
    Queued,
    /// At least one node is executing or ready.
    Running,
    /// Blocked on a gate decision.
    Waiting,
    /// Paused by a person; nothing new is dispatched.
    Paused,
    /// Every node ended successfully or was skipped.
    Succeeded,
    /// A node failed beyond its retries, or a gate rejected.
    Failed,
    /// Cancelled by a person or a policy.
    Cancelled,
}

/// Node statuses, exactly as DESIGN.md lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeStatus {
    /// Waiting for its `needs`.
    Pending,
    /// All `needs` succeeded; about to be dispatched.
    Ready,
    /// Sent to the work queue, not yet picked up.
    Dispatched,
    /// A runner is executing it.
    Running,
    /// A gate waiting for people.
    WaitingApproval,
    /// Finished successfully (or approved, for a gate).
    Succeeded,
    /// Failed beyond its retries.
    Failed,
    /// Not run because the path to it was not taken.
    Skipped,
    /// Stopped because the run was cancelled.
    Cancelled,
}

/// Gate statuses, exactly as DESIGN.md lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GateStatus {
    /// Open for decisions.
    Waiting,
    /// Enough approvals were given.
    Approved,
    /// Sent back to an earlier node for rework.
    SentBack,
    /// Rejected; the run fails.
    Rejected,
    /// Nobody decided before `expires_in`.
    Expired,
    /// The run was cancelled while the gate was open.
    Cancelled,
}
