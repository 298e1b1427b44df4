//! `[[schedules]]`: cron schedules in the configuration, which it owns (the API cannot
//! change them).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// `[[schedules]]`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleConfig {
    /// Unique name.
    pub name: String,
    /// Cron expression (5 or 6 fields, or @hourly and friends).
    pub cron: String,
    /// IANA time zone.
    #[serde(default = "default_timezone")]
    pub timezone: String,
    /// SOP to run; or leave it out and give `role` and `prompt` (the agent shorthand).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub sop: String,
    /// Agent shorthand: the role of the one-node SOP the schedule runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// Agent shorthand: its prompt template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// Parameters for the SOP.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub params: BTreeMap<String, String>,
    /// Overlap policy: skip, buffer_one, buffer_all, cancel_other or allow_all.
    #[serde(default = "default_overlap")]
    pub overlap: String,
    /// How far back missed fires are still run after downtime.
    #[serde(default = "default_catchup", with = "humantime_serde")]
    pub catchup_window: Duration,
    /// Each fire starts up to this much after its cron time (spreads schedules that share
    /// an expression).
    #[serde(default, with = "humantime_serde")]
    pub jitter: Duration,
    /// No fire before this RFC 3339 time.
    pub start: Option<String>,
    /// No fire after this RFC 3339 time.
    pub end: Option<String>,
    /// The person its runs answer to (the requester rule of gates holds them to it); the
    /// bootstrap administrator, `admin`, when not given.
    #[serde(default = "default_owner")]
    pub owner: String,
    /// The project its runs work on (all of the project's repositories).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// What one run it starts may spend at the model gateway (`"$1"`, `"100k tokens"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<gatehouse_agent::Limit>,
}

fn default_owner() -> String {
    "admin".into()
}

fn default_overlap() -> String {
    "skip".into()
}

fn default_timezone() -> String {
    "UTC".into()
}

fn default_catchup() -> Duration {
    Duration::from_secs(3600)
}
