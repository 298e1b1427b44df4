//! Reports: `GET /reports/usage` groups the runs of a window, their outcomes, durations,
//! tokens and cost by person, SOP, SOP version or model. The grouping is pure
//! ([`usage_groups`]); the handler reads the window's runs and usage and checks the query.
//! The same figures over time, for the console's charts and CSV, are in `over_time`.

mod gate_waits;
mod over_time;
pub(crate) mod views;

use std::collections::{BTreeMap, BTreeSet};

use axum::Json;
use axum::extract::{Query, State};
use chrono::{DateTime, Utc};
use gatehouse_events::RunStatus;
use gatehouse_store::{RunOutline, UsageRow};
use serde::Deserialize;
use uuid::Uuid;

use crate::error::ErrorBody;
use crate::projects::{self, Reader};
use crate::rights::Caller;
use crate::views::{UsageGroup, UsageReport};
use crate::{ApiError, ApiState};

pub(crate) use gate_waits::gate_waits;
pub(crate) use over_time::{Figures, OverTime, csv, over_time};

/// The longest window a report may cover.
const MAX_WINDOW: std::time::Duration = std::time::Duration::from_secs(3660 * 24 * 3600);

/// The group of runs without a project.
pub(crate) const NO_PROJECT: &str = "no project";
/// The group of runs nobody asked for (started by the system).
pub(crate) const NO_ONE: &str = "no one";

/// Query of `GET /reports/usage`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
pub struct UsageQuery {
    /// How to group: project, person, sop, sop-version or model (default sop).
    pub by: Option<String>,
    /// Runs created within this long (`30d`, `12h`; default 30d), or since an RFC 3339 time.
    pub since: Option<String>,
}

/// What a report groups by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum By {
    /// The project the run worked on; `no project` for runs without one.
    Project,
    /// The person who asked for the run.
    Person,
    Sop,
    SopVersion,
    /// The model an agent attempt used; a run using two models counts in both.
    Model,
}

impl By {
    pub(crate) fn parse(text: &str) -> Result<Self, ApiError> {
        match text {
            "project" => Ok(Self::Project),
            "person" => Ok(Self::Person),
            "sop" => Ok(Self::Sop),
            "sop-version" | "sop_version" => Ok(Self::SopVersion),
            "model" => Ok(Self::Model),
            other => Err(ApiError::Unprocessable(format!(
                "cannot group by `{other}`: use project, person, sop, sop-version or model"
            ))),
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Project => "project",
            Self::Person => "person",
            Self::Sop => "sop",
            Self::SopVersion => "sop_version",
            Self::Model => "model",
        }
    }

    /// The run's group; none for `model`, whose groups come from usage.
    fn key(self, run: &RunOutline) -> Option<String> {
        match self {
            Self::Project => Some(run.project.clone().unwrap_or_else(|| NO_PROJECT.to_owned())),
            Self::Person => Some(
                run.requested_by
                    .clone()
                    .unwrap_or_else(|| NO_ONE.to_owned()),
            ),
            Self::Sop => Some(run.sop.clone()),
            Self::SopVersion => Some(format!("{}@{}", run.sop, run.sop_version)),
            Self::Model => None,
        }
    }
}

/// Tokens, cost, runs and durations of the runs created in a window, grouped; only runs
/// of projects the caller may read count.
#[utoipa::path(get, path = "/reports/usage", params(UsageQuery), responses((status = 200, body = UsageReport), (status = 422, body = ErrorBody)))]
pub async fn usage(
    State(api): State<ApiState>,
    caller: Caller,
    Query(q): Query<UsageQuery>,
) -> Result<Json<UsageReport>, ApiError> {
    let by = By::parse(q.by.as_deref().unwrap_or("sop"))?;
    let since = since(q.since.as_deref().unwrap_or("30d"), Utc::now())?;
    let (runs, usage) = readable_window(&api, caller.reader(), since).await?;
    Ok(Json(UsageReport {
        by: by.name().to_owned(),
        since,
        groups: usage_groups(by, &runs, &usage),
    }))
}

