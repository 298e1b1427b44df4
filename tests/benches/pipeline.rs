//! Outbox → bus → inbox: throughput and latency on JetStream and on the in-process bus
//! (relayed, and published in place as `gatehouse up` does), against raw JetStream
//! publish-with-ack measured in the same run as the baseline.
//!
//! Latency is one event at a time, commit → applied. Throughput is a burst of events
//! committed by `BENCH_PRODUCERS` concurrent producers (default 16), one event per
//! transaction (as webhooks and services commit), applied by one consumer that takes up to
//! 64 waiting events per transaction (group commit, as the scheduler does); the baseline
//! publishes the same number with every publish in flight before any ack is awaited.
//!
//! `cargo bench -p gatehouse-tests --bench pipeline` (needs the machine's Postgres and NATS).
//! `BENCH_EVENTS` sets the burst size (default 2000); `BENCH_LATENCY_SAMPLES` the number of
//! one-at-a-time round trips (default 300). The figures and ratios are written as JSON to
//! the file `GATEHOUSE_BENCH_JSON` names, when set.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use gatehouse_bus::{
    Bus, Consumer, ConsumerOptions, ConsumerSpec, Handler, HandlerError, InProcessBus, Relay,
    RelayOptions,
};
use gatehouse_events::{Envelope, Event, NodeProgress};
use gatehouse_store::Tx;
use gatehouse_tests::latencies::write_figures;
use gatehouse_tests::{BusKind, TestBus, TestNats, nats_url};
use hdrhistogram::Histogram;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn envelope(i: usize) -> Envelope {
    let event = Event::NodeProgress(NodeProgress {
        run_id: Uuid::now_v7(),
        node: "bench".into(),
        attempt: 1,
        message: format!("event {i}"),
    });
    Envelope::new("bench", &event, None).expect("envelope")
}

/// Events a consumer applies in one transaction when they wait together.
const BATCH: usize = 64;

/// Figures for one configuration.
struct Figures {
    name: &'static str,
    per_sec: f64,
    p50_us: u64,
    p99_us: u64,
}

impl Figures {
    fn print(&self, baseline: &Figures) {
        println!(
            "{:<34} {:>9.0} msg/s ({:>5.2}x)   p50 {:>7} µs ({:>5.1}x)   p99 {:>7} µs ({:>5.1}x)",
            self.name,
            self.per_sec,
            self.per_sec / baseline.per_sec,
            self.p50_us,
            self.p50_us as f64 / baseline.p50_us as f64,
            self.p99_us,
            self.p99_us as f64 / baseline.p99_us as f64,
        );
    }

    fn json(&self, baseline: &Figures) -> serde_json::Value {
        serde_json::json!({
            "name": self.name,
            "per_sec": self.per_sec,
            "per_sec_ratio": self.per_sec / baseline.per_sec,
            "p50_us": self.p50_us,
            "p99_us": self.p99_us,
        })
    }
}

/// Raw JetStream: publish and wait for the server's ack, one at a time (latency, and the
/// throughput that gives) and with many in flight (throughput).
async fn raw_jetstream(events: usize, samples: usize) -> [Figures; 2] {
    let nats = TestNats::new();
    let client = async_nats::connect(nats_url()).await.expect("NATS");
    let js = async_nats::jetstream::new(client);
    let subject = nats.prefix.subject("bench");
    js.create_stream(async_nats::jetstream::stream::Config {
        name: nats
            .prefix
            .stream_name(gatehouse_events::StreamKind::Events),
        subjects: vec![subject.clone()],
        ..Default::default()
    })
    .await
    .expect("stream");
    let payload: bytes::Bytes = envelope(0).to_bytes().expect("bytes").into();

    let mut hist = Histogram::<u64>::new(3).expect("histogram");
    let one_at_a_time = Instant::now();
    for _ in 0..samples {
        let start = Instant::now();
        js.publish(subject.clone(), payload.clone())
            .await
            .expect("publish")
            .await
            .expect("ack");
        hist.record(start.elapsed().as_micros() as u64)
            .expect("record");
    }
    let sequential_per_sec = samples as f64 / one_at_a_time.elapsed().as_secs_f64();
    let start = Instant::now();
    let mut acks = Vec::with_capacity(events);
    for _ in 0..events {
        acks.push(
            js.publish(subject.clone(), payload.clone())
                .await
                .expect("publish"),
        );
    }
    for ack in acks {
        ack.await.expect("ack");
    }
    let per_sec = events as f64 / start.elapsed().as_secs_f64();
    nats.cleanup().await;
    let (p50_us, p99_us) = (hist.value_at_quantile(0.5), hist.value_at_quantile(0.99));
    [
        Figures {
            name: "raw JetStream publish+ack (baseline)",
            per_sec,
            p50_us,
            p99_us,
        },
        Figures {
            name: "raw JetStream, one publish at a time",
            per_sec: sequential_per_sec,
            p50_us,
            p99_us,
        },
    ]
}

/// Stamps the time each event was applied.
#[derive(Default)]
struct Stamp(Mutex<HashMap<Uuid, Instant>>);

#[async_trait]
impl Handler for Stamp {
    async fn handle(&self, _tx: &mut Tx, event: &Envelope) -> Result<(), HandlerError> {
        self.0
            .lock()
            .expect("lock")
            .insert(event.id, Instant::now());
        Ok(())
    }
}

