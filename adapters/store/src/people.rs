//! People added through the API and CLI. The configuration's `[[people]]` are not stored:
//! ingest merges both, the configuration winning for an id it names.

use chrono::{DateTime, Utc};

use crate::store::with_pool;
use crate::{Store, StoreError};

/// A stored person.
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
    /// When.
    pub created_at: DateTime<Utc>,
}

impl PersonRow {
    /// The groups, decoded (a malformed column reads as none).
    pub fn group_list(&self) -> Vec<String> {
        serde_json::from_str(&self.groups).unwrap_or_default()
    }
}

/// Why a person could not be added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PersonConflict {
    /// The id is taken.
    Id,
    /// Another person has this handle (`github`, `slack` or `discord`).
    Handle(&'static str),
}

impl Store {
    /// Adds a person; a conflict when the id or one of the handles is taken.
    pub async fn add_person(
        &self,
        row: &PersonRow,
    ) -> Result<Result<(), PersonConflict>, StoreError> {
        let people = self.people().await?;
        if people.iter().any(|p| p.id == row.id) {
            return Ok(Err(PersonConflict::Id));
        }
        let taken = |get: fn(&PersonRow) -> Option<&str>| {
            get(row).is_some_and(|h| {
                people
                    .iter()
                    .any(|p| get(p).is_some_and(|o| o.eq_ignore_ascii_case(h)))
            })
        };
        for (what, get) in [
            (
                "github",
                (|p: &PersonRow| p.github.as_deref()) as fn(&PersonRow) -> Option<&str>,
            ),
            ("slack", |p| p.slack.as_deref()),
            ("discord", |p| p.discord.as_deref()),
        ] {
            if taken(get) {
                return Ok(Err(PersonConflict::Handle(what)));
            }
        }
        let written = with_pool!(self, pool => {
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
        // Lost a race with another writer of the same id or handle.
        Ok(if written == 1 {
            Ok(())
        } else {
            Err(PersonConflict::Id)
        })
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
        let done = with_pool!(self, pool => {
            sqlx::query("DELETE FROM people WHERE id = $1").bind(id).execute(pool).await?.rows_affected()
        });
        Ok(done == 1)
    }
}
