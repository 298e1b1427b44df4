//! What runners record: node attempts, their artifacts and their output.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::error::StoreError;
use crate::store::{Store, with_pool, with_writer};
use crate::text::text_enum;
use crate::tx::{Tx, with_tx};

text_enum! {
    /// Where a node attempt is: running until it ends one of the other ways.
    pub enum AttemptStatus {
        /// Begun, not ended yet.
        Running = "running",
        /// Exited 0 with every declared artifact, or delivered.
        Succeeded = "succeeded",
        /// Ended without doing its work; the attempt's error says why.
        Failed = "failed",
        /// Killed at its wall-clock limit.
        TimedOut = "timed_out",
        /// Stopped because its run no longer wanted it (cancel, fail-fast, send back).
        Cancelled = "cancelled",
        /// Its runner stopped (died, or shut down past the grace) before it ended.
        Interrupted = "interrupted",
    }
}

/// One execution of a node.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct AttemptRow {
    pub run_id: Uuid,
    pub node: String,
    pub attempt: i32,
    pub status: AttemptStatus,
    /// Process exit code.
    pub exit_code: Option<i32>,
    /// Why it failed.
    pub error: Option<String>,
    pub started_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    /// Wall-clock duration.
    pub duration_ms: Option<i64>,
}

/// How an attempt ended, as its row records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptEnd {
    pub status: AttemptStatus,
    /// Process exit code.
    pub exit_code: Option<i32>,
    /// Why it failed.
    pub error: Option<String>,
    /// Wall-clock duration.
    pub duration_ms: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct ArtifactRow {
    pub run_id: Uuid,
    pub node: String,
    pub attempt: i32,
    /// Path under the node's artifact directory.
    pub name: String,
    /// Hex SHA-256.
    pub sha256: String,
    /// Bytes.
    pub size: i64,
    /// Where the file is, relative to the data directory.
    pub location: String,
}

/// A line of node output.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct LogRow {
    /// Position, for paging and following.
    pub seq: i64,
    pub node: String,
    pub attempt: i32,
    /// stdout or stderr.
    pub stream: String,
    pub line: String,
    /// When it was read.
    pub at: DateTime<Utc>,
}

impl Store {
    /// Records that an attempt started. `false` when it was recorded before: a runner
    /// already began this attempt, so it must not run again.
    pub async fn begin_attempt(
        &self,
        run_id: Uuid,
        node: &str,
        attempt: i32,
    ) -> Result<bool, StoreError> {
        // One statement, committed on its own: a transaction around it would cost two
        // more round trips on the way to every node.
        let inserted = with_writer!(self, pool => {
            sqlx::query(
                "INSERT INTO node_attempts (run_id, node, attempt, status, started_at)
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (run_id, node, attempt) DO NOTHING",
            )
            .bind(run_id)
            .bind(node)
            .bind(attempt)
            .bind(AttemptStatus::Running)
            .bind(Utc::now())
            .execute(pool)
            .await?
            .rows_affected()
        });
        Ok(inserted == 1)
    }

