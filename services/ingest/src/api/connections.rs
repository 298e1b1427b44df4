//! The network connections an attempt made through the egress proxy, as run and
//! conversation details show them under each attempt.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use gatehouse_store::{ConnectionOwner, ConnectionRow};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// One connection a sandbox attempt made through the egress proxy, allowed or refused.
/// The host is untrusted: the sandbox's client named it.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ConnectionView {
    /// The host asked for (empty when the request named none).
    pub host: String,
    /// The port asked for (0 when the request named none).
    pub port: u16,
    /// allowed (tunnelled) or refused (nothing was reached).
    pub verdict: String,
    /// Why it was refused.
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

impl From<ConnectionRow> for ConnectionView {
    fn from(row: ConnectionRow) -> Self {
        Self {
            host: row.host,
            port: row.port,
            verdict: row.verdict.to_string(),
            reason: row.reason,
            bytes_up: row.bytes_up,
            bytes_down: row.bytes_down,
            started_at: row.started_at,
            duration_ms: row.duration_ms,
        }
    }
}

/// A run's connections by (node, attempt), each list in start order.
pub(crate) fn by_node_attempt(
    rows: Vec<ConnectionRow>,
) -> BTreeMap<(String, i32), Vec<ConnectionView>> {
    let mut grouped: BTreeMap<(String, i32), Vec<ConnectionView>> = BTreeMap::new();
    for row in rows {
        if let ConnectionOwner::Node { node, .. } = &row.owner {
            grouped
                .entry((node.clone(), row.attempt))
                .or_default()
                .push(row.into());
        }
    }
    grouped
}

/// A conversation's connections by (turn, attempt), each list in start order.
pub(crate) fn by_turn_attempt(
    rows: Vec<ConnectionRow>,
) -> BTreeMap<(i64, i32), Vec<ConnectionView>> {
    let mut grouped: BTreeMap<(i64, i32), Vec<ConnectionView>> = BTreeMap::new();
    for row in rows {
        if let ConnectionOwner::Turn { seq, .. } = row.owner {
            grouped
                .entry((seq, row.attempt))
                .or_default()
                .push(row.into());
        }
    }
    grouped
}
