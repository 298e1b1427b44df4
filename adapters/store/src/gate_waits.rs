//! What tells how long gates wait: when each node of a run finished its attempts (a gate
//! opens when the last node it needs finishes), how gate attempts were settled, and the
//! artifacts shown as a waiting gate's evidence. Read a page at a time, never per gate.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::attempts::ArtifactRow;
use crate::error::StoreError;
use crate::store::{Store, with_pool};

/// At most this many runs' ids in one statement.
const IDS_PER_QUERY: usize = 500;

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

/// `$first, $first+1, ...`: one placeholder per id.
fn marks(first: usize, n: usize) -> String {
    (first..first + n)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Store {
    /// Every finished attempt of the runs `runs`, as (run, node, when).
    pub async fn node_finishes(&self, runs: &[Uuid]) -> Result<Vec<NodeFinish>, StoreError> {
        let mut out = Vec::new();
        for chunk in runs.chunks(IDS_PER_QUERY) {
            let sql = format!(
                "SELECT run_id, node, finished_at FROM node_attempts
                 WHERE finished_at IS NOT NULL AND run_id IN ({})",
                marks(1, chunk.len())
            );
            let rows: Vec<NodeFinish> = with_pool!(self, pool => {
                let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql));
                for id in chunk {
                    query = query.bind(*id);
                }
                query.fetch_all(pool).await?
            });
            out.extend(rows);
        }
        Ok(out)
    }

    /// The artifacts of the runs `runs`, by run, node, attempt and name.
    pub async fn artifacts_of_runs(&self, runs: &[Uuid]) -> Result<Vec<ArtifactRow>, StoreError> {
        let mut out = Vec::new();
        for chunk in runs.chunks(IDS_PER_QUERY) {
            let sql = format!(
                "SELECT run_id, node, attempt, name, sha256, size, location FROM artifacts
                 WHERE run_id IN ({}) ORDER BY run_id, node, attempt, name",
                marks(1, chunk.len())
            );
            let rows: Vec<ArtifactRow> = with_pool!(self, pool => {
                let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql));
                for id in chunk {
                    query = query.bind(*id);
                }
                query.fetch_all(pool).await?
            });
            out.extend(rows);
        }
        Ok(out)
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

#[cfg(test)]
mod tests {
    #[test]
    fn one_mark_per_id() {
        assert_eq!(super::marks(1, 3), "$1, $2, $3");
        assert_eq!(super::marks(4, 1), "$4");
    }
}
