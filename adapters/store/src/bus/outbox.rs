//! The outbox: events written with the state change that caused them, published later by
//! the relay.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use chrono::Utc;
use gatehouse_events::Envelope;
use sqlx::QueryBuilder;
use uuid::Uuid;

use super::handover::HANDOVER_LEASE;
use super::messages::OutboxMessage;
use super::waiting::HandedRows;
use crate::clock::{duration_ms, now_ms};
use crate::error::StoreError;
use crate::store::{Store, with_pool, with_writer};
use crate::tx::{Held, Tx, with_tx};

type OutboxRow = (i64, Uuid, String, Vec<u8>, Option<String>, i32);

impl Tx {
    /// Appends an event to the outbox. It is published only if this transaction commits:
    /// by a relay, or by this transaction itself when the store
    /// [publishes in place](Store::publish_in_place). Either way it is held until the
    /// commit, with the transaction's other events, and all of them are written together
    /// ([`Tx::commit`]): one statement however many there are.
    pub async fn append_outbox(&mut self, envelope: &Envelope) -> Result<(), StoreError> {
        self.held.push(Held::new(envelope)?);
        self.write_held = Some(write_held);
        Ok(())
    }

    /// Writes the held events to the outbox in one statement, leased to this process's
    /// relay when it has one (see `handover.rs`). An event published in place goes
    /// straight onto the queue instead ([`Tx::publish_held`]): an outbox row would only be
    /// written as sent, read by nothing and pruned later. Once this commits, the rows are
    /// handed to that relay, or whichever relay claims them first is woken.
    pub(crate) async fn write_outbox(&mut self) -> Result<(), StoreError> {
        let held = std::mem::take(&mut self.held);
        if held.is_empty() {
            return Ok(());
        }
        // This process's relay, if it has one, and until when the rows are leased to it.
        let handover = self
            .store()
            .relay_here
            .taker()
            .map(|taker| (taker, now_ms().saturating_add(duration_ms(HANDOVER_LEASE))));
        let lease_until_ms = handover.as_ref().map(|(_, until)| *until);
        let created_at = Utc::now();
        let written: Vec<(i64, Uuid)> = with_tx!(self, conn => {
            let mut insert = QueryBuilder::new(
                "INSERT INTO outbox (id, topic, payload, traceparent, created_at, lease_until_ms) ",
            );
            insert.push_values(&held, |mut row, event| {
                row.push_bind(event.id)
                    .push_bind(event.topic.as_str())
                    .push_bind(event.payload.as_slice())
                    .push_bind(event.traceparent.as_deref())
                    .push_bind(created_at)
                    .push_bind(lease_until_ms);
            });
            insert.push(" RETURNING seq, id");
            insert.build_query_as().fetch_all(&mut *conn).await?
        });
        let Some((taker, lease_until_ms)) = handover else {
            // For whichever relay claims them first.
            self.after_commit(Store::wake_relay);
            return Ok(());
        };
        let mut seqs: HashMap<Uuid, i64> = written.into_iter().map(|(seq, id)| (id, seq)).collect();
        let mut rows: Vec<OutboxMessage> = held
            .into_iter()
            .filter_map(|event| {
                Some(OutboxMessage {
                    seq: seqs.remove(&event.id)?,
                    id: event.id,
                    topic: event.topic,
                    payload: event.payload,
                    traceparent: event.traceparent,
                    attempts: 0,
                })
            })
            .collect();
        rows.sort_unstable_by_key(|row| row.seq);
        let handed = HandedRows {
            rows,
            lease_until_ms,
        };
        self.after_commit_awaited(move |store| async move { store.hand_over(taker, handed).await });
        Ok(())
    }
}

/// Writes a transaction's held events as it commits: in place, or to the outbox.
fn write_held(tx: &mut Tx) -> Pin<Box<dyn Future<Output = Result<(), StoreError>> + Send + '_>> {
    Box::pin(async move {
        if tx.held.is_empty() {
            Ok(())
        } else if tx.store().publishes_in_place() {
            tx.publish_held().await
        } else {
            tx.write_outbox().await
        }
    })
}

