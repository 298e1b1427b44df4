//! The inbox: which events each consumer has already applied.

use chrono::Utc;
use uuid::Uuid;

use crate::error::StoreError;
use crate::tx::{Tx, with_tx};

impl Tx {
    /// Records that `consumer` applied `event_id`, in the transaction of the effect.
    /// Returns `false` when it was recorded before: the event is a redelivery and the
    /// caller must not apply it again.
    ///
    /// On Postgres a concurrent transaction recording the same pair waits for this one, so
    /// two replicas racing on one event cannot both see `true`.
    pub async fn record_inbox(
        &mut self,
        consumer: &str,
        event_id: Uuid,
    ) -> Result<bool, StoreError> {
        let inserted = with_tx!(self, conn => {
            sqlx::query(
                "INSERT INTO inbox (consumer, event_id, processed_at) VALUES ($1, $2, $3)
                 ON CONFLICT (consumer, event_id) DO NOTHING",
            )
            .bind(consumer)
            .bind(event_id)
            .bind(Utc::now())
            .execute(conn)
            .await?
            .rows_affected()
        });
        Ok(inserted == 1)
    }
}
