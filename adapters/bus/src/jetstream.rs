//! The JetStream bus, for distributed mode.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use async_nats::jetstream::consumer::{AckPolicy, pull};
use async_nats::jetstream::context::PublishAckFuture;
use async_nats::jetstream::message::PublishMessage;
use async_nats::jetstream::stream::{self, RetentionPolicy};
use async_nats::jetstream::{self, AckKind};
use async_nats::{ConnectErrorKind, HeaderMap};
use async_trait::async_trait;
use backon::{ExponentialBuilder, Retryable};
use futures::{FutureExt, StreamExt};
use gatehouse_events::{Prefix, StreamKind, StreamSpec};

use crate::bus::Settle;
use crate::{Bus, BusError, ConsumerSpec, Delivery, Outgoing, Published, Subscription};

const MSG_ID: &str = "Nats-Msg-Id";
const TRACEPARENT: &str = "traceparent";
/// Events a subscription pulls ahead of what it has processed. Small, so a slow
/// replica does not sit on work another replica could take.
const PREFETCH: usize = 16;
/// How long one pull for a job waits at the server before it is asked again. Short, so a
/// pull lost with the connection (NATS restarted) is replaced within seconds.
const JOB_PULL: Duration = Duration::from_secs(5);

/// A [`Bus`] on NATS JetStream under one deployment prefix.
#[derive(Clone)]
pub struct JetStreamBus {
    js: jetstream::Context,
    prefix: Prefix,
    /// Set once the deployment's streams are known to exist.
    streams_ready: Arc<AtomicBool>,
}

impl JetStreamBus {
    /// Connects, retrying with `retry` while the server is unreachable, then creates or
    /// updates the deployment's two streams.
    pub async fn connect(
        url: &str,
        prefix: Prefix,
        retry: ExponentialBuilder,
    ) -> Result<Self, BusError> {
        let attempts = AtomicUsize::new(0);
        let connect = || async {
            attempts.fetch_add(1, Ordering::Relaxed);
            async_nats::ConnectOptions::new()
                .name("gatehouse")
                .connection_timeout(Duration::from_secs(5))
                .connect(url)
                .await
        };
        let client = connect
            .retry(retry)
            .when(|err| {
                matches!(
                    err.kind(),
                    ConnectErrorKind::Io
                        | ConnectErrorKind::TimedOut
                        | ConnectErrorKind::Dns
                        | ConnectErrorKind::MaxReconnects
                )
            })
            .notify(|err, delay| {
                let url = crate::redact_url(url);
                tracing::warn!(%url, error = %err, retry_in = ?delay, "NATS unreachable, retrying");
            })
            .await
            .map_err(|source| BusError::Unreachable {
                url: crate::redact_url(url),
                attempts: attempts.load(Ordering::Relaxed),
                source,
            })?;
        let bus = Self {
            js: jetstream::new(client),
            prefix,
            streams_ready: Arc::default(),
        };
        bus.ensure_streams().await?;
        Ok(bus)
    }

    /// A bus whose connection is made in the background, retried with backoff for as
    /// long as it takes: for a service that must start, and answer its probes, while NATS
    /// is still unreachable. [`Bus::check_ready`] creates the streams once NATS answers,
    /// and says why not until then. Only a malformed URL is an error here.
    pub async fn connect_lazy(url: &str, prefix: Prefix) -> Result<Self, BusError> {
        let client = async_nats::ConnectOptions::new()
            .name("gatehouse")
            .connection_timeout(Duration::from_secs(5))
            .retry_on_initial_connect()
            .connect(url)
            .await
            .map_err(|source| BusError::Unreachable {
                url: crate::redact_url(url),
                attempts: 1,
                source,
            })?;
        Ok(Self {
            js: jetstream::new(client),
            prefix,
            streams_ready: Arc::default(),
        })
    }

    /// The JetStream context, for what shares the bus's connection (the blob store's
    /// object store).
    pub fn context(&self) -> jetstream::Context {
        self.js.clone()
    }

    /// Creates both streams, or updates them to the current definition. Idempotent, so
    /// every replica can run it at start.
    pub async fn ensure_streams(&self) -> Result<(), BusError> {
        for spec in StreamSpec::all(&self.prefix) {
            let config = stream::Config {
                name: spec.name.clone(),
                subjects: spec.subjects,
                retention: if spec.kind.is_work_queue() {
                    RetentionPolicy::WorkQueue
                } else {
                    RetentionPolicy::Limits
                },
                max_age: spec.max_age.unwrap_or_default(),
                duplicate_window: spec.duplicate_window,
                ..Default::default()
            };
            self.js
                .create_or_update_stream(config)
                .await
                .map_err(|e| BusError::jetstream("create or update stream", e))?;
            tracing::debug!(stream = %spec.name, "stream ready");
        }
        self.streams_ready.store(true, Ordering::Relaxed);
        Ok(())
    }
}

