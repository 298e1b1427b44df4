//! Requirements: what people asked for, one per issue, pull request or chat thread.

use chrono::{DateTime, Utc};
use gatehouse_events::RequirementState;
use uuid::Uuid;

use crate::error::StoreError;
use crate::hidden::hidden_clause;
use crate::store::{Store, rows_for_ids, with_pool, with_writer};
use crate::text::text_enum;
use crate::tx::{Tx, with_tx};

#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct RequirementRow {
    /// Gatehouse's id.
    pub id: Uuid,
    /// Where it lives, as a unique key (`github:acme/app#12`).
    pub source_key: String,
    /// The events crate's `RequirementSource`, as JSON.
    pub source: String,
    pub title: String,
    pub body: String,
    /// Link back.
    pub url: Option<String>,
    pub state: RequirementState,
    /// Who asked (a person id, or the source's handle for unknown people).
    pub requested_by: String,
    /// The source's last-change time (RFC 3339), so late events do not roll back.
    pub source_updated_at: String,
    /// The project it belongs to, when its source (a project's repository or channel) or
    /// its first run named one.
    pub project: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

const COLUMNS: &str = "id, source_key, source, title, body, url, state, requested_by, source_updated_at, \
     project, created_at, updated_at";

/// A pull request a delivery opened for a requirement.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct PullRequestRow {
    /// `owner/name`.
    pub repo: String,
    pub number: i64,
    /// The run or conversation that delivered into it last (the column is named for runs,
    /// which came first; a conversation's `deliver` records the conversation's id).
    pub run_id: Uuid,
    /// The work branch it is opened from.
    pub branch: String,
    pub state: PullState,
    pub created_at: DateTime<Utc>,
    pub requirement_id: Uuid,
    /// The head commit a delivery last pushed to it ('' before one was recorded).
    pub head_sha: String,
    /// The checks on that head as last heard: '', `pending`, `success` or `failure`.
    pub checks: String,
}

/// The columns of [`PullRequestRow`].
pub(crate) const PULL_COLUMNS: &str =
    "repo, number, run_id, branch, state, created_at, requirement_id, head_sha, checks";

text_enum! {
    /// Where a pull request Gatehouse opened stands.
    pub enum PullState {
        Open = "open",
        Merged = "merged",
        /// Closed without being merged.
        Closed = "closed",
    }
}

impl Store {
    /// The newest requirements first, optionally only those in `state` (`open`, `closed`,
    /// `delivered`; any other name matches none), none of the `hidden` projects.
    pub async fn requirements(
        &self,
        state: Option<&str>,
        hidden: &[String],
        limit: i64,
    ) -> Result<Vec<RequirementRow>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM requirements WHERE ($1 IS NULL OR state = $1){}
             ORDER BY created_at DESC, id DESC LIMIT $2",
            hidden_clause("project", 3, hidden)
        );
        Ok(with_pool!(self, pool => {
            let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(state).bind(limit);
            for project in hidden {
                query = query.bind(project);
            }
            query.fetch_all(pool).await?
        }))
    }

    /// The pull requests deliveries opened for a requirement, oldest first.
    pub async fn pull_requests_of_requirement(
        &self,
        requirement: Uuid,
    ) -> Result<Vec<PullRequestRow>, StoreError> {
        Ok(with_pool!(self, pool => {
            sqlx::query_as(sqlx::AssertSqlSafe(format!(
                "SELECT {PULL_COLUMNS} FROM pull_requests
                 WHERE requirement_id = $1 ORDER BY created_at, repo, number"
            )))
            .bind(requirement)
            .fetch_all(pool)
            .await?
        }))
    }

    /// The titles of the requirements `ids`, for lists that link to them; unknown ids
    /// are left out.
    pub async fn requirement_titles(
        &self,
        ids: &[Uuid],
    ) -> Result<Vec<(Uuid, String)>, StoreError> {
        Ok(rows_for_ids!(self, ids, (Uuid, String), |marks| format!(
            "SELECT id, title FROM requirements WHERE id IN ({marks})"
        )))
    }

    pub async fn requirement(&self, id: Uuid) -> Result<Option<RequirementRow>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM requirements WHERE id = $1");
        Ok(with_pool!(self, pool => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(id).fetch_optional(pool).await?
        }))
    }

    /// A requirement by its source key.
    pub async fn requirement_by_key(
        &self,
        key: &str,
    ) -> Result<Option<RequirementRow>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM requirements WHERE source_key = $1");
        Ok(with_pool!(self, pool => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(key).fetch_optional(pool).await?
        }))
    }
}

impl Store {
    /// Records the pull request a delivery opened for a requirement (again after rework:
    /// the same pull request, the newest run). `run` is the run or conversation that
    /// delivered into it: a `deliver` node's run, or the conversation whose thread said
    /// `deliver`.
    pub async fn record_pull_request(
        &self,
        repo: &str,
        number: u64,
        requirement: Uuid,
        run: Uuid,
        branch: &str,
    ) -> Result<(), StoreError> {
        with_writer!(self, pool => {
            sqlx::query(
                "INSERT INTO pull_requests (repo, number, requirement_id, run_id, branch, created_at)
                 VALUES ($1, $2, $3, $4, $5, $6)
                 ON CONFLICT (repo, number) DO UPDATE SET run_id = excluded.run_id, state = 'open'",
            )
            .bind(repo)
            .bind(i64::try_from(number).unwrap_or(i64::MAX))
            .bind(requirement)
            .bind(run)
            .bind(branch)
            .bind(Utc::now())
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    /// The pull requests a run delivered into, `(repository, number)`, by repository.
    pub async fn pull_requests_of_run(&self, run: Uuid) -> Result<Vec<(String, i64)>, StoreError> {
        Ok(with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT repo, number FROM pull_requests WHERE run_id = $1 ORDER BY repo, number",
            )
            .bind(run)
            .fetch_all(pool)
            .await?
        }))
    }
}

