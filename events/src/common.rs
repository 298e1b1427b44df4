//! Small value types shared by several payloads.

use std::fmt;

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

/// Run statuses, exactly as DESIGN.md lists them. The store keeps them in a text column,
/// under the same names as on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(
    feature = "sqlx",
    derive(sqlx::Type),
    sqlx(type_name = "text", rename_all = "snake_case")
)]
pub enum RunStatus {
    /// Accepted where it was asked for (the API, chat, a label); the scheduler has not
    /// created it yet. Shown so that a run is visible from the moment its id is given out.
    Requested,
    /// Created, no node dispatched yet.
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

impl Channel {
    /// The wire name (`github`, `slack`, ...), as stored in audit rows.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Github => "github",
            Self::Slack => "slack",
            Self::Discord => "discord",
            Self::Api => "api",
            Self::Schedule => "schedule",
            Self::System => "system",
        }
    }
}

impl RunStatus {
    /// The wire name (`waiting`, `succeeded`, ...), as stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Requested => "requested",
            Self::Queued => "queued",
            Self::Running => "running",
            Self::Waiting => "waiting",
            Self::Paused => "paused",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// Whether the run has ended (a retry can still restart it).
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed | Self::Cancelled)
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A status equals its wire name, so listings and tests can compare with the text.
impl PartialEq<&str> for RunStatus {
    fn eq(&self, name: &&str) -> bool {
        self.as_str() == *name
    }
}

impl NodeStatus {
    /// Every status, in the order a node may pass through them.
    pub const ALL: [NodeStatus; 9] = [
        Self::Pending,
        Self::Ready,
        Self::Dispatched,
        Self::Running,
        Self::WaitingApproval,
        Self::Succeeded,
        Self::Failed,
        Self::Skipped,
        Self::Cancelled,
    ];

    /// The wire name (`waiting_approval`, ...), as shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Ready => "ready",
            Self::Dispatched => "dispatched",
            Self::Running => "running",
            Self::WaitingApproval => "waiting_approval",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Skipped => "skipped",
            Self::Cancelled => "cancelled",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wire(value: impl Serialize) -> String {
        serde_json::to_value(value)
            .unwrap()
            .as_str()
            .unwrap()
            .to_owned()
    }

    #[test]
    fn names_match_the_wire_format() {
        use Channel::*;
        for c in [Github, Slack, Discord, Api, Schedule, System] {
            assert_eq!(c.as_str(), wire(c));
        }
        use RunStatus as R;
        for s in [
            R::Queued,
            R::Running,
            R::Waiting,
            R::Paused,
            R::Succeeded,
            R::Failed,
            R::Cancelled,
        ] {
            assert_eq!(s.as_str(), wire(s));
        }
        use NodeStatus as N;
        for s in [
            N::Pending,
            N::Ready,
            N::Dispatched,
            N::Running,
            N::WaitingApproval,
            N::Succeeded,
            N::Failed,
            N::Skipped,
            N::Cancelled,
        ] {
            assert_eq!(s.as_str(), wire(s));
        }
    }
}
