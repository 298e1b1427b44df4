//! `GET /reports/usage`: runs, their durations and what their agents used, grouped.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// One group of a usage report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct UsageGroup {
    /// The group's value: a person's id, an SOP's name, an SOP version or a model.
    pub key: String,
    /// Runs in the group created in the window (for `model`: the runs that used it).
    pub runs: u64,
    pub succeeded: u64,
    pub failed: u64,
    pub cancelled: u64,
    /// Summed over the finished runs: from creation to the last change.
    pub duration_ms: i64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub cache_read_tokens: i64,
    pub cache_write_tokens: i64,
    /// USD of the priced models.
    pub cost_usd: f64,
    /// Models used without a price: their tokens are counted, their cost is not.
    pub unpriced_models: Vec<String>,
}

/// A usage report: the window and its groups, largest cost first.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct UsageReport {
    /// What the groups are: person, sop, sop_version or model.
    pub by: String,
    /// Runs created at or after this.
    pub since: chrono::DateTime<chrono::Utc>,
    pub groups: Vec<UsageGroup>,
}
