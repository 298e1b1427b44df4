//! Tables behind the in-process bus: a message log, durable consumers, and one delivery
//! row per (consumer, message) until it is acknowledged.
//!
//! Messages fan out to consumers when published (and to a new consumer, from the whole
//! log, when it is created), so fetching is a single indexed lookup. Every delivery
//! carries its delivery count, which doubles as a lease token: an acknowledgement from a
//! delivery that has since been redelivered to someone else is ignored.

use std::time::Duration;

use chrono::Utc;
use gatehouse_events::{StreamKind, topic_matches};
use uuid::Uuid;

use super::messages::{QueuedDelivery, stream_key};
use crate::bus::QueueMessage;
use crate::clock::{duration_ms, now_ms};
use crate::error::StoreError;
use crate::store::{Store, with_pool, with_writer};
use crate::tx::{Tx, with_tx};

/// A delivery row with its message, as read; `deliveries` is the count stored.
#[derive(sqlx::FromRow)]
struct Peeked {
    seq: i64,
    deliveries: i32,
    id: Uuid,
    topic: String,
    payload: Vec<u8>,
    traceparent: Option<String>,
}

impl Peeked {
    /// The delivery handed out, as delivery number `deliveries`.
    fn into_delivery(self, deliveries: i32) -> QueuedDelivery {
        QueuedDelivery {
            seq: self.seq,
            id: self.id,
            topic: self.topic,
            payload: self.payload,
            traceparent: self.traceparent,
            deliveries,
        }
    }
}

impl Store {
    /// Appends a message and fans it out to every consumer whose filter matches. Returns
    /// `false` if a message with the same id was already there.
    pub async fn queue_publish(&self, msg: QueueMessage<'_>) -> Result<bool, StoreError> {
        let mut tx = self.begin().await?;
        let (new, fanout) = tx.enqueue_all(&[msg]).await?;
        tx.hand_after_commit(fanout, Vec::new());
        tx.commit().await?;
        Ok(new.contains(&msg.id))
    }

    /// Creates a durable consumer if it does not exist; a new one receives every message
    /// already in its stream that matches its filter. An existing consumer keeps its
    /// backlog; a changed filter applies to messages published from now on.
    pub async fn queue_ensure_consumer(
        &self,
        name: &str,
        stream: StreamKind,
        filter: &str,
    ) -> Result<(), StoreError> {
        let stream = stream_key(stream);
        let now = now_ms();
        let mut tx = self.begin().await?;
        tx.lock_stream(stream, true).await?;
        with_tx!(tx, conn => {
            let existing: Option<(String,)> =
                sqlx::query_as("SELECT filter FROM bus_consumers WHERE name = $1")
                    .bind(name)
                    .fetch_optional(&mut *conn)
                    .await?;
            match existing {
                Some((old,)) if old == filter => {}
                Some(_) => {
                    sqlx::query("UPDATE bus_consumers SET filter = $1, stream = $2 WHERE name = $3")
                        .bind(filter)
                        .bind(stream)
                        .bind(name)
                        .execute(&mut *conn)
                        .await?;
                }
                None => {
                    sqlx::query(
                        "INSERT INTO bus_consumers (name, stream, filter, created_at)
                         VALUES ($1, $2, $3, $4)",
                    )
                    .bind(name)
                    .bind(stream)
                    .bind(filter)
                    .bind(Utc::now())
                    .execute(&mut *conn)
                    .await?;
                    let log: Vec<(i64, String)> = sqlx::query_as(
                        "SELECT seq, topic FROM bus_messages WHERE stream = $1 ORDER BY seq",
                    )
                    .bind(stream)
                    .fetch_all(&mut *conn)
                    .await?;
                    for (seq, _) in log.iter().filter(|(_, topic)| topic_matches(filter, topic)) {
                        sqlx::query(
                            "INSERT INTO bus_deliveries (consumer, seq, visible_ms)
                             VALUES ($1, $2, $3)",
                        )
                        .bind(name)
                        .bind(seq)
                        .bind(now)
                        .execute(&mut *conn)
                        .await?;
                    }
                }
            }
        });
        tx.commit().await
    }

