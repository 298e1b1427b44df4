//! People added through the API and CLI. The configuration's `[[people]]` are not stored:
//! ingest merges both, the configuration winning for an id it names.

use chrono::{DateTime, Utc};

use crate::error::StoreError;
use crate::store::{Store, with_pool, with_writer};

#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct PersonRow {
    /// Gatehouse's id (what gates and tokens name).
    pub id: String,
    /// GitHub login.
    pub github: Option<String>,
    /// Slack user id.
    pub slack: Option<String>,
    /// Discord user id.
    pub discord: Option<String>,
    /// Group names as a JSON array.
    pub groups: String,
    /// Who added them.
    pub created_by: String,
    pub created_at: DateTime<Utc>,
}

impl PersonRow {
    /// The groups, decoded (a malformed column reads as none).
    pub fn group_list(&self) -> Vec<String> {
        serde_json::from_str(&self.groups).unwrap_or_default()
    }
}

impl Store {
    /// Adds a person; `false` when their id or one of their handles is taken (the unique
    /// indexes decide, so two administrators racing cannot both win).
    pub async fn add_person(&self, row: &PersonRow) -> Result<bool, StoreError> {
        let written = with_writer!(self, pool => {
            sqlx::query(
                "INSERT INTO people (id, github, slack, discord, groups, created_by, created_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING",
            )
            .bind(&row.id)
            .bind(&row.github)
            .bind(&row.slack)
            .bind(&row.discord)
            .bind(&row.groups)
            .bind(&row.created_by)
            .bind(row.created_at)
            .execute(pool)
            .await?
            .rows_affected()
        });
        Ok(written == 1)
    }

    /// Everyone stored, by id.
    pub async fn people(&self) -> Result<Vec<PersonRow>, StoreError> {
        Ok(with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT id, github, slack, discord, groups, created_by, created_at FROM people ORDER BY id",
            )
            .fetch_all(pool)
            .await?
        }))
    }

    /// Removes a person; `false` when none was stored under `id`.
    pub async fn remove_person(&self, id: &str) -> Result<bool, StoreError> {
        let done = with_writer!(self, pool => {
            sqlx::query("DELETE FROM people WHERE id = $1").bind(id).execute(pool).await?.rows_affected()
        });
        Ok(done == 1)
    }
}
