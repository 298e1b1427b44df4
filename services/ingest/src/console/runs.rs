//! The runs list: the newest runs the viewer may read, by status, each with its title,
//! requirement, who started it and how long it took (or has been going).

use std::collections::HashMap;

use axum::extract::{Query, State};
use chrono::{DateTime, Utc};
use maud::{Markup, html};
use serde::Deserialize;

use super::page::{PageError, duration, frame, status, time};
use super::session::Viewer;
use crate::api::runs;
use crate::{ApiState, projects};

#[derive(Debug, Deserialize)]
pub(crate) struct ListQuery {
    status: Option<String>,
}

/// `GET /runs`: the newest runs.
pub(crate) async fn list(
    State(api): State<ApiState>,
    viewer: Viewer,
    Query(q): Query<ListQuery>,
) -> Result<Markup, PageError> {
    let status_filter = q.status.filter(|s| !s.is_empty());
    let hidden = projects::hidden(&api, viewer.caller.reader());
    let rows = api
        .store
        .runs(status_filter.as_deref(), &hidden, 200)
        .await?;
    // Runs of the same minute share their first 8 digits: each shows as many as tell it
    // apart from the others listed.
    let shown = gatehouse_commands::short_ids(&rows.iter().map(|r| r.id).collect::<Vec<_>>());
    let mut wanted: Vec<_> = rows.iter().filter_map(|r| r.requirement_id).collect();
    wanted.sort_unstable();
    wanted.dedup();
    let titles: HashMap<_, _> = api
        .store
        .requirement_titles(&wanted)
        .await?
        .into_iter()
        .collect();
    let now = Utc::now();
    let body = html! {
        h1 { "Runs" }
        form.filter method="get" action="/runs" {
            label for="status" { "Status" }
            select id="status" name="status" {
                option value="" { "any" }
                @for s in ["requested", "queued", "running", "waiting", "paused", "succeeded", "failed", "cancelled"] {
                    option value=(s) selected[status_filter.as_deref() == Some(s)] { (s) }
                }
            }
            button type="submit" { "Show" }
        }
        @if rows.is_empty() { p.empty { "No runs." } } @else {
            div.scroll {
                table.runs {
                    thead { tr { th { "Run" } th { "Status" } th { "Requirement" } th { "Started by" } th { "Project" } th { "Started" } th { "Duration" } } }
                    tbody {
                        @for (row, shown) in rows.into_iter().zip(shown) {
                            @let title = api.catalog.get(&row.sop).map_or_else(|| row.sop.clone(), |s| s.title.clone());
                            @let (took, going) = took(&row.created_at, &row.updated_at, row.status.is_terminal(), &now);
                            @let requirement = row.requirement_id;
                            @let schedule = row.schedule.clone();
                            @let run = runs::summary(row);
                            tr {
                                td {
                                    a.title href=(format!("/runs/{}", run.id)) { (title) }
                                    br;
                                    span.meta { code { (shown) } " · " (run.sop) }
                                }
                                td { (status(&run.status)) }
                                td {
                                    @if let Some(req) = requirement {
                                        a href=(format!("/requirements/{req}")) {
                                            (titles.get(&req).cloned().unwrap_or_else(|| super::inbox::short(&req.to_string()).to_owned()))
                                        }
                                    } @else { span.empty { "none" } }
                                }
                                td {
                                    @match (&run.requested_by, &schedule) {
                                        (Some(by), _) => (by),
                                        (None, Some(s)) => { "schedule " a href=(format!("/schedules/{s}")) { (s) } },
                                        (None, None) => span.empty { "no one" },
                                    }
                                }
                                td {
                                    @match &run.project {
                                        Some(p) => (p),
                                        None => span.empty { "no project" },
                                    }
                                }
                                td { (time(&run.created_at)) }
                                td.duration { (took) @if going { " so far" } }
                            }
                        }
                    }
                }
            }
        }
    };
    Ok(frame("Runs", Some(&viewer), body))
}

/// How long a run took, or for one still going how long it has been going (and `true`).
pub(crate) fn took(
    created: &DateTime<Utc>,
    updated: &DateTime<Utc>,
    finished: bool,
    now: &DateTime<Utc>,
) -> (String, bool) {
    let end = if finished { updated } else { now };
    (
        duration((*end - *created).num_milliseconds().max(0)),
        !finished,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finished_run_took_until_its_last_change_and_a_going_one_until_now() {
        let at = |s: &str| s.parse::<DateTime<Utc>>().unwrap();
        let (created, updated, now) = (
            at("2026-12-07T10:00:00Z"),
            at("2026-12-07T10:03:05Z"),
            at("2026-12-07T12:10:00Z"),
        );
        assert_eq!(
            took(&created, &updated, true, &now),
            ("3 min 05 s".to_owned(), false)
        );
        assert_eq!(
            took(&created, &updated, false, &now),
            ("2 h 10 min".to_owned(), true)
        );
    }
}
