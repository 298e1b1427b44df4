//! What runners record of conversation turns: each attempt (begun once, so an attempt
//! whose runner died is reported interrupted rather than run again), the CLI session it
//! named, how it ended, the tools it called and the tokens it used; and the attempts
//! someone stopped, so whichever runner holds one stops it.
//!
//! The end of an attempt is written in one transaction with the `turn.finished` the runner
//! appends to the outbox, so its tools and usage are recorded exactly when it is reported.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::error::StoreError;
use crate::store::{Store, with_pool, with_writer};
use crate::text::text_enum;
use crate::tx::{Tx, with_tx};

text_enum! {
    /// Where a turn's attempt is: running until it ends one of the other ways.
    pub enum TurnStatus {
        /// Begun, not ended yet.
        Running = "running",
        /// The CLI gave its final text.
        Replied = "replied",
        /// Crashed, timed out, was stopped, or could not start; `failure` says which.
        Failed = "failed",
        /// Its runner stopped before it ended.
        Interrupted = "interrupted",
    }
}

/// Which attempt of which turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TurnKey {
    pub conversation_id: Uuid,
    /// The message's number in the thread.
    pub seq: i64,
    pub attempt: i32,
}

/// One attempt of a turn.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct TurnAttemptRow {
    pub conversation_id: Uuid,
    pub seq: i64,
    pub attempt: i32,
    pub requirement_id: Uuid,
    pub role: String,
    /// An `ask`: another role's answer, the assistant's session left alone.
    pub ask: bool,
    pub status: TurnStatus,
    /// The CLI's session, from the moment its output named it.
    pub session_id: Option<String>,
    /// The CLI's final text.
    pub reply: Option<String>,
    /// Why it failed or was interrupted.
    pub failure: Option<String>,
    pub started_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    /// The whole attempt.
    pub duration_ms: Option<i64>,
    /// The CLI process's own wall time: the rest of `duration_ms` is Gatehouse's.
    pub cli_ms: Option<i64>,
}

/// An attempt about to begin.
#[derive(Debug, Clone, Copy)]
pub struct NewTurnAttempt<'a> {
    pub key: TurnKey,
    pub requirement_id: Uuid,
    pub role: &'a str,
    pub ask: bool,
}

/// One tool call of a turn's attempt.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct TurnToolCallRow {
    pub conversation_id: Uuid,
    pub seq: i64,
    pub attempt: i32,
    /// Its place among the attempt's calls, from 0, in the order they started.
    pub n: i32,
    pub tool: String,
    /// One line of its input, as the agent wrote it.
    pub summary: String,
    /// Milliseconds after the attempt began.
    pub started_ms: i64,
    /// `None`: no result came (the attempt ended first).
    pub duration_ms: Option<i64>,
    pub failed: bool,
}

/// Tokens one model used in a turn's attempt, and their price.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct TurnUsageRow {
    pub conversation_id: Uuid,
    pub seq: i64,
    pub attempt: i32,
    /// The model as the CLI named it.
    pub model: String,
    /// The conversation's requirement, whose total gathers its turns'.
    pub requirement_id: Uuid,
    /// Input tokens, not counting cache reads.
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub cache_read_tokens: i64,
    pub cache_write_tokens: i64,
    /// USD from the configured price table; `None` when the model has no price.
    pub cost_usd: Option<f64>,
}

/// A model's tokens and cost summed over many attempts.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct ModelUsageTotal {
    pub model: String,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub cache_read_tokens: i64,
    pub cache_write_tokens: i64,
    /// `None` when no attempt of it was priced.
    pub cost_usd: Option<f64>,
}

/// How an attempt ended, with what it left to record.
#[derive(Debug, Clone, Copy)]
pub struct TurnEnd<'a> {
    pub key: TurnKey,
    pub status: TurnStatus,
    /// The session it ran in; `None` keeps the one recorded while it ran.
    pub session_id: Option<&'a str>,
    pub reply: Option<&'a str>,
    pub failure: Option<&'a str>,
    pub duration_ms: Option<i64>,
    pub cli_ms: Option<i64>,
    pub tools: &'a [TurnToolCallRow],
    pub usage: &'a [TurnUsageRow],
}

const ATTEMPT_COLUMNS: &str = "conversation_id, seq, attempt, requirement_id, role, ask, status, \
     session_id, reply, failure, started_at, finished_at, duration_ms, cli_ms";

