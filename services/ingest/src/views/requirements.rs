//! Requirements as the API shows them: what was asked for, where, and what was done for it.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::{RunSummary, UsageTotal};

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
    /// The pull requests its deliveries opened.
    pub pull_requests: Vec<PullRequestView>,
    /// Tokens and cost over all its runs.
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
    pub opened_at: DateTime<Utc>,
}
