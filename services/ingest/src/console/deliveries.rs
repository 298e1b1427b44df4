//! Deliveries: every webhook and chat event received, with what became of it — "why did
//! nothing happen?" answered. Read as `GET /api/v1/deliveries[/{id}]` reads them, with the
//! same rights: administrators (people in `admins`) see every delivery and its payload,
//! anyone else those concerning a project they may read, without payloads.

use axum::extract::{Path, Query, State};
use maud::{Markup, html};
use serde::Deserialize;

use super::inbox::short;
use super::page::{PageError, frame, status, time};
use super::session::Viewer;
use crate::ApiState;
use crate::api::deliveries::{self, DeliveryQuery, Looking, SOURCES};
use crate::views::DeliverySummary;
use gatehouse_store::DeliveryOutcome;

#[derive(Debug, Deserialize)]
pub(crate) struct ListQuery {
    source: Option<String>,
    outcome: Option<String>,
}

impl Viewer {
    /// The viewer looking at deliveries: a session never carries `admin`, so an
    /// administrator here is someone in `admins`.
    pub(crate) fn looking(&self) -> Looking<'_> {
        Looking {
            reader: self.caller.reader(),
            admin: self
                .caller
                .groups
                .iter()
                .any(|g| g == crate::rights::ADMINS),
        }
    }
}

/// `GET /deliveries`
pub(crate) async fn list(
    State(api): State<ApiState>,
    viewer: Viewer,
    Query(q): Query<ListQuery>,
) -> Result<Markup, PageError> {
    let source = q.source.filter(|s| !s.is_empty());
    let outcome = q.outcome.filter(|s| !s.is_empty());
    let query = DeliveryQuery {
        source: source.clone(),
        outcome: outcome.clone(),
        limit: Some(200),
        before: None,
    };
    let rows = deliveries::listed(&api, viewer.looking(), &query).await?;
    let outcomes = DeliveryOutcome::ALL.map(DeliveryOutcome::as_str);
    let body = html! {
        h1 { "Deliveries" }
        p { "Every webhook and chat event Gatehouse received, newest first, with what became of it." }
        form.filter method="get" action="/deliveries" {
            label for="source" { "Source" }
            select id="source" name="source" {
                option value="" { "any" }
                @for s in SOURCES {
                    option value=(s) selected[source.as_deref() == Some(s)] { (s) }
                }
            }
            label for="outcome" { "Outcome" }
            select id="outcome" name="outcome" {
                option value="" { "any" }
                @for o in outcomes {
                    option value=(o) selected[outcome.as_deref() == Some(o)] { (o) }
                }
            }
            button type="submit" { "Show" }
        }
        @if rows.is_empty() { p.empty { "No deliveries." } } @else {
            table {
                thead { tr { th { "Received" } th { "Source" } th { "Event" } th { "Outcome" } th { "What became of it" } } }
                tbody {
                    @for d in &rows {
                        tr {
                            td { a href=(href(d)) { (time(&d.received_at)) } }
                            td { (d.source) }
                            td { (d.event) }
                            td { (status(&d.status)) }
                            td { (d.outcome) (links(d)) }
                        }
                    }
                }
            }
        }
    };
    Ok(frame("Deliveries", Some(&viewer), body))
}

/// `GET /deliveries/{id}`
pub(crate) async fn page(
    State(api): State<ApiState>,
    viewer: Viewer,
    Path(id): Path<String>,
) -> Result<Markup, PageError> {
    let detail = deliveries::detail(&api, viewer.looking(), &id).await?;
    let d = &detail.delivery;
    let body = html! {
        p { a href="/deliveries" { "All deliveries" } }
        h1 { (d.event) " " (status(&d.status)) }
        dl {
            dt { "Delivery" } dd { code { (d.id) } }
            dt { "Received" } dd { (time(&d.received_at)) }
            @if let Some(at) = &d.processed_at { dt { "Processed" } dd { (time(at)) } }
            @if let Some(project) = &d.project { dt { "Project" } dd { (project) } }
            dt { "What became of it" } dd.outcome { (d.outcome) (links(d)) }
        }
        h2 { "Payload" }
        @match (&detail.payload, &detail.payload_withheld) {
            (Some(payload), _) => pre.payload { code { (payload) } },
            (None, why) => p.empty { (why.as_deref().unwrap_or("No payload.")) },
        }
    };
    Ok(frame(&format!("Delivery {}", d.id), Some(&viewer), body))
}

fn href(d: &DeliverySummary) -> String {
    format!("/deliveries/{}", super::page::encode(&d.id))
}

/// Links to the runs and conversations a delivery started or acted on.
fn links(d: &DeliverySummary) -> Markup {
    html! {
        @for run in &d.runs {
            " " a href=(format!("/runs/{run}")) { "run " (short(&run.to_string())) }
        }
        @for c in &d.conversations {
            " " a href=(format!("/conversations/{c}")) { "conversation " (short(&c.to_string())) }
        }
    }
}
