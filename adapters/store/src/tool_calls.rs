//! The tools each agent attempt called, so reviewers see what an agent did, not only what
//! it said: written once when the attempt ends, read with the run.

use uuid::Uuid;

use crate::error::StoreError;
use crate::store::{Store, with_pool};
use crate::tx::with_tx;

/// One tool call of an attempt.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct ToolCallRow {
    pub node: String,
    pub attempt: i32,
    /// Its place among the attempt's calls, from 0, in the order they started.
    pub seq: i32,
    pub tool: String,
    /// One line of its input (a command, a path, a pattern), as the agent wrote it.
    pub summary: String,
    /// Milliseconds after the attempt began.
    pub started_ms: i64,
    /// `None`: no result came (the attempt ended first).
    pub duration_ms: Option<i64>,
    pub failed: bool,
}

impl Store {
    /// Records an attempt's tool calls; a second recording of the same attempt (a
    /// redelivered finish) changes nothing.
    pub async fn record_tool_calls(
        &self,
        run: Uuid,
        calls: &[ToolCallRow],
    ) -> Result<(), StoreError> {
        let mut tx = self.begin().await?;
        for call in calls {
            with_tx!(tx, conn => {
                sqlx::query(
                    "INSERT INTO tool_calls (run_id, node, attempt, seq, tool, summary, started_ms,
                       duration_ms, failed)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
                     ON CONFLICT (run_id, node, attempt, seq) DO NOTHING",
                )
                .bind(run)
                .bind(&call.node)
                .bind(call.attempt)
                .bind(call.seq)
                .bind(&call.tool)
                .bind(&call.summary)
                .bind(call.started_ms)
                .bind(call.duration_ms)
                .bind(call.failed)
                .execute(conn)
                .await?;
            });
        }
        tx.commit().await
    }

    /// Every tool call of the run's attempts, by node, attempt and order.
    pub async fn tool_calls(&self, run: Uuid) -> Result<Vec<ToolCallRow>, StoreError> {
        Ok(with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT node, attempt, seq, tool, summary, started_ms, duration_ms, failed
                 FROM tool_calls WHERE run_id = $1 ORDER BY node, attempt, seq",
            )
            .bind(run)
            .fetch_all(pool)
            .await?
        }))
    }
}
