//! What the console's forms do: decide a gate, answer an agent's question, pause,
//! resume, cancel or retry a run.
//!
//! Each form is the API's request in another encoding: the handler checks the scope the
//! API route needs (from the one table, [`required_scope`]) and calls the API's handler
//! with the signed-in person as the caller, so the checks — the project's approvers, the
//! gate's rules, the claim that makes decisions compare-and-set — are the same code.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::Method;
use axum::response::Response;
use maud::{Markup, html};
use serde::Deserialize;
use uuid::Uuid;

use super::page::{PageError, csrf_field, local_path, redirect};
use super::session::{Posted, Viewer, WithCsrf};
use crate::api::{gates, questions, runs};
use crate::rights::{Caller, required_scope};
use crate::views::{
    AnswerKind, AnswerQuestion, Decide, DecisionKind, GateView, QuestionView, Retry,
};
use crate::{ApiError, ApiState};

/// A gate decision as the forms send it.
#[derive(Debug, Deserialize)]
pub(crate) struct DecideForm {
    csrf: String,
    decision: DecisionKind,
    attempt: u32,
    #[serde(default)]
    to: Option<String>,
    #[serde(default)]
    comment: Option<String>,
    #[serde(default)]
    next: Option<String>,
}

impl WithCsrf for DecideForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

/// `POST /runs/{id}/gates/{node}/decide`
pub(crate) async fn decide(
    State(api): State<ApiState>,
    Path((id, node)): Path<(String, String)>,
    posted: Posted<DecideForm>,
) -> Result<Response, PageError> {
    let caller = allowed(&posted.viewer, "/runs/{id}/gates/{node}/decision")?;
    let form = posted.form;
    let comment = form.comment.filter(|c| !c.trim().is_empty());
    let to = form.to.filter(|t| !t.is_empty());
    let body = Decide {
        decision: form.decision,
        to: (form.decision == DecisionKind::SendBack)
            .then_some(to)
            .flatten(),
        comment,
        attempt: Some(form.attempt),
    };
    let _accepted = gates::decide(State(api), caller, Path((id, node)), Json(body)).await?;
    let done = match form.decision {
        DecisionKind::Approve => "approved",
        DecisionKind::SendBack => "sent_back",
        DecisionKind::Reject => "rejected",
    };
    Ok(back(form.next.as_deref(), done))
}

/// An answer to an agent's question as the forms send it.
#[derive(Debug, Deserialize)]
pub(crate) struct AnswerForm {
    csrf: String,
    answer: AnswerKind,
    #[serde(default)]
    comment: Option<String>,
    #[serde(default)]
    next: Option<String>,
}

impl WithCsrf for AnswerForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

/// `POST /questions/{id}/answer`
pub(crate) async fn answer(
    State(api): State<ApiState>,
    Path(id): Path<String>,
    posted: Posted<AnswerForm>,
) -> Result<Response, PageError> {
    let caller = allowed(&posted.viewer, "/questions/{id}/answer")?;
    let form = posted.form;
    let body = AnswerQuestion {
        answer: form.answer,
        comment: form.comment.filter(|c| !c.trim().is_empty()),
    };
    let _answered = questions::answer(State(api), caller, Path(id), Json(body)).await?;
    let done = match form.answer {
        AnswerKind::Approve => "answered_yes",
        AnswerKind::Deny => "answered_no",
    };
    Ok(back(form.next.as_deref(), done))
}

/// A run command as the forms send it.
#[derive(Debug, Deserialize)]
pub(crate) struct CommandForm {
    csrf: String,
    command: Command,
    #[serde(default)]
    node: Option<String>,
    #[serde(default)]
    next: Option<String>,
}

impl WithCsrf for CommandForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Command {
    Pause,
    Resume,
    Cancel,
    Retry,
}

/// `POST /runs/{id}/command`
pub(crate) async fn command(
    State(api): State<ApiState>,
    Path(id): Path<String>,
    posted: Posted<CommandForm>,
) -> Result<Response, PageError> {
    let form = posted.form;
    let route = match form.command {
        Command::Pause => "/runs/{id}/pause",
        Command::Resume => "/runs/{id}/resume",
        Command::Cancel => "/runs/{id}/cancel",
        Command::Retry => "/runs/{id}/retry",
    };
    let caller = allowed(&posted.viewer, route)?;
    let (state, path) = (State(api), Path(id));
    let done = match form.command {
        Command::Pause => runs::pause(state, caller, path).await.map(|_| "paused")?,
        Command::Resume => runs::resume(state, caller, path).await.map(|_| "resumed")?,
        Command::Cancel => runs::cancel(state, caller, path)
            .await
            .map(|_| "cancelled")?,
        Command::Retry => {
            let node = form
                .node
                .filter(|n| !n.is_empty())
                .ok_or_else(|| ApiError::Unprocessable("choose the node to run again".into()))?;
            runs::retry(state, caller, path, Json(Retry { node }))
                .await
                .map(|_| "retried")?
        }
    };
    Ok(back(form.next.as_deref(), done))
}

