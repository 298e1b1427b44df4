//! Timers: a run's retries waiting out their backoff and gates waiting to expire, kept in
//! the database so they survive restarts and fire on whichever scheduler replica takes them.

use uuid::Uuid;

use crate::error::StoreError;
use crate::store::{Store, with_pool};
use crate::text::text_enum;
use crate::tx::{Tx, with_tx};

text_enum! {
    /// What a timer sets off when it is due.
    pub enum TimerKind {
        /// The node's next attempt, once the backoff after a failed one has passed.
        Retry = "retry",
        /// The gate's `expires_in` has passed.
        Expire = "expire",
    }
}

/// A pending retry or gate expiry.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct TimerRow {
    pub run_id: Uuid,
    pub node: String,
    /// The attempt it belongs to: the failed one for a retry, the gate's for an expiry.
    pub attempt: i32,
    pub kind: TimerKind,
    /// When it is due (epoch ms).
    pub due_ms: i64,
}

impl Tx {
    /// Sets (or moves) a timer.
    pub async fn set_timer(&mut self, timer: &TimerRow) -> Result<(), StoreError> {
        with_tx!(self, conn => {
            sqlx::query(
                "INSERT INTO timers (run_id, node, attempt, kind, due_ms) VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (run_id, node, attempt, kind) DO UPDATE SET due_ms = excluded.due_ms",
            )
            .bind(timer.run_id)
            .bind(&timer.node)
            .bind(timer.attempt)
            .bind(timer.kind)
            .bind(timer.due_ms)
            .execute(conn)
            .await?;
        });
        Ok(())
    }

    /// Removes a timer that fired; `false` when another scheduler took it first.
    pub async fn delete_timer(&mut self, timer: &TimerRow) -> Result<bool, StoreError> {
        let deleted = with_tx!(self, conn => {
            sqlx::query("DELETE FROM timers WHERE run_id = $1 AND node = $2 AND attempt = $3 AND kind = $4")
                .bind(timer.run_id)
                .bind(&timer.node)
                .bind(timer.attempt)
                .bind(timer.kind)
                .execute(conn)
                .await?
                .rows_affected()
        });
        Ok(deleted == 1)
    }
}

impl Store {
    /// Timers due at `now_ms`, earliest first.
    pub async fn due_timers(&self, now_ms: i64) -> Result<Vec<TimerRow>, StoreError> {
        Ok(with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT run_id, node, attempt, kind, due_ms FROM timers WHERE due_ms <= $1 ORDER BY due_ms",
            )
            .bind(now_ms)
            .fetch_all(pool)
            .await?
        }))
    }

    /// When the next timer is due, if any.
    pub async fn next_timer_ms(&self) -> Result<Option<i64>, StoreError> {
        let (due,): (Option<i64>,) = with_pool!(self, pool => {
            sqlx::query_as("SELECT MIN(due_ms) FROM timers").fetch_one(pool).await?
        });
        Ok(due)
    }
}
