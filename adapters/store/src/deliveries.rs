//! Webhook deliveries: stored before the answer, and processed in the same commit when
//! nothing waits before them; otherwise after it.

use chrono::{DateTime, Utc};

use crate::error::StoreError;
use crate::store::{Store, with_pool, with_writer};
use crate::text::text_enum;
use crate::tx::{Tx, with_tx};

text_enum! {
    /// Where a stored webhook delivery is: pending until processing finishes it.
    pub enum DeliveryStatus {
        /// Stored, not processed yet.
        Pending = "pending",
        /// Acted on; the note says how.
        Processed = "processed",
        /// Nothing to do; the note says why.
        Ignored = "ignored",
    }
}

#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct DeliveryRow {
    /// `github` (later `slack`, `discord`).
    pub source: String,
    /// The sender's delivery id (`X-GitHub-Delivery`).
    pub delivery_id: String,
    /// The event name (`X-GitHub-Event`).
    pub event: String,
    /// The raw body, already verified.
    pub body: String,
    pub status: DeliveryStatus,
    /// What processing did or why it ignored the delivery.
    pub note: Option<String>,
    /// When it arrived.
    pub received_at: DateTime<Utc>,
}

const COLUMNS: &str = "source, delivery_id, event, body, status, note, received_at";

/// A delivery stored as pending, unless its id was stored before.
const INSERT_PENDING: &str =
    "INSERT INTO webhook_deliveries (source, delivery_id, event, body, status, received_at)
     VALUES ($1, $2, $3, $4, 'pending', $5) ON CONFLICT (source, delivery_id) DO NOTHING";

impl Store {
    /// Stores a delivery as pending; `false` when this delivery id was stored before (a
    /// redelivery, which must then do nothing).
    pub async fn record_delivery(
        &self,
        source: &str,
        delivery_id: &str,
        event: &str,
        body: &str,
    ) -> Result<bool, StoreError> {
        let inserted = with_writer!(self, pool => {
            sqlx::query(INSERT_PENDING)
                .bind(source)
                .bind(delivery_id)
                .bind(event)
                .bind(body)
                .bind(Utc::now())
                .execute(pool)
                .await?
                .rows_affected()
        });
        Ok(inserted == 1)
    }

    /// Deliveries not processed yet, oldest first.
    pub async fn pending_deliveries(&self, limit: i64) -> Result<Vec<DeliveryRow>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM webhook_deliveries WHERE status = 'pending'
             ORDER BY received_at, delivery_id LIMIT $1"
        );
        Ok(with_pool!(self, pool => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(limit).fetch_all(pool).await?
        }))
    }

    pub async fn delivery(
        &self,
        source: &str,
        delivery_id: &str,
    ) -> Result<Option<DeliveryRow>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM webhook_deliveries WHERE source = $1 AND delivery_id = $2"
        );
        Ok(with_pool!(self, pool => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(source)
                .bind(delivery_id)
                .fetch_optional(pool)
                .await?
        }))
    }
}

impl Tx {
    /// [`Store::record_delivery`] within this transaction, so the delivery can be
    /// processed in the commit that stores it: the row stored, or `None` for a redelivery.
    pub async fn record_delivery(
        &mut self,
        source: &str,
        delivery_id: &str,
        event: &str,
        body: &str,
    ) -> Result<Option<DeliveryRow>, StoreError> {
        let received_at = Utc::now();
        let inserted = with_tx!(self, conn => {
            sqlx::query(INSERT_PENDING)
                .bind(source)
                .bind(delivery_id)
                .bind(event)
                .bind(body)
                .bind(received_at)
                .execute(conn)
                .await?
                .rows_affected()
        });
        Ok((inserted == 1).then(|| DeliveryRow {
            source: source.to_owned(),
            delivery_id: delivery_id.to_owned(),
            event: event.to_owned(),
            body: body.to_owned(),
            status: DeliveryStatus::Pending,
            note: None,
            received_at,
        }))
    }

    /// Whether a delivery other than `(source, delivery_id)` waits to be processed: one
    /// that arrives behind it must wait its turn rather than overtake it.
    pub async fn other_delivery_pending(
        &mut self,
        source: &str,
        delivery_id: &str,
    ) -> Result<bool, StoreError> {
        let found: Option<(i32,)> = with_tx!(self, conn => {
            sqlx::query_as(
                "SELECT 1 FROM webhook_deliveries WHERE status = 'pending'
                   AND NOT (source = $1 AND delivery_id = $2) LIMIT 1",
            )
            .bind(source)
            .bind(delivery_id)
            .fetch_optional(conn)
            .await?
        });
        Ok(found.is_some())
    }

    /// Marks a pending delivery done (`processed` or `ignored`) with a note; `false` when
    /// another process finished it first, in which case the caller must roll back.
    pub async fn finish_delivery(
        &mut self,
        source: &str,
        delivery_id: &str,
        status: DeliveryStatus,
        note: &str,
    ) -> Result<bool, StoreError> {
        let updated = with_tx!(self, conn => {
            sqlx::query(
                "UPDATE webhook_deliveries SET status = $1, note = $2, processed_at = $3
                 WHERE source = $4 AND delivery_id = $5 AND status = 'pending'",
            )
            .bind(status)
            .bind(note)
            .bind(Utc::now())
            .bind(source)
            .bind(delivery_id)
            .execute(conn)
            .await?
            .rows_affected()
        });
        Ok(updated == 1)
    }
}
