//! Where each conversation's latest home is: the CLI's own state (its sessions), saved by
//! the runner after a turn that changed it, so a turn on another runner finds the session
//! it resumes — or, when it could not be saved, which runner's disk alone has it. The
//! snapshots themselves are in the blob store; these rows name them by digest.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::error::StoreError;
use crate::store::{Store, with_pool, with_writer};

/// A conversation's latest home.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct HomeRow {
    pub conversation_id: Uuid,
    /// The snapshot's manifest's digest in the blob store; `None` when the home could not
    /// be saved and only `runner`'s disk holds it.
    pub manifest: Option<String>,
    /// The runner whose turn left it.
    pub runner: String,
    /// What it was taken after (`turn 3, attempt 1`), for logs.
    pub taken_after: String,
    pub taken_at: DateTime<Utc>,
}

impl Store {
    /// The latest state of `conversation`'s home, if a turn recorded one.
    pub async fn latest_home(&self, conversation: Uuid) -> Result<Option<HomeRow>, StoreError> {
        Ok(with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT conversation_id, manifest, runner, taken_after, taken_at
                 FROM conversation_homes WHERE conversation_id = $1",
            )
            .bind(conversation)
            .fetch_optional(pool)
            .await?
        }))
    }

    /// Records `row` as its conversation's latest home.
    pub async fn record_home(&self, row: &HomeRow) -> Result<(), StoreError> {
        with_writer!(self, pool => {
            sqlx::query(
                "INSERT INTO conversation_homes
                   (conversation_id, manifest, runner, taken_after, taken_at)
                 VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (conversation_id) DO UPDATE SET manifest = excluded.manifest,
                   runner = excluded.runner, taken_after = excluded.taken_after,
                   taken_at = excluded.taken_at",
            )
            .bind(row.conversation_id)
            .bind(&row.manifest)
            .bind(&row.runner)
            .bind(&row.taken_after)
            .bind(row.taken_at)
            .execute(pool)
            .await?;
        });
        Ok(())
    }
}
