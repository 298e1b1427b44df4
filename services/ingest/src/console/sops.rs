//! SOPs: each definition drawn as the run pages draw it, the versions runs were started
//! with, and its YAML source. An older version is shown as runs froze it (`?version=`).
//! The loaded version's page has the form that starts a run (`start_form`).

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::response::Response;
use gatehouse_sop::Sop;
use maud::{Markup, PreEscaped, html};
use serde::Deserialize;
use std::sync::Arc;

mod start;

pub(crate) use start::start;

use super::page::{PageError, frame, time};
use super::session::Viewer;
use crate::api::{runs, sops as api_sops};
use crate::{ApiError, ApiState};

/// `GET /sops`
pub(crate) async fn list(State(api): State<ApiState>, viewer: Viewer) -> Result<Markup, PageError> {
    let invalid = api.catalog.invalid();
    let Json(sops) = api_sops::list(State(api)).await;
    let body = html! {
        h1 { "SOPs" }
        @if !invalid.is_empty() {
            section.invalid-sops aria-label="Invalid SOP files" {
                h2 { "Left out: invalid files" }
                p { "These files start nothing until they are fixed; the SOPs below are what runs." }
                @for error in invalid.iter() {
                    pre.error { (error) }
                }
            }
        }
        table {
            thead { tr { th { "Name" } th { "Title" } th { "Version" } th { "From" } th { "Can start" } } }
            tbody {
                @for s in &sops {
                    tr {
                        td { a href=(format!("/sops/{}", s.name)) { (s.name) } }
                        td { (s.title) }
                        td { code.version { (short_version(&s.version)) } }
                        td { code { (s.source) } }
                        td { @match &s.unavailable { Some(why) => span.error { (why) }, None => "yes" } }
                    }
                }
            }
        }
    };
    Ok(frame("SOPs", Some(&viewer), body))
}

#[derive(Debug, Deserialize)]
pub(crate) struct VersionQuery {
    /// A stored version (`sha256:...`); the loaded definition when absent.
    version: Option<String>,
}

/// `GET /sops/{name}`
pub(crate) async fn page(
    State(api): State<ApiState>,
    viewer: Viewer,
    Path(name): Path<String>,
    Query(q): Query<VersionQuery>,
) -> Result<Markup, PageError> {
    render(
        &api,
        &viewer,
        &name,
        q.version.as_deref(),
        &start::Filled::default(),
    )
    .await
}

/// The SOP's page; `filled` is what the start form shows (what was posted, and why it was
/// refused, when the page answers a refused start).
async fn render(
    api: &ApiState,
    viewer: &Viewer,
    name: &str,
    version: Option<&str>,
    filled: &start::Filled,
) -> Result<Markup, PageError> {
    let q = VersionQuery {
        version: version.map(str::to_owned),
    };
    let sop = definition(api, name, q.version.as_deref()).await?;
    let versions = api.store.sop_versions_of(name).await?;
    let current = api.catalog.get(name).map(|s| s.version.clone());
    let loaded = current.as_deref() == Some(sop.version.as_str());
    let graph = gatehouse_graph::svg(&gatehouse_graph::Graph::of_sop(&sop));
    let body = html! {
        h1 { (sop.title) }
        dl.facts {
            dt { "Name" } dd { code { (sop.name) } }
            dt { "Version" } dd { code.version { (sop.version) }
                @if current.as_deref() != Some(sop.version.as_str()) { " (an earlier version)" } }
            dt { "From" } dd { code { (sop.source) } }
            @if !sop.description.is_empty() { dt { "About" } dd { (sop.description) } }
            @if !sop.params.is_empty() {
                dt { "Parameters" }
                dd { @for (p, param) in &sop.params { code { (p) } @if param.required { " (required)" } " " } }
            }
        }
        @if loaded { (start::form(api, viewer, &sop, filled)) }
        section aria-labelledby="graph-h" {
            h2 id="graph-h" { "Graph" }
            div.graph { (PreEscaped(graph)) }
            p.aside { a href=(format!("/sops/{name}/graph.svg{}", q.version.as_deref().map(|v| format!("?version={}", super::page::encode(v))).unwrap_or_default())) { "Download the graph (SVG)" } }
        }
        section aria-labelledby="versions-h" {
            h2 id="versions-h" { "Versions" }
            @if versions.is_empty() { p.empty { "No run has used this SOP yet." } } @else {
                table {
                    thead { tr { th { "Version" } th { "First used" } th { "Runs" } th { "From" } } }
                    tbody {
                        @for v in &versions {
                            tr {
                                td { a href=(format!("/sops/{name}?version={}", super::page::encode(&v.version))) { code { (short_version(&v.version)) } }
                                    @if current.as_deref() == Some(v.version.as_str()) { " (loaded now)" } }
                                td { (time(&v.created_at)) }
                                td { (v.runs) }
                                td { code { (v.source) } }
                            }
                        }
                    }
                }
            }
        }
        section aria-labelledby="source-h" {
            h2 id="source-h" { "Source" }
            pre.yaml tabindex="0" { (sop.text) }
        }
    };
    Ok(frame(&sop.title, Some(viewer), body))
}

/// `GET /sops/{name}/graph.svg`
pub(crate) async fn graph(
    State(api): State<ApiState>,
    _viewer: Viewer,
    Path(name): Path<String>,
    Query(q): Query<VersionQuery>,
) -> Result<Response, PageError> {
    let sop = definition(&api, &name, q.version.as_deref()).await?;
    Ok(runs::svg_response(gatehouse_graph::svg(
        &gatehouse_graph::Graph::of_sop(&sop),
    )))
}

/// The loaded definition of `name`, or a stored `version` of it.
async fn definition(
    api: &ApiState,
    name: &str,
    version: Option<&str>,
) -> Result<Arc<Sop>, ApiError> {
    let sop = match version {
        Some(version) => api.store.sop_definition(version).await?,
        None => api.catalog.get(name),
    };
    sop.filter(|s| s.name == name).ok_or_else(|| match version {
        Some(v) => ApiError::NotFound(format!("SOP `{name}` has no stored version `{v}`")),
        None => ApiError::NotFound(format!("no SOP named `{name}`")),
    })
}

fn short_version(version: &str) -> &str {
    version.get(..19).unwrap_or(version)
}
