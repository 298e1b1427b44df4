//! The notifier's second consumer, `notifier-questions` on `question.>`: when an agent
//! asks a person something, its cards go out (see `chat::questions`); when the question is
//! answered, the cards show the answer and lose their buttons. Either way a run's status
//! comment is rendered again, since it lists the questions its agents wait on.

use async_trait::async_trait;
use gatehouse_bus::{Handler, HandlerError};
use gatehouse_events::{Envelope, Event};
use gatehouse_store::{ConnectionOwner, Tx};

use crate::Notifier;

/// Name of the consumer of questions.
pub(crate) const CONSUMER: &str = "notifier-questions";
/// What it consumes.
pub(crate) const TOPICS: &str = "question.>";

/// The notifier, as the consumer of questions.
pub(crate) struct Questions(pub(crate) Notifier);

#[async_trait]
impl Handler for Questions {
    async fn handle(&self, tx: &mut Tx, envelope: &Envelope) -> Result<(), HandlerError> {
        let n = &self.0;
        if n.github.is_none() && !n.chat.any() {
            return Ok(());
        }
        let (id, asked) = match envelope.decode() {
            Ok(Event::QuestionAsked(e)) => (e.question_id, true),
            Ok(Event::QuestionAnswered(e)) => (e.question_id, false),
            _ => return Ok(()),
        };
        // The stored question, not the event: it is the newest, so a late or repeated
        // event never rolls a card back.
        let Some(question) = n.store.question(id).await? else {
            return Ok(());
        };
        // Cards go to chat, and to an issue's conversation on GitHub.
        if n.chat.any() || n.github.is_some() {
            n.question_cards(tx, &question, asked).await?;
        }
        if n.github.is_some()
            && let ConnectionOwner::Node { run_id, .. } = &question.owner
        {
            n.status_of_run(tx, *run_id).await?;
        }
        Ok(())
    }

    async fn committed(&self, event: &Envelope) {
        self.0.committed(event).await;
    }
}
