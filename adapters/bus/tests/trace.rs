//! One trace across the bus: an event published with a traceparent is handled inside an
//! `event` span carrying its trace id, and the event its handler emits continues that
//! trace through the outbox, the relay and the `traceparent` header. Also what the relay
//! and the consumer count. On JetStream (the machine's NATS, `GATEHOUSE_TEST_NATS`) and on
//! the in-process bus, each on a SQLite store in a temporary directory.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use backon::ExponentialBuilder;
use gatehouse_bus::{
    Bus, Consumer, ConsumerOptions, ConsumerSpec, Handler, HandlerError, InProcessBus,
    JetStreamBus, Outcome, Outgoing, Relay, RelayOptions,
};
use gatehouse_events::{
    Actor, Channel, Envelope, Event, NodeProgress, Prefix, RunCommand, RunCommandKind, StreamKind,
    TraceParent,
};
use gatehouse_store::{Store, Tx};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use uuid::Uuid;

#[tokio::test]
async fn jetstream() {
    let nats =
        std::env::var("GATEHOUSE_TEST_NATS").unwrap_or_else(|_| "nats://127.0.0.1:4222".to_owned());
    let id = Uuid::now_v7().simple().to_string();
    let prefix = Prefix::new(&format!("t{}", &id[id.len() - 16..])).unwrap();
    let streams = Streams {
        url: nats.clone(),
        prefix: prefix.clone(),
    };
    let retry = ExponentialBuilder::default().with_max_times(2);
    let connect = JetStreamBus::connect(&nats, prefix, retry);
    let bus = connect.await.expect("connect to JetStream");
    one_trace_across_the_bus(|_| Arc::new(bus)).await;
    drop(streams);
}

#[tokio::test]
async fn in_process() {
    one_trace_across_the_bus(|store| Arc::new(InProcessBus::new(store.clone()))).await;
}

/// Deletes a test prefix's streams when the test ends, however it ends.
struct Streams {
    url: String,
    prefix: Prefix,
}

impl Drop for Streams {
    fn drop(&mut self) {
        let (url, prefix) = (self.url.clone(), self.prefix.clone());
        let _ = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async {
                let Ok(client) = async_nats::connect(url).await else {
                    return;
                };
                let js = async_nats::jetstream::new(client);
                for kind in [StreamKind::Events, StreamKind::Jobs] {
                    let _ = js.delete_stream(prefix.stream_name(kind)).await;
                }
            });
        })
        .join();
    }
}

async fn one_trace_across_the_bus(bus: impl FnOnce(&Store) -> Arc<dyn Bus>) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("bus.db").display());
    let store = Store::connect(&url, ExponentialBuilder::default())
        .await
        .unwrap();
    store.migrate().await.unwrap();
    let bus = bus(&store);
    // Thread-local: the test's runtime runs everything on this thread.
    let logs = Logs::default();
    let _logging =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(logs.clone()));
    let counts = Counts::default();
    let _counting = metrics::set_default_local_recorder(&counts);
    let relay = Relay::new(store.clone(), bus.clone(), RelayOptions::default());

    // The incoming event, as ingest would write it: the root of a trace.
    let root = TraceParent::new_root();
    let run_id = Uuid::now_v7();
    let command = Event::RunCommand(RunCommand {
        run_id,
        command: RunCommandKind::Pause,
        actor: Actor {
            channel: Channel::Api,
            handle: "ana".into(),
            person: Some("ana".into()),
        },
    });
    let incoming = Envelope::new("test", &command, Some(root.clone())).unwrap();
    let mut tx = store.begin().await.unwrap();
    tx.append_outbox(&incoming).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(relay.relay_once().await.unwrap(), 1);
    // A message that does not decode: parked.
    bus.publish(Outgoing {
        id: Uuid::now_v7(),
        topic: "run.command",
        payload: b"not an envelope",
        traceparent: None,
    })
    .await
    .unwrap();

    let consumer = Consumer::new(
        bus.clone(),
        store.clone(),
        ConsumerOptions {
            retry_delay: Duration::from_millis(10),
            ..ConsumerOptions::new(ConsumerSpec::new("trace-test", "run.command"))
        },
    );
    let mut deliveries = bus
        .subscribe(&ConsumerSpec::new("trace-test", "run.command"))
        .await
        .unwrap();
    let handler = Continues::default();
    // Fails once, so the event comes again; then applied. The garbage is parked.
    let mut outcomes = Vec::new();
    while outcomes.len() < 3 {
        let delivery = tokio::time::timeout(Duration::from_secs(10), deliveries.next())
            .await
            .expect("a delivery within 10 s")
            .unwrap();
        outcomes.push(consumer.process(&handler, delivery).await.unwrap());
    }
    assert!(
        matches!(outcomes[..], [Outcome::Retrying { .. }, _, _]),
        "{outcomes:?}"
    );
    assert!(outcomes.contains(&Outcome::Applied), "{outcomes:?}");
    assert!(
        outcomes
            .iter()
            .any(|o| matches!(o, Outcome::DeadLettered { .. })),
        "{outcomes:?}"
    );
    drop(deliveries);

    // Every line the handler logged was inside the event's span, with its trace and run.
    let handled: Vec<_> = logs
        .lines()
        .into_iter()
        .filter(|(message, _)| message == "handling")
        .collect();
    assert_eq!(handled.len(), 2, "{handled:?}");
    for (_, span) in &handled {
        assert_eq!(
            span.get("trace_id").map(String::as_str),
            Some(root.trace_id())
        );
        assert_eq!(span.get("run_id"), Some(&run_id.to_string()));
        assert_eq!(span.get("event").map(String::as_str), Some("run.command"));
        assert_eq!(span.get("consumer").map(String::as_str), Some("trace-test"));
    }

    // What the handler emitted goes out with the same trace id in its header.
    assert_eq!(relay.relay_once().await.unwrap(), 1);
    let mut emitted = bus
        .subscribe(&ConsumerSpec::new("trace-watch", "node.progress"))
        .await
        .unwrap();
    let delivery = tokio::time::timeout(Duration::from_secs(10), emitted.next())
        .await
        .expect("the emitted event within 10 s")
        .unwrap();
    let envelope = Envelope::from_slice(&delivery.payload).unwrap();
    let header: TraceParent = delivery
        .traceparent
        .as_deref()
        .expect("a traceparent header")
        .parse()
        .unwrap();
    assert_eq!(header.trace_id(), root.trace_id());
    assert_ne!(header, root, "a span of its own");
    assert_eq!(envelope.trace.as_ref(), Some(&header));
    delivery.ack().await.unwrap();

    let counts = counts.snapshot();
    for (name, expected) in [
        ("gatehouse_events_published_total{type=run.command}", 1),
        ("gatehouse_events_published_total{type=node.progress}", 1),
        (
            "gatehouse_events_consumed_total{consumer=trace-test,outcome=failed}",
            2,
        ),
        (
            "gatehouse_events_consumed_total{consumer=trace-test,outcome=applied}",
            1,
        ),
        ("gatehouse_events_redelivered_total{consumer=trace-test}", 1),
        (
            "gatehouse_events_dead_lettered_total{consumer=trace-test}",
            1,
        ),
    ] {
        assert_eq!(
            counts.get(name).copied(),
            Some(expected),
            "{name} in {counts:#?}"
        );
    }
}