/// The runs created since `since` that `reader` may read, and what they used: what every
/// report counts.
pub(crate) async fn readable_window(
    api: &ApiState,
    reader: Reader<'_>,
    since: DateTime<Utc>,
) -> Result<(Vec<RunOutline>, Vec<UsageRow>), ApiError> {
    let mut runs = api.store.run_outlines_since(since).await?;
    runs.retain(|r| projects::may_read(api, r.project.as_deref(), reader));
    let kept: BTreeSet<Uuid> = runs.iter().map(|r| r.id).collect();
    let mut usage = api.store.usage_since(since).await?;
    usage.retain(|u| kept.contains(&u.run_id));
    Ok((runs, usage))
}

/// The window's start: `now` less a duration, or an RFC 3339 time.
pub(crate) fn since(text: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, ApiError> {
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        let at = at.with_timezone(&Utc);
        let window = (now - at).to_std().unwrap_or_default();
        if at >= now || window > MAX_WINDOW {
            return Err(ApiError::Unprocessable(
                "`since` must be in the past and at most ten years ago".into(),
            ));
        }
        return Ok(at);
    }
    let window = humantime::parse_duration(text).map_err(|e| {
        ApiError::Unprocessable(format!(
            "`since` is neither a duration (30d, 12h) nor an RFC 3339 time: {e}"
        ))
    })?;
    if window.is_zero() || window > MAX_WINDOW {
        return Err(ApiError::Unprocessable(
            "`since` must cover more than nothing and at most ten years".into(),
        ));
    }
    let window = chrono::Duration::from_std(window)
        .map_err(|e| ApiError::Unprocessable(format!("`since`: {e}")))?;
    Ok(now - window)
}

/// A group and the runs in it, made on first use.
type Group = (UsageGroup, BTreeSet<Uuid>);

fn entry(groups: &mut BTreeMap<String, Group>, key: String) -> &mut Group {
    groups.entry(key.clone()).or_insert_with(|| {
        let group = UsageGroup {
            key,
            ..UsageGroup::default()
        };
        (group, BTreeSet::new())
    })
}

