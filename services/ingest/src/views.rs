//! Request and response bodies; their schemas go into the OpenAPI document.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

pub use crate::rights::Scope;

/// `POST /runs`
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct StartRun {
    /// SOP name.
    pub sop: String,
    /// Parameters.
    #[serde(default)]
    pub params: BTreeMap<String, String>,
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
    /// queued, running, waiting, paused, succeeded, failed or cancelled.
    pub status: String,
    /// Who asked for it.
    pub requested_by: Option<String>,
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
    /// Tokens and cost of its agent attempts, and of its requirement's runs.
    pub usage: UsageView,
}

/// What a run's agents used and cost.
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
pub struct UsageView {
    /// One line per agent attempt and model.
    pub attempts: Vec<AttemptUsage>,
    /// This run's sum.
    pub run: UsageTotal,
    /// The sum over every run of the run's requirement (when it has one).
    pub requirement: Option<UsageTotal>,
}

/// One agent attempt's use of one model.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct AttemptUsage {
    /// Node.
    pub node: String,
    /// Attempt.
    pub attempt: i32,
    /// Model, as the CLI named it.
    pub model: String,
    /// Input tokens, not counting cache reads.
    pub input_tokens: i64,
    /// Output tokens.
    pub output_tokens: i64,
    /// Input tokens read from the prompt cache.
    pub cache_read_tokens: i64,
    /// Input tokens written to the prompt cache.
    pub cache_write_tokens: i64,
    /// USD, from the configured price table; absent when the model has no price.
    pub cost_usd: Option<f64>,
}

/// A sum of usage.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct UsageTotal {
    /// Input tokens, not counting cache reads.
    pub input_tokens: i64,
    /// Output tokens.
    pub output_tokens: i64,
    /// Input tokens read from the prompt cache.
    pub cache_read_tokens: i64,
    /// Input tokens written to the prompt cache.
    pub cache_write_tokens: i64,
    /// USD of the priced models.
    pub cost_usd: f64,
    /// Models used without a price: their tokens are counted, their cost is not.
    pub unpriced_models: Vec<String>,
}

impl UsageTotal {
    /// The sum of `rows`.
    pub fn of(rows: &[gatehouse_store::UsageRow]) -> Self {
        let mut total = Self::default();
        for row in rows {
            total.input_tokens += row.input_tokens;
            total.output_tokens += row.output_tokens;
            total.cache_read_tokens += row.cache_read_tokens;
            total.cache_write_tokens += row.cache_write_tokens;
            match row.cost_usd {
                Some(cost) => total.cost_usd += cost,
                None if !total.unpriced_models.contains(&row.model) => {
                    total.unpriced_models.push(row.model.clone())
                }
                None => {}
            }
        }
        total
    }
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

/// `POST /runs/{id}/retry`
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Retry {
    /// The node to run again.
    pub node: String,
}

/// `POST /tokens`
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
pub struct CreateToken {
    /// The person it acts for; the caller when omitted. Only an administrator creates
    /// tokens for others.
    #[serde(default)]
    pub person: Option<String>,
    /// A unique name (letters, digits, `.`, `_`, `-`); the person's id, or that with a
    /// number, when omitted.
    #[serde(default)]
    pub name: Option<String>,
    /// What it may do; `read`, `run` and `decide` (as far as the caller's token has them)
    /// when omitted. A token gives only scopes its creator's token has.
    #[serde(default)]
    pub scopes: Option<Vec<Scope>>,
    /// It stops working this long after creation (`30d`, `12h`); never when omitted.
    #[serde(default)]
    pub expires_in: Option<String>,
}

/// A new token, shown once.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TokenCreated {
    /// Its name.
    pub name: String,
    /// The person it acts for.
    pub person: String,
    /// What it may do.
    pub scopes: Vec<Scope>,
    /// When it stops working.
    pub expires_at: Option<DateTime<Utc>>,
    /// The token; only its hash is stored.
    pub token: String,
}

/// A token, without its secret.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TokenView {
    /// Its name.
    pub name: String,
    /// The person it acts for.
    pub person: String,
    /// Who created it.
    pub created_by: String,
    /// What it may do.
    pub scopes: Vec<Scope>,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// When it stops working.
    pub expires_at: Option<DateTime<Utc>>,
}

/// `POST /people`
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
pub struct AddPerson {
    /// Gatehouse's id for them (letters, digits, `.`, `_`, `-`).
    pub id: String,
    /// GitHub login.
    #[serde(default)]
    pub github: Option<String>,
    /// Slack user id.
    #[serde(default)]
    pub slack: Option<String>,
    /// Discord user id.
    #[serde(default)]
    pub discord: Option<String>,
    /// Groups (gates name them as `group:<name>`; `admins` administer Gatehouse).
    #[serde(default)]
    pub groups: Vec<String>,
}

