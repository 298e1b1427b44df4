//! The network connections each sandbox attempt made through the egress proxy, allowed or
//! refused, so a reviewer sees what an agent reached and what it was kept from: written by
//! the runner as the proxy reports them, read with the run or the conversation.
//!
//! Every stored text is untrusted (the host is as the sandbox's client named it) and
//! bounded: a host longer than [`MAX_HOST_BYTES`] or a reason longer than
//! [`MAX_REASON_BYTES`] is cut, and an attempt keeps at most
//! [`MAX_CONNECTIONS_PER_ATTEMPT`] rows.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use chrono::{DateTime, Utc};
use sqlx::QueryBuilder;
use uuid::Uuid;

use crate::error::StoreError;
use crate::store::{Store, with_pool};
use crate::text::{fit_bytes, text_enum};
use crate::tx::with_tx;

/// Most connections kept per attempt: an agent looping on a refused host must not fill the
/// database. The runner records the first ones and summarises the rest itself (counts per
/// host in the attempt's log); [`Store::record_connections`] drops whatever goes past this.
pub const MAX_CONNECTIONS_PER_ATTEMPT: usize = 1000;

/// Longest host kept, in bytes (a DNS name has at most 253); a longer one is cut and
/// ends in `…`.
pub const MAX_HOST_BYTES: usize = 300;

/// Longest refusal reason kept, in bytes; a longer one is cut and ends in `…`.
pub const MAX_REASON_BYTES: usize = 2000;

/// Rows per `INSERT`: 14 binds each stays under both engines' limit on bound parameters.
const ROWS_PER_STATEMENT: usize = 500;

text_enum! {
    /// Whether the proxy opened the tunnel.
    pub enum ConnectionVerdict {
        /// Tunnelled to the host.
        Allowed = "allowed",
        /// Answered with an error; nothing was reached.
        Refused = "refused",
    }
}

/// Whose attempt a connection was made by: a run's node, or a conversation's turn.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ConnectionOwner {
    /// An attempt of a node of an SOP run.
    Node {
        /// The run.
        run_id: Uuid,
        /// The node's id.
        node: String,
    },
    /// An attempt of a conversation's turn.
    Turn {
        /// The conversation.
        conversation_id: Uuid,
        /// The turn's message number in the thread.
        seq: i64,
    },
}

/// One connection of an attempt, as the egress proxy reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionRow {
    /// The run node or conversation turn the attempt belongs to.
    pub owner: ConnectionOwner,
    /// The attempt's number.
    pub attempt: i32,
    /// The host asked for, as the client named it (untrusted; empty when it named none).
    pub host: String,
    /// The port asked for (0 when the request named none).
    pub port: u16,
    /// Tunnelled or refused.
    pub verdict: ConnectionVerdict,
    /// For a refusal, why, in words for the person reading it.
    pub reason: Option<String>,
    /// Bytes from the sandbox to the host.
    pub bytes_up: u64,
    /// Bytes from the host to the sandbox.
    pub bytes_down: u64,
    /// When the request came.
    pub started_at: DateTime<Utc>,
    /// From the request to the end of the tunnel (or to the refusal).
    pub duration_ms: u64,
}

/// A row as the table holds it.
#[derive(sqlx::FromRow)]
struct Stored {
    run_id: Option<Uuid>,
    node: Option<String>,
    conversation_id: Option<Uuid>,
    seq: Option<i64>,
    attempt: i32,
    host: String,
    port: i32,
    verdict: ConnectionVerdict,
    reason: Option<String>,
    bytes_up: i64,
    bytes_down: i64,
    started_at: DateTime<Utc>,
    duration_ms: i64,
}

impl TryFrom<Stored> for ConnectionRow {
    type Error = StoreError;

    fn try_from(s: Stored) -> Result<Self, StoreError> {
        let owner = match (s.run_id, s.node, s.conversation_id, s.seq) {
            (Some(run_id), Some(node), None, None) => ConnectionOwner::Node { run_id, node },
            (None, None, Some(conversation_id), Some(seq)) => ConnectionOwner::Turn {
                conversation_id,
                seq,
            },
            _ => {
                return Err(StoreError::Corrupt(
                    "an egress connection belongs to neither one run node nor one turn".into(),
                ));
            }
        };
        let port = u16::try_from(s.port)
            .map_err(|_| StoreError::Corrupt(format!("egress connection port {}", s.port)))?;
        Ok(Self {
            owner,
            attempt: s.attempt,
            host: s.host,
            port,
            verdict: s.verdict,
            reason: s.reason,
            bytes_up: u64::try_from(s.bytes_up).unwrap_or(0),
            bytes_down: u64::try_from(s.bytes_down).unwrap_or(0),
            started_at: s.started_at,
            duration_ms: u64::try_from(s.duration_ms).unwrap_or(0),
        })
    }
}

const COLUMNS: &str = "run_id, node, conversation_id, seq, attempt, host, port, verdict, reason, \
     bytes_up, bytes_down, started_at, duration_ms";