/// Fails the first delivery of each event, then emits a `node.progress` that continues
/// the event's trace, as the services do.
#[derive(Default)]
struct Continues {
    failed: Mutex<Vec<Uuid>>,
}

#[async_trait]
impl Handler for Continues {
    async fn handle(&self, tx: &mut Tx, event: &Envelope) -> Result<(), HandlerError> {
        tracing::info!("handling");
        {
            let mut failed = self.failed.lock().unwrap();
            if !failed.contains(&event.id) {
                failed.push(event.id);
                return Err("the first delivery fails".into());
            }
        }
        let Some(run_id) = event.correlation.run_id else {
            return Err("no run".into());
        };
        let progress = Event::NodeProgress(NodeProgress {
            run_id,
            node: "build".into(),
            attempt: 1,
            message: "started".into(),
        });
        let trace = event.trace.as_ref().map(TraceParent::child);
        tx.append_outbox(&Envelope::new("test", &progress, trace)?)
            .await?;
        Ok(())
    }
}

/// Log lines with the fields of the spans they were logged in.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<Named>>>);

/// A name (of a span, or a log line's message) with fields.
type Named = (String, BTreeMap<String, String>);

impl Logs {
    fn lines(&self) -> Vec<Named> {
        self.0.lock().unwrap().clone()
    }
}

/// A span's or an event's fields as text.
#[derive(Default)]
struct Fields(BTreeMap<String, String>);

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl<S> tracing_subscriber::Layer<S> for Logs
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(fields);
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id)
            && let Some(fields) = span.extensions_mut().get_mut::<Fields>()
        {
            values.record(fields);
        }
    }

    fn on_event(&self, event: &tracing::Event<'_>, ctx: Context<'_, S>) {
        let mut own = Fields::default();
        event.record(&mut own);
        let mut spans = BTreeMap::new();
        if let Some(scope) = ctx.event_scope(event) {
            for span in scope.from_root() {
                if let Some(fields) = span.extensions().get::<Fields>() {
                    spans.extend(fields.0.clone());
                }
            }
        }
        let message = own.0.remove("message").unwrap_or_default();
        self.0.lock().unwrap().push((message, spans));
    }
}

/// Counters by name and labels, `name{k=v,...}`.
#[derive(Default)]
struct Counts(Arc<Mutex<BTreeMap<String, u64>>>);

impl Counts {
    fn snapshot(&self) -> BTreeMap<String, u64> {
        self.0.lock().unwrap().clone()
    }
}

struct Counter {
    name: String,
    counts: Arc<Mutex<BTreeMap<String, u64>>>,
}

impl metrics::CounterFn for Counter {
    fn increment(&self, value: u64) {
        *self
            .counts
            .lock()
            .unwrap()
            .entry(self.name.clone())
            .or_default() += value;
    }

    fn absolute(&self, value: u64) {
        self.counts.lock().unwrap().insert(self.name.clone(), value);
    }
}

impl metrics::Recorder for Counts {
    fn describe_counter(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }
    fn describe_gauge(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }
    fn describe_histogram(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }

    fn register_counter(&self, key: &metrics::Key, _: &metrics::Metadata<'_>) -> metrics::Counter {
        let labels: Vec<String> = key
            .labels()
            .map(|l| format!("{}={}", l.key(), l.value()))
            .collect();
        metrics::Counter::from_arc(Arc::new(Counter {
            name: format!("{}{{{}}}", key.name(), labels.join(",")),
            counts: self.0.clone(),
        }))
    }

    fn register_gauge(&self, _: &metrics::Key, _: &metrics::Metadata<'_>) -> metrics::Gauge {
        metrics::Gauge::noop()
    }

    fn register_histogram(
        &self,
        _: &metrics::Key,
        _: &metrics::Metadata<'_>,
    ) -> metrics::Histogram {
        metrics::Histogram::noop()
    }
}