/// Groups `runs` and their `usage` by `by`, largest cost first (then most runs, then key).
pub fn usage_groups(by: By, runs: &[RunOutline], usage: &[UsageRow]) -> Vec<UsageGroup> {
    let by_id: BTreeMap<Uuid, &RunOutline> = runs.iter().map(|r| (r.id, r)).collect();
    let mut groups: BTreeMap<String, Group> = BTreeMap::new();
    for run in runs {
        if let Some(key) = by.key(run) {
            entry(&mut groups, key).1.insert(run.id);
        }
    }
    for row in usage {
        let key = match by {
            By::Model => row.model.clone(),
            _ => match by_id.get(&row.run_id).and_then(|run| by.key(run)) {
                Some(key) => key,
                None => continue,
            },
        };
        let (g, members) = entry(&mut groups, key);
        members.insert(row.run_id);
        g.input_tokens += row.input_tokens;
        g.output_tokens += row.output_tokens;
        g.cache_read_tokens += row.cache_read_tokens;
        g.cache_write_tokens += row.cache_write_tokens;
        match row.cost_usd {
            Some(usd) => g.cost_usd += usd,
            None if !g.unpriced_models.contains(&row.model) => {
                g.unpriced_models.push(row.model.clone())
            }
            None => {}
        }
    }
    let mut out: Vec<UsageGroup> = groups
        .into_values()
        .map(|(mut g, members)| {
            for run in members.iter().filter_map(|id| by_id.get(id)) {
                g.runs += 1;
                match run.status {
                    RunStatus::Succeeded => g.succeeded += 1,
                    RunStatus::Failed => g.failed += 1,
                    RunStatus::Cancelled => g.cancelled += 1,
                    _ => continue,
                }
                g.duration_ms += (run.updated_at - run.created_at).num_milliseconds().max(0);
            }
            g.unpriced_models.sort();
            g
        })
        .collect();
    out.sort_by(|a, b| {
        b.cost_usd
            .total_cmp(&a.cost_usd)
            .then(b.runs.cmp(&a.runs))
            .then(a.key.cmp(&b.key))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(sop: &str, person: &str, status: RunStatus, seconds: i64) -> RunOutline {
        let created_at = Utc::now();
        RunOutline {
            id: Uuid::now_v7(),
            sop: sop.into(),
            sop_version: format!("sha256:{sop}"),
            requested_by: Some(person.into()),
            status,
            project: None,
            created_at,
            updated_at: created_at + chrono::Duration::seconds(seconds),
        }
    }

    fn used(run: &RunOutline, model: &str, input: i64, cost: Option<f64>) -> UsageRow {
        UsageRow {
            run_id: run.id,
            node: "code".into(),
            attempt: 1,
            model: model.into(),
            input_tokens: input,
            output_tokens: input / 10,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            cost_usd: cost,
        }
    }

    #[test]
    fn groups_count_runs_outcomes_durations_tokens_and_cost() {
        let a = run("fix", "ana", RunStatus::Succeeded, 60);
        let mut b = run("fix", "bo", RunStatus::Failed, 30);
        b.project = Some("api".into());
        let c = run("triage", "ana", RunStatus::Running, 5);
        let usage = [
            used(&a, "sonnet", 1000, Some(0.5)),
            used(&a, "local", 300, None),
            used(&b, "sonnet", 2000, Some(1.0)),
        ];
        let runs = [a, b, c];
        let by_sop = usage_groups(By::Sop, &runs, &usage);
        let keys: Vec<_> = by_sop.iter().map(|g| g.key.as_str()).collect();
        assert_eq!(keys, ["fix", "triage"], "largest cost first");
        let fix = &by_sop[0];
        assert_eq!((fix.runs, fix.succeeded, fix.failed), (2, 1, 1));
        assert_eq!(fix.duration_ms, 90_000, "finished runs only");
        assert_eq!(fix.input_tokens, 3300);
        assert_eq!(fix.cost_usd, 1.5);
        assert_eq!(fix.unpriced_models, ["local"]);
        let triage = &by_sop[1];
        assert_eq!(
            (triage.runs, triage.duration_ms, triage.input_tokens),
            (1, 0, 0)
        );

        let by_person = usage_groups(By::Person, &runs, &usage);
        let ana = by_person.iter().find(|g| g.key == "ana").unwrap();
        assert_eq!((ana.runs, ana.input_tokens), (2, 1300));

        let by_project = usage_groups(By::Project, &runs, &usage);
        let keys: Vec<_> = by_project
            .iter()
            .map(|g| (g.key.as_str(), g.runs))
            .collect();
        assert_eq!(keys.len(), 2, "{keys:?}");
        assert!(
            keys.contains(&("api", 1)) && keys.contains(&("no project", 2)),
            "runs without a project as `no project`: {keys:?}"
        );

        let by_model = usage_groups(By::Model, &runs, &usage);
        let keys: Vec<_> = by_model.iter().map(|g| (g.key.as_str(), g.runs)).collect();
        assert_eq!(keys, [("sonnet", 2), ("local", 1)]);
        assert_eq!(by_model[0].duration_ms, 90_000);
    }

    #[test]
    fn the_window_is_a_duration_or_a_time_and_bounded() {
        let now = DateTime::parse_from_rfc3339("2026-12-01T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(
            since("30d", now).unwrap().to_rfc3339(),
            "2026-11-01T12:00:00+00:00"
        );
        assert_eq!(
            since("2026-11-30T00:00:00+01:00", now)
                .unwrap()
                .to_rfc3339(),
            "2026-11-29T23:00:00+00:00"
        );
        for bad in [
            "",
            "0s",
            "soon",
            "99999d",
            "-3d",
            "0001-01-01T00:00:00Z",
            "2030-01-01T00:00:00Z",
        ] {
            assert!(
                matches!(since(bad, now), Err(ApiError::Unprocessable(_))),
                "{bad}"
            );
        }
        assert!(matches!(
            By::parse("repository"),
            Err(ApiError::Unprocessable(_))
        ));
        assert_eq!(By::parse("project").unwrap(), By::Project);
        assert_eq!(By::parse("sop-version").unwrap(), By::SopVersion);
    }
}
