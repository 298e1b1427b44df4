//! Comments Gatehouse keeps on GitHub issues: what each should say, and whether GitHub
//! says it yet. Writers set the wanted text in their transaction; the notifier posts.

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};

use crate::error::StoreError;
use crate::store::{Store, with_pool, with_writer};
use crate::tx::{Tx, with_tx};

/// A comment to post or bring up to date.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct CommentRow {
    /// `run:<id>` (a run's status) or `reply:<delivery>:<line>` (an answer to a command).
    pub key: String,
    /// `owner/name`.
    pub repo: String,
    /// Issue or pull request number.
    pub number: i64,
    /// What the comment should say.
    pub body: String,
    /// Hash of `body`, to tell whether it changed while it was being posted.
    pub body_hash: String,
    /// GitHub's id, once created.
    pub comment_id: Option<i64>,
    /// Changed since it was last posted.
    pub dirty: bool,
    pub updated_at: DateTime<Utc>,
}

impl Tx {
    /// Sets what a comment should say; marks it for posting when that changed.
    pub async fn want_comment(
        &mut self,
        key: &str,
        repo: &str,
        number: u64,
        body: &str,
    ) -> Result<(), StoreError> {
        let hash = hex_sha256(body);
        with_tx!(self, conn => {
            sqlx::query(
                "INSERT INTO github_comments (key, repo, number, body, body_hash, dirty, updated_at)
                 VALUES ($1, $2, $3, $4, $5, TRUE, $6)
                 ON CONFLICT (key) DO UPDATE SET body = excluded.body, body_hash = excluded.body_hash,
                   dirty = CASE WHEN github_comments.body_hash = excluded.body_hash
                                THEN github_comments.dirty ELSE TRUE END,
                   updated_at = excluded.updated_at",
            )
            .bind(key)
            .bind(repo)
            .bind(i64::try_from(number).unwrap_or(i64::MAX))
            .bind(body)
            .bind(&hash)
            .bind(Utc::now())
            .execute(conn)
            .await?;
        });
        Ok(())
    }
}

impl Store {
    /// Comments waiting to be posted or updated, oldest change first.
    pub async fn dirty_comments(&self, limit: i64) -> Result<Vec<CommentRow>, StoreError> {
        Ok(with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT key, repo, number, body, body_hash, comment_id, dirty, updated_at
                 FROM github_comments WHERE dirty ORDER BY updated_at LIMIT $1",
            )
            .bind(limit)
            .fetch_all(pool)
            .await?
        }))
    }

    pub async fn comment(&self, key: &str) -> Result<Option<CommentRow>, StoreError> {
        Ok(with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT key, repo, number, body, body_hash, comment_id, dirty, updated_at
                 FROM github_comments WHERE key = $1",
            )
            .bind(key)
            .fetch_optional(pool)
            .await?
        }))
    }

    /// Records that GitHub shows `body_hash`'s text under `comment_id`; the comment stays
    /// dirty when its text changed meanwhile.
    pub async fn comment_posted(
        &self,
        key: &str,
        comment_id: u64,
        body_hash: &str,
    ) -> Result<(), StoreError> {
        let id = i64::try_from(comment_id).unwrap_or(i64::MAX);
        with_writer!(self, pool => {
            sqlx::query(
                "UPDATE github_comments SET comment_id = $1,
                   dirty = CASE WHEN body_hash = $2 THEN FALSE ELSE dirty END
                 WHERE key = $3",
            )
            .bind(id)
            .bind(body_hash)
            .bind(key)
            .execute(pool)
            .await?;
        });
        Ok(())
    }
}

impl Store {
    /// Gives up on posting a comment's current text (GitHub refused it for good); a new
    /// text makes it dirty again.
    pub async fn comment_abandoned(&self, key: &str, body_hash: &str) -> Result<(), StoreError> {
        with_writer!(self, pool => {
            sqlx::query("UPDATE github_comments SET dirty = FALSE WHERE key = $1 AND body_hash = $2")
                .bind(key)
                .bind(body_hash)
                .execute(pool)
                .await?;
        });
        Ok(())
    }
}

pub(crate) fn hex_sha256(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
