//! A conversation's page: each message to the assistant, how each attempt of its turn
//! went (the reply, the tools called, the time and the tokens), the network connections
//! of its sandboxes, the workspace's repositories and the pull requests; read as `GET /api/v1/conversations/{id}` reads it.

use axum::Json;
use axum::extract::{Path, State};
use maud::{Markup, html};

use super::inbox::short;
use super::network;
use super::page::{PageError, dollars, duration, frame, status, time, usage};
use super::session::Viewer;
use crate::ApiState;
use crate::api::conversations;
use crate::ids;
use crate::views::{ConnectionView, TurnView};
use gatehouse_store::IdKind;

/// `GET /conversations/{id}`
pub(crate) async fn page(
    State(api): State<ApiState>,
    viewer: Viewer,
    Path(id): Path<String>,
) -> Result<Markup, PageError> {
    let id = ids::resolve(&api, IdKind::Conversation, &id, viewer.caller.reader()).await?;
    let Json(detail) =
        conversations::show(State(api), viewer.caller.clone(), Path(id.to_string())).await?;
    let c = &detail.conversation;
    let connections: Vec<(String, &[ConnectionView])> = detail
        .turns
        .iter()
        .flat_map(|t| t.attempts.iter().map(move |a| (t.seq, a)))
        .filter(|(_, a)| !a.connections.is_empty())
        .map(|(seq, a)| (format!("turn {seq} #{}", a.attempt), &a.connections[..]))
        .collect();
    let title = format!("Conversation {}", short(&c.id.to_string()));
    let body = html! {
        h1 { (title) " " (status(&c.activity)) }
        dl.facts {
            dt { "Requirement" } dd { a href=(format!("/requirements/{}", c.requirement_id)) { (short(&c.requirement_id.to_string())) } }
            dt { "Project" } dd { (c.project) }
            dt { "Where" } dd {
                @if c.platform == "github" {
                    "GitHub issue " code { (c.channel) "#" (c.thread) }
                } @else {
                    (c.platform) " " code { (c.channel) } " thread " code { (c.thread) }
                }
            }
            dt { "Started by" } dd { (c.started_by) " at " (time(&c.created_at)) }
            dt { "Turns" } dd { (c.turn_count) @if c.queued > 0 { ", " (c.queued) " waiting" } }
            @if !detail.repositories.is_empty() {
                dt { "Repositories" } dd { @for r in &detail.repositories { code { (r) } " " } }
            }
            dt { "Agents used" } dd { (usage(&detail.usage)) }
        }
        @if !detail.pull_requests.is_empty() {
            section aria-labelledby="prs-h" {
                h2 id="prs-h" { "Pull requests" }
                ul { @for p in &detail.pull_requests { li { code { (p.repo) "#" (p.number) } " " (status(&p.state)) } } }
            }
        }
        section aria-labelledby="turns-h" {
            h2 id="turns-h" { "Turns" }
            @if detail.turns.is_empty() { p.empty { "Nothing was said yet." } }
            @for turn in &detail.turns { (turn_section(turn)) }
        }
        (network::section(&connections, &format!("/api/v1/conversations/{}", c.id)))
    };
    Ok(frame(&title, Some(&viewer), body))
}

fn turn_section(turn: &TurnView) -> Markup {
    html! {
        article.turn id=(format!("turn-{}", turn.seq)) {
            h3 {
                "#" (turn.seq) " " (turn.person)
                @match (turn.kind.as_str(), &turn.role) {
                    ("ask", Some(role)) => { " asked " (role) }
                    ("deliver", _) => { " asked to deliver" @if turn.draft { " (draft)" } }
                    _ => { @if turn.steer { " steered" } }
                }
                " " (status(&turn.status))
            }
            blockquote.said { (turn.text) }
            @if let Some(failure) = &turn.failure { p.error { (failure) } }
            @for a in &turn.attempts {
                section.attempt {
                    p.meta {
                        "attempt " (a.attempt) " · " (a.role) " · " (status(&a.status)) " · " (time(&a.started_at))
                        @if let Some(ms) = a.duration_ms { " · took " (duration(ms)) }
                        @if let Some(ms) = a.cli_ms { " (the CLI " (duration(ms)) ")" }
                        " · " (a.usage.input_tokens + a.usage.output_tokens) " tokens, " (dollars(a.usage.cost_usd))
                    }
                    @if let Some(reply) = &a.reply { pre.reply tabindex="0" { (reply) } }
                    @if let Some(failure) = &a.failure { p.error { (failure) } }
                    @if !a.tools.is_empty() {
                        details {
                            summary { (a.tools.len()) " tool calls" }
                            ol { @for t in &a.tools {
                                li class=[t.failed.then_some("failed")] {
                                    code { (t.tool) } " " (t.summary)
                                    @if let Some(ms) = t.duration_ms { " (" (duration(ms)) ")" }
                                }
                            } }
                        }
                    }
                }
            }
        }
    }
}
