//! Schedules: when each fires next, how its last fires went, and pause, resume and
//! trigger for those who may — each the API's handler, as the run commands are.

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::response::Response;
use maud::{Markup, html};
use serde::Deserialize;

use super::actions::{allowed, back};
use super::inbox::short;
use super::page::{PageError, csrf_field, frame, status, time};
use super::session::{Posted, Viewer, WithCsrf};
use crate::ApiState;
use crate::api::schedules::{self, ListQuery};
use crate::rights::Scope;
use crate::views::{FireView, PauseSchedule, ScheduleView};

#[derive(Debug, Deserialize)]
pub(crate) struct Done {
    done: Option<String>,
}

/// `GET /schedules`
pub(crate) async fn list(
    State(api): State<ApiState>,
    viewer: Viewer,
    Query(q): Query<Done>,
) -> Result<Markup, PageError> {
    let query = ListQuery {
        after: None,
        limit: Some(1000),
    };
    let Json(all) = schedules::list(State(api), viewer.caller.clone(), Query(query)).await?;
    let body = html! {
        (notice(q.done.as_deref()))
        h1 { "Schedules" }
        @if all.is_empty() { p.empty { "No schedules. Add them under " code { "[[schedules]]" } " in the configuration, or with " code { "gatehouse schedule create" } "." } } @else {
            table {
                thead { tr { th { "Schedule" } th { "When" } th { "SOP" } th { "Next fire" } th { "Last fire" } th { "Fires" } th { "Actions" } } }
                tbody {
                    @for s in &all {
                        tr {
                            td { a href=(format!("/schedules/{}", s.name)) { (s.name) } @if s.paused { " " (status("paused")) } }
                            td { code { (s.cron) } " " (s.timezone) }
                            td { a href=(format!("/sops/{}", s.sop)) { (s.sop) } }
                            td { @match &s.next_fire { Some(at) => (at), None => "—" } }
                            td { @if let Some(f) = &s.last_fire { (fire(f)) } @else { "never" } }
                            td { (s.fires) @if s.skipped > 0 { " (" (s.skipped) " skipped)" } }
                            td { (buttons(&viewer, s)) }
                        }
                    }
                }
            }
        }
    };
    Ok(frame("Schedules", Some(&viewer), body))
}

/// `GET /schedules/{name}`
pub(crate) async fn page(
    State(api): State<ApiState>,
    viewer: Viewer,
    Path(name): Path<String>,
    Query(q): Query<Done>,
) -> Result<Markup, PageError> {
    let Json(detail) = schedules::show(State(api), viewer.caller.clone(), Path(name)).await?;
    let s = &detail.schedule;
    let body = html! {
        (notice(q.done.as_deref()))
        h1 { (s.name) @if s.paused { " " (status("paused")) } }
        dl.facts {
            dt { "Fires" } dd { code { (s.cron) } " in " (s.timezone) }
            dt { "Runs" } dd { a href=(format!("/sops/{}", s.sop)) { (s.sop) } @for (k, v) in &s.params { " " code { (k) "=" (v) } } }
            @if let Some(project) = &s.project { dt { "Project" } dd { (project) } }
            dt { "Overlap" } dd { (s.overlap) }
            dt { "Catch-up window" } dd { (s.catchup_window) }
            dt { "Jitter" } dd { (s.jitter) }
            dt { "Answers to" } dd { (s.owner) " (" (s.source) ")" }
            @if let Some(note) = &s.pause_note { dt { "Paused because" } dd { (note) } }
        }
        (buttons(&viewer, s))
        section aria-labelledby="next-h" {
            h2 id="next-h" { "Next fires" }
            @if detail.upcoming.is_empty() { p.empty { "None: it is paused or has ended." } }
            ol { @for at in &detail.upcoming { li { (at) } } }
        }
        section aria-labelledby="recent-h" {
            h2 id="recent-h" { "Recent fires" }
            @if detail.recent.is_empty() { p.empty { "It has not fired yet." } } @else {
                table {
                    thead { tr { th { "Due" } th { "Kind" } th { "Outcome" } th { "Run" } th { "Late by" } th { "By" } } }
                    tbody {
                        @for f in &detail.recent {
                            tr {
                                td { (time(&f.scheduled_time)) }
                                td { (f.kind) }
                                td { (status(&f.outcome)) }
                                td { @if let Some(run) = f.run_id { a href=(format!("/runs/{run}")) { (short(&run.to_string())) } " " @if let Some(st) = &f.run_status { (status(st)) } } }
                                td { (super::page::duration(f.lateness_ms)) }
                                td { (f.requested_by.clone().unwrap_or_default()) }
                            }
                        }
                    }
                }
            }
        }
    };
    Ok(frame(&s.name, Some(&viewer), body))
}

