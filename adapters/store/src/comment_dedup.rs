//! Comment commands run once per version of a comment.
//!
//! A delivery id is not enough: the same `issue_comment` body can arrive again under a new
//! delivery id (a redelivery from GitHub's UI or API, a second hook on the organisation,
//! a body someone captured and replays with a valid signature). A comment's id and its
//! `updated_at` name one version of it: an edit makes a new version, whose added commands
//! run; the same version seen again starts nothing.

use chrono::Utc;

use crate::error::StoreError;
use crate::tx::{Tx, with_tx};

impl Tx {
    /// Claims the commands of comment `comment_id` as of `updated_at` for `delivery`;
    /// `false` when another delivery claimed them first (then run none of them). In the
    /// transaction that acts on the commands, so a rolled-back attempt claims nothing.
    pub async fn claim_comment_commands(
        &mut self,
        comment_id: u64,
        updated_at: &str,
        delivery: &str,
    ) -> Result<bool, StoreError> {
        let inserted = with_tx!(self, conn => {
            sqlx::query(
                "INSERT INTO github_comment_commands (comment_id, updated_at, delivery_id, created_at)
                 VALUES ($1, $2, $3, $4) ON CONFLICT (comment_id, updated_at) DO NOTHING",
            )
            .bind(i64::try_from(comment_id).unwrap_or(i64::MAX))
            .bind(updated_at)
            .bind(delivery)
            .bind(Utc::now())
            .execute(conn)
            .await?
            .rows_affected()
        });
        Ok(inserted == 1)
    }
}
