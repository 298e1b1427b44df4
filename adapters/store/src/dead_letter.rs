//! Dead letters: messages a consumer gave up on.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::error::StoreError;
use crate::store::{Store, with_pool, with_writer};

/// A message to park: what it was, who gave up on it, and why.
#[derive(Debug, Clone)]
pub struct NewDeadLetter<'a> {
    /// The consumer that could not process it.
    pub consumer: &'a str,
    /// The event id, when the message carried one.
    pub event_id: Option<Uuid>,
    /// The topic it arrived on.
    pub topic: &'a str,
    /// The raw bytes, kept for inspection or replay.
    pub payload: &'a [u8],
    /// Why it was parked (decode error, last handler error).
    pub reason: &'a str,
    /// How many times it was delivered.
    pub deliveries: u32,
}

/// A parked message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetter {
    pub id: i64,
    /// The consumer that gave up.
    pub consumer: String,
    /// The event id, when known.
    pub event_id: Option<Uuid>,
    pub topic: String,
    /// The raw bytes.
    pub payload: Vec<u8>,
    pub reason: String,
    /// Delivery count when parked.
    pub deliveries: i32,
    pub parked_at: DateTime<Utc>,
}

type DeadLetterRow = (
    i64,
    String,
    Option<Uuid>,
    String,
    Vec<u8>,
    String,
    i32,
    DateTime<Utc>,
);

impl Store {
    pub async fn park_dead_letter(&self, letter: NewDeadLetter<'_>) -> Result<(), StoreError> {
        with_writer!(self, pool => {
            sqlx::query(
                "INSERT INTO dead_letters
                   (consumer, event_id, topic, payload, reason, deliveries, parked_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
            )
            .bind(letter.consumer)
            .bind(letter.event_id)
            .bind(letter.topic)
            .bind(letter.payload)
            .bind(letter.reason)
            .bind(i32::try_from(letter.deliveries).unwrap_or(i32::MAX))
            .bind(Utc::now())
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    /// Parked messages of one consumer, oldest first.
    pub async fn dead_letters(&self, consumer: &str) -> Result<Vec<DeadLetter>, StoreError> {
        let rows: Vec<DeadLetterRow> = with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT id, consumer, event_id, topic, payload, reason, deliveries, parked_at
                 FROM dead_letters WHERE consumer = $1 ORDER BY id",
            )
            .bind(consumer)
            .fetch_all(pool)
            .await?
        });
        Ok(rows
            .into_iter()
            .map(
                |(id, consumer, event_id, topic, payload, reason, deliveries, parked_at)| {
                    DeadLetter {
                        id,
                        consumer,
                        event_id,
                        topic,
                        payload,
                        reason,
                        deliveries,
                        parked_at,
                    }
                },
            )
            .collect())
    }
}