/// A person known to Gatehouse.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PersonView {
    /// Id.
    pub id: String,
    /// GitHub login.
    pub github: Option<String>,
    /// Slack user id.
    pub slack: Option<String>,
    /// Discord user id.
    pub discord: Option<String>,
    /// Groups.
    pub groups: Vec<String>,
    /// `config` (the configuration's `[[people]]`, or the built-in `admin`) or `api`.
    pub source: String,
}

/// An SOP that can be started.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct SopView {
    /// Name.
    pub name: String,
    /// Title.
    pub title: String,
    /// Version.
    pub version: String,
    /// Where it came from.
    pub source: String,
    /// Why it cannot start now, if it cannot.
    pub unavailable: Option<String>,
}

/// `POST /schedules`
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CreateSchedule {
    /// Unique name: letters, digits, `.`, `_` and `-`.
    pub name: String,
    /// Cron expression: 5 fields, 6 with seconds first, or @hourly, @daily, @weekly,
    /// @monthly, @yearly.
    pub cron: String,
    /// IANA time zone (default UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    /// SOP to run.
    pub sop: String,
    /// Parameters for the SOP.
    #[serde(default)]
    pub params: BTreeMap<String, String>,
    /// skip (default), buffer_one, buffer_all, cancel_other or allow_all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlap: Option<String>,
    /// How late a missed fire may still start, e.g. `1h` (the default) or `0s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catchup_window: Option<String>,
    /// Each fire starts up to this much after its cron time, e.g. `5m` (default none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<String>,
    /// No fire before this RFC 3339 time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<String>,
    /// No fire after this RFC 3339 time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<String>,
}

/// A schedule with its state.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ScheduleView {
    /// Name.
    pub name: String,
    /// Cron expression.
    pub cron: String,
    /// IANA time zone.
    pub timezone: String,
    /// SOP it runs.
    pub sop: String,
    /// Parameters.
    pub params: BTreeMap<String, String>,
    /// Overlap policy.
    pub overlap: String,
    /// Catch-up window, e.g. `1h`.
    pub catchup_window: String,
    /// Jitter, e.g. `5m` (`0s` for none).
    pub jitter: String,
    /// No fire before this.
    pub start: Option<DateTime<Utc>>,
    /// No fire after this.
    pub end: Option<DateTime<Utc>>,
    /// Paused schedules do not fire.
    pub paused: bool,
    /// Why it was paused.
    pub pause_note: Option<String>,
    /// `config` (the configuration file) or `api`.
    pub source: String,
    /// The person its runs answer to: who created or last changed it.
    pub owner: String,
    /// The next cron time, with the zone's offset; none when paused or ended.
    pub next_fire: Option<String>,
    /// The most recent fire.
    pub last_fire: Option<FireView>,
    /// Fires recorded.
    pub fires: i64,
    /// Fires skipped (missed after downtime, or overlapping a running run).
    pub skipped: i64,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Changed.
    pub updated_at: DateTime<Utc>,
}

/// A schedule with its recent fires and the next fire times.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ScheduleDetail {
    /// The schedule.
    #[serde(flatten)]
    pub schedule: ScheduleView,
    /// The next cron times, with the zone's offset.
    pub upcoming: Vec<String>,
    /// The latest fires, newest first.
    pub recent: Vec<FireView>,
}

/// One fire of a schedule.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct FireView {
    /// The cron time (or the moment of a manual trigger).
    pub scheduled_time: DateTime<Utc>,
    /// cron, manual or backfill.
    pub kind: String,
    /// requested, started, buffered, skipped_missed or skipped_overlap.
    pub outcome: String,
    /// The run it started.
    pub run_id: Option<Uuid>,
    /// That run's status.
    pub run_status: Option<String>,
    /// When it was decided.
    pub fired_at: DateTime<Utc>,
    /// How long after it was due it was decided, in milliseconds.
    pub lateness_ms: i64,
    /// Who triggered or backfilled it by hand.
    pub requested_by: Option<String>,
}

/// `POST /schedules/{name}/pause`
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
pub struct PauseSchedule {
    /// Why, for whoever looks next.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// `POST /schedules/{name}/backfill`
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Backfill {
    /// From this RFC 3339 time (inclusive).
    pub from: String,
    /// To this RFC 3339 time (inclusive), not in the future.
    pub to: String,
}

/// What a backfill queued.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct BackfillResult {
    /// Cron times queued to run, one after another, oldest first.
    pub queued: Vec<DateTime<Utc>>,
    /// Cron times in the range that had already started or were waiting.
    pub already: usize,
}