impl Store {
    /// Records connections, of one attempt or several, in one transaction, and returns how
    /// many were kept. Called as often as the runner likes (each call adds rows; the same
    /// connection recorded twice is two rows): an attempt keeps its first
    /// [`MAX_CONNECTIONS_PER_ATTEMPT`] connections over all calls, in the order given, and
    /// the rest are dropped here, so the runner should summarise what goes past the limit.
    /// Hosts and reasons are cut to [`MAX_HOST_BYTES`] and [`MAX_REASON_BYTES`].
    /// The runner records an attempt from one task: two calls for one attempt at once may
    /// keep a few rows past the limit on Postgres.
    pub async fn record_connections(&self, rows: &[ConnectionRow]) -> Result<usize, StoreError> {
        if rows.is_empty() {
            return Ok(0);
        }
        let mut tx = self.begin().await?;
        // Room left per attempt, counted once per attempt of the batch.
        let mut room: HashMap<(&ConnectionOwner, i32), usize> = HashMap::new();
        let mut kept: Vec<&ConnectionRow> = Vec::with_capacity(rows.len());
        for row in rows {
            let key = (&row.owner, row.attempt);
            let left = match room.entry(key) {
                Entry::Occupied(left) => left.into_mut(),
                Entry::Vacant(slot) => {
                    let stored = count(&mut tx, &row.owner, row.attempt).await?;
                    slot.insert(MAX_CONNECTIONS_PER_ATTEMPT.saturating_sub(stored))
                }
            };
            if *left > 0 {
                *left -= 1;
                kept.push(row);
            }
        }
        for chunk in kept.chunks(ROWS_PER_STATEMENT) {
            with_tx!(tx, conn => {
                // Built in each arm: the statement is typed by its database.
                let mut insert = QueryBuilder::new(format!("INSERT INTO egress_connections ({COLUMNS}) "));
                insert.push_values(chunk, |mut values, row| {
                    let (run_id, node, conversation_id, seq) = owner_columns(&row.owner);
                    values
                        .push_bind(run_id)
                        .push_bind(node)
                        .push_bind(conversation_id)
                        .push_bind(seq)
                        .push_bind(row.attempt)
                        .push_bind(fit_bytes(&row.host, MAX_HOST_BYTES))
                        .push_bind(i32::from(row.port))
                        .push_bind(row.verdict)
                        .push_bind(row.reason.as_deref().map(|r| fit_bytes(r, MAX_REASON_BYTES)))
                        .push_bind(signed(row.bytes_up))
                        .push_bind(signed(row.bytes_down))
                        .push_bind(row.started_at)
                        .push_bind(signed(row.duration_ms));
                });
                insert.build().execute(&mut *conn).await?;
            });
        }
        tx.commit().await?;
        Ok(kept.len())
    }

    /// Every connection of a run's node attempts, by node, attempt and start.
    pub async fn run_connections(&self, run_id: Uuid) -> Result<Vec<ConnectionRow>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM egress_connections WHERE run_id = $1
             ORDER BY node, attempt, started_at, id"
        );
        let stored: Vec<Stored> = with_pool!(self, pool => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(run_id).fetch_all(pool).await?
        });
        stored.into_iter().map(ConnectionRow::try_from).collect()
    }

    /// Every connection of a conversation's turn attempts, by turn, attempt and start.
    pub async fn conversation_connections(
        &self,
        conversation_id: Uuid,
    ) -> Result<Vec<ConnectionRow>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM egress_connections WHERE conversation_id = $1
             ORDER BY seq, attempt, started_at, id"
        );
        let stored: Vec<Stored> = with_pool!(self, pool => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(conversation_id)
                .fetch_all(pool)
                .await?
        });
        stored.into_iter().map(ConnectionRow::try_from).collect()
    }
}

/// How many connections of the attempt are stored.
async fn count(
    tx: &mut crate::tx::Tx,
    owner: &ConnectionOwner,
    attempt: i32,
) -> Result<usize, StoreError> {
    let stored: i64 = match owner {
        ConnectionOwner::Node { run_id, node } => with_tx!(tx, conn => {
            sqlx::query_scalar(
                "SELECT COUNT(*) FROM egress_connections
                 WHERE run_id = $1 AND node = $2 AND attempt = $3",
            )
            .bind(run_id)
            .bind(node)
            .bind(attempt)
            .fetch_one(&mut *conn)
            .await?
        }),
        ConnectionOwner::Turn {
            conversation_id,
            seq,
        } => with_tx!(tx, conn => {
            sqlx::query_scalar(
                "SELECT COUNT(*) FROM egress_connections
                 WHERE conversation_id = $1 AND seq = $2 AND attempt = $3",
            )
            .bind(conversation_id)
            .bind(seq)
            .bind(attempt)
            .fetch_one(&mut *conn)
            .await?
        }),
    };
    Ok(usize::try_from(stored).unwrap_or(0))
}

/// The owner's four columns, two of them NULL.
fn owner_columns(
    owner: &ConnectionOwner,
) -> (Option<Uuid>, Option<&str>, Option<Uuid>, Option<i64>) {
    match owner {
        ConnectionOwner::Node { run_id, node } => (Some(*run_id), Some(node), None, None),
        ConnectionOwner::Turn {
            conversation_id,
            seq,
        } => (None, None, Some(*conversation_id), Some(*seq)),
    }
}

/// A count as the BIGINT columns hold it (no connection moves 2^63 bytes).
fn signed(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_text_is_cut_on_a_character_boundary() {
        assert_eq!(fit_bytes("short", 10), "short");
        let cut_host = fit_bytes(&"é".repeat(400), MAX_HOST_BYTES);
        assert!(cut_host.len() <= MAX_HOST_BYTES, "{}", cut_host.len());
        assert!(cut_host.ends_with('…'));
        assert!(cut_host.starts_with("éé"));
        assert_eq!(fit_bytes("abcdef", 5), "ab…");
    }

    #[test]
    fn counts_past_i64_are_capped() {
        assert_eq!(signed(u64::MAX), i64::MAX);
        assert_eq!(signed(7), 7);
    }
}
