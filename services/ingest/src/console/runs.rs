//! The runs list: the newest runs the viewer may read, by status.

use axum::extract::{Query, State};
use maud::{Markup, html};
use serde::Deserialize;

use super::page::{PageError, frame, status, time};
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
            table {
                thead { tr { th { "Run" } th { "SOP" } th { "Status" } th { "Requested by" } th { "Project" } th { "Started" } } }
                tbody {
                    @for (run, shown) in rows.into_iter().map(runs::summary).zip(shown) {
                        tr {
                            td { a href=(format!("/runs/{}", run.id)) { (shown) } }
                            td { (run.sop) }
                            td { (status(&run.status)) }
                            td { (run.requested_by.unwrap_or_default()) }
                            td { (run.project.unwrap_or_default()) }
                            td { (time(&run.created_at)) }
                        }
                    }
                }
            }
        }
    };
    Ok(frame("Runs", Some(&viewer), body))
}
