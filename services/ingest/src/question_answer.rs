//! Answers to agents' questions, whatever their channel (the API, the console, chat
//! cards): the same check as gate decisions (a person known to Gatehouse, with the
//! question's project's `approve` right), then a compare-and-set on the question in the
//! caller's transaction, so of two answers racing the second is refused with who won.

use gatehouse_events::{Actor, QuestionAnswer, QuestionAnswered};
use gatehouse_store::{Answer, Answered, MAX_QUESTION_BYTES, QuestionRow, QuestionStatus, Tx};
use uuid::Uuid;

use crate::views::AnswerKind;
use crate::{ApiError, ApiState, projects};

/// Checks and records `answer` to question `id` in `tx`, returning the event to emit.
pub(crate) async fn checked_answer(
    api: &ApiState,
    tx: &mut Tx,
    id: Uuid,
    answer: AnswerKind,
    comment: Option<String>,
    actor: Actor,
    groups: &[String],
) -> Result<QuestionAnswered, ApiError> {
    let person = actor.person.clone().ok_or_else(|| {
        ApiError::Forbidden(format!(
            "`{}` is not one of the people known to Gatehouse, so it cannot answer an agent",
            actor.handle
        ))
    })?;
    let comment = comment
        .map(|c| c.trim().to_owned())
        .filter(|c| !c.is_empty());
    if let Some(comment) = &comment
        && comment.len() > MAX_QUESTION_BYTES
    {
        return Err(ApiError::Unprocessable(format!(
            "the comment is {} bytes; keep it under {MAX_QUESTION_BYTES}",
            comment.len()
        )));
    }
    let question = api
        .store
        .question(id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no question {id}")))?;
    projects::may_decide(api, question.project.as_deref(), &person, groups)?;
    if !question.status.is_open() {
        return Err(ApiError::Conflict(settled(&question)));
    }
    if question
        .expires_at
        .is_some_and(|at| at <= chrono::Utc::now())
    {
        return Err(ApiError::Conflict(
            "the question's time ran out: nobody waits for the answer any more".into(),
        ));
    }
    if let gatehouse_store::ConnectionOwner::Node { run_id, .. } = &question.owner
        && let Some(run) = api.store.run(*run_id).await?
        && run.status.is_terminal()
    {
        return Err(ApiError::Conflict(format!(
            "run {run_id} has ended ({}); its agent no longer waits for an answer",
            run.status
        )));
    }
    let (status, wire) = match answer {
        AnswerKind::Approve => (QuestionStatus::Approved, QuestionAnswer::Approved),
        AnswerKind::Deny => (QuestionStatus::Denied, QuestionAnswer::Denied),
    };
    let recorded = tx
        .answer_question(
            id,
            &Answer {
                status,
                decided_by: Some(&person),
                channel: Some(actor.channel.as_str()),
                comment: comment.as_deref(),
                at: chrono::Utc::now(),
            },
        )
        .await?;
    match recorded {
        Some(Answered::Closed(row)) => Ok(QuestionAnswered {
            question_id: id,
            owner: row.event_owner(),
            answer: wire,
            comment,
            actor: Some(actor),
        }),
        Some(Answered::AlreadyClosed(row)) => Err(ApiError::Conflict(settled(&row))),
        None => Err(ApiError::NotFound(format!("no question {id}"))),
    }
}

/// Who closed a question, for whoever came second.
pub(crate) fn settled(question: &QuestionRow) -> String {
    let by = question.decided_by.as_deref().unwrap_or("nobody");
    let when = question
        .decided_at
        .map(|at| format!(" at {}", at.format("%Y-%m-%d %H:%M:%S UTC")))
        .unwrap_or_default();
    let channel = question
        .channel
        .as_deref()
        .map(|c| format!(" ({c})"))
        .unwrap_or_default();
    match question.status {
        QuestionStatus::Approved => {
            format!("the question was already approved by {by}{when}{channel}")
        }
        QuestionStatus::Denied => format!("the question was already denied by {by}{when}{channel}"),
        QuestionStatus::Expired => format!("the question expired unanswered{when}"),
        QuestionStatus::Withdrawn => format!("the question was withdrawn{when}"),
        QuestionStatus::Open => "the question is open".to_owned(),
    }
}