fn fire(f: &FireView) -> Markup {
    html! {
        (status(&f.outcome)) " " (time(&f.scheduled_time))
        @if let Some(run) = f.run_id { " · " a href=(format!("/runs/{run}")) { (short(&run.to_string())) } }
        @if let Some(st) = &f.run_status { " " (status(st)) }
    }
}

/// Pause (with a note) or resume, and trigger now, for sessions with the `run` scope.
fn buttons(viewer: &Viewer, s: &ScheduleView) -> Markup {
    if !viewer.caller.scopes.has(Scope::Run) {
        return html! {};
    }
    let action = format!("/schedules/{}/command", s.name);
    let next = format!("/schedules/{}", s.name);
    html! {
        div.actions {
            @if s.paused {
                form.inline method="post" action=(action) {
                    (csrf_field(viewer))
                    input type="hidden" name="next" value=(next);
                    button type="submit" name="command" value="resume" { "Resume" }
                }
            } @else {
                form.inline method="post" action=(action) {
                    (csrf_field(viewer))
                    input type="hidden" name="next" value=(next);
                    label for=(format!("note-{}", s.name)) { "Note" }
                    input type="text" id=(format!("note-{}", s.name)) name="note" maxlength="500";
                    button type="submit" name="command" value="pause" { "Pause" }
                }
            }
            form.inline method="post" action=(action) {
                (csrf_field(viewer))
                input type="hidden" name="next" value=(next);
                button type="submit" name="command" value="trigger" { "Trigger now" }
            }
        }
    }
}

fn notice(done: Option<&str>) -> Markup {
    let text = match done {
        Some("paused") => "Paused: fires that fall due now are not owed.",
        Some("resumed") => "Resumed from now on.",
        Some("triggered") => "Triggered: the scheduler decides the fire by the overlap policy.",
        _ => return html! {},
    };
    html! { p.notice role="status" { (text) } }
}

/// A schedule command as the forms send it.
#[derive(Debug, Deserialize)]
pub(crate) struct ScheduleForm {
    csrf: String,
    command: ScheduleCommand,
    #[serde(default)]
    note: Option<String>,
    #[serde(default)]
    next: Option<String>,
}

impl WithCsrf for ScheduleForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ScheduleCommand {
    Pause,
    Resume,
    Trigger,
}

/// `POST /schedules/{name}/command`
pub(crate) async fn command(
    State(api): State<ApiState>,
    Path(name): Path<String>,
    posted: Posted<ScheduleForm>,
) -> Result<Response, PageError> {
    let form = posted.form;
    let route = match form.command {
        ScheduleCommand::Pause => "/schedules/{name}/pause",
        ScheduleCommand::Resume => "/schedules/{name}/resume",
        ScheduleCommand::Trigger => "/schedules/{name}/trigger",
    };
    let caller = allowed(&posted.viewer, route)?;
    let (state, path) = (State(api), Path(name));
    let done = match form.command {
        ScheduleCommand::Pause => {
            let note = form.note.filter(|n| !n.trim().is_empty());
            schedules::pause(state, caller, path, Some(Json(PauseSchedule { note })))
                .await
                .map(|_| "paused")?
        }
        ScheduleCommand::Resume => schedules::resume(state, caller, path)
            .await
            .map(|_| "resumed")?,
        ScheduleCommand::Trigger => schedules::trigger(state, caller, path)
            .await
            .map(|_| "triggered")?,
    };
    Ok(back(form.next.as_deref(), done))
}
