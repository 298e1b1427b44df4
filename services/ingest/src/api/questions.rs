//! `/questions`: what agents asked people while they ran, and answering them.

pub(crate) mod views;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use gatehouse_events::Event;
use gatehouse_store::{ConnectionOwner, QuestionRow};

use crate::error::ErrorBody;
use crate::ids;
use crate::question_answer::checked_answer;
use crate::rights::Caller;
use crate::views::*;
use crate::{ApiError, ApiState, outbox, projects};
use gatehouse_store::IdKind;

/// The most open questions listed at once.
const LISTED: i64 = 500;

/// Questions waiting for a person, in the projects the caller may read, oldest first.
#[utoipa::path(get, path = "/questions", responses((status = 200, body = [QuestionView])))]
pub async fn list(
    State(api): State<ApiState>,
    caller: Caller,
) -> Result<Json<Vec<QuestionView>>, ApiError> {
    let reader = caller.reader();
    Ok(Json(
        api.store
            .open_questions(LISTED)
            .await?
            .iter()
            .filter(|q| projects::may_read(&api, q.project.as_deref(), reader))
            .map(view)
            .collect(),
    ))
}

/// One question, open or answered.
#[utoipa::path(get, path = "/questions/{id}", responses(
    (status = 200, body = QuestionView), (status = 404, body = ErrorBody)))]
pub async fn show(
    State(api): State<ApiState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<QuestionView>, ApiError> {
    let id = ids::resolve(&api, IdKind::Question, &id, caller.reader()).await?;
    let question = api
        .store
        .question(id)
        .await?
        .filter(|q| projects::may_read(&api, q.project.as_deref(), caller.reader()))
        .ok_or_else(|| ApiError::NotFound(format!("no question {id}")))?;
    Ok(Json(view(&question)))
}

/// Answers a question: the agent waiting on it goes on with the answer and the comment.
/// Only a person with the project's `approve` right answers; the first answer wins (a
/// second is refused, 409, with who answered).
#[utoipa::path(post, path = "/questions/{id}/answer", request_body = AnswerQuestion, responses(
    (status = 202, body = Answered), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
    (status = 409, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn answer(
    State(api): State<ApiState>,
    caller: Caller,
    Path(id): Path<String>,
    Json(body): Json<AnswerQuestion>,
) -> Result<(StatusCode, Json<Answered>), ApiError> {
    let id = ids::resolve(&api, IdKind::Question, &id, caller.reader()).await?;
    let mut tx = api.store.begin().await?;
    let answered = checked_answer(
        &api,
        &mut tx,
        id,
        body.answer,
        body.comment,
        caller.actor(),
        &caller.groups,
    )
    .await?;
    let event_id = outbox::append(&mut tx, Event::QuestionAnswered(answered)).await?;
    tx.commit().await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(Answered {
            question_id: id,
            event_id,
        }),
    ))
}

/// A stored question as the API shows it.
pub(crate) fn view(q: &QuestionRow) -> QuestionView {
    let (run_id, node, conversation_id, turn) = match &q.owner {
        ConnectionOwner::Node { run_id, node } => (Some(*run_id), Some(node.clone()), None, None),
        ConnectionOwner::Turn {
            conversation_id,
            seq,
        } => (None, None, Some(*conversation_id), Some(*seq)),
    };
    QuestionView {
        id: q.id,
        kind: q.kind.as_str().to_owned(),
        question: q.question.clone(),
        evidence: q.evidence.clone(),
        status: q.status.as_str().to_owned(),
        run_id,
        node,
        conversation_id,
        turn,
        attempt: q.attempt,
        project: q.project.clone(),
        asked_at: q.asked_at,
        expires_at: q.expires_at,
        decided_by: q.decided_by.clone(),
        channel: q.channel.clone(),
        comment: q.comment.clone(),
        decided_at: q.decided_at,
    }
}