impl Store {
    /// Claims up to `limit` unsent rows, oldest first, for `lease`. Rows leased by a relay
    /// that died become claimable again when the lease runs out; several relays never hold
    /// the same row at once.
    pub async fn claim_outbox(
        &self,
        limit: i64,
        lease: Duration,
    ) -> Result<Vec<OutboxMessage>, StoreError> {
        let now = now_ms();
        // The lease condition is repeated outside the sub-select so that a concurrent
        // claimer re-checks it on the row it locked (Postgres re-evaluates the outer WHERE).
        // On Postgres the sub-select locks its rows in `seq` order and skips rows another
        // claimer holds: the UPDATE alone would lock them in the order of its heap scan,
        // which differs between concurrent claimers (every lease change moves a row), and
        // several relays claiming at once (after a NATS outage, say) then deadlock.
        let sql = match &self.pool {
            crate::store::Pool::Postgres(_) => {
                "UPDATE outbox SET lease_until_ms = $1
                 WHERE seq IN (SELECT seq FROM outbox
                               WHERE sent_at IS NULL AND (lease_until_ms IS NULL OR lease_until_ms <= $2)
                               ORDER BY seq LIMIT $3 FOR UPDATE SKIP LOCKED)
                   AND sent_at IS NULL AND (lease_until_ms IS NULL OR lease_until_ms <= $2)
                 RETURNING seq, id, topic, payload, traceparent, attempts"
            }
            // SQLite has one writer at a time: nothing to race.
            crate::store::Pool::Sqlite(_) => {
                "UPDATE outbox SET lease_until_ms = $1
                 WHERE seq IN (SELECT seq FROM outbox
                               WHERE sent_at IS NULL AND (lease_until_ms IS NULL OR lease_until_ms <= $2)
                               ORDER BY seq LIMIT $3)
                   AND sent_at IS NULL AND (lease_until_ms IS NULL OR lease_until_ms <= $2)
                 RETURNING seq, id, topic, payload, traceparent, attempts"
            }
        };
        // Looked for by reading first: a relay polls, and with events published in place
        // (SQLite) there is mostly nothing for it; a read takes no write lock.
        let unsent: Option<(i64,)> = with_pool!(self, pool => {
            sqlx::query_as("SELECT seq FROM outbox WHERE sent_at IS NULL LIMIT 1")
                .fetch_optional(pool)
                .await?
        });
        if unsent.is_none() {
            return Ok(Vec::new());
        }
        let mut rows: Vec<OutboxRow> = with_writer!(self, pool => {
            sqlx::query_as(sql)
                .bind(now.saturating_add(duration_ms(lease)))
                .bind(now)
                .bind(limit)
                .fetch_all(pool)
                .await?
        });
        rows.sort_by_key(|r| r.0);
        Ok(rows
            .into_iter()
            .map(
                |(seq, id, topic, payload, traceparent, attempts)| OutboxMessage {
                    seq,
                    id,
                    topic,
                    payload,
                    traceparent,
                    attempts,
                },
            )
            .collect())
    }

    /// Marks published rows as sent, in one statement.
    pub async fn mark_outbox_sent(&self, seqs: &[i64]) -> Result<(), StoreError> {
        if seqs.is_empty() {
            return Ok(());
        }
        let now = Utc::now();
        with_writer!(self, pool => {
            let mut sql = QueryBuilder::new("UPDATE outbox SET lease_until_ms = NULL, sent_at = ");
            sql.push_bind(now).push(" WHERE seq IN (");
            let mut list = sql.separated(", ");
            for seq in seqs {
                list.push_bind(*seq);
            }
            sql.push(")").build().execute(pool).await?;
        });
        Ok(())
    }

    /// Gives a claimed row back, to be claimed again after `retry_in`. With `error` it
    /// counts as a failed publish attempt and keeps the error for operators; without, the
    /// row was not tried (an earlier row of the batch failed).
    pub async fn release_outbox(
        &self,
        seq: i64,
        error: Option<&str>,
        retry_in: Duration,
    ) -> Result<(), StoreError> {
        with_writer!(self, pool => {
            sqlx::query(
                "UPDATE outbox SET lease_until_ms = $1,
                   attempts = attempts + CASE WHEN $2 IS NULL THEN 0 ELSE 1 END,
                   last_error = COALESCE($2, last_error)
                 WHERE seq = $3",
            )
            .bind(now_ms().saturating_add(duration_ms(retry_in)))
            .bind(error)
            .bind(seq)
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    /// Number of rows not yet published; a health signal (a growing backlog means the bus
    /// is down or the relay is stuck).
    pub async fn outbox_backlog(&self) -> Result<i64, StoreError> {
        let (n,): (i64,) = with_pool!(self, pool => {
            sqlx::query_as("SELECT COUNT(*) FROM outbox WHERE sent_at IS NULL")
                .fetch_one(pool)
                .await?
        });
        Ok(n)
    }

    /// Deletes sent rows older than `age`. Sent rows are kept a while so an operator can
    /// see what was published and when.
    pub async fn prune_outbox(&self, age: Duration) -> Result<u64, StoreError> {
        let cutoff = Utc::now()
            - chrono::Duration::from_std(age).unwrap_or_else(|_| chrono::Duration::days(36500));
        Ok(with_writer!(self, pool => {
            sqlx::query("DELETE FROM outbox WHERE sent_at IS NOT NULL AND sent_at < $1")
                .bind(cutoff)
                .execute(pool)
                .await?
                .rows_affected()
        }))
    }
}
