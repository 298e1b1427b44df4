//! Requirements: what people asked for, where (an issue, a chat thread), in which
//! project, and what was done for it — runs, conversations, pull requests, cost. Read as
//! `GET /api/v1/requirements[/{id}]` reads them.

use axum::Json;
use axum::extract::{Path, Query, State};
use maud::{Markup, html};
use serde::Deserialize;

use super::inbox::short;
use super::page::{PageError, frame, status, time, usage};
use super::session::Viewer;
use crate::ApiState;
use crate::api::requirements::{self, RequirementQuery};
use crate::ids;
use crate::views::RequirementSummary;
use gatehouse_store::IdKind;

#[derive(Debug, Deserialize)]
pub(crate) struct ListQuery {
    state: Option<String>,
}

/// `GET /requirements`
pub(crate) async fn list(
    State(api): State<ApiState>,
    viewer: Viewer,
    Query(q): Query<ListQuery>,
) -> Result<Markup, PageError> {
    let state = q.state.filter(|s| !s.is_empty());
    let query = RequirementQuery {
        state: state.clone(),
        limit: Some(200),
    };
    let Json(rows) = requirements::list(State(api), viewer.caller.clone(), Query(query)).await?;
    let body = html! {
        h1 { "Requirements" }
        form.filter method="get" action="/requirements" {
            label for="state" { "State" }
            select id="state" name="state" {
                option value="" { "any" }
                @for s in ["open", "closed", "delivered"] {
                    option value=(s) selected[state.as_deref() == Some(s)] { (s) }
                }
            }
            button type="submit" { "Show" }
        }
        @if rows.is_empty() { p.empty { "No requirements." } } @else {
            table {
                thead { tr { th { "Requirement" } th { "Source" } th { "Project" } th { "State" } th { "Asked by" } th { "Updated" } } }
                tbody {
                    @for r in &rows {
                        tr {
                            td { a href=(format!("/requirements/{}", r.id)) { (r.title) } }
                            td { (source(r)) }
                            td { (r.project.clone().unwrap_or_default()) }
                            td { (status(&r.state)) }
                            td { (r.requested_by) }
                            td { (time(&r.updated_at)) }
                        }
                    }
                }
            }
        }
    };
    Ok(frame("Requirements", Some(&viewer), body))
}

/// `GET /requirements/{id}`
pub(crate) async fn page(
    State(api): State<ApiState>,
    viewer: Viewer,
    Path(id): Path<String>,
) -> Result<Markup, PageError> {
    let id = ids::resolve(&api, IdKind::Requirement, &id, viewer.caller.reader()).await?;
    let Json(detail) =
        requirements::show(State(api), viewer.caller.clone(), Path(id.to_string())).await?;
    let r = &detail.requirement;
    let body = html! {
        h1 { (r.title) " " (status(&r.state)) }
        dl.facts {
            dt { "Source" } dd { (source(r)) }
            @if let Some(project) = &r.project { dt { "Project" } dd { (project) } }
            dt { "Asked by" } dd { (r.requested_by) }
            dt { "Opened" } dd { (time(&r.created_at)) }
            dt { "Cost" } dd { (usage(&detail.usage)) }
        }
        @if !detail.body.trim().is_empty() {
            section aria-labelledby="text-h" {
                h2 id="text-h" { "What was asked" }
                pre.body { (detail.body) }
            }
        }
        section aria-labelledby="prs-h" {
            h2 id="prs-h" { "Pull requests" }
            @if detail.pull_requests.is_empty() && detail.direct_merges.is_empty() && detail.pushed_branches.is_empty() { p.empty { "None yet." } }
            ul {
                @for p in &detail.pull_requests {
                    li { code { (p.repo) "#" (p.number) } " from " code { (p.branch) } " " (status(&p.state))
                        @if let Some(head) = p.head.get(..7) { " · head " code { (head) } }
                        @if !p.checks.is_empty() { " · checks " (status(&p.checks)) }
                        " · by run " a href=(format!("/runs/{}", p.run_id)) { (short(&p.run_id.to_string())) } }
                }
                @for m in &detail.direct_merges {
                    li { "merged into " code { (m.repo) ":" (m.branch) } " as " code { (m.commit.get(..12).unwrap_or(&m.commit)) }
                        @if let Some(by) = &m.approved_by { " · approved by " (by) } }
                }
                @for b in &detail.pushed_branches {
                    li { code { (b.repo) } ": " (b.describe())
                        " · by run " a href=(format!("/runs/{}", b.run_id)) { (short(&b.run_id.to_string())) } }
                }
            }
        }
        @if !detail.pull_request_events.is_empty() {
            section aria-labelledby="after-h" {
                h2 id="after-h" { "After the pull request" }
                table {
                    thead { tr { th { "When" } th { "Pull request" } th { "What happened" } th { "What Gatehouse did" } } }
                    tbody { @for e in &detail.pull_request_events { tr {
                        td { (time(&e.at)) } td { code { (e.repo) "#" (e.number) } }
                        td { (e.summary) } td { (e.outcome) }
                    } } }
                }
            }
        }
        section aria-labelledby="runs-h" {
            h2 id="runs-h" { "Runs" }
            @if detail.runs.is_empty() { p.empty { "No runs." } } @else {
                table {
                    thead { tr { th { "Run" } th { "SOP" } th { "Status" } th { "Requested by" } th { "Started" } } }
                    tbody { @for run in &detail.runs { tr {
                        td { a href=(format!("/runs/{}", run.id)) { (short(&run.id.to_string())) } }
                        td { (run.sop) } td { (status(&run.status)) }
                        td { (run.requested_by.clone().unwrap_or_default()) } td { (time(&run.created_at)) }
                    } } }
                }
            }
        }
        section aria-labelledby="conv-h" {
            h2 id="conv-h" { "Conversations" }
            @if detail.conversations.is_empty() { p.empty { "No conversations." } } @else {
                table {
                    thead { tr { th { "Conversation" } th { "Where" } th { "Started by" } th { "Activity" } th { "Turns" } th { "Last active" } } }
                    tbody { @for c in &detail.conversations { tr {
                        td { a href=(format!("/conversations/{}", c.id)) { (short(&c.id.to_string())) } }
                        td { (c.platform) " " (c.channel) } td { (c.started_by) } td { (status(&c.activity)) }
                        td { (c.turn_count) } td { (time(&c.updated_at)) }
                    } } }
                }
            }
        }
    };
    Ok(frame(&r.title, Some(&viewer), body))
}

/// Where it came from: the issue or thread, linked when its address is a web address.
fn source(r: &RequirementSummary) -> Markup {
    let link = r
        .url
        .as_deref()
        .filter(|u| u.starts_with("https://") || u.starts_with("http://"));
    html! {
        @match link {
            Some(url) => a href=(url) rel="noopener noreferrer" { (r.key) },
            None => (r.key),
        }
    }
}
