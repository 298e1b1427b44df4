//! A run's page: the graph, each node's attempts (durations, reasons, tool traces, usage,
//! artifacts), their sandboxes' network connections, the budgets spent, the decision for a waiting gate, the end of its output (live while it
//! runs), the audit trail, and the commands the viewer may give.
//!
//! The page reads the run as `GET /api/v1/runs/{id}` does, so both always agree. What
//! happened at each node, and the audit trail, are drawn in `sections`.

use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use gatehouse_engine::RunState;
use gatehouse_events::RunStatus;
use gatehouse_store::RunRow;
use maud::{Markup, PreEscaped, html};
use serde::Deserialize;

mod sections;

use super::actions::{command_button, decision_form, notice};
use super::inbox::short;
use super::logs::{LOG_TAIL, log_lines};
use super::page::{PageError, csrf_field, dollars, frame_with, status, time};
use super::session::Viewer;
use crate::ApiState;
use crate::api::{gates, runs};
use crate::ids;
use crate::rights::Scope;
use crate::views::{DecisionKind, GateView, RunDetail};
use gatehouse_store::IdKind;

#[derive(Debug, Deserialize)]
pub(crate) struct RunQuery {
    done: Option<String>,
}

/// `GET /runs/{id}`
pub(crate) async fn page(
    State(api): State<ApiState>,
    viewer: Viewer,
    Path(id): Path<String>,
    Query(q): Query<RunQuery>,
) -> Result<Response, PageError> {
    let id = ids::resolve(&api, IdKind::Run, &id, viewer.caller.reader()).await?;
    let runs::Loaded {
        detail,
        row,
        sop,
        run,
    } = runs::loaded(&api, id, viewer.caller.reader()).await?;
    let tail = api.store.logs_before(id, None, LOG_TAIL).await?;
    let after = tail.last().map(|l| l.seq).unwrap_or(0);
    let svg = runs::graph_svg(
        &sop,
        &run,
        detail.decisions.iter().filter_map(|d| {
            runs::decision_line(&d.decision, &d.person, &d.outcome).map(|l| (d.node.as_str(), l))
        }),
    );
    let live = !row.status.is_terminal();
    let waiting = waiting_gates(&api, &viewer, &row, &sop, &run);
    let asked: Vec<_> = api
        .store
        .run_questions(id)
        .await?
        .iter()
        .map(crate::api::questions::view)
        .collect();
    let may_answer = viewer.caller.require(crate::rights::Scope::Decide).is_ok()
        && crate::projects::may_decide(
            &api,
            row.project.as_deref(),
            viewer.person(),
            &viewer.caller.groups,
        )
        .is_ok();
    let title = format!("{} · run {}", sop.title, short(&id.to_string()));
    let body = html! {
        @if let Some(notice) = notice(q.done.as_deref()) {
            p.notice role="status" { (notice) }
        }
        div id="run" data-live=[live.then(|| format!("/runs/{id}/events?after={after}"))] {
            (head(&detail, &sop.title, row.status.is_terminal()))
            (commands(&viewer, &detail, row.status))
            section id="graph" aria-labelledby="graph-h" {
                h2 id="graph-h" { "Graph" }
                div.graph { (PreEscaped(svg)) }
                p.aside { a href=(format!("/runs/{id}/graph.svg")) download=(format!("run-{}.svg", short(&id.to_string()))) { "Download the graph (SVG)" } }
            }
            section id="decide" data-key=(waiting.iter().map(|(g, _)| format!("{}#{}", g.node, g.attempt)).collect::<Vec<_>>().join(",")) aria-labelledby="decide-h" {
                @if !waiting.is_empty() {
                    h2 id="decide-h" { "Your decision" }
                    @for (gate, open) in &waiting {
                        article.gate {
                            h3 { "Gate " (gate.node) ", attempt " (gate.attempt) }
                            p.meta { (gate.approvals.len()) " of " (gate.min_approvals) " approvals so far" }
                            (decision_form(&viewer, gate, open, &format!("/runs/{id}")))
                        }
                    }
                }
            }
            (sections::questions(&viewer, &asked, may_answer, &format!("/runs/{id}")))
            (sections::nodes(&detail))
            (sections::network(&detail))
            (super::budgets::section(&detail.budgets, &format!("/api/v1/runs/{id}")))
            section id="logs" aria-labelledby="logs-h" {
                h2 id="logs-h" { "Output" }
                p.aside id="logs-note" {
                    "The last " (LOG_TAIL) " lines"
                    @if live { ", followed live while the run goes on" }
                    ". " a href=(format!("/runs/{id}/logs")) { "All output, page by page" }
                }
                pre id="log" aria-live="off" tabindex="0" { (log_lines(&tail)) }
                // Hidden by the stylesheet once live output fills the log.
                @if tail.is_empty() {
                    p.empty.no-output { @if live { "No output yet." } @else { "No output." } }
                }
            }
            (sections::audit(&detail))
        }
    };
    let scripts: &[&str] = if live { &["/static/live.js"] } else { &[] };
    Ok(frame_with(&title, Some(&viewer), body, scripts).into_response())
}

/// `GET /runs/{id}/graph.svg`: the picture as a file, as the API serves it.
pub(crate) async fn graph(
    State(api): State<ApiState>,
    viewer: Viewer,
    Path(id): Path<String>,
) -> Result<Response, PageError> {
    let id = ids::resolve(&api, IdKind::Run, &id, viewer.caller.reader()).await?;
    Ok(runs::graph(State(api), viewer.caller, Path(id.to_string())).await?)
}

