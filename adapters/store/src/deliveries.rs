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
    /// When processing finished it.
    pub processed_at: Option<DateTime<Utc>>,
    /// The project it concerns, as known when it arrived; `None` when it concerns none
    /// (then only administrators may see it).
    pub project: Option<String>,
    /// Why processing it last failed, while it is pending to be tried again.
    pub error: Option<String>,
}

const COLUMNS: &str =
    "source, delivery_id, event, body, status, note, received_at, processed_at, project, error";

/// A delivery stored as pending, unless its id was stored before.
const INSERT_PENDING: &str = "INSERT INTO webhook_deliveries
       (source, delivery_id, event, body, status, received_at, project)
     VALUES ($1, $2, $3, $4, 'pending', $5, $6) ON CONFLICT (source, delivery_id) DO NOTHING";

/// What a delivery came to, as people filter by it: `failed` is one pending again after
/// processing it failed, `pending` one not tried yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryOutcome {
    Processed,
    Ignored,
    Pending,
    Failed,
}

impl DeliveryOutcome {
    /// Every outcome, in the order people read them.
    pub const ALL: [DeliveryOutcome; 4] = [
        DeliveryOutcome::Processed,
        DeliveryOutcome::Ignored,
        DeliveryOutcome::Pending,
        DeliveryOutcome::Failed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryOutcome::Processed => "processed",
            DeliveryOutcome::Ignored => "ignored",
            DeliveryOutcome::Pending => "pending",
            DeliveryOutcome::Failed => "failed",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|o| o.as_str() == name)
    }

    /// The outcome of a stored row.
    pub fn of(row: &DeliveryRow) -> Self {
        match row.status {
            DeliveryStatus::Processed => DeliveryOutcome::Processed,
            DeliveryStatus::Ignored => DeliveryOutcome::Ignored,
            DeliveryStatus::Pending if row.error.is_some() => DeliveryOutcome::Failed,
            DeliveryStatus::Pending => DeliveryOutcome::Pending,
        }
    }

    /// The condition on a row, in SQL.
    fn clause(self) -> &'static str {
        match self {
            DeliveryOutcome::Processed => "status = 'processed'",
            DeliveryOutcome::Ignored => "status = 'ignored'",
            DeliveryOutcome::Pending => "status = 'pending' AND error IS NULL",
            DeliveryOutcome::Failed => "status = 'pending' AND error IS NOT NULL",
        }
    }
}

/// Which deliveries a list shows, newest first.
#[derive(Debug, Clone, Default)]
pub struct DeliveryFilter<'a> {
    /// Only this source's (`github`, `slack`, `discord`).
    pub source: Option<&'a str>,
    pub outcome: Option<DeliveryOutcome>,
    /// Only those received before this time (the next page).
    pub before: Option<DateTime<Utc>>,
    /// Only those of these projects; `None` for every delivery, those of no project too.
    pub projects: Option<&'a [String]>,
    pub limit: i64,
}

impl Store {
    /// Stores a delivery as pending; `false` when this delivery id was stored before (a
    /// redelivery, which must then do nothing).
    pub async fn record_delivery(
        &self,
        source: &str,
        delivery_id: &str,
        event: &str,
        body: &str,
        project: Option<&str>,
    ) -> Result<bool, StoreError> {
        let inserted = with_writer!(self, pool => {
            sqlx::query(INSERT_PENDING)
                .bind(source)
                .bind(delivery_id)
                .bind(event)
                .bind(body)
                .bind(Utc::now())
                .bind(project)
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

    /// The deliveries with this id, whatever their source (ids are the senders', so two
    /// sources may share one).
    pub async fn deliveries_with_id(
        &self,
        delivery_id: &str,
    ) -> Result<Vec<DeliveryRow>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM webhook_deliveries WHERE delivery_id = $1 ORDER BY source"
        );
        Ok(with_pool!(self, pool => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(delivery_id)
                .fetch_all(pool)
                .await?
        }))
    }

    /// The deliveries `filter` picks, newest first.
    pub async fn deliveries(
        &self,
        filter: &DeliveryFilter<'_>,
    ) -> Result<Vec<DeliveryRow>, StoreError> {
        let outcome = filter
            .outcome
            .map(|o| format!(" AND {}", o.clause()))
            .unwrap_or_default();
        let projects = match filter.projects {
            None => String::new(),
            Some([]) => " AND 1 = 0".to_owned(),
            Some(names) => {
                let marks: Vec<String> = (0..names.len()).map(|i| format!("${}", i + 4)).collect();
                format!(" AND project IN ({})", marks.join(", "))
            }
        };
        let sql = format!(
            "SELECT {COLUMNS} FROM webhook_deliveries
             WHERE ($1 IS NULL OR source = $1) AND ($2 IS NULL OR received_at < $2){outcome}{projects}
             ORDER BY received_at DESC, delivery_id DESC LIMIT $3"
        );
        Ok(with_pool!(self, pool => {
            let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(filter.source)
                .bind(filter.before)
                .bind(filter.limit);
            for name in filter.projects.unwrap_or_default() {
                query = query.bind(name);
            }
            query.fetch_all(pool).await?
        }))
    }

    /// Records why processing a pending delivery failed; it stays pending, to be tried
    /// again, and shows as failed until then.
    pub async fn delivery_failed(
        &self,
        source: &str,
        delivery_id: &str,
        error: &str,
    ) -> Result<(), StoreError> {
        with_writer!(self, pool => {
            sqlx::query(
                "UPDATE webhook_deliveries SET error = $1
                 WHERE source = $2 AND delivery_id = $3 AND status = 'pending'",
            )
            .bind(error)
            .bind(source)
            .bind(delivery_id)
            .execute(pool)
            .await?
            .rows_affected()
        });
        Ok(())
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
        project: Option<&str>,
    ) -> Result<Option<DeliveryRow>, StoreError> {
        let received_at = Utc::now();
        let inserted = with_tx!(self, conn => {
            sqlx::query(INSERT_PENDING)
                .bind(source)
                .bind(delivery_id)
                .bind(event)
                .bind(body)
                .bind(received_at)
                .bind(project)
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
            processed_at: None,
            project: project.map(str::to_owned),
            error: None,
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
                "UPDATE webhook_deliveries SET status = $1, note = $2, processed_at = $3,
                   error = NULL
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
