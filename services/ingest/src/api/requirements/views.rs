//! Requirements as the API shows them: what was asked for, where, and what was done for it.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::views::{RunSummary, UsageTotal};

/// A requirement in a list.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct RequirementSummary {
    pub id: Uuid,
    /// Unique per source: `github:owner/name#12`, `slack:CHANNEL:TS`, `discord:CHANNEL:ID`.
    pub key: String,
    /// Where it came from: `{"kind": "github", "repo", "number", "pull_request"}`, `slack`
    /// (`channel`, `thread_ts`), `discord` (`channel`, `message_id`), `api` or `schedule`.
    #[schema(value_type = Object)]
    pub source: serde_json::Value,
    pub title: String,
    /// Link back to it, when its source has one.
    pub url: Option<String>,
    /// open, closed or delivered.
    pub state: String,
    /// Who asked: a person's id, or the source's handle for someone Gatehouse does not know.
    pub requested_by: String,
    /// The project it belongs to: its source's (a project's repository or channel), or
    /// that of its first run on a project.
    pub project: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A requirement with its runs, pull requests and what its agents used.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct RequirementDetail {
    pub requirement: RequirementSummary,
    /// Its text as the source has it.
    pub body: String,
    /// The runs that worked on it, newest first.
    pub runs: Vec<RunSummary>,
    /// The pull requests its deliveries opened. It is delivered when all are merged.
    pub pull_requests: Vec<PullRequestView>,
    /// Work its deliveries merged straight into a branch (`mode: direct`).
    pub direct_merges: Vec<DirectMergeView>,
    /// Work branches its deliveries pushed to repositories that are not on GitHub: to a
    /// git remote alone, or to a forge with the merge request opened from them.
    #[serde(default)]
    pub pushed_branches: Vec<PushedBranchView>,
    /// What happened on its pull requests after they were opened (reviews, comments,
    /// checks, pushes) and what Gatehouse did about each, oldest first (the latest 200).
    #[serde(default)]
    pub pull_request_events: Vec<PullEventView>,
    /// The chat conversations that worked on it.
    pub conversations: Vec<crate::views::ConversationSummary>,
    /// Tokens and cost over all its runs and conversations.
    pub usage: UsageTotal,
}

/// A pull request a delivery opened.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PullRequestView {
    /// `owner/name`.
    pub repo: String,
    pub number: i64,
    /// The branch it is opened from.
    pub branch: String,
    /// The run that delivered into it last.
    pub run_id: Uuid,
    /// open, merged or closed (unmerged).
    pub state: String,
    pub opened_at: DateTime<Utc>,
    /// The head commit Gatehouse last pushed to it; empty before one was recorded.
    #[serde(default)]
    pub head: String,
    /// The checks on that head as last heard: empty, `pending`, `success` or `failure`.
    #[serde(default)]
    pub checks: String,
}

/// An event on one of a requirement's pull requests, and what became of it.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PullEventView {
    /// `owner/name`.
    pub repo: String,
    pub number: i64,
    /// `event.action`, e.g. `pull_request_review.submitted`.
    pub event: String,
    /// The GitHub login that caused it; empty for CI.
    pub actor: String,
    /// What happened.
    pub summary: String,
    /// What Gatehouse did: the work it started, or why it started none.
    pub outcome: String,
    /// The webhook delivery it came in.
    pub delivery: String,
    pub at: DateTime<Utc>,
}

/// Work a delivery merged into a branch itself.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct DirectMergeView {
    /// `owner/name`.
    pub repo: String,
    /// The branch merged into.
    pub branch: String,
    /// The merge commit pushed.
    pub commit: String,
    pub run_id: Uuid,
    /// The gate whose approval accepted the work; none when no gate came before.
    pub approved_by: Option<String>,
    pub merged_at: DateTime<Utc>,
}

/// A work branch a delivery pushed to a repository that is not on GitHub.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PushedBranchView {
    /// The repository's name in its project.
    pub repo: String,
    pub branch: String,
    /// The commit pushed.
    pub commit: String,
    /// The remote pushed to (no user name).
    pub remote: String,
    /// The `[forges.NAME]` the merge request (pull request) is on; none for a git remote
    /// alone, where someone merges the branch.
    #[serde(default)]
    pub forge: Option<String>,
    /// Its number there (`!N` on GitLab, `#N` on Gitea).
    #[serde(default)]
    pub request: Option<i64>,
    /// Its page.
    #[serde(default)]
    pub request_url: Option<String>,
    /// The run (or conversation) that pushed it.
    pub run_id: Uuid,
    pub pushed_at: DateTime<Utc>,
}

impl PushedBranchView {
    /// `pushed branch X at SHA to URL`, and the merge request opened from it.
    pub fn describe(&self) -> String {
        let short = self.commit.get(..12).unwrap_or(&self.commit);
        let mut text = format!(
            "pushed branch {} at {short} to {}",
            self.branch, self.remote
        );
        if let (Some(forge), Some(number)) = (&self.forge, self.request) {
            text.push_str(&format!(" · #{number} on the forge `{forge}`"));
            if let Some(url) = &self.request_url {
                text.push_str(&format!(" ({url})"));
            }
        }
        text
    }
}