/// The gates of this run waiting for a decision the viewer may make, with those decisions.
fn waiting_gates(
    api: &ApiState,
    viewer: &Viewer,
    row: &RunRow,
    sop: &gatehouse_sop::Sop,
    run: &RunState,
) -> Vec<(GateView, Vec<DecisionKind>)> {
    gates::waiting_in(sop, run)
        .filter_map(|(node, n, gate)| {
            let open = gates::open_decisions(api, &viewer.caller, row, sop, run, node);
            (!open.is_empty()).then(|| (gates::view(row, node, n, &gate), open))
        })
        .collect()
}

fn head(detail: &RunDetail, title: &str, finished: bool) -> Markup {
    let run = &detail.run;
    let (took, going) = super::runs::took(
        &run.created_at,
        &run.updated_at,
        finished,
        &chrono::Utc::now(),
    );
    html! {
        header id="run-head" {
            h1 { (title) " " (status(&run.status)) }
            dl.facts {
                dt { "Run" } dd { code { (run.id) } }
                dt { "SOP" } dd { a href=(format!("/sops/{}", run.sop)) { (run.sop) } " " code.version { (run.sop_version.get(..19).unwrap_or(&run.sop_version)) } }
                @if let Some(by) = &run.requested_by { dt { "Requested by" } dd { (by) } }
                @if let Some(project) = &run.project { dt { "Project" } dd { (project) } }
                @if let Some(req) = detail.requirement_id { dt { "Requirement" } dd { a href=(format!("/requirements/{req}")) { (short(&req.to_string())) } } }
                @if let Some(parent) = run.parent_run { dt { "Started by run" } dd { a href=(format!("/runs/{parent}")) { (short(&parent.to_string())) } } }
                @if let Some(s) = &detail.schedule { dt { "Schedule" } dd { (s.name) " at " (time(&s.scheduled_time)) } }
                dt { "Started" } dd { (time(&run.created_at)) }
                dt { "Last change" } dd { (time(&run.updated_at)) }
                dt { "Duration" } dd.duration { (took) @if going { " so far" } }
                @if !detail.repositories.is_empty() {
                    dt { "Repositories" }
                    dd { @for r in &detail.repositories { code { (r.repo) } " (" (r.mode) ") " } }
                }
                @if !detail.skills.is_empty() {
                    dt { "Skills" }
                    dd.skills { @for s in &detail.skills {
                        span title=(s.description) { code { (s.name) } " from " (s.source) " " code.version title=(s.digest) { (s.digest.get(..12).unwrap_or(&s.digest)) } }
                        " "
                    } }
                }
                @if !detail.params.is_empty() {
                    dt { "Parameters" }
                    dd { @for (k, v) in &detail.params { code { (k) "=" (v) } " " } }
                }
                @if detail.usage.run.cost_usd > 0.0 || detail.usage.run.output_tokens > 0 {
                    dt { "Agents used" }
                    dd { (detail.usage.run.input_tokens + detail.usage.run.output_tokens) " tokens, " (dollars(detail.usage.run.cost_usd)) }
                }
            }
            @if let Some(failure) = &detail.failure {
                p.error role="alert" { "Failed: " (failure) }
            }
            @if !detail.pull_requests.is_empty() || !detail.direct_merges.is_empty() || !detail.pushed_branches.is_empty() {
                ul.delivered aria-label="Delivered" {
                    @for p in &detail.pull_requests {
                        li { "Pull request " code { (p.repo) "#" (p.number) } " " (status(&p.state))
                            @if let Some(head) = p.head.get(..7) { " · head " code { (head) } }
                            @if !p.checks.is_empty() { " · checks " (status(&p.checks)) } }
                    }
                    @for m in &detail.direct_merges {
                        li { "Merged into " code { (m.repo) ":" (m.branch) } " as " code { (m.commit.get(..12).unwrap_or(&m.commit)) } }
                    }
                    @for b in &detail.pushed_branches {
                        li { code { (b.repo) } ": " (b.describe()) }
                    }
                }
            }
        }
    }
}

/// Pause, resume, cancel and retry, for those whose scopes allow them.
fn commands(viewer: &Viewer, detail: &RunDetail, state: RunStatus) -> Markup {
    let id = detail.run.id;
    if !viewer.caller.scopes.has(Scope::Run) {
        return html! {};
    }
    html! {
        section id="commands" aria-label="Run commands" {
            @if matches!(state, RunStatus::Queued | RunStatus::Running | RunStatus::Waiting) { (command_button(viewer, id, "pause", "Pause")) }
            @if state == RunStatus::Paused { (command_button(viewer, id, "resume", "Resume")) }
            @if !state.is_terminal() { (command_button(viewer, id, "cancel", "Cancel the run")) }
            @if !detail.nodes.is_empty() {
                form.inline method="post" action=(format!("/runs/{id}/command")) {
                    (csrf_field(viewer))
                    input type="hidden" name="command" value="retry";
                    input type="hidden" name="next" value=(format!("/runs/{id}"));
                    label for="retry-node" { "Retry from" }
                    select id="retry-node" name="node" {
                        @for n in &detail.nodes { option value=(n.node) { (n.node) } }
                    }
                    button type="submit" { "Retry" }
                }
            }
        }
    }
}