    /// Leases up to `limit` of a consumer's oldest due messages until `ack_wait` from
    /// now, oldest first: one write for a receiver with that many free hands. Empty when
    /// nothing is due (or another task of the same consumer won the race for it). It
    /// writes, so a subscription that has not been woken for new work asks
    /// [`Store::queue_next_due`] first: a read takes no write lock (SQLite) and no row lock
    /// (Postgres). A woken one leases at once: it is woken only for its own consumer's
    /// deliveries, so something is most likely due.
    pub async fn queue_fetch_up_to(
        &self,
        consumer: &str,
        ack_wait: Duration,
        limit: usize,
    ) -> Result<Vec<QueuedDelivery>, StoreError> {
        let now = now_ms();
        // The due condition is repeated outside the sub-select so a concurrent fetcher
        // re-checks it on the rows it locked. Each leased row brings its message along
        // (SQLite's RETURNING takes no join, but takes sub-selects): one statement.
        let mut leased: Vec<Peeked> = with_writer!(self, pool => {
            sqlx::query_as(
                "UPDATE bus_deliveries SET deliveries = deliveries + 1, visible_ms = $1
                 WHERE consumer = $2 AND visible_ms <= $3
                   AND seq IN (SELECT seq FROM bus_deliveries
                               WHERE consumer = $2 AND visible_ms <= $3 ORDER BY seq LIMIT $4)
                 RETURNING seq, deliveries,
                   (SELECT m.id FROM bus_messages m WHERE m.seq = bus_deliveries.seq) AS id,
                   (SELECT m.topic FROM bus_messages m WHERE m.seq = bus_deliveries.seq) AS topic,
                   (SELECT m.payload FROM bus_messages m WHERE m.seq = bus_deliveries.seq) AS payload,
                   (SELECT m.traceparent FROM bus_messages m WHERE m.seq = bus_deliveries.seq)
                     AS traceparent",
            )
            .bind(now.saturating_add(duration_ms(ack_wait)))
            .bind(consumer)
            .bind(now)
            .bind(i64::try_from(limit.max(1)).unwrap_or(i64::MAX))
            .fetch_all(pool)
            .await?
        });
        // RETURNING keeps no order.
        leased.sort_unstable_by_key(|row| row.seq);
        Ok(leased
            .into_iter()
            .map(|row| {
                let deliveries = row.deliveries;
                row.into_delivery(deliveries)
            })
            .collect())
    }

