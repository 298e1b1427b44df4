//! Claiming in-process event deliveries in the transaction that applies them.
//!
//! A consumer of the in-process bus records no inbox row: it deletes its delivery rows
//! first thing in the transaction that applies their events. The delete is the claim and
//! the acknowledgement at once: a delivery still held (its count unchanged) is deleted and
//! applied, in one commit or not at all; one that another receiver settled meanwhile is
//! left alone. An event is logged once per id (a second message with the same id is
//! dropped) and has one delivery row per consumer, so a delivery row claimed once is never
//! claimed again: the inbox would only repeat that. Jobs are not claimed this way (their
//! message goes with its last acknowledgement, so an id can come back), nor is anything
//! from JetStream, which keeps its deliveries outside the database.

use sqlx::QueryBuilder;

use crate::error::StoreError;
use crate::tx::{Tx, with_tx};

/// An event delivery as its receiver holds it: the count it read is its token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueClaim {
    /// Position in the log.
    pub seq: i64,
    /// The delivery count the receiver read.
    pub deliveries: i32,
}

impl Tx {
    /// Deletes those of `claims`, deliveries of the events stream to `consumer`, that are
    /// still as their receiver read them, in one statement, and returns their positions:
    /// this transaction applies those, and its commit acknowledges them. One left out was
    /// settled by another receiver (acknowledged, or handed back to come again).
    pub async fn queue_claim(
        &mut self,
        consumer: &str,
        claims: &[QueueClaim],
    ) -> Result<Vec<i64>, StoreError> {
        if claims.is_empty() {
            return Ok(Vec::new());
        }
        Ok(with_tx!(self, conn => {
            // Built in each arm: the statement is typed by its database.
            let mut delete = QueryBuilder::new("DELETE FROM bus_deliveries WHERE consumer = ");
            delete.push_bind(consumer).push(" AND (");
            let mut each = delete.separated(" OR ");
            for claim in claims {
                each.push("(seq = ")
                    .push_bind_unseparated(claim.seq)
                    .push_unseparated(" AND deliveries = ")
                    .push_bind_unseparated(claim.deliveries)
                    .push_unseparated(")");
            }
            delete.push(") RETURNING seq");
            delete.build_query_scalar().fetch_all(&mut *conn).await?
        }))
    }
}
