//! What tells how long gates wait: when each node of a run finished its attempts (a gate
//! opens when the last node it needs finishes), how gate attempts were settled, and the
//! artifacts shown as a waiting gate's evidence. Read a page at a time, never per gate.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::attempts::ArtifactRow;
use crate::error::StoreError;
use crate::store::{Store, rows_for_ids, with_pool};

/// One attempt of a node that finished.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct NodeFinish {
    pub run_id: Uuid,
    pub node: String,
    pub finished_at: DateTime<Utc>,
}

/// A gate attempt settled by a decision (or its expiry).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct SettledGate {
    pub run_id: Uuid,
    pub node: String,
    pub attempt: i32,
    pub decided_at: DateTime<Utc>,
}

impl Store {
    /// Every finished attempt of the runs `runs`, as (run, node, when).
    pub async fn node_finishes(&self, runs: &[Uuid]) -> Result<Vec<NodeFinish>, StoreError> {
        Ok(rows_for_ids!(self, runs, NodeFinish, |marks| format!(
            "SELECT run_id, node, finished_at FROM node_attempts
             WHERE finished_at IS NOT NULL AND run_id IN ({marks})"
        )))
    }

    /// The artifacts of the runs `runs`, by run, node, attempt and name.
    pub async fn artifacts_of_runs(&self, runs: &[Uuid]) -> Result<Vec<ArtifactRow>, StoreError> {
        Ok(rows_for_ids!(self, runs, ArtifactRow, |marks| format!(
            "SELECT run_id, node, attempt, name, sha256, size, location FROM artifacts
             WHERE run_id IN ({marks}) ORDER BY run_id, node, attempt, name"
        )))
    }

    /// The gate attempts settled in runs created since `since`, with every finished
    /// attempt of those runs: what a report of gate waiting times reads.
    pub async fn settled_gates_since(
        &self,
        since: DateTime<Utc>,
    ) -> Result<(Vec<SettledGate>, Vec<NodeFinish>), StoreError> {
        let gates: Vec<SettledGate> = with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT o.run_id, o.node, o.attempt, o.decided_at FROM gate_outcomes o
                 JOIN runs r ON r.id = o.run_id WHERE r.created_at >= $1
                 ORDER BY o.decided_at",
            )
            .bind(since)
            .fetch_all(pool)
            .await?
        });
        let finishes: Vec<NodeFinish> = with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT a.run_id, a.node, a.finished_at FROM node_attempts a
                 JOIN runs r ON r.id = a.run_id
                 WHERE r.created_at >= $1 AND a.finished_at IS NOT NULL
                   AND EXISTS (SELECT 1 FROM gate_outcomes o WHERE o.run_id = a.run_id)",
            )
            .bind(since)
            .fetch_all(pool)
            .await?
        });
        Ok((gates, finishes))
    }
}
