//! Where each workspace's latest checkpoint is, and which runner's disk matches it: what
//! lets a run's workspace follow it between runners with no shared disk. The checkpoints
//! themselves are in the blob store; these rows name them by digest.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::error::StoreError;
use crate::store::{Store, with_pool, with_writer};

/// A workspace's latest checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct CheckpointRow {
    /// `run:<id>` or `conversation:<id>`.
    pub workspace: String,
    /// The manifest's digest in the blob store.
    pub manifest: String,
    /// The runner whose disk holds the workspace as checkpointed.
    pub runner: String,
    /// What it was taken after (`node check, attempt 2`), for logs.
    pub taken_after: String,
    pub taken_at: DateTime<Utc>,
}

impl Store {
    /// The latest checkpoint of `workspace`, if one was taken.
    pub async fn latest_checkpoint(
        &self,
        workspace: &str,
    ) -> Result<Option<CheckpointRow>, StoreError> {
        Ok(with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT workspace, manifest, runner, taken_after, taken_at
                 FROM workspace_checkpoints WHERE workspace = $1",
            )
            .bind(workspace)
            .fetch_optional(pool)
            .await?
        }))
    }

    /// Records `row` as the workspace's latest checkpoint.
    pub async fn record_checkpoint(&self, row: &CheckpointRow) -> Result<(), StoreError> {
        with_writer!(self, pool => {
            sqlx::query(
                "INSERT INTO workspace_checkpoints (workspace, manifest, runner, taken_after, taken_at)
                 VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (workspace) DO UPDATE SET manifest = excluded.manifest,
                   runner = excluded.runner, taken_after = excluded.taken_after,
                   taken_at = excluded.taken_at",
            )
            .bind(&row.workspace)
            .bind(&row.manifest)
            .bind(&row.runner)
            .bind(&row.taken_after)
            .bind(row.taken_at)
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    /// The checkpoint `node` of `run` first started from: `manifest` when this is its
    /// first start, else what was recorded then. One statement: the conflict's update
    /// leaves a recorded one as it is and returns it.
    pub async fn node_start_checkpoint(
        &self,
        run: Uuid,
        node: &str,
        manifest: &str,
    ) -> Result<String, StoreError> {
        Ok(with_writer!(self, pool => {
            sqlx::query_scalar(
                "INSERT INTO node_start_checkpoints (run_id, node, manifest, created_at)
                 VALUES ($1, $2, $3, $4)
                 ON CONFLICT (run_id, node) DO UPDATE SET manifest = node_start_checkpoints.manifest
                 RETURNING manifest",
            )
            .bind(run)
            .bind(node)
            .bind(manifest)
            .bind(Utc::now())
            .fetch_one(pool)
            .await?
        }))
    }
}
