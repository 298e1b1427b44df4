//! After the pull request: the events heard about the pull requests Gatehouse opened, the
//! head each delivery pushed, and the feedback already turned into work.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::error::StoreError;
use crate::requirements::{PULL_COLUMNS, PullRequestRow};
use crate::store::{Store, with_pool, with_writer};
use crate::tx::{Tx, with_tx};

/// One event heard about a pull request Gatehouse opened, and what became of it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct PullEventRow {
    pub repo: String,
    pub number: i64,
    /// The webhook delivery it came in.
    pub delivery_id: String,
    /// `event.action`, e.g. `pull_request_review.submitted`.
    pub event: String,
    /// The GitHub login that caused it; empty for CI.
    pub actor: String,
    /// What happened, in a line (`changes requested by @alice`).
    pub summary: String,
    /// What Gatehouse did about it (`sent run … back to implement`, `ignored: …`).
    pub outcome: String,
    pub created_at: DateTime<Utc>,
}

/// A [`PullEventRow`] to record.
#[derive(Debug, Clone, Copy)]
pub struct NewPullEvent<'a> {
    pub repo: &'a str,
    pub number: u64,
    pub requirement: Uuid,
    pub delivery_id: &'a str,
    pub event: &'a str,
    pub actor: &'a str,
    pub summary: &'a str,
    pub outcome: &'a str,
}

fn number(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl Tx {
    /// The pull request `repo#number`, if Gatehouse opened it.
    pub async fn pull_request(
        &mut self,
        repo: &str,
        number_: u64,
    ) -> Result<Option<PullRequestRow>, StoreError> {
        let sql =
            format!("SELECT {PULL_COLUMNS} FROM pull_requests WHERE repo = $1 AND number = $2");
        Ok(with_tx!(self, conn => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(repo)
                .bind(number(number_))
                .fetch_optional(conn)
                .await?
        }))
    }

    /// Records an event about a pull request Gatehouse opened.
    pub async fn record_pull_event(&mut self, event: &NewPullEvent<'_>) -> Result<(), StoreError> {
        with_tx!(self, conn => {
            sqlx::query(
                "INSERT INTO pull_request_events
                 (repo, number, requirement_id, delivery_id, event, actor, summary, outcome, created_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            )
            .bind(event.repo)
            .bind(number(event.number))
            .bind(event.requirement)
            .bind(event.delivery_id)
            .bind(event.event)
            .bind(event.actor)
            .bind(event.summary)
            .bind(event.outcome)
            .bind(Utc::now())
            .execute(conn)
            .await?;
        });
        Ok(())
    }

    /// Claims the feedback named `key` for `delivery`; `false` when another delivery
    /// turned it into work first (then start nothing). In the transaction that starts the
    /// work, so a rolled-back attempt claims nothing.
    pub async fn claim_feedback(&mut self, key: &str, delivery: &str) -> Result<bool, StoreError> {
        let inserted = with_tx!(self, conn => {
            sqlx::query(
                "INSERT INTO pull_feedback (key, delivery_id, created_at) VALUES ($1, $2, $3)
                 ON CONFLICT (key) DO NOTHING",
            )
            .bind(key)
            .bind(delivery)
            .bind(Utc::now())
            .execute(conn)
            .await?
            .rows_affected()
        });
        Ok(inserted == 1)
    }

    /// Records the checks heard on a pull request's head: `checks` is `pending`,
    /// `success` or `failure`. Only for the head Gatehouse pushed last (`head_sha`), so a
    /// late result for an older head changes nothing; `false` then.
    pub async fn set_pull_checks(
        &mut self,
        repo: &str,
        number_: u64,
        head_sha: &str,
        checks: &str,
    ) -> Result<bool, StoreError> {
        let updated = with_tx!(self, conn => {
            sqlx::query(
                "UPDATE pull_requests SET checks = $1 WHERE repo = $2 AND number = $3 AND head_sha = $4",
            )
            .bind(checks)
            .bind(repo)
            .bind(number(number_))
            .bind(head_sha)
            .execute(conn)
            .await?
            .rows_affected()
        });
        Ok(updated == 1)
    }
}

impl Store {
    /// The pull request `repo#number`, if Gatehouse opened it; read outside any
    /// transaction, as one that only looks.
    pub async fn pull_request(
        &self,
        repo: &str,
        number_: u64,
    ) -> Result<Option<PullRequestRow>, StoreError> {
        let sql =
            format!("SELECT {PULL_COLUMNS} FROM pull_requests WHERE repo = $1 AND number = $2");
        Ok(with_pool!(self, pool => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(repo)
                .bind(number(number_))
                .fetch_optional(pool)
                .await?
        }))
    }

    /// The open pull requests Gatehouse opened on `repo`: those a push to their base may
    /// put in conflict.
    pub async fn open_pull_requests(&self, repo: &str) -> Result<Vec<PullRequestRow>, StoreError> {
        let sql = format!(
            "SELECT {PULL_COLUMNS} FROM pull_requests WHERE repo = $1 AND state = 'open'
             ORDER BY number LIMIT 100"
        );
        Ok(with_pool!(self, pool => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(repo).fetch_all(pool).await?
        }))
    }

    /// Records the head commit a delivery pushed to a pull request it opened or updated;
    /// its checks are not known yet.
    pub async fn record_pull_head(
        &self,
        repo: &str,
        number_: u64,
        head_sha: &str,
    ) -> Result<(), StoreError> {
        with_writer!(self, pool => {
            sqlx::query(
                "UPDATE pull_requests SET head_sha = $1, checks = 'pending'
                 WHERE repo = $2 AND number = $3 AND head_sha <> $1",
            )
            .bind(head_sha)
            .bind(repo)
            .bind(number(number_))
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    /// The events heard about a requirement's pull requests, oldest first, at most `limit`
    /// of the newest.
    pub async fn pull_events_of_requirement(
        &self,
        requirement: Uuid,
        limit: i64,
    ) -> Result<Vec<PullEventRow>, StoreError> {
        let mut rows: Vec<PullEventRow> = with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT repo, number, delivery_id, event, actor, summary, outcome, created_at
                 FROM pull_request_events WHERE requirement_id = $1 ORDER BY id DESC LIMIT $2",
            )
            .bind(requirement)
            .bind(limit)
            .fetch_all(pool)
            .await?
        });
        rows.reverse();
        Ok(rows)
    }
}
