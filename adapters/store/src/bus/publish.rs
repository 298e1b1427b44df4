//! Putting messages on the in-process bus inside a transaction: their rows in the log and
//! one delivery for each consumer whose filter matches.
//!
//! On SQLite every statement is a round trip to the connection's own thread, a wake-up
//! that costs tens of microseconds warm and hundreds cold. So a transaction's messages go
//! in two statements however many there are: one insert of them all, which brings back
//! with each new row the consumers of its stream, and one insert of every delivery. The
//! events a transaction publishes in place are held until it commits and go in together
//! ([`Tx::commit`]): a scheduler step's three or four events cost two statements, not
//! three each.

use std::collections::{BTreeSet, HashMap};

use gatehouse_events::{StreamKind, topic_matches};
use sqlx::QueryBuilder;
use tokio::sync::mpsc;
use uuid::Uuid;

use super::messages::{QueueMessage, stream_key};
use super::waiting::{Fanned, HandedJob, Woken};
use crate::clock::now_ms;
use crate::error::StoreError;
use crate::tx::{Held, Inner, Tx, with_tx};

/// Separates a consumer's name from its filter, and one consumer from the next, in the
/// list each new message brings back: neither a name nor a topic filter can hold them.
const FIELD: char = '\u{1f}';
const RECORD: char = '\u{1e}';

impl Held {
    /// This event as a message for the in-process bus's log.
    pub(crate) fn message(&self) -> QueueMessage<'_> {
        QueueMessage {
            id: self.id,
            topic: &self.topic,
            payload: &self.payload,
            traceparent: self.traceparent.as_deref(),
        }
    }
}

/// What a transaction's messages are for this process's subscriptions, once it commits.
#[derive(Default)]
pub(crate) struct Fanout {
    /// Deliveries leased to subscriptions waiting for jobs, to hand to them (see
    /// `job_takers.rs`).
    leased_out: Vec<(mpsc::UnboundedSender<HandedJob>, HandedJob)>,
    /// Consumers given messages, with their deliveries, to wake (see `wakes.rs`).
    woken: Woken,
}

/// A message as the log took it, with its stream's consumers (`None`: there are none).
#[derive(sqlx::FromRow)]
struct Logged {
    seq: i64,
    id: Uuid,
    topic: String,
    consumers: Option<String>,
}

impl Logged {
    /// The consumers whose filter takes this message.
    fn takers(&self) -> impl Iterator<Item = &str> {
        self.consumers
            .as_deref()
            .unwrap_or_default()
            .split(RECORD)
            .filter_map(|consumer| consumer.split_once(FIELD))
            .filter(|(_, filter)| topic_matches(filter, &self.topic))
            .map(|(name, _)| name)
    }
}

