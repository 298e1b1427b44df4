//! One trace id for a run's work, across services and NATS: a run started through the API
//! is handled by the scheduler and the runner over JetStream, and every event of it carries
//! the trace the API request started (in its envelope and its `traceparent` header, each
//! with a span id of its own), and every service handles it inside a span with that trace
//! id.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use gatehouse_bus::{Bus, ConsumerSpec, JetStreamBus};
use gatehouse_events::{Envelope, TraceParent};
use gatehouse_tests::captured::Captured;
use gatehouse_tests::{Backend, Gatehouse, TestNats, nats_url, quick_retry};
use tracing_subscriber::layer::SubscriberExt;
use uuid::Uuid;

const TWO_STEPS: &str = r#"
name: two-steps
nodes:
  build: { kind: script, run: "echo building" }
  check: { kind: script, needs: [build], run: "echo checking" }
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_started_through_the_api_keeps_its_trace_across_services() {
    // The services run on the runtime's threads: spans are collected process-wide.
    let spans = Captured::default();
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(spans.clone()))
        .expect("the only subscriber of this test binary");

    let nats = TestNats::new();
    let bus: Arc<dyn Bus> = Arc::new(
        JetStreamBus::connect(&nats_url(), nats.prefix.clone(), quick_retry())
            .await
            .expect("connect to JetStream"),
    );
    let gh = Gatehouse::builder(Backend::Postgres)
        .bus(bus.clone())
        .sop("two-steps", TWO_STEPS)
        .lease(Duration::from_secs(5))
        .start()
        .await;
    let db = &gh.db;
    let admin = gh
        .stored_token("admin", &gatehouse_ingest::Scope::ALL, None)
        .await;

    let accepted = gh
        .api_as(&admin)
        .post("/runs", serde_json::json!({ "sop": "two-steps" }))
        .await
        .is(202);
    let run: Uuid = accepted["run_id"].as_str().unwrap().parse().unwrap();
    for _ in 0..500 {
        let row = db.store.run(run).await.unwrap();
        if row.is_some_and(|r| r.status == "succeeded") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let row = db.store.run(run).await.unwrap().unwrap();
    assert_eq!(row.status, "succeeded", "{row:#?}");
    // The last snapshot's consumers have had a moment to handle it.
    tokio::time::sleep(Duration::from_millis(300)).await;

    // Every event of the run on the events stream, as JetStream delivers it.
    let mut audit = bus
        .subscribe(&ConsumerSpec::new("trace-audit", ">"))
        .await
        .unwrap();
    let mut events = Vec::new();
    while let Ok(delivery) = tokio::time::timeout(Duration::from_secs(1), audit.next()).await {
        let delivery = delivery.unwrap();
        let envelope = Envelope::from_slice(&delivery.payload).unwrap();
        let header: Option<TraceParent> =
            delivery.traceparent.as_deref().map(|t| t.parse().unwrap());
        delivery.ack().await.unwrap();
        if envelope.correlation.run_id == Some(run) {
            events.push((envelope, header));
        }
    }
    let (first, _) = events.first().expect("the run's events");
    assert_eq!(first.event_type, "run.requested");
    let trace = first.trace.clone().expect("ingest starts a trace");
    let mut traceparents = BTreeSet::new();
    for (envelope, header) in &events {
        let what = format!("{} from {}", envelope.event_type, envelope.source);
        assert_eq!(
            header.as_ref(),
            envelope.trace.as_ref(),
            "{what}: header and envelope"
        );
        let own = envelope
            .trace
            .as_ref()
            .unwrap_or_else(|| panic!("{what}: no trace"));
        assert_eq!(own.trace_id(), trace.trace_id(), "{what}");
        traceparents.insert(own.to_string());
    }
    assert_eq!(
        traceparents.len(),
        events.len(),
        "each event has a span of its own"
    );
    let sources: BTreeSet<_> = events.iter().map(|(e, _)| e.source.as_str()).collect();
    assert_eq!(sources, BTreeSet::from(["ingest", "runner", "scheduler"]));

    // The API request and every service's handling of the run ran in spans with its trace.
    let spans = spans.closed_spans();
    let traced = |name: &str, field: &str, value: &str| {
        spans.iter().any(|(n, fields)| {
            n == name
                && fields.get(field).map(String::as_str) == Some(value)
                && fields.get("trace_id").map(String::as_str) == Some(trace.trace_id())
        })
    };
    assert!(traced("request", "route", "/api/v1/runs"), "{spans:#?}");
    for consumer in [
        "scheduler-requests",
        "scheduler-progress",
        "scheduler-results",
        "runner",
        "runner-watch",
    ] {
        assert!(
            traced("event", "consumer", consumer),
            "{consumer} in {spans:#?}"
        );
    }
    let runner_jobs = spans
        .iter()
        .filter(|(n, f)| n == "event" && f.get("consumer").map(String::as_str) == Some("runner"))
        .count();
    assert_eq!(runner_jobs, 2, "one job span per node");

    drop(audit);
    gh.stop().await;
    nats.cleanup().await;
}
