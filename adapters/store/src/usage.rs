//! What runners freeze per run (sandbox profiles, agent roles) and what agents cost.

use uuid::Uuid;

use crate::error::StoreError;
use crate::store::{Store, with_pool, with_writer};

/// Tokens one model used in one agent attempt, and their price.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct UsageRow {
    pub run_id: Uuid,
    pub node: String,
    pub attempt: i32,
    /// The model as the CLI named it.
    pub model: String,
    /// Input tokens, not counting cache reads.
    pub input_tokens: i64,
    pub output_tokens: i64,
    /// Input tokens read from the prompt cache.
    pub cache_read_tokens: i64,
    /// Input tokens written to the prompt cache.
    pub cache_write_tokens: i64,
    /// USD from the configured price table; `None` when the model has no price.
    pub cost_usd: Option<f64>,
}

const USAGE_COLUMNS: &str = "u.run_id, u.node, u.attempt, u.model, u.input_tokens, \
     u.output_tokens, u.cache_read_tokens, u.cache_write_tokens, u.cost_usd";

impl Store {
    /// Freezes `body` as the run's setting `(kind, name)` unless one is frozen already, and
    /// returns the frozen one: every node of a run sees the same profile or role, whatever
    /// the configuration says by the time it runs. `look_first`: read before writing, for
    /// when one is likely frozen (only a run's first node writes, and a read waits for no
    /// writer); a run's first node writes at once, one statement instead of two.
    pub async fn freeze_setting(
        &self,
        run_id: Uuid,
        kind: &str,
        name: &str,
        body: &str,
        look_first: bool,
    ) -> Result<String, StoreError> {
        if look_first && let Some(frozen) = self.frozen_setting(run_id, kind, name).await? {
            return Ok(frozen);
        }
        // Ours, or the one a node starting beside this one froze first: the conflict's
        // update leaves it as it is and returns it.
        Ok(with_writer!(self, pool => {
            sqlx::query_scalar(
                "INSERT INTO run_settings (run_id, kind, name, body) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (run_id, kind, name) DO UPDATE SET body = run_settings.body
                 RETURNING body",
            )
            .bind(run_id)
            .bind(kind)
            .bind(name)
            .bind(body)
            .fetch_one(pool)
            .await?
        }))
    }

    /// The run's frozen setting `(kind, name)`, if one was frozen.
    pub async fn frozen_setting(
        &self,
        run_id: Uuid,
        kind: &str,
        name: &str,
    ) -> Result<Option<String>, StoreError> {
        Ok(with_pool!(self, pool => {
            sqlx::query_scalar(
                "SELECT body FROM run_settings WHERE run_id = $1 AND kind = $2 AND name = $3",
            )
            .bind(run_id)
            .bind(kind)
            .bind(name)
            .fetch_optional(pool)
            .await?
        }))
    }

    /// Every setting of `kind` the run froze, as `(name, body)` by name: the run page's
    /// list of its pinned skills.
    pub async fn frozen_settings(
        &self,
        run_id: Uuid,
        kind: &str,
    ) -> Result<Vec<(String, String)>, StoreError> {
        Ok(with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT name, body FROM run_settings WHERE run_id = $1 AND kind = $2 ORDER BY name",
            )
            .bind(run_id)
            .bind(kind)
            .fetch_all(pool)
            .await?
        }))
    }

    /// Records an agent attempt's usage of one model. A repeat of the same row is ignored:
    /// an attempt runs once.
    pub async fn record_usage(&self, row: &UsageRow) -> Result<(), StoreError> {
        with_writer!(self, pool => {
            sqlx::query(
                "INSERT INTO node_usage (run_id, node, attempt, model, input_tokens, output_tokens,
                   cache_read_tokens, cache_write_tokens, cost_usd)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
                 ON CONFLICT (run_id, node, attempt, model) DO NOTHING",
            )
            .bind(row.run_id)
            .bind(&row.node)
            .bind(row.attempt)
            .bind(&row.model)
            .bind(row.input_tokens)
            .bind(row.output_tokens)
            .bind(row.cache_read_tokens)
            .bind(row.cache_write_tokens)
            .bind(row.cost_usd)
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    /// A run's usage, attempt by attempt.
    pub async fn usage_of_run(&self, run_id: Uuid) -> Result<Vec<UsageRow>, StoreError> {
        let sql = format!(
            "SELECT {USAGE_COLUMNS} FROM node_usage u WHERE u.run_id = $1
             ORDER BY u.node, u.attempt, u.model"
        );
        Ok(with_pool!(self, pool => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(run_id).fetch_all(pool).await?
        }))
    }

    /// The usage of every run of a requirement.
    pub async fn usage_of_requirement(
        &self,
        requirement: Uuid,
    ) -> Result<Vec<UsageRow>, StoreError> {
        let sql = format!(
            "SELECT {USAGE_COLUMNS} FROM node_usage u JOIN runs r ON r.id = u.run_id
             WHERE r.requirement_id = $1 ORDER BY u.run_id, u.node, u.attempt, u.model"
        );
        Ok(with_pool!(self, pool => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(requirement).fetch_all(pool).await?
        }))
    }

    /// The usage of every run created at or after `since`, for reports.
    pub async fn usage_since(
        &self,
        since: chrono::DateTime<chrono::Utc>,
    ) -> Result<Vec<UsageRow>, StoreError> {
        let sql = format!(
            "SELECT {USAGE_COLUMNS} FROM node_usage u JOIN runs r ON r.id = u.run_id
             WHERE r.created_at >= $1 ORDER BY u.run_id, u.node, u.attempt, u.model"
        );
        Ok(with_pool!(self, pool => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(since).fetch_all(pool).await?
        }))
    }
}