    /// Up to `limit` of a consumer's due messages, oldest first, without leasing them:
    /// for a consumer that acknowledges each in the transaction applying it (see the bus's
    /// `Take::InTransaction`). Only reads. Each one's `deliveries` is the number of this
    /// delivery; the count stored, one less, is the token its settlement names.
    pub async fn queue_peek(
        &self,
        consumer: &str,
        limit: usize,
    ) -> Result<Vec<QueuedDelivery>, StoreError> {
        let rows: Vec<Peeked> = with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT d.seq, d.deliveries, m.id, m.topic, m.payload, m.traceparent
                 FROM bus_deliveries d JOIN bus_messages m ON m.seq = d.seq
                 WHERE d.consumer = $1 AND d.visible_ms <= $2
                 ORDER BY d.seq LIMIT $3",
            )
            .bind(consumer)
            .bind(now_ms())
            .bind(i64::try_from(limit.max(1)).unwrap_or(i64::MAX))
            .fetch_all(pool)
            .await?
        });
        Ok(rows
            .into_iter()
            .map(|row| {
                let number = row.deliveries.saturating_add(1);
                row.into_delivery(number)
            })
            .collect())
    }

    /// How long until the consumer's next message becomes due (zero if one is due now),
    /// or `None` if it has nothing unacknowledged.
    pub async fn queue_next_due(&self, consumer: &str) -> Result<Option<Duration>, StoreError> {
        let (due,): (Option<i64>,) = with_pool!(self, pool => {
            sqlx::query_as("SELECT MIN(visible_ms) FROM bus_deliveries WHERE consumer = $1")
                .bind(consumer)
                .fetch_one(pool)
                .await?
        });
        let now = now_ms();
        Ok(due.map(|due| Duration::from_millis(due.saturating_sub(now).max(0).unsigned_abs())))
    }

    /// Acknowledges (or terminates) a delivery: the consumer is done with the message. A
    /// work-queue message is deleted once no consumer holds it. Returns `false` when the
    /// lease was lost to a redelivery.
    pub async fn queue_ack(
        &self,
        consumer: &str,
        stream: StreamKind,
        seq: i64,
        deliveries: i32,
    ) -> Result<bool, StoreError> {
        let mut tx = self.begin().await?;
        let acked = tx.queue_ack(consumer, stream, seq, deliveries).await?;
        tx.commit().await?;
        Ok(acked)
    }

    /// Makes a leased delivery due again after `delay`: a nak with delay, or (with the ack
    /// wait as delay) an in-progress signal that extends the lease. Returns `false` when
    /// the lease was lost to a redelivery.
    pub async fn queue_defer(
        &self,
        consumer: &str,
        seq: i64,
        deliveries: i32,
        delay: Duration,
    ) -> Result<bool, StoreError> {
        self.make_due(consumer, seq, deliveries, delay, false).await
    }

    /// Makes a delivery due after `delay`, counting it as a delivery when `counted`, if the
    /// delivery count stored is still `token`.
    async fn make_due(
        &self,
        consumer: &str,
        seq: i64,
        token: i32,
        delay: Duration,
        counted: bool,
    ) -> Result<bool, StoreError> {
        let updated = with_writer!(self, pool => {
            sqlx::query(
                "UPDATE bus_deliveries SET deliveries = deliveries + $5, visible_ms = $1
                 WHERE consumer = $2 AND seq = $3 AND deliveries = $4",
            )
            .bind(now_ms().saturating_add(duration_ms(delay)))
            .bind(consumer)
            .bind(seq)
            .bind(token)
            .bind(i32::from(counted))
            .execute(pool)
            .await?
            .rows_affected()
        });
        Ok(updated == 1)
    }

    /// [`Store::queue_defer`] for a delivery given back: the consumer's waiting
    /// subscriptions are woken to look again, so they wait for it to be due rather than
    /// for a wait they chose before it was given back. `counted`: the nak counts as a
    /// delivery, for one taken by [`Store::queue_peek`], whose look did not.
    pub async fn queue_nak(
        &self,
        consumer: &str,
        seq: i64,
        token: i32,
        delay: Duration,
        counted: bool,
    ) -> Result<bool, StoreError> {
        let held = self.make_due(consumer, seq, token, delay, counted).await?;
        self.wake_consumer(consumer);
        Ok(held)
    }

    /// Messages a consumer has not acknowledged yet (due, leased or deferred).
    pub async fn queue_pending(&self, consumer: &str) -> Result<i64, StoreError> {
        let (n,): (i64,) = with_pool!(self, pool => {
            sqlx::query_as("SELECT COUNT(*) FROM bus_deliveries WHERE consumer = $1")
                .bind(consumer)
                .fetch_one(pool)
                .await?
        });
        Ok(n)
    }

    /// Drops event-stream messages published longer ago than `max_age`, as JetStream's
    /// limits retention does.
    pub async fn queue_prune(&self, max_age: Duration) -> Result<u64, StoreError> {
        Ok(with_writer!(self, pool => {
            sqlx::query("DELETE FROM bus_messages WHERE stream = $1 AND published_ms < $2")
                .bind(stream_key(StreamKind::Events))
                .bind(now_ms().saturating_sub(duration_ms(max_age)))
                .execute(pool)
                .await?
                .rows_affected()
        }))
    }
}

impl Tx {
    /// [`Store::queue_ack`] as part of this transaction: a consumer acknowledges the
    /// delivery in the commit that records its effect, one commit instead of two.
    pub async fn queue_ack(
        &mut self,
        consumer: &str,
        stream: StreamKind,
        seq: i64,
        deliveries: i32,
    ) -> Result<bool, StoreError> {
        let acked = with_tx!(self, conn => {
            let acked = sqlx::query(
                "DELETE FROM bus_deliveries WHERE consumer = $1 AND seq = $2 AND deliveries = $3",
            )
            .bind(consumer)
            .bind(seq)
            .bind(deliveries)
            .execute(&mut *conn)
            .await?
            .rows_affected() == 1;
            // Events stay for replays until pruned; a job goes once no consumer holds it.
            if stream == StreamKind::Jobs {
                sqlx::query(
                    "DELETE FROM bus_messages WHERE seq = $1 AND stream = $2
                       AND NOT EXISTS (SELECT 1 FROM bus_deliveries WHERE seq = $1)",
                )
                .bind(seq)
                .bind(stream_key(StreamKind::Jobs))
                .execute(&mut *conn)
                .await?;
            }
            acked
        });
        Ok(acked)
    }
}
