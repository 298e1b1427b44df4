//! A schedule's create request, checked field by field before it is stored.

use std::time::Duration;

use chrono::Utc;
use gatehouse_schedule::{Overlap, Timing, parse_time};
use gatehouse_store::ScheduleRow;
use jiff::Timestamp;

use crate::rights::{Caller, may_start};
use crate::views::CreateSchedule;
use crate::{ApiError, ApiState, projects};
use gatehouse_project::Request;

/// A create request checked field by field; every message names the field.
pub(super) async fn checked(
    api: &ApiState,
    caller: &Caller,
    body: CreateSchedule,
) -> Result<ScheduleRow, ApiError> {
    let name_ok = !body.name.is_empty()
        && body.name.len() <= 100
        && body
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if !name_ok {
        return Err(ApiError::Unprocessable(format!(
            "name `{}`: use 1 to 100 letters, digits, `.`, `_` or `-`",
            body.name
        )));
    }
    let duration = |field: &str, text: Option<&str>, default: Duration| match text {
        None => Ok(default),
        Some(t) => humantime::parse_duration(t).map_err(|e| {
            ApiError::Unprocessable(format!("{field} `{t}`: {e} (e.g. 90s, 15m, 1h)"))
        }),
    };
    let catchup_window = duration(
        "catchup_window",
        body.catchup_window.as_deref(),
        Duration::from_secs(3600),
    )?;
    let jitter = duration("jitter", body.jitter.as_deref(), Duration::ZERO)?;
    let time = |field: &str, text: Option<&str>| {
        text.map(parse_time)
            .transpose()
            .map_err(|e| ApiError::Unprocessable(format!("{field}: {e}")))
    };
    let start = time("start", body.start.as_deref())?;
    let end = time("end", body.end.as_deref())?;
    let timezone = body.timezone.unwrap_or_else(|| "UTC".into());
    let timing = Timing::new(&body.name, &body.cron, &timezone, jitter, start, end)
        .map_err(|e| ApiError::Unprocessable(e.to_string()))?;
    let now = Timestamp::now();
    if timing.next_fire(now).is_none() {
        return Err(ApiError::Unprocessable(format!(
            "end: the schedule would never fire again (its end {} has passed)",
            end.map(|e| e.to_string()).unwrap_or_default()
        )));
    }
    let overlap: Overlap = body
        .overlap
        .as_deref()
        .unwrap_or("skip")
        .parse()
        .map_err(ApiError::Unprocessable)?;
    let sop = api.catalog.get(&body.sop).ok_or_else(|| {
        ApiError::Unprocessable(format!(
            "sop: no SOP named `{}`; `gatehouse sop list` shows them",
            body.sop
        ))
    })?;
    sop.check_start(&body.params)
        .map_err(|m| ApiError::Unprocessable(format!("params: {m}")))?;
    // Its runs answer to its creator, who must be allowed to start them.
    may_start(&sop, &caller.person, &caller.groups)?;
    if let Some(project) = &body.project {
        let request = Request {
            project: Some(project),
            sop: Some(&sop.name),
            ..Request::default()
        };
        projects::bind(api, request, Some(&caller.person), &caller.groups).map_err(
            |e| match e {
                ApiError::Unprocessable(m) => ApiError::Unprocessable(format!("project: {m}")),
                other => other,
            },
        )?;
    }
    let ms = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
    let created = Utc::now();
    Ok(ScheduleRow {
        name: body.name,
        cron: timing.cron().expr().to_owned(),
        timezone,
        sop: sop.name.clone(),
        params: serde_json::to_string(&body.params).unwrap_or_else(|_| "{}".into()),
        overlap,
        catchup_window_ms: ms(catchup_window),
        jitter_ms: ms(jitter),
        starts_ms: start.map(|t| t.as_millisecond()),
        ends_ms: end.map(|t| t.as_millisecond()),
        paused: false,
        pause_note: None,
        source: "api".into(),
        owner: caller.person.clone(),
        project: body.project,
        since_ms: now.as_millisecond(),
        next_due_ms: Some(0),
        revision: 0,
        created_at: created,
        updated_at: created,
    })
}
