//! Clicks on agents' question cards (and the Deny dialog) become answers, through
//! [`checked_answer`] like every other channel's: a person known to Gatehouse, with the
//! question's project's `approve` right, and a compare-and-set so the first answer wins. A
//! click that answers nothing gets an ephemeral reply saying why (who answered first, what
//! right is missing) — only the clicker sees it; the card changes once the answer is out.

use gatehouse_chat::{QuestionAction, QuestionVerb};
use gatehouse_events::{Actor, Event};
use gatehouse_store::Tx;

use super::Platform;
use super::mention::{Reply, chat_actor, want_chat_text};
use crate::intake::deliveries::Outcome;
use crate::question_answer::{checked_answer, settled};
use crate::views::AnswerKind;
use crate::{ApiError, ApiState, outbox};

/// An answer clicked on a question card, on either platform.
pub(crate) struct QuestionClick {
    pub platform: Platform,
    /// The clicker's platform id.
    pub user: String,
    /// Slack: the channel for the ephemeral answer.
    pub channel: String,
    /// Who the ephemeral answer goes to: the Slack user, or the Discord interaction token.
    pub recipient: String,
    /// What the control means.
    pub action: QuestionAction,
    /// The reason given in the Deny dialog.
    pub comment: Option<String>,
}

/// Answers the question the click names, or tells the clicker why not.
pub(crate) async fn handle(
    api: &ApiState,
    tx: &mut Tx,
    delivery: &str,
    c: &QuestionClick,
) -> Result<Outcome, ApiError> {
    let actor = chat_actor(api, c.platform, &c.user).await?;
    let question = c.action.question;
    match answer(api, tx, c, actor).await {
        Ok(note) => Ok(Outcome::processed(vec![note])),
        Err(e) if e.status().is_server_error() => Err(e),
        Err(e) => {
            let key = format!("ephemeral:{}:{delivery}", c.platform.name());
            let text = format!("Your answer to the agent's question was not taken: {e}.");
            let to = Reply {
                platform: c.platform,
                key: &key,
                channel: &c.channel,
                thread: None,
                recipient: Some(&c.recipient),
            };
            want_chat_text(tx, &to, &text).await?;
            Ok(Outcome::processed(vec![format!(
                "question {question}: refused: {e}"
            )]))
        }
    }
}

async fn answer(
    api: &ApiState,
    tx: &mut Tx,
    c: &QuestionClick,
    actor: Actor,
) -> Result<String, ApiError> {
    let Some(person) = actor.person.clone() else {
        return Err(ApiError::Forbidden(format!(
            "you are not one of the people configured for Gatehouse, so you cannot answer agents; ask an administrator to add your {} id `{}` to [[people]]",
            c.platform.name(),
            c.user
        )));
    };
    let groups = api.people.current(&api.store).await?.groups(&person);
    let kind = match c.action.verb {
        QuestionVerb::Approve => AnswerKind::Approve,
        QuestionVerb::Deny => AnswerKind::Deny,
    };
    let answered = checked_answer(
        api,
        tx,
        c.action.question,
        kind,
        c.comment.clone(),
        actor,
        &groups,
    )
    .await?;
    let note = format!(
        "question {}: {} by {person}",
        c.action.question,
        answered.answer.as_str()
    );
    outbox::append(tx, Event::QuestionAnswered(answered)).await?;
    Ok(note)
}

/// Why a Deny dialog should not open: the question is unknown or already answered (the
/// click would be refused anyway; saying so now spares typing a reason).
pub(crate) async fn closed(api: &ApiState, action: &QuestionAction) -> Option<String> {
    match api.store.question(action.question).await {
        Ok(Some(question)) if question.status.is_open() => None,
        Ok(Some(question)) => Some(settled(&question)),
        Ok(None) => Some(format!("there is no question {}", action.question)),
        // The submission is checked properly; a read failure need not stop the dialog.
        Err(e) => {
            tracing::warn!(error = %e, "reading a question before its Deny dialog failed");
            None
        }
    }
}
