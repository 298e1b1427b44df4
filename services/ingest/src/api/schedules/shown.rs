//! How a stored schedule is shown: its timing, next fire, last fire and counts.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use gatehouse_schedule::rfc3339;
use gatehouse_store::{FireRow, ScheduleRow};
use jiff::Timestamp;

use crate::views::{FireView, ScheduleView};
use crate::{ApiError, ApiState};

/// Where the schedule's next cron time is searched from (the scheduler's rule).
pub(super) async fn cursor(api: &ApiState, row: &ScheduleRow) -> Result<Timestamp, ApiError> {
    let after = api.store.fire_cursor_ms(row).await?;
    Ok(Timestamp::from_millisecond(after).unwrap_or(Timestamp::UNIX_EPOCH))
}

pub(super) async fn view(api: &ApiState, row: ScheduleRow) -> Result<ScheduleView, ApiError> {
    let next_fire = match (row.timing(), row.paused) {
        (Ok(timing), false) => timing
            .next_fire(cursor(api, &row).await?)
            .map(|f| rfc3339(&f.scheduled)),
        _ => None,
    };
    let last_fire = match api.store.fires(&row.name, 1).await?.pop() {
        Some(fire) => Some(fire_view(api, fire).await?),
        None => None,
    };
    let counts = api.store.fire_counts(&row.name).await?;
    let params: BTreeMap<String, String> = serde_json::from_str(&row.params).unwrap_or_default();
    let span = |ms: i64| {
        humantime::format_duration(Duration::from_millis(ms.max(0).unsigned_abs())).to_string()
    };
    Ok(ScheduleView {
        catchup_window: span(row.catchup_window_ms),
        jitter: span(row.jitter_ms),
        start: row.starts_ms.map(millis),
        end: row.ends_ms.map(millis),
        next_fire,
        last_fire,
        fires: counts.total,
        skipped: counts.skipped,
        params,
        name: row.name,
        cron: row.cron,
        timezone: row.timezone,
        sop: row.sop,
        overlap: row.overlap.as_str().to_owned(),
        paused: row.paused,
        pause_note: row.pause_note,
        source: row.source,
        owner: row.owner,
        project: row.project,
        created_at: row.created_at,
        updated_at: row.updated_at,
    })
}

pub(super) async fn fire_view(api: &ApiState, fire: FireRow) -> Result<FireView, ApiError> {
    let run_status = match fire.run_id {
        Some(id) => api.store.run(id).await?.map(|r| r.status.to_string()),
        None => None,
    };
    Ok(FireView {
        scheduled_time: millis(fire.scheduled_ms),
        kind: fire.kind.to_string(),
        outcome: fire.outcome.to_string(),
        run_id: fire.run_id,
        run_status,
        fired_at: millis(fire.fired_ms),
        lateness_ms: fire.lateness_ms,
        requested_by: fire.requested_by,
    })
}

/// Epoch milliseconds as a time.
pub(crate) fn millis(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap_or_default()
}