const USAGE_COLUMNS: &str = "conversation_id, seq, attempt, model, requirement_id, input_tokens, \
     output_tokens, cache_read_tokens, cache_write_tokens, cost_usd";

impl Store {
    /// Records that an attempt started. `false` when it was recorded before: a runner
    /// already began it, so it must not run again.
    pub async fn begin_turn_attempt(&self, new: &NewTurnAttempt<'_>) -> Result<bool, StoreError> {
        let inserted = with_writer!(self, pool => {
            sqlx::query(
                "INSERT INTO turn_attempts (conversation_id, seq, attempt, requirement_id, role, ask,
                   status, started_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                 ON CONFLICT (conversation_id, seq, attempt) DO NOTHING",
            )
            .bind(new.key.conversation_id)
            .bind(new.key.seq)
            .bind(new.key.attempt)
            .bind(new.requirement_id)
            .bind(new.role)
            .bind(new.ask)
            .bind(TurnStatus::Running)
            .bind(Utc::now())
            .execute(pool)
            .await?
            .rows_affected()
        });
        Ok(inserted == 1)
    }

    /// One attempt, if it was begun.
    pub async fn turn_attempt(&self, key: TurnKey) -> Result<Option<TurnAttemptRow>, StoreError> {
        let sql = format!(
            "SELECT {ATTEMPT_COLUMNS} FROM turn_attempts
             WHERE conversation_id = $1 AND seq = $2 AND attempt = $3"
        );
        Ok(with_pool!(self, pool => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(key.conversation_id)
                .bind(key.seq)
                .bind(key.attempt)
                .fetch_optional(pool)
                .await?
        }))
    }

    /// A conversation's attempts, by turn and attempt.
    pub async fn turn_attempts(
        &self,
        conversation_id: Uuid,
    ) -> Result<Vec<TurnAttemptRow>, StoreError> {
        let sql = format!(
            "SELECT {ATTEMPT_COLUMNS} FROM turn_attempts WHERE conversation_id = $1
             ORDER BY seq, attempt"
        );
        Ok(with_pool!(self, pool => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(conversation_id).fetch_all(pool).await?
        }))
    }

    /// Every tool call of a conversation's attempts, by turn, attempt and order.
    pub async fn turn_tool_calls(
        &self,
        conversation_id: Uuid,
    ) -> Result<Vec<TurnToolCallRow>, StoreError> {
        Ok(with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT conversation_id, seq, attempt, n, tool, summary, started_ms, duration_ms,
                   failed
                 FROM turn_tool_calls WHERE conversation_id = $1 ORDER BY seq, attempt, n",
            )
            .bind(conversation_id)
            .fetch_all(pool)
            .await?
        }))
    }

    /// A conversation's usage, attempt by attempt.
    pub async fn turn_usage(&self, conversation_id: Uuid) -> Result<Vec<TurnUsageRow>, StoreError> {
        let sql = format!(
            "SELECT {USAGE_COLUMNS} FROM turn_usage WHERE conversation_id = $1
             ORDER BY seq, attempt, model"
        );
        Ok(with_pool!(self, pool => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(conversation_id).fetch_all(pool).await?
        }))
    }

    /// The usage of every turn of a requirement's conversations, summed per model.
    pub async fn requirement_turn_usage(
        &self,
        requirement_id: Uuid,
    ) -> Result<Vec<ModelUsageTotal>, StoreError> {
        // Postgres sums BIGINT as NUMERIC: cast back.
        Ok(with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT model,
                   CAST(SUM(input_tokens) AS BIGINT) AS input_tokens,
                   CAST(SUM(output_tokens) AS BIGINT) AS output_tokens,
                   CAST(SUM(cache_read_tokens) AS BIGINT) AS cache_read_tokens,
                   CAST(SUM(cache_write_tokens) AS BIGINT) AS cache_write_tokens,
                   SUM(cost_usd) AS cost_usd
                 FROM turn_usage WHERE requirement_id = $1 GROUP BY model ORDER BY model",
            )
            .bind(requirement_id)
            .fetch_all(pool)
            .await?
        }))
    }

    /// Whether someone stopped the attempt (see [`Tx::record_turn_cancel`]).
    pub async fn turn_cancelled(&self, key: TurnKey) -> Result<bool, StoreError> {
        let found: Option<i32> = with_pool!(self, pool => {
            sqlx::query_scalar(
                "SELECT attempt FROM turn_cancels
                 WHERE conversation_id = $1 AND seq = $2 AND attempt = $3",
            )
            .bind(key.conversation_id)
            .bind(key.seq)
            .bind(key.attempt)
            .fetch_optional(pool)
            .await?
        });
        Ok(found.is_some())
    }
}

