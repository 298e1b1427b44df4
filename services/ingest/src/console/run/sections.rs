//! The parts of a run's page that show what happened: each node with its attempts (their
//! durations, reasons, tool calls and usage) and artifacts, the network connections of
//! their sandboxes, and the audit trail of decisions.

use maud::{Markup, html};

use super::super::page::{dollars, duration, status, time};
use crate::console::session::Viewer;
use crate::views::{AttemptView, ConnectionView, NodeView, RunDetail};

pub(super) fn nodes(detail: &RunDetail) -> Markup {
    html! {
        section id="nodes" aria-labelledby="nodes-h" {
            h2 id="nodes-h" { "Nodes" }
            @for node in &detail.nodes {
                (node_section(detail, node))
            }
        }
    }
}

fn node_section(detail: &RunDetail, node: &NodeView) -> Markup {
    let attempts: Vec<&AttemptView> = detail
        .attempts
        .iter()
        .filter(|a| a.node == node.node)
        .collect();
    html! {
        section.node id=(format!("node-{}", node.node)) aria-labelledby=(format!("node-h-{}", node.node)) {
            h3 id=(format!("node-h-{}", node.node)) {
                (node.node) " " span.kind { (node.kind) } " " (status(&node.status))
            }
            p.meta {
                "attempt " (node.attempt)
                @if node.rework_count > 0 { " · reworked " (node.rework_count) "×" }
                @if let Some(ms) = node.duration_ms { " · last took " (duration(ms)) }
            }
            @if let Some(error) = &node.last_error { p.error { (error) } }
            (gate_decisions(detail, &node.node))
            @if !attempts.is_empty() {
                table.attempts {
                    caption { "Attempts of " (node.node) }
                    thead { tr { th { "#" } th { "Status" } th { "Started" } th { "Took" } th { "Exit" } th { "Reason" } th { "Usage" } } }
                    tbody {
                        @for a in &attempts {
                            tr {
                                td { (a.attempt) }
                                td { (status(&a.status)) }
                                td { (time(&a.started_at)) }
                                td { @if let Some(ms) = a.duration_ms { (duration(ms)) } }
                                td { @if let Some(code) = a.exit_code { (code) } }
                                td { @if let Some(e) = &a.error { (e) } }
                                td { (attempt_usage(detail, &node.node, a.attempt)) }
                            }
                            @if !a.tools.is_empty() {
                                tr.tools { td colspan="7" {
                                    details {
                                        summary { (a.tools.len()) " tool calls" }
                                        ol {
                                            @for t in &a.tools {
                                                li class=[t.failed.then_some("failed")] {
                                                    code { (t.tool) } " " (t.summary)
                                                    @if let Some(ms) = t.duration_ms { " (" (duration(ms)) ")" }
                                                    @if t.failed { " — failed" }
                                                }
                                            }
                                        }
                                    }
                                } }
                            }
                        }
                    }
                }
            }
            (artifacts(detail, &node.node))
        }
    }
}

/// The decisions taken at a gate node: who decided what, on which attempt.
fn gate_decisions(detail: &RunDetail, node: &str) -> Markup {
    let taken: Vec<_> = detail.decisions.iter().filter(|d| d.node == node).collect();
    html! {
        @if !taken.is_empty() {
            ul.decisions aria-label=(format!("Decisions at {node}")) {
                @for d in taken {
                    li {
                        strong { (d.person) } " " (d.decision.replace('_', " "))
                        @if let Some(t) = &d.target { " to " (t) }
                        " · attempt " (d.attempt) " · " (time(&d.decided_at))
                        @if d.outcome != "applied" { " · " span.error { (d.outcome) } }
                        @if let Some(c) = &d.comment { ": " q { (c) } }
                    }
                }
            }
        }
    }
}

