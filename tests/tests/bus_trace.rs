//! One trace across the bus: an event published with a traceparent is handled inside an
//! `event` span carrying its trace id, and the event its handler emits continues that
//! trace through the outbox, the relay and the `traceparent` header. Also what the relay
//! and the consumer count. On JetStream (the machine's NATS, `GATEHOUSE_TEST_NATS`) and on
//! both in-process buses.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use gatehouse_bus::{
    Consumer, ConsumerOptions, ConsumerSpec, Handler, HandlerError, Outcome, Outgoing, Relay,
    RelayOptions,
};
use gatehouse_events::{
    Actor, Channel, Envelope, Event, NodeProgress, RunCommand, RunCommandKind, TraceParent,
};
use gatehouse_store::Tx;
use gatehouse_tests::captured::Captured;
use gatehouse_tests::{BusKind, TestBus, on_every_bus};
use tracing_subscriber::layer::SubscriberExt;
use uuid::Uuid;

on_every_bus!(one_trace_across_the_bus);

async fn one_trace_across_the_bus(kind: BusKind) {
    let test_bus = TestBus::new(kind).await;
    let (bus, store) = (test_bus.bus.clone(), test_bus.db.store.clone());
    // Thread-local: the test's runtime runs everything on this thread.
    let logs = Captured::default();
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