    /// A run's attempts in start order.
    pub async fn attempts(&self, run_id: Uuid) -> Result<Vec<AttemptRow>, StoreError> {
        Ok(with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT run_id, node, attempt, status, exit_code, error, started_at, finished_at,
                   duration_ms FROM node_attempts WHERE run_id = $1 ORDER BY started_at, node, attempt",
            )
            .bind(run_id)
            .fetch_all(pool)
            .await?
        }))
    }

    /// Records an artifact of an attempt.
    pub async fn record_artifact(&self, artifact: &ArtifactRow) -> Result<(), StoreError> {
        let mut tx = self.begin().await?;
        tx.record_artifact(artifact).await?;
        tx.commit().await
    }

    pub async fn artifacts(&self, run_id: Uuid) -> Result<Vec<ArtifactRow>, StoreError> {
        Ok(with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT run_id, node, attempt, name, sha256, size, location FROM artifacts
                 WHERE run_id = $1 ORDER BY node, attempt, name",
            )
            .bind(run_id)
            .fetch_all(pool)
            .await?
        }))
    }

    pub async fn append_log(
        &self,
        run_id: Uuid,
        node: &str,
        attempt: i32,
        stream: &str,
        line: &str,
    ) -> Result<(), StoreError> {
        with_writer!(self, pool => {
            sqlx::query(
                "INSERT INTO node_logs (run_id, node, attempt, stream, line, at)
                 VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .bind(run_id)
            .bind(node)
            .bind(attempt)
            .bind(stream)
            .bind(line)
            .bind(Utc::now())
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    /// A run's output after `after_seq`, oldest first.
    pub async fn logs(
        &self,
        run_id: Uuid,
        after_seq: i64,
        limit: i64,
    ) -> Result<Vec<LogRow>, StoreError> {
        self.logs_after(run_id, None, after_seq, limit).await
    }

    /// [`Store::logs`], of one node's attempts only when `node` is given.
    pub async fn logs_after(
        &self,
        run_id: Uuid,
        node: Option<&str>,
        after_seq: i64,
        limit: i64,
    ) -> Result<Vec<LogRow>, StoreError> {
        Ok(with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT seq, node, attempt, stream, line, at FROM node_logs
                 WHERE run_id = $1 AND seq > $2 AND ($4 IS NULL OR node = $4)
                 ORDER BY seq LIMIT $3",
            )
            .bind(run_id)
            .bind(after_seq)
            .bind(limit)
            .bind(node)
            .fetch_all(pool)
            .await?
        }))
    }

    /// Up to `limit` lines of a run's output just before `before_seq` (the newest when
    /// `None`), oldest first: the end of a long log, or the page before one shown.
    pub async fn logs_before(
        &self,
        run_id: Uuid,
        before_seq: Option<i64>,
        limit: i64,
    ) -> Result<Vec<LogRow>, StoreError> {
        let mut rows: Vec<LogRow> = with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT seq, node, attempt, stream, line, at FROM node_logs
                 WHERE run_id = $1 AND ($2 IS NULL OR seq < $2) ORDER BY seq DESC LIMIT $3",
            )
            .bind(run_id)
            .bind(before_seq)
            .bind(limit)
            .fetch_all(pool)
            .await?
        });
        rows.reverse();
        Ok(rows)
    }

    /// The last `limit` lines of a run's output, of one node's attempts only when `node`
    /// is given, oldest first: the tail a reader asks for without paging through it all.
    pub async fn logs_tail(
        &self,
        run_id: Uuid,
        node: Option<&str>,
        limit: i64,
    ) -> Result<Vec<LogRow>, StoreError> {
        let mut rows: Vec<LogRow> = with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT seq, node, attempt, stream, line, at FROM node_logs
                 WHERE run_id = $1 AND ($2 IS NULL OR node = $2) ORDER BY seq DESC LIMIT $3",
            )
            .bind(run_id)
            .bind(node)
            .bind(limit)
            .fetch_all(pool)
            .await?
        });
        rows.reverse();
        Ok(rows)
    }
}

impl Tx {
    /// Records an artifact inside a transaction (a child run's import, with its result).
    pub async fn record_artifact(&mut self, a: &ArtifactRow) -> Result<(), StoreError> {
        with_tx!(self, conn => {
            sqlx::query(
                "INSERT INTO artifacts (run_id, node, attempt, name, sha256, size, location)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)
                 ON CONFLICT (run_id, node, attempt, name) DO UPDATE
                   SET sha256 = excluded.sha256, size = excluded.size, location = excluded.location",
            )
            .bind(a.run_id)
            .bind(&a.node)
            .bind(a.attempt)
            .bind(&a.name)
            .bind(&a.sha256)
            .bind(a.size)
            .bind(&a.location)
            .execute(conn)
            .await?;
        });
        Ok(())
    }
}

impl Tx {
    /// Closes a running attempt with its result, in the transaction that reports it; one
    /// already closed keeps the result it has (a job redelivered after it was reported
    /// must not rewrite it as interrupted).
    pub async fn finish_attempt(
        &mut self,
        run_id: Uuid,
        node: &str,
        attempt: i32,
        end: &AttemptEnd,
    ) -> Result<(), StoreError> {
        with_tx!(self, conn => {
            sqlx::query(
                "UPDATE node_attempts SET status = $1, exit_code = $2, error = $3, finished_at = $4,
                   duration_ms = $5 WHERE run_id = $6 AND node = $7 AND attempt = $8
                   AND status = $9",
            )
            .bind(end.status)
            .bind(end.exit_code)
            .bind(end.error.as_deref())
            .bind(Utc::now())
            .bind(end.duration_ms)
            .bind(run_id)
            .bind(node)
            .bind(attempt)
            .bind(AttemptStatus::Running)
            .execute(conn)
            .await?;
        });
        Ok(())
    }
}
