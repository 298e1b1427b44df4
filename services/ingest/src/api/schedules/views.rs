//! Bodies of `/schedules`.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

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
    /// The project its runs work on (all of its repositories).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
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
    /// The project its runs work on.
    pub project: Option<String>,
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
