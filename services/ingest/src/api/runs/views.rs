//! Bodies of `/runs` and `/sops`.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::views::{ConnectionView, UsageView};

/// `POST /runs`
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct StartRun {
    /// SOP name.
    pub sop: String,
    /// Parameters.
    #[serde(default)]
    pub params: BTreeMap<String, String>,
    /// The project it works on; found from `repositories` or `issue` when not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// `owner/name`s of the project's repositories to check out; all of them when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repositories: Vec<String>,
    /// The GitHub issue it works on, `owner/name#N`: the run is recorded against the issue's
    /// requirement, and its pull request closes the issue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issue: Option<String>,
}

/// A request was accepted and will be applied by the scheduler.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Accepted {
    /// The run it concerns.
    pub run_id: Uuid,
    /// The event that carries it.
    pub event_id: Uuid,
}

/// A run in a list.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct RunSummary {
    /// Run id.
    pub id: Uuid,
    /// SOP name.
    pub sop: String,
    /// SOP version (`sha256:...`).
    pub sop_version: String,
    /// requested, queued, running, waiting, paused, succeeded, failed or cancelled.
    pub status: String,
    /// Who asked for it.
    pub requested_by: Option<String>,
    /// The project it works on.
    pub project: Option<String>,
    /// The run whose `sop` node started it.
    pub parent_run: Option<Uuid>,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last changed.
    pub updated_at: DateTime<Utc>,
}

/// One node of a run.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct NodeView {
    /// Node id.
    pub node: String,
    /// script, gate, sop, agent or deliver.
    pub kind: String,
    /// Node status.
    pub status: String,
    /// Current attempt (0 before the first).
    pub attempt: u32,
    /// Times work was sent back to it.
    pub rework_count: u32,
    /// Why the last attempt failed.
    pub last_error: Option<String>,
    /// Duration of the latest finished attempt.
    pub duration_ms: Option<i64>,
}

/// One execution of a node.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct AttemptView {
    /// Node.
    pub node: String,
    /// Attempt number.
    pub attempt: i32,
    /// running, succeeded, failed, timed_out, cancelled or interrupted.
    pub status: String,
    /// Process exit code.
    pub exit_code: Option<i32>,
    /// Why it failed.
    pub error: Option<String>,
    /// Started.
    pub started_at: DateTime<Utc>,
    /// Ended.
    pub finished_at: Option<DateTime<Utc>>,
    /// Wall-clock duration.
    pub duration_ms: Option<i64>,
    /// The tools an agent attempt called, in the order they started (none for scripts).
    pub tools: Vec<ToolCallView>,
    /// Its sandbox's connections through the egress proxy, allowed and refused, in the
    /// order they started (at most 1000 are kept per attempt).
    pub connections: Vec<ConnectionView>,
}

/// A tool an agent called, read from its CLI's output. Untrusted: the agent wrote it.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ToolCallView {
    /// `Bash`, `Edit`, `command_execution`, `mcp__server__tool`, ...
    pub tool: String,
    /// One line of its input: the command, the path, the pattern.
    pub summary: String,
    /// Milliseconds after the attempt began.
    pub started_ms: i64,
    /// None when no result came before the attempt ended.
    pub duration_ms: Option<i64>,
    /// Whether the tool reported an error.
    pub failed: bool,
}

/// An artifact.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ArtifactView {
    /// Node.
    pub node: String,
    /// Attempt.
    pub attempt: i32,
    /// File name.
    pub name: String,
    /// Hex SHA-256.
    pub sha256: String,
    /// Bytes.
    pub size: i64,
}

/// An audited gate decision.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct DecisionView {
    /// Gate.
    pub node: String,
    /// Gate attempt.
    pub attempt: i32,
    /// approve, send_back or reject.
    pub decision: String,
    /// Send-back target.
    pub target: Option<String>,
    /// Comment.
    pub comment: Option<String>,
    /// Who.
    pub person: String,
    /// Where from.
    pub channel: String,
    /// applied, or why it was refused.
    pub outcome: String,
    /// When.
    pub decided_at: DateTime<Utc>,
}

/// A run with its nodes, artifacts and decisions.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct RunDetail {
    /// The summary.
    #[serde(flatten)]
    pub run: RunSummary,
    /// Parameters.
    pub params: BTreeMap<String, String>,
    /// Why it failed.
    pub failure: Option<String>,
    /// Nodes in definition order.
    pub nodes: Vec<NodeView>,
    /// Every attempt that ran (gates have none), in start order.
    pub attempts: Vec<AttemptView>,
    /// Artifacts.
    pub artifacts: Vec<ArtifactView>,
    /// Gate decisions.
    pub decisions: Vec<DecisionView>,
    /// The schedule fire that started it.
    pub schedule: Option<ScheduleLink>,
    /// The requirement it works on.
    pub requirement_id: Option<Uuid>,
    /// The repositories it checks out (of its project), as it was frozen with them.
    pub repositories: Vec<RunRepositoryView>,
    /// Tokens and cost of its agent attempts, and of its requirement's runs.
    pub usage: UsageView,
    /// The budgets its model requests counted against, spent beside each limit.
    #[serde(default)]
    pub budgets: Vec<crate::views::BudgetView>,
    /// The skills its agents got, as pinned at their first use in the run.
    #[serde(default)]
    pub skills: Vec<RunSkillView>,
    /// The pull requests it delivered into last (their state, head and checks), and the
    /// work it merged directly.
    #[serde(default)]
    pub pull_requests: Vec<crate::views::PullRequestView>,
    #[serde(default)]
    pub direct_merges: Vec<crate::views::DirectMergeView>,
    /// The work branches it pushed to repositories that are not on GitHub, and the merge
    /// requests opened from them.
    #[serde(default)]
    pub pushed_branches: Vec<crate::views::PushedBranchView>,
}

/// A skill a run pinned: every attempt of the run gets exactly these files.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct RunSkillView {
    /// Its name, the folder its CLI finds it in.
    pub name: String,
    /// Where it was read from: "directory /srv/skills/x", "git https://... @ 0123abcd",
    /// "repository owner/name (.gatehouse/skills)".
    pub source: String,
    /// The SHA-256 of its files (path and bytes, sorted by path): its content hash.
    pub digest: String,
    /// Its front matter's description.
    pub description: String,
}

/// A repository a run checks out.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct RunRepositoryView {
    /// `owner/name`.
    pub repo: String,
    /// auto, new, existing or read-only.
    pub mode: String,
    /// The base branch; the repository's default when absent.
    pub branch: Option<String>,
    /// The work branch of `new` and `existing`.
    pub branch_name: Option<String>,
}

/// Which schedule fire started a run.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ScheduleLink {
    /// Schedule name.
    pub name: String,
    /// The cron time (or the moment of a manual trigger).
    pub scheduled_time: DateTime<Utc>,
}

/// A line of output.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct LogView {
    /// Position; pass as `after` to follow.
    pub seq: i64,
    /// Node.
    pub node: String,
    /// Attempt.
    pub attempt: i32,
    /// stdout or stderr.
    pub stream: String,
    /// Text.
    pub line: String,
    /// When.
    pub at: DateTime<Utc>,
}

/// `POST /runs/{id}/retry`
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Retry {
    /// The node to run again.
    pub node: String,
}
