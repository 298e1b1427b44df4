//! Events ingest sends: written to the outbox (for the scheduler and the notifier) in the
//! same transaction as what caused them.

use gatehouse_events::{Envelope, Event};
use gatehouse_store::{Store, Tx};
use uuid::Uuid;

use crate::ApiError;

/// Appends `event` to the outbox in a transaction of its own.
pub(crate) async fn emit(store: &Store, event: Event) -> Result<Uuid, ApiError> {
    let mut tx = store.begin().await?;
    let id = append(&mut tx, event).await?;
    tx.commit().await?;
    Ok(id)
}

/// Appends `event` to the outbox within the caller's transaction, so it is sent if and
/// only if the rest of the transaction commits.
pub(crate) async fn append(tx: &mut Tx, event: Event) -> Result<Uuid, ApiError> {
    // Continues the trace of the request or delivery being handled.
    let envelope = Envelope::new("ingest", &event, Some(crate::trace::for_event()))?;
    tx.append_outbox(&envelope).await?;
    Ok(envelope.id)
}

/// Hands what `person` said to conversation `conversation` (`conversation.input`),
/// numbered in the order ingest heard its thread; returns the number.
pub(crate) async fn say_to_conversation(
    tx: &mut Tx,
    conversation: Uuid,
    person: &str,
    said: gatehouse_events::Said,
) -> Result<u64, ApiError> {
    let seq = tx.number_conversation_input(conversation).await?;
    let input = gatehouse_events::ConversationInput {
        conversation_id: conversation,
        seq,
        person: person.to_owned(),
        said,
    };
    append(tx, Event::ConversationInput(input)).await?;
    Ok(seq)
}