/// `message` as JetStream publishes it: its id for de-duplication, its trace as a header.
fn publish_message(message: &Outgoing<'_>) -> PublishMessage {
    let mut publish = PublishMessage::build()
        .payload(message.payload.to_vec().into())
        .message_id(message.id.to_string());
    if let Some(tp) = message.traceparent {
        publish = publish.header(TRACEPARENT, tp);
    }
    publish
}

/// Awaits `acks` in order into `results`, stopping after the first that fails.
async fn acks_in_order(
    acks: Vec<PublishAckFuture>,
    results: &mut Vec<Result<Published, BusError>>,
) {
    for ack in acks {
        match ack.await {
            Ok(ack) => results.push(Ok(Published {
                duplicate: ack.duplicate,
            })),
            Err(e) => {
                results.push(Err(BusError::jetstream("publish acknowledgement", e)));
                return;
            }
        }
    }
}

#[async_trait]
impl Bus for JetStreamBus {
    async fn check_ready(&self) -> Result<(), BusError> {
        if !self.streams_ready.load(Ordering::Relaxed) {
            return self.ensure_streams().await;
        }
        // A stream lookup is a round trip through the server and JetStream.
        let name = self.prefix.stream_name(gatehouse_events::StreamKind::Jobs);
        self.js
            .get_stream(&name)
            .await
            .map(drop)
            .map_err(|e| BusError::jetstream("stream lookup", e))
    }

    async fn publish(&self, message: Outgoing<'_>) -> Result<Published, BusError> {
        let ack = self
            .js
            .send_publish(
                self.prefix.subject(message.topic),
                publish_message(&message),
            )
            .await
            .map_err(|e| BusError::jetstream("publish", e))?
            .await
            .map_err(|e| BusError::jetstream("publish acknowledgement", e))?;
        Ok(Published {
            duplicate: ack.duplicate,
        })
    }

    async fn publish_all(&self, messages: &[Outgoing<'_>]) -> Vec<Result<Published, BusError>> {
        let mut results = Vec::with_capacity(messages.len());
        let mut acks = Vec::with_capacity(messages.len());
        for message in messages {
            match self
                .js
                .send_publish(self.prefix.subject(message.topic), publish_message(message))
                .await
            {
                Ok(ack) => acks.push(ack),
                Err(e) => {
                    // Those sent so far are answered first, in order.
                    acks_in_order(acks, &mut results).await;
                    if results.iter().all(Result::is_ok) {
                        results.push(Err(BusError::jetstream("publish", e)));
                    }
                    return results;
                }
            }
        }
        acks_in_order(acks, &mut results).await;
        results
    }

    async fn subscribe(&self, spec: &ConsumerSpec) -> Result<Box<dyn Subscription>, BusError> {
        spec.validate()?;
        let stream = self
            .js
            .get_stream(self.prefix.stream_name(spec.stream()))
            .await
            .map_err(|e| BusError::jetstream("get stream", e))?;
        let config = pull::Config {
            durable_name: Some(spec.name.clone()),
            // ">" means the whole stream; NATS wants no filter for that.
            filter_subject: match spec.filter.as_str() {
                ">" => String::new(),
                filter => self.prefix.subject(filter),
            },
            ack_policy: AckPolicy::Explicit,
            ack_wait: spec.ack_wait,
            ..Default::default()
        };
        // Creating a durable that exists updates it, so a changed ack wait takes effect.
        let consumer: jetstream::consumer::PullConsumer = stream
            .create_consumer(config)
            .await
            .map_err(|e| BusError::jetstream("create consumer", e))?;
        // Jobs are pulled one at a time, when the taker asks: a job pulled ahead would wait
        // in this process's buffer with no one renewing its lease, be redelivered to
        // another runner when its ack wait ran out, and then run twice.
        let pulling = match spec.stream() {
            StreamKind::Jobs => Pulling::OnDemand(Box::new(consumer)),
            StreamKind::Events => Pulling::Ahead(Box::new(
                consumer
                    .stream()
                    .max_messages_per_batch(PREFETCH)
                    .messages()
                    .await
                    .map_err(|e| BusError::jetstream("pull messages", e))?,
            )),
        };
        Ok(Box::new(JetStreamSubscription {
            name: spec.name.clone(),
            prefix: self.prefix.clone(),
            pulling,
        }))
    }
}

struct JetStreamSubscription {
    name: String,
    prefix: Prefix,
    pulling: Pulling,
}

/// How a subscription pulls: events ahead in batches, jobs one at a time on demand.
enum Pulling {
    Ahead(Box<pull::Stream>),
    OnDemand(Box<jetstream::consumer::PullConsumer>),
}

#[async_trait]
impl Subscription for JetStreamSubscription {
    async fn next(&mut self) -> Result<Delivery, BusError> {
        let messages = match &mut self.pulling {
            Pulling::Ahead(messages) => messages,
            Pulling::OnDemand(consumer) => {
                let message = pull_one(&self.name, consumer).await;
                return Ok(self.delivery(message));
            }
        };
        loop {
            match messages.next().await {
                Some(Ok(message)) => return Ok(self.delivery(message)),
                // Missed heartbeats and failed pulls happen while NATS restarts; the
                // stream re-issues pulls by itself once the connection is back.
                Some(Err(err)) if err.kind() != pull::MessagesErrorKind::ConsumerDeleted => {
                    tracing::warn!(consumer = %self.name, error = %err, "pulling messages failed; retrying");
                }
                Some(Err(err)) => return Err(BusError::jetstream("pull messages", err)),
                None => return Err(BusError::Closed(self.name.clone())),
            }
        }
    }