fn attempt_usage(detail: &RunDetail, node: &str, attempt: i32) -> Markup {
    let rows: Vec<_> = detail
        .usage
        .attempts
        .iter()
        .filter(|u| u.node == node && u.attempt == attempt)
        .collect();
    html! {
        @for u in rows {
            span.usage { (u.model) ": " (u.input_tokens) " in, " (u.output_tokens) " out"
                @if let Some(cost) = u.cost_usd { ", " (dollars(cost)) } }
        }
    }
}

fn artifacts(detail: &RunDetail, node: &str) -> Markup {
    let id = detail.run.id;
    let files: Vec<_> = detail.artifacts.iter().filter(|a| a.node == node).collect();
    html! {
        @if !files.is_empty() {
            ul.artifacts aria-label=(format!("Artifacts of {node}")) {
                @for a in files {
                    li {
                        a href=(format!("/runs/{id}/artifacts/{}/{}/{}", a.node, a.attempt, a.name)) { (a.name) }
                        " · attempt " (a.attempt) " · " (a.size) " B · "
                        a href=(format!("/runs/{id}/download/{}/{}/{}", a.node, a.attempt, a.name)) { "download" }
                        " " code.sha { "sha256:" (a.sha256.get(..12).unwrap_or(&a.sha256)) }
                    }
                }
            }
        }
    }
}

/// Where each attempt's sandbox connected through the egress proxy, refusals first.
pub(super) fn network(detail: &RunDetail) -> Markup {
    let attempts: Vec<(String, &[ConnectionView])> = detail
        .attempts
        .iter()
        .filter(|a| !a.connections.is_empty())
        .map(|a| (format!("{} #{}", a.node, a.attempt), &a.connections[..]))
        .collect();
    super::super::network::section(&attempts, &format!("/api/v1/runs/{}", detail.run.id))
}

/// Who decided what, where and when.
pub(super) fn audit(detail: &RunDetail) -> Markup {
    html! {
        section id="audit" aria-labelledby="audit-h" {
            h2 id="audit-h" { "Decisions" }
            @if detail.decisions.is_empty() {
                p.empty { "No decisions yet." }
            } @else {
                table {
                    thead { tr { th { "When" } th { "Who" } th { "Gate" } th { "Decision" } th { "Comment" } th { "Where" } th { "Outcome" } } }
                    tbody {
                        @for d in &detail.decisions {
                            tr {
                                td { (time(&d.decided_at)) }
                                td { (d.person) }
                                td { (d.node) " #" (d.attempt) }
                                td { (d.decision.replace('_', " ")) @if let Some(t) = &d.target { " to " (t) } }
                                td { @if let Some(c) = &d.comment { (c) } }
                                td { (d.channel) }
                                td { (d.outcome) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// What the run's agents asked people, answered or not, with the answer form on an open
/// one for whoever may answer. The questions are the agents' text, shown as text.
pub(super) fn questions(
    viewer: &Viewer,
    asked: &[crate::views::QuestionView],
    may_answer: bool,
    next: &str,
) -> Markup {
    html! {
        @if !asked.is_empty() {
            section id="questions" aria-labelledby="questions-h" {
                h2 id="questions-h" { "Agents' questions" }
                @for q in asked {
                    article.gate.question aria-label=(format!("Question {}", q.id)) {
                        h3 {
                            @if q.kind == "permission" { "Tool use" } @else { "Approval" }
                            @if let Some(node) = &q.node { " · node " (node) }
                            " · attempt " (q.attempt) " · " (status(&q.status))
                        }
                        blockquote.asked { (q.question) }
                        @if let Some(evidence) = &q.evidence {
                            details { summary { "Evidence" } pre { (evidence) } }
                        }
                        p.meta {
                            "asked " (time(&q.asked_at))
                            @if let Some(by) = &q.decided_by { " · answered by " (by) }
                            @if let Some(channel) = &q.channel { " in " (channel) }
                            @if let Some(at) = &q.decided_at { " · " (time(at)) }
                        }
                        @if let Some(comment) = &q.comment { p.comment { (comment) } }
                        @if q.status == "open" && may_answer {
                            (crate::console::actions::answer_form(viewer, q, next))
                        }
                    }
                }
            }
        }
    }
}