impl Tx {
    /// Appends `messages` to the in-process bus's log and fans each out to every consumer
    /// whose filter matches, as part of this transaction, in two statements. The ids of
    /// those that were new (a message whose id is in the log already is dropped), and
    /// whom to hand or wake once this commits ([`Tx::hand_after_commit`]).
    pub(crate) async fn enqueue_all(
        &mut self,
        messages: &[QueueMessage<'_>],
    ) -> Result<(BTreeSet<Uuid>, Fanout), StoreError> {
        if messages.is_empty() {
            return Ok((BTreeSet::new(), Fanout::default()));
        }
        let stream_of = |m: &QueueMessage<'_>| stream_key(StreamKind::for_topic(m.topic));
        let streams: BTreeSet<&str> = messages.iter().map(stream_of).collect();
        for stream in streams {
            self.lock_stream(stream, false).await?;
        }
        let consumers = match self.inner {
            Inner::Postgres(_) => "string_agg(c.name || chr(31) || c.filter, chr(30))",
            Inner::Sqlite(_) => "group_concat(c.name || char(31) || c.filter, char(30))",
        };
        let now = now_ms();
        // What each consumer was given, for its subscriptions here once this commits: only
        // where one process writes in place is a message's position its commit order.
        let hand = self.store().publishes_in_place();
        let (logged, deliveries) = with_tx!(self, conn => {
            let mut insert = QueryBuilder::new(
                "INSERT INTO bus_messages (id, stream, topic, payload, traceparent, published_ms) ",
            );
            insert.push_values(messages, |mut row, m| {
                row.push_bind(m.id)
                    .push_bind(stream_of(m))
                    .push_bind(m.topic)
                    .push_bind(m.payload)
                    .push_bind(m.traceparent)
                    .push_bind(now);
            });
            insert.push(format!(
                " ON CONFLICT (id) DO NOTHING RETURNING seq, id, topic,
                   (SELECT {consumers} FROM bus_consumers c WHERE c.stream = bus_messages.stream)
                     AS consumers"
            ));
            let mut logged: Vec<Logged> = insert.build_query_as().fetch_all(&mut *conn).await?;
            // RETURNING keeps no order.
            logged.sort_unstable_by_key(|m| m.seq);
            // Each (consumer, message) once, for the insert and for the wake-up after.
            let mut deliveries: Vec<Fanned> = logged
                .iter()
                .flat_map(|m| {
                    m.takers().map(move |name| Fanned {
                        consumer: name.to_owned(),
                        seq: m.seq,
                        id: m.id,
                        leased: None,
                    })
                })
                .collect();
            if hand {
                self.store.lease_to_idle(&mut deliveries);
            }
            if !deliveries.is_empty() {
                let mut insert = QueryBuilder::new(
                    "INSERT INTO bus_deliveries (consumer, seq, deliveries, visible_ms) ",
                );
                insert.push_values(&deliveries, |mut row, d| {
                    let (count, visible) = match &d.leased {
                        Some(to) => (1, to.lease_until_ms),
                        None => (0, now),
                    };
                    row.push_bind(d.consumer.as_str())
                        .push_bind(d.seq)
                        .push_bind(count)
                        .push_bind(visible);
                });
                insert.build().execute(&mut *conn).await?;
            }
            (logged, deliveries)
        });
        let by_id: HashMap<Uuid, &QueueMessage<'_>> = messages.iter().map(|m| (m.id, m)).collect();
        let mut fanout = Fanout::default();
        for Fanned {
            consumer,
            seq,
            id,
            leased,
        } in deliveries
        {
            let message = by_id.get(&id).filter(|_| hand);
            match (leased, message) {
                // HandedJob to the subscription it is leased to once this commits.
                (Some(to), Some(message)) => fanout.leased_out.push((
                    to.sender,
                    HandedJob {
                        consumer,
                        delivery: message.delivered(seq),
                        lease_until_ms: to.lease_until_ms,
                    },
                )),
                (_, message) => {
                    let given = fanout.woken.entry(consumer).or_default();
                    given.extend(message.map(|m| m.delivered(seq)));
                }
            }
        }
        Ok((logged.iter().map(|m| m.id).collect(), fanout))
    }

    /// Publishes the events held for the commit ([`Tx::append_outbox`] in place); those
    /// that were new are counted once it has committed.
    pub(crate) async fn publish_held(&mut self) -> Result<(), StoreError> {
        let held = std::mem::take(&mut self.held);
        let messages: Vec<QueueMessage<'_>> = held.iter().map(Held::message).collect();
        let (new, fanout) = self.enqueue_all(&messages).await?;
        let published: Vec<String> = held
            .into_iter()
            .filter(|m| new.contains(&m.id))
            .map(|m| m.topic)
            .collect();
        self.hand_after_commit(fanout, published);
        Ok(())
    }

    /// Once this commits: hands the jobs leased to subscriptions of this process to them
    /// (a subscription that went away meanwhile gets them again at once), counts the
    /// events `published` in place, and wakes the consumers given messages.
    pub(crate) fn hand_after_commit(&mut self, fanout: Fanout, published: Vec<String>) {
        let Fanout { leased_out, woken } = fanout;
        if !leased_out.is_empty() {
            self.after_commit_awaited(move |store| async move {
                for (taker, handed) in leased_out {
                    if let Err(refused) = taker.send(handed) {
                        let handed = refused.0;
                        // The subscription went away meanwhile: the job comes again at once.
                        store
                            .give_back_jobs(&handed.consumer, vec![handed.delivery])
                            .await;
                    }
                }
            });
        }
        if !published.is_empty() || !woken.is_empty() {
            self.after_commit(move |store| {
                for topic in published {
                    metrics::counter!("gatehouse_events_published_total", "type" => topic)
                        .increment(1);
                }
                if !woken.is_empty() {
                    store.wake_consumers(woken);
                }
            });
        }
    }
}