impl Tx {
    /// A requirement by its source key, read inside the transaction.
    pub async fn requirement_by_key(
        &mut self,
        key: &str,
    ) -> Result<Option<RequirementRow>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM requirements WHERE source_key = $1");
        Ok(with_tx!(self, conn => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(key).fetch_optional(conn).await?
        }))
    }

    /// Records that a pull request Gatehouse opened was merged or closed (or reopened);
    /// its requirement, `None` for a pull request Gatehouse did not open.
    pub async fn set_pull_request_state(
        &mut self,
        repo: &str,
        number: u64,
        state: PullState,
    ) -> Result<Option<Uuid>, StoreError> {
        let row: Option<(Uuid,)> = with_tx!(self, conn => {
            sqlx::query_as(
                "UPDATE pull_requests SET state = $1 WHERE repo = $2 AND number = $3
                 RETURNING requirement_id",
            )
            .bind(state)
            .bind(repo)
            .bind(i64::try_from(number).unwrap_or(i64::MAX))
            .fetch_optional(conn)
            .await?
        });
        Ok(row.map(|(id,)| id))
    }

    /// The states of every pull request opened for a requirement, read in the transaction
    /// that just changed one of them.
    pub async fn pull_request_states(
        &mut self,
        requirement: Uuid,
    ) -> Result<Vec<PullState>, StoreError> {
        let rows: Vec<(PullState,)> = with_tx!(self, conn => {
            sqlx::query_as("SELECT state FROM pull_requests WHERE requirement_id = $1")
                .bind(requirement)
                .fetch_all(conn)
                .await?
        });
        Ok(rows.into_iter().map(|(state,)| state).collect())
    }

    /// Names the project a requirement belongs to, when it has none yet: its first run on
    /// a project decides.
    pub async fn claim_requirement_project(
        &mut self,
        id: Uuid,
        project: &str,
    ) -> Result<(), StoreError> {
        with_tx!(self, conn => {
            sqlx::query("UPDATE requirements SET project = $1 WHERE id = $2 AND project IS NULL")
                .bind(project)
                .bind(id)
                .execute(conn)
                .await?;
        });
        Ok(())
    }

    /// Stores a new requirement; `false` when its source key exists already.
    pub async fn insert_requirement(&mut self, r: &RequirementRow) -> Result<bool, StoreError> {
        let inserted = with_tx!(self, conn => {
            sqlx::query(
                "INSERT INTO requirements (id, source_key, source, title, body, url, state,
                   requested_by, source_updated_at, project, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
                 ON CONFLICT (source_key) DO NOTHING",
            )
            .bind(r.id)
            .bind(&r.source_key)
            .bind(&r.source)
            .bind(&r.title)
            .bind(&r.body)
            .bind(&r.url)
            .bind(r.state)
            .bind(&r.requested_by)
            .bind(&r.source_updated_at)
            .bind(&r.project)
            .bind(r.created_at)
            .bind(r.updated_at)
            .execute(conn)
            .await?
            .rows_affected()
        });
        Ok(inserted == 1)
    }

    /// Updates a requirement's title, body and state as of the source's `source_updated_at`
    /// (empty keeps the stored one).
    pub async fn update_requirement(
        &mut self,
        id: Uuid,
        title: &str,
        body: &str,
        state: RequirementState,
        source_updated_at: &str,
    ) -> Result<(), StoreError> {
        with_tx!(self, conn => {
            sqlx::query(
                "UPDATE requirements SET title = $1, body = $2, state = $3, updated_at = $4,
                   source_updated_at = CASE WHEN $5 = '' THEN source_updated_at ELSE $5 END
                 WHERE id = $6",
            )
            .bind(title)
            .bind(body)
            .bind(state)
            .bind(Utc::now())
            .bind(source_updated_at)
            .bind(id)
            .execute(conn)
            .await?;
        });
        Ok(())
    }

    /// Records that a trigger occurrence started `run_id` (or told the conversation of
    /// that id); `false` when the same occurrence did so before (a second hook
    /// delivering the same event).
    pub async fn record_trigger_start(
        &mut self,
        key: &str,
        run_id: Uuid,
    ) -> Result<bool, StoreError> {
        let inserted = with_tx!(self, conn => {
            sqlx::query(
                "INSERT INTO trigger_starts (key, run_id, created_at) VALUES ($1, $2, $3)
                 ON CONFLICT (key) DO NOTHING",
            )
            .bind(key)
            .bind(run_id)
            .bind(Utc::now())
            .execute(conn)
            .await?
            .rows_affected()
        });
        Ok(inserted == 1)
    }
}