    async fn ready(&mut self) -> Option<Delivery> {
        let Pulling::Ahead(messages) = &mut self.pulling else {
            return None;
        };
        match messages.next().now_or_never() {
            Some(Some(Ok(message))) => Some(self.delivery(message)),
            // A missed heartbeat or failed pull: the next `next` waits it out.
            _ => None,
        }
    }

    async fn hand_back(&mut self) {
        let buffered = self.buffered();
        let count = buffered.len();
        for message in buffered {
            if let Err(err) = message.ack_with(AckKind::Nak(None)).await {
                tracing::debug!(consumer = %self.name, error = %err, "handing back a message failed; it returns after its ack wait");
            }
        }
        if count > 0 {
            tracing::debug!(consumer = %self.name, count, "handed back messages pulled ahead");
        }
    }
}

/// Pulls one message, asking again every [`JOB_PULL`] until one comes. A failed pull
/// (NATS restarting) is logged and retried after a second.
async fn pull_one(name: &str, consumer: &jetstream::consumer::PullConsumer) -> jetstream::Message {
    loop {
        let pulled = consumer
            .batch()
            .max_messages(1)
            .expires(JOB_PULL)
            .messages()
            .await;
        let failure = match pulled {
            Ok(mut batch) => match batch.next().await {
                Some(Ok(message)) => return message,
                // The pull expired with no job: ask again.
                None => continue,
                Some(Err(err)) => err.to_string(),
            },
            Err(err) => err.to_string(),
        };
        tracing::warn!(consumer = %name, error = %failure, "pulling a job failed; retrying");
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

impl JetStreamSubscription {
    /// The messages already pulled and waiting in the stream's buffer, without waiting
    /// for more.
    fn buffered(&mut self) -> Vec<jetstream::Message> {
        let mut buffered = Vec::new();
        let Pulling::Ahead(messages) = &mut self.pulling else {
            return buffered;
        };
        while let Some(Some(Ok(message))) = messages.next().now_or_never() {
            buffered.push(message);
        }
        buffered
    }

    fn delivery(&self, message: jetstream::Message) -> Delivery {
        let header = |name: &str| {
            message
                .headers
                .as_ref()
                .and_then(|h: &HeaderMap| h.get(name))
                .map(|v| v.as_str().to_owned())
        };
        let deliveries = message
            .info()
            .map(|i| u32::try_from(i.delivered).unwrap_or(u32::MAX))
            .unwrap_or(1);
        Delivery {
            id: header(MSG_ID).and_then(|id| id.parse().ok()),
            topic: self
                .prefix
                .topic_of(message.subject.as_str())
                .unwrap_or(message.subject.as_str())
                .to_owned(),
            payload: message.payload.clone(),
            traceparent: header(TRACEPARENT),
            deliveries,
            settle: Box::new(JetStreamAck(message)),
        }
    }
}

struct JetStreamAck(jetstream::Message);

#[async_trait]
impl Settle for JetStreamAck {
    async fn ack(&self) -> Result<(), BusError> {
        // Double ack: wait for the server to confirm, so an ack lost in a NATS restart is
        // noticed rather than turning into a silent redelivery.
        self.0
            .double_ack()
            .await
            .map_err(|e| BusError::jetstream("ack", e))
    }

    async fn nak(&self, delay: Duration) -> Result<(), BusError> {
        self.0
            .ack_with(AckKind::Nak(Some(delay)))
            .await
            .map_err(|e| BusError::jetstream("nak", e))
    }

    async fn in_progress(&self) -> Result<(), BusError> {
        self.0
            .ack_with(AckKind::Progress)
            .await
            .map_err(|e| BusError::jetstream("in progress", e))
    }

    async fn term(&self) -> Result<(), BusError> {
        self.0
            .double_ack_with(AckKind::Term)
            .await
            .map_err(|e| BusError::jetstream("term", e))
    }
}