/// The caller for the API route `route` (a POST), if the session's scopes allow it.
pub(crate) fn allowed(viewer: &Viewer, route: &str) -> Result<Caller, ApiError> {
    viewer
        .caller
        .require(required_scope(&Method::POST, route))?;
    Ok(viewer.caller.clone())
}

/// Back to the page the form was on, saying what was done.
pub(crate) fn back(next: Option<&str>, done: &str) -> Response {
    let next = local_path(next);
    let (path, fragment) = next.split_once('#').unwrap_or((next.as_str(), ""));
    let joiner = if path.contains('?') { '&' } else { '?' };
    let fragment = if fragment.is_empty() {
        String::new()
    } else {
        format!("#{fragment}")
    };
    redirect(&format!("{path}{joiner}done={done}{fragment}"))
}

/// What a `done` code says, shown once the form's work is accepted.
pub(crate) fn notice(done: Option<&str>) -> Option<&'static str> {
    Some(match done? {
        "approved" => "Approved. The run goes on once the scheduler applies it.",
        "sent_back" => "Sent back. The node runs again with your comment.",
        "rejected" => "Rejected. The run stops.",
        "paused" => "Paused: nothing new starts until it is resumed.",
        "resumed" => "Resumed.",
        "cancelled" => "Cancelled.",
        "retried" => "The node runs again, with everything after it.",
        "started" => "Started. The run shows here as the scheduler takes it up.",
        "answered_yes" => "Approved. The agent goes on with your answer.",
        "answered_no" => "Denied. The agent is told your reason.",
        _ => return None,
    })
}

/// The form of a waiting gate with the decisions in `open` (approve, send back, reject);
/// `next` is where to return.
pub(crate) fn decision_form(
    viewer: &Viewer,
    gate: &GateView,
    open: &[DecisionKind],
    next: &str,
) -> Markup {
    let action = format!("/runs/{}/gates/{}/decide", gate.run_id, gate.node);
    let comment_id = format!("comment-{}-{}", gate.run_id, gate.node);
    let to_id = format!("to-{}-{}", gate.run_id, gate.node);
    html! {
        @if let Some(refusal) = &gate.raise {
            p.raise { "The agent stopped: " (refusal) ". " (gatehouse_chat::RAISE_EFFECT) }
        }
        @if let Some(feedback) = &gate.feedback {
            p.raise { (feedback) ". " (gatehouse_chat::FEEDBACK_EFFECT) }
        }
        form.decision method="post" action=(action) {
            (csrf_field(viewer))
            input type="hidden" name="attempt" value=(gate.attempt);
            input type="hidden" name="next" value=(next);
            label for=(comment_id) { "Comment" }
            textarea id=(comment_id) name="comment" rows="2" maxlength="4000" {}
            div.buttons {
                @if open.contains(&DecisionKind::Approve) {
                    button.approve type="submit" name="decision" value="approve" { "Approve" }
                }
                @if open.contains(&DecisionKind::SendBack) && !gate.send_back.is_empty() {
                    span.sendback {
                        label for=(to_id) { "Send back to" }
                        select id=(to_id) name="to" {
                            @for node in &gate.send_back {
                                option value=(node) { (node) }
                            }
                        }
                        button type="submit" name="decision" value="send_back" { "Send back" }
                    }
                }
                @if open.contains(&DecisionKind::Reject) {
                    button.reject type="submit" name="decision" value="reject" { "Reject" }
                }
            }
        }
    }
}

/// The form answering an agent's open question; `next` is where to return.
pub(crate) fn answer_form(viewer: &Viewer, question: &QuestionView, next: &str) -> Markup {
    let comment_id = format!("answer-{}", question.id);
    let (yes, no) = match question.kind.as_str() {
        "permission" => ("Allow once", "Deny"),
        _ => ("Approve", "Deny"),
    };
    html! {
        form.decision method="post" action=(format!("/questions/{}/answer", question.id)) {
            (csrf_field(viewer))
            input type="hidden" name="next" value=(next);
            label for=(comment_id) { "Comment for the agent" }
            textarea id=(comment_id) name="comment" rows="2" maxlength="4000" {}
            div.buttons {
                button.approve type="submit" name="answer" value="approve" { (yes) }
                button.reject type="submit" name="answer" value="deny" { (no) }
            }
        }
    }
}

/// A one-button run command form.
pub(crate) fn command_button(viewer: &Viewer, run: Uuid, command: &str, label: &str) -> Markup {
    html! {
        form.inline method="post" action=(format!("/runs/{run}/command")) {
            (csrf_field(viewer))
            input type="hidden" name="command" value=(command);
            input type="hidden" name="next" value=(format!("/runs/{run}"));
            button type="submit" { (label) }
        }
    }
}
