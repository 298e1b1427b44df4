//! Webhook deliveries: stored before the answer, processed after it.

use chrono::{DateTime, Utc};

use crate::store::{with_pool, with_writer};
use crate::text::text_enum;
use crate::tx::with_tx;
use crate::{Store, StoreError, Tx};

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
            sqlx::query(
                "INSERT INTO webhook_deliveries (source, delivery_id, event, body, status, received_at)
                 VALUES ($1, $2, $3, $4, 'pending', $5) ON CONFLICT (source, delivery_id) DO NOTHING",
            )
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