/// How a pipeline is set up.
#[derive(Clone, Copy)]
enum Setup {
    /// The bus as `kind` has it, events carried by the relay.
    Relayed(BusKind),
    /// The in-process bus on SQLite with events published in place by their commit (no
    /// relay hop), as `gatehouse up` runs.
    InPlace,
}

/// Commits events to the outbox and measures until each is applied by a consumer through
/// the bus.
async fn pipeline(
    setup: Setup,
    name: &'static str,
    events: usize,
    producers: usize,
    samples: usize,
) -> Figures {
    let kind = match setup {
        Setup::Relayed(kind) => kind,
        Setup::InPlace => BusKind::InProcessSqlite,
    };
    let t = TestBus::new(kind).await;
    let store = t.db.store.clone();
    let bus: Arc<dyn Bus> = match setup {
        Setup::Relayed(_) => t.bus.clone(),
        Setup::InPlace => Arc::new(InProcessBus::in_place(store.clone())),
    };
    let stop = CancellationToken::new();
    let relay = tokio::spawn(
        Relay::new(store.clone(), bus.clone(), RelayOptions::default()).run(stop.clone()),
    );
    let stamp = Arc::new(Stamp::default());
    let consumer = tokio::spawn({
        let consumer = Consumer::new(
            bus.clone(),
            store.clone(),
            ConsumerOptions {
                batch: BATCH,
                ..ConsumerOptions::new(ConsumerSpec::new("bench", "node.progress"))
            },
        );
        let (stamp, stop) = (stamp.clone(), stop.clone());
        async move { consumer.run(&*stamp, stop).await }
    });
    let applied = |id: &Uuid| stamp.0.lock().expect("lock").get(id).copied();
    let commit = {
        let store = store.clone();
        move |e: Envelope| {
            let store = store.clone();
            async move {
                let mut tx = store.begin().await.expect("begin");
                tx.append_outbox(&e).await.expect("append");
                tx.commit().await.expect("commit");
                (e.id, Instant::now())
            }
        }
    };

    // Latency: one event at a time, so nothing queues.
    let mut hist = Histogram::<u64>::new(3).expect("histogram");
    for i in 0..samples {
        let (id, committed) = commit(envelope(i)).await;
        let done = loop {
            if let Some(at) = applied(&id) {
                break at;
            }
            tokio::task::yield_now().await;
        };
        hist.record(done.duration_since(committed).as_micros() as u64)
            .expect("record");
    }

    // Throughput: a burst of commits from concurrent producers, timed until the last is
    // applied.
    let start = Instant::now();
    let mut producing = tokio::task::JoinSet::new();
    for p in 0..producers {
        let mine: Vec<Envelope> = (p..events).step_by(producers).map(envelope).collect();
        let commit = commit.clone();
        producing.spawn(async move {
            let mut ids = Vec::with_capacity(mine.len());
            for e in mine {
                ids.push(commit(e).await.0);
            }
            ids
        });
    }
    let mut ids = Vec::with_capacity(events);
    while let Some(mine) = producing.join_next().await {
        ids.extend(mine.expect("a producer"));
    }
    let deadline = Instant::now() + Duration::from_secs(300);
    while ids.iter().any(|id| applied(id).is_none()) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let last = ids.iter().filter_map(applied).max().expect("applied");
    let per_sec = events as f64 / last.duration_since(start).as_secs_f64();

    stop.cancel();
    let _ = tokio::join!(relay, consumer);
    t.cleanup().await;
    Figures {
        name,
        per_sec,
        p50_us: hist.value_at_quantile(0.5),
        p99_us: hist.value_at_quantile(0.99),
    }
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    // `cargo test --benches` runs this with --bench too; keep that quick.
    let quick = std::env::args().any(|a| a == "--test");
    let events = if quick {
        50
    } else {
        env_usize("BENCH_EVENTS", 2000)
    };
    let samples = if quick {
        20
    } else {
        env_usize("BENCH_LATENCY_SAMPLES", 300)
    };
    let producers = env_usize("BENCH_PRODUCERS", 16).max(1);
    println!(
        "outbox → bus → inbox, {events} events per burst from {producers} producers, {samples} latency samples"
    );
    let [baseline, sequential] = raw_jetstream(events, samples).await;
    let setups = [
        (
            Setup::Relayed(BusKind::JetStream),
            "JetStream + Postgres outbox/inbox",
        ),
        (Setup::InPlace, "in-process, SQLite, in place (up)"),
        (
            Setup::Relayed(BusKind::InProcessSqlite),
            "in-process bus on SQLite, relayed",
        ),
        (
            Setup::Relayed(BusKind::InProcessPostgres),
            "in-process bus on Postgres",
        ),
    ];
    let mut runs = Vec::new();
    for (setup, name) in setups {
        runs.push(pipeline(setup, name, events, producers, samples).await);
    }
    baseline.print(&baseline);
    sequential.print(&baseline);
    for figures in &runs {
        figures.print(&baseline);
    }
    let figures = serde_json::json!({
        "bench": "pipeline",
        "events": events,
        "producers": producers,
        "latency_samples": samples,
        "consumer_batch": BATCH,
        "baseline": baseline.json(&baseline),
        "configurations": std::iter::once(&sequential)
            .chain(&runs)
            .map(|f| f.json(&baseline))
            .collect::<Vec<_>>(),
    });
    write_figures(&figures);
}