impl Tx {
    /// Records the CLI session a running attempt named, so that if its runner dies the
    /// interrupted attempt's successor can resume it.
    pub async fn record_turn_session(
        &mut self,
        key: TurnKey,
        session_id: &str,
    ) -> Result<(), StoreError> {
        with_tx!(self, conn => {
            sqlx::query(
                "UPDATE turn_attempts SET session_id = $1
                 WHERE conversation_id = $2 AND seq = $3 AND attempt = $4",
            )
            .bind(session_id)
            .bind(key.conversation_id)
            .bind(key.seq)
            .bind(key.attempt)
            .execute(conn)
            .await?;
        });
        Ok(())
    }

    /// Ends a running attempt with its outcome, tool calls and usage. `false`, and nothing
    /// written, when the attempt is not running (never begun, or ended before).
    pub async fn finish_turn_attempt(&mut self, end: &TurnEnd<'_>) -> Result<bool, StoreError> {
        let key = end.key;
        let updated = with_tx!(self, conn => {
            sqlx::query(
                "UPDATE turn_attempts SET status = $1, session_id = COALESCE($2, session_id),
                   reply = $3, failure = $4, finished_at = $5, duration_ms = $6, cli_ms = $7
                 WHERE conversation_id = $8 AND seq = $9 AND attempt = $10 AND status = $11",
            )
            .bind(end.status)
            .bind(end.session_id)
            .bind(end.reply)
            .bind(end.failure)
            .bind(Utc::now())
            .bind(end.duration_ms)
            .bind(end.cli_ms)
            .bind(key.conversation_id)
            .bind(key.seq)
            .bind(key.attempt)
            .bind(TurnStatus::Running)
            .execute(&mut *conn)
            .await?
            .rows_affected()
        });
        if updated != 1 {
            return Ok(false);
        }
        for call in end.tools {
            self.insert_turn_tool_call(call).await?;
        }
        for row in end.usage {
            self.insert_turn_usage(row).await?;
        }
        Ok(true)
    }

    /// Records that someone stopped the attempt; a repeat changes nothing.
    pub async fn record_turn_cancel(&mut self, key: TurnKey) -> Result<(), StoreError> {
        with_tx!(self, conn => {
            sqlx::query(
                "INSERT INTO turn_cancels (conversation_id, seq, attempt, at) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (conversation_id, seq, attempt) DO NOTHING",
            )
            .bind(key.conversation_id)
            .bind(key.seq)
            .bind(key.attempt)
            .bind(Utc::now())
            .execute(conn)
            .await?;
        });
        Ok(())
    }

    async fn insert_turn_tool_call(&mut self, call: &TurnToolCallRow) -> Result<(), StoreError> {
        with_tx!(self, conn => {
            sqlx::query(
                "INSERT INTO turn_tool_calls (conversation_id, seq, attempt, n, tool, summary,
                   started_ms, duration_ms, failed)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
                 ON CONFLICT (conversation_id, seq, attempt, n) DO NOTHING",
            )
            .bind(call.conversation_id)
            .bind(call.seq)
            .bind(call.attempt)
            .bind(call.n)
            .bind(&call.tool)
            .bind(&call.summary)
            .bind(call.started_ms)
            .bind(call.duration_ms)
            .bind(call.failed)
            .execute(conn)
            .await?;
        });
        Ok(())
    }

    async fn insert_turn_usage(&mut self, row: &TurnUsageRow) -> Result<(), StoreError> {
        let sql = format!(
            "INSERT INTO turn_usage ({USAGE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
             ON CONFLICT (conversation_id, seq, attempt, model) DO NOTHING"
        );
        with_tx!(self, conn => {
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(row.conversation_id)
                .bind(row.seq)
                .bind(row.attempt)
                .bind(&row.model)
                .bind(row.requirement_id)
                .bind(row.input_tokens)
                .bind(row.output_tokens)
                .bind(row.cache_read_tokens)
                .bind(row.cache_write_tokens)
                .bind(row.cost_usd)
                .execute(conn)
                .await?;
        });
        Ok(())
    }
}
