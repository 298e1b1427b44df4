//! The bus contract: the same suite against JetStream, the in-process bus on SQLite and the
//! in-process bus on Postgres. Together with the outbox relay and the consumer's inbox it
//! proves at-least-once delivery with exactly-once effects.

use std::collections::HashMap;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use gatehouse_bus::{
    Bus, BusError, Consumer, ConsumerOptions, ConsumerSpec, Handler, HandlerError, InProcessBus,
    Outcome, Outgoing, Published, Relay, RelayOptions, Subscription, Take,
};
use gatehouse_events::{
    Envelope, Event, GateClosed, GateStatus, NodeProgress, Prefix, SCHEMA_VERSION, StreamKind,
    TraceParent,
};
use gatehouse_store::Tx;
use gatehouse_tests::{BusKind, TestBus, on_every_bus, on_in_process_buses, quick_retry};
use tokio::time::timeout;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

const TOPIC: &str = "node.progress";

fn envelope(message: &str) -> Envelope {
    let event = Event::NodeProgress(NodeProgress {
        run_id: Uuid::now_v7(),
        node: "report".into(),
        attempt: 1,
        message: message.into(),
    });
    Envelope::new("contract", &event, Some(TraceParent::new_root())).unwrap()
}

async fn publish(bus: &dyn Bus, e: &Envelope) -> Published {
    let bytes = e.to_bytes().unwrap();
    let trace = e.trace.as_ref().map(ToString::to_string);
    bus.publish(Outgoing {
        id: e.id,
        topic: &e.event_type,
        payload: &bytes,
        traceparent: trace.as_deref(),
    })
    .await
    .unwrap()
}

fn spec(name: &str, ack_wait: Duration) -> ConsumerSpec {
    ConsumerSpec {
        ack_wait,
        ..ConsumerSpec::new(name, TOPIC)
    }
}

async fn next(
    sub: &mut Box<dyn Subscription>,
    within: Duration,
) -> Option<gatehouse_bus::Delivery> {
    timeout(within, sub.next()).await.ok().map(|d| d.unwrap())
}

/// Records what it applied; fails for messages containing "poison"; blocks forever on
/// messages containing "hang" until told otherwise.
#[derive(Default)]
struct Recorder {
    applied: Mutex<Vec<String>>,
    hang: Mutex<Option<tokio::sync::mpsc::Sender<()>>>,
}

impl Recorder {
    fn applied(&self) -> Vec<String> {
        self.applied.lock().unwrap().clone()
    }
}

#[async_trait]
impl Handler for Recorder {
    async fn handle(&self, _tx: &mut Tx, event: &Envelope) -> Result<(), HandlerError> {
        let Event::NodeProgress(p) = event.decode()? else {
            return Err("unexpected event".into());
        };
        if p.message.contains("poison") {
            return Err(format!("cannot apply {}", p.message).into());
        }
        let hang = self.hang.lock().unwrap().clone();
        if let (true, Some(entered)) = (p.message.contains("hang"), hang) {
            entered.send(()).await.ok();
            std::future::pending::<()>().await;
        }
        self.applied.lock().unwrap().push(p.message);
        Ok(())
    }
}

/// Runs `consumer` until `done` holds or the deadline passes.
async fn run_until(consumer: &Consumer, handler: &dyn Handler, done: impl Fn() -> bool) {
    let stop = CancellationToken::new();
    let watcher = {
        let stop = stop.clone();
        async move {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
            while !done() && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            stop.cancel();
        }
    };
    tokio::join!(consumer.run(handler, stop.clone()), watcher);
}

on_every_bus!(
    delivers_id_topic_trace_and_count,
    duplicate_publish_is_consumed_once,
    unacked_message_comes_back,
    changed_ack_wait_takes_effect,
    nak_with_delay_lets_later_messages_pass,
    in_progress_holds_the_lease,
    redelivery_after_commit_is_a_no_op,
    aborted_consumer_task_gets_the_message_again,
    outbox_survives_kill_9_before_relay,
    relay_publishes_in_order_and_retries_failures,
    poison_messages_are_parked_without_blocking,
    events_waiting_together_are_applied_in_one_commit_each_once,
    a_message_published_while_a_batch_is_applied_comes_next,
);

async fn delivers_id_topic_trace_and_count(kind: BusKind) {
    let t = TestBus::new(kind).await;
    let e = envelope("hello");
    let mut sub = t
        .bus
        .subscribe(&spec("reader", Duration::from_secs(30)))
        .await
        .unwrap();
    assert!(!publish(&*t.bus, &e).await.duplicate);

    let d = next(&mut sub, Duration::from_secs(10))
        .await
        .expect("delivered");
    assert_eq!(d.id, Some(e.id));
    assert_eq!(d.topic, TOPIC);
    assert_eq!(d.traceparent, e.trace.as_ref().map(ToString::to_string));
    assert_eq!(d.deliveries, 1);
    assert_eq!(Envelope::from_slice(&d.payload).unwrap(), e);
    d.ack().await.unwrap();
    assert!(next(&mut sub, Duration::from_millis(500)).await.is_none());
    t.cleanup().await;
}

async fn duplicate_publish_is_consumed_once(kind: BusKind) {
    let t = TestBus::new(kind).await;
    let (dup, other) = (envelope("once"), envelope("after"));
    assert!(!publish(&*t.bus, &dup).await.duplicate);
    assert!(publish(&*t.bus, &dup).await.duplicate, "same id is dropped");
    publish(&*t.bus, &other).await;

    let recorder = Recorder::default();
    let consumer = Consumer::new(
        t.bus.clone(),
        t.db.store.clone(),
        ConsumerOptions::new(spec("once", Duration::from_secs(30))),
    );
    run_until(&consumer, &recorder, || recorder.applied().len() >= 2).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(recorder.applied(), vec!["once", "after"]);
    t.cleanup().await;
}

async fn unacked_message_comes_back(kind: BusKind) {
    let t = TestBus::new(kind).await;
    let e = envelope("unacked");
    let mut sub = t
        .bus
        .subscribe(&spec("forgetful", Duration::from_secs(1)))
        .await
        .unwrap();
    publish(&*t.bus, &e).await;

    let first = next(&mut sub, Duration::from_secs(10)).await.unwrap();
    drop(first);
    let again = next(&mut sub, Duration::from_secs(10))
        .await
        .expect("redelivered");
    assert_eq!(again.id, Some(e.id));
    assert_eq!(again.deliveries, 2);
    again.ack().await.unwrap();
    t.cleanup().await;
}

async fn changed_ack_wait_takes_effect(kind: BusKind) {
    let t = TestBus::new(kind).await;
    drop(
        t.bus
            .subscribe(&spec("retuned", Duration::from_secs(60)))
            .await
            .unwrap(),
    );
    let mut sub = t
        .bus
        .subscribe(&spec("retuned", Duration::from_secs(1)))
        .await
        .unwrap();
    publish(&*t.bus, &envelope("retuned")).await;
    drop(next(&mut sub, Duration::from_secs(10)).await.unwrap());
    let again = next(&mut sub, Duration::from_secs(5)).await;
    assert!(
        again.is_some(),
        "redelivered after the new 1 s ack wait, not the old 60 s"
    );
    t.cleanup().await;
}

async fn nak_with_delay_lets_later_messages_pass(kind: BusKind) {
    let t = TestBus::new(kind).await;
    let (first, second) = (envelope("first"), envelope("second"));
    let mut sub = t
        .bus
        .subscribe(&spec("patient", Duration::from_secs(30)))
        .await
        .unwrap();
    publish(&*t.bus, &first).await;
    publish(&*t.bus, &second).await;

    let d = next(&mut sub, Duration::from_secs(10)).await.unwrap();
    assert_eq!(d.id, Some(first.id));
    let naked_at = tokio::time::Instant::now();
    d.nak(Duration::from_millis(1500)).await.unwrap();

    let d = next(&mut sub, Duration::from_secs(10)).await.unwrap();
    assert_eq!(d.id, Some(second.id), "the later message is not blocked");
    d.ack().await.unwrap();
    let d = next(&mut sub, Duration::from_secs(10)).await.unwrap();
    assert_eq!(d.id, Some(first.id));
    assert!(
        naked_at.elapsed() >= Duration::from_millis(1400),
        "{:?}",
        naked_at.elapsed()
    );
    assert_eq!(d.deliveries, 2);
    d.ack().await.unwrap();
    t.cleanup().await;
}

async fn in_progress_holds_the_lease(kind: BusKind) {
    let t = TestBus::new(kind).await;
    let e = envelope("slow work");
    let ack_wait = Duration::from_secs(1);
    let mut worker = t.bus.subscribe(&spec("workers", ack_wait)).await.unwrap();
    publish(&*t.bus, &e).await;
    let d = next(&mut worker, Duration::from_secs(10)).await.unwrap();

    // A second replica of the same consumer must not get it while the first heartbeats.
    let other_bus = t.reopen().await;
    let mut replica = other_bus
        .subscribe(&spec("workers", ack_wait))
        .await
        .unwrap();
    let heartbeat = async {
        for _ in 0..8 {
            tokio::time::sleep(Duration::from_millis(300)).await;
            d.in_progress().await.unwrap();
        }
    };
    let (stolen, ()) = tokio::join!(next(&mut replica, Duration::from_millis(2400)), heartbeat);
    assert!(
        stolen.is_none(),
        "redelivered despite in-progress: {stolen:?}"
    );
    d.ack().await.unwrap();
    t.cleanup().await;
}

async fn redelivery_after_commit_is_a_no_op(kind: BusKind) {
    let t = TestBus::new(kind).await;
    let e = envelope("applied once");
    let name = "crashy";
    let mut sub = t
        .bus
        .subscribe(&spec(name, Duration::from_secs(1)))
        .await
        .unwrap();
    publish(&*t.bus, &e).await;

    // The effect commits with its claim, then the process dies before acking. On JetStream
    // the claim is an inbox row; on the in-process bus it is the delivery row itself,
    // deleted by the commit.
    let d = next(&mut sub, Duration::from_secs(10)).await.unwrap();
    let mut tx = t.db.store.begin().await.unwrap();
    let in_database = match d.claim_in(&tx) {
        Some(claim) => {
            assert_eq!(tx.queue_claim(name, &[claim]).await.unwrap(), [claim.seq]);
            true
        }
        None => {
            assert!(tx.record_inbox(name, e.id).await.unwrap());
            false
        }
    };
    assert_eq!(in_database, kind != BusKind::JetStream);
    tx.commit().await.unwrap();
    drop(d);

    let recorder = Recorder::default();
    let consumer = Consumer::new(
        t.bus.clone(),
        t.db.store.clone(),
        ConsumerOptions::new(spec(name, Duration::from_secs(1))),
    );
    if !in_database {
        let redelivered = next(&mut sub, Duration::from_secs(10))
            .await
            .expect("redelivered");
        assert_eq!(
            consumer.process(&recorder, redelivered).await.unwrap(),
            Outcome::Duplicate
        );
        assert!(recorder.applied().is_empty());
    }
    assert!(
        next(&mut sub, Duration::from_millis(1500)).await.is_none(),
        "the claimed delivery is settled"
    );
    t.cleanup().await;
}

async fn aborted_consumer_task_gets_the_message_again(kind: BusKind) {
    let t = TestBus::new(kind).await;
    let options = ConsumerOptions::new(spec("abortable", Duration::from_secs(1)));
    publish(&*t.bus, &envelope("hang then succeed")).await;

    let (entered_tx, mut entered) = tokio::sync::mpsc::channel(1);
    let hanging = Arc::new(Recorder::default());
    *hanging.hang.lock().unwrap() = Some(entered_tx);
    let task = tokio::spawn({
        let consumer = Consumer::new(t.bus.clone(), t.db.store.clone(), options.clone());
        let hanging = hanging.clone();
        async move { consumer.run(&*hanging, CancellationToken::new()).await }
    });
    timeout(Duration::from_secs(10), entered.recv())
        .await
        .expect("handler entered");
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());

    let recorder = Recorder::default();
    let consumer = Consumer::new(t.reopen().await, t.db.store.clone(), options);
    run_until(&consumer, &recorder, || !recorder.applied().is_empty()).await;
    assert_eq!(recorder.applied(), vec!["hang then succeed"]);
    assert!(hanging.applied().is_empty());
    t.cleanup().await;
}

async fn outbox_survives_kill_9_before_relay(kind: BusKind) {
    let t = TestBus::new(kind).await;
    let mut child = Command::new(env!("CARGO_BIN_EXE_outbox-writer"))
        .arg(&t.db.url)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let id = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line).unwrap();
        line.trim()
            .parse::<Uuid>()
            .expect("the child printed the event id")
    })
    .await
    .unwrap();
    child.kill().unwrap(); // SIGKILL: no destructors, no flush, no relay
    child.wait().unwrap();

    assert_eq!(t.db.store.outbox_backlog().await.unwrap(), 1);
    let relay = Relay::new(t.db.store.clone(), t.bus.clone(), RelayOptions::default());
    assert_eq!(relay.relay_once().await.unwrap(), 1);
    assert_eq!(t.db.store.outbox_backlog().await.unwrap(), 0);

    let mut sub = t
        .bus
        .subscribe(&spec("survivor", Duration::from_secs(30)))
        .await
        .unwrap();
    let d = next(&mut sub, Duration::from_secs(10))
        .await
        .expect("relayed after the crash");
    assert_eq!(d.id, Some(id));
    d.ack().await.unwrap();
    t.cleanup().await;
}

/// A bus that goes down after `healthy` publishes.
struct FailingBus {
    inner: Arc<dyn Bus>,
    healthy: usize,
    published: std::sync::atomic::AtomicUsize,
}

#[async_trait]
impl Bus for FailingBus {
    async fn publish(&self, message: Outgoing<'_>) -> Result<Published, BusError> {
        let n = self
            .published
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if n < self.healthy {
            return self.inner.publish(message).await;
        }
        Err(BusError::JetStream {
            operation: "publish",
            message: "no responders".into(),
        })
    }
    async fn subscribe(&self, spec: &ConsumerSpec) -> Result<Box<dyn Subscription>, BusError> {
        self.inner.subscribe(spec).await
    }
}

async fn relay_publishes_in_order_and_retries_failures(kind: BusKind) {
    let t = TestBus::new(kind).await;
    let events: Vec<_> = (0..5).map(|i| envelope(&format!("m{i}"))).collect();
    let mut tx = t.db.store.begin().await.unwrap();
    for e in &events {
        tx.append_outbox(e).await.unwrap();
    }
    tx.commit().await.unwrap();

    // The bus fails on the third publish: two rows are sent, the third carries the error,
    // the last two go back untried.
    let retry_now = RelayOptions {
        retry_delay: Duration::ZERO,
        ..RelayOptions::default()
    };
    let failing = FailingBus {
        inner: t.bus.clone(),
        healthy: 2,
        published: Default::default(),
    };
    let relay = Relay::new(t.db.store.clone(), Arc::new(failing), retry_now.clone());
    let err = relay.relay_once().await.unwrap_err();
    assert!(err.to_string().contains("no responders"));
    assert_eq!(
        t.db.store.outbox_backlog().await.unwrap(),
        3,
        "nothing lost"
    );
    let left =
        t.db.store
            .claim_outbox(10, Duration::from_secs(30))
            .await
            .unwrap();
    let attempts: Vec<_> = left.iter().map(|r| (r.id, r.attempts)).collect();
    let expected: Vec<_> = [(2, 1), (3, 0), (4, 0)]
        .map(|(i, a)| (events[i].id, a))
        .into();
    assert_eq!(attempts, expected);
    for row in &left {
        t.db.store
            .release_outbox(row.seq, None, Duration::ZERO)
            .await
            .unwrap();
    }

    // The relay loop, woken by commits, publishes the rest once the bus is back.
    let stop = CancellationToken::new();
    let relay =
        tokio::spawn(Relay::new(t.db.store.clone(), t.bus.clone(), retry_now).run(stop.clone()));
    let recorder = Recorder::default();
    let consumer = Consumer::new(
        t.bus.clone(),
        t.db.store.clone(),
        ConsumerOptions::new(spec("ordered", Duration::from_secs(30))),
    );
    let late = envelope("m5");
    let mut tx = t.db.store.begin().await.unwrap();
    tx.append_outbox(&late).await.unwrap();
    tx.commit().await.unwrap();
    run_until(&consumer, &recorder, || recorder.applied().len() >= 6).await;
    stop.cancel();
    relay.await.unwrap();
    assert_eq!(
        recorder.applied(),
        (0..6).map(|i| format!("m{i}")).collect::<Vec<_>>()
    );
    assert_eq!(t.db.store.outbox_backlog().await.unwrap(), 0);
    t.cleanup().await;
}

async fn poison_messages_are_parked_without_blocking(kind: BusKind) {
    let t = TestBus::new(kind).await;
    let name = "careful";
    let junk_id = Uuid::now_v7();
    t.bus
        .publish(Outgoing {
            id: junk_id,
            topic: TOPIC,
            payload: b"\x00 not an envelope",
            traceparent: None,
        })
        .await
        .unwrap();
    let mut future = envelope("from the future");
    future.schema_version = SCHEMA_VERSION + 1;
    publish(&*t.bus, &future).await;
    let poison = envelope("poison pill");
    publish(&*t.bus, &poison).await;
    let good: Vec<_> = (0..3).map(|i| envelope(&format!("good {i}"))).collect();
    for e in &good {
        publish(&*t.bus, e).await;
    }

    let options = ConsumerOptions {
        max_deliveries: 3,
        retry_delay: Duration::from_millis(200),
        ..ConsumerOptions::new(spec(name, Duration::from_secs(30)))
    };
    let recorder = Arc::new(Recorder::default());
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let consumer = Consumer::new(t.bus.clone(), t.db.store.clone(), options);
        let (recorder, stop) = (recorder.clone(), stop.clone());
        async move { consumer.run(&*recorder, stop).await }
    });
    let poison_parked = async || {
        let letters = t.db.store.dead_letters(name).await.unwrap();
        letters.iter().any(|l| l.event_id == Some(poison.id))
    };
    let mut poison_parked_when_good_were_done = None;
    for _ in 0..1500 {
        if recorder.applied().len() == 3 {
            poison_parked_when_good_were_done.get_or_insert(poison_parked().await);
            if poison_parked().await {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.cancel();
    task.await.unwrap();

    assert_eq!(recorder.applied(), vec!["good 0", "good 1", "good 2"]);
    assert_eq!(
        poison_parked_when_good_were_done,
        Some(false),
        "the good messages behind the poison did not wait for it"
    );
    let letters: HashMap<_, _> =
        t.db.store
            .dead_letters(name)
            .await
            .unwrap()
            .into_iter()
            .map(|l| (l.event_id, l))
            .collect();
    assert_eq!(letters.len(), 3);
    let junk = &letters[&Some(junk_id)];
    assert!(
        junk.reason.starts_with("malformed envelope"),
        "{}",
        junk.reason
    );
    assert_eq!(junk.payload, b"\x00 not an envelope");
    assert!(
        letters[&Some(future.id)]
            .reason
            .contains("newer than the supported version")
    );
    let pill = &letters[&Some(poison.id)];
    assert_eq!(pill.deliveries, 3);
    assert_eq!(
        pill.reason,
        "failed 3 deliveries; last error: cannot apply poison pill"
    );
    assert_eq!(pill.topic, TOPIC);
    t.cleanup().await;
}

#[tokio::test]
async fn an_unreachable_nats_is_retried_then_reported() {
    let err = gatehouse_bus::JetStreamBus::connect(
        "nats://127.0.0.1:1",
        Prefix::default(),
        quick_retry(),
    )
    .await
    .err()
    .unwrap();
    assert!(
        matches!(err, BusError::Unreachable { attempts: 3, .. }),
        "{err}"
    );
    assert!(
        err.to_string()
            .starts_with("NATS at nats://127.0.0.1:1 is unreachable after 3 attempts")
    );
}

#[tokio::test]
async fn invalid_consumer_names_are_refused() {
    let t = TestBus::new(BusKind::InProcessSqlite).await;
    let err = t
        .bus
        .subscribe(&ConsumerSpec::new("has.dots", TOPIC))
        .await
        .err()
        .unwrap();
    assert!(matches!(err, BusError::InvalidConsumerName(_)));
    t.cleanup().await;
}

/// Keeps, in order, each event it applied (`handled …`) and each whose transaction
/// committed (`committed …`); fails for messages containing "poison".
#[derive(Default)]
struct Committer {
    seen: Mutex<Vec<String>>,
}

impl Committer {
    fn committed(&self) -> Vec<String> {
        let seen = self.seen.lock().unwrap();
        seen.iter()
            .filter_map(|s| s.strip_prefix("committed ").map(str::to_owned))
            .collect()
    }
}

#[async_trait]
impl Handler for Committer {
    async fn handle(&self, _tx: &mut Tx, event: &Envelope) -> Result<(), HandlerError> {
        let Event::NodeProgress(p) = event.decode()? else {
            return Err("unexpected event".into());
        };
        if p.message.contains("poison") {
            return Err(format!("cannot apply {}", p.message).into());
        }
        self.seen
            .lock()
            .unwrap()
            .push(format!("handled {}", p.message));
        Ok(())
    }

    async fn committed(&self, event: &Envelope) {
        if let Ok(Event::NodeProgress(p)) = event.decode() {
            self.seen
                .lock()
                .unwrap()
                .push(format!("committed {}", p.message));
        }
    }
}

/// Group commit: events waiting together are applied in one transaction (JetStream pulls
/// them ahead; the in-process bus reads the due ones together), each committed once; a failing event in a batch sends
/// the batch back to be applied one by one, so the others still commit once.
async fn events_waiting_together_are_applied_in_one_commit_each_once(kind: BusKind) {
    let t = TestBus::new(kind).await;
    let mut expected = Vec::new();
    for i in 0..40 {
        if i == 17 {
            publish(&*t.bus, &envelope("poison 17")).await;
        }
        let e = envelope(&format!("good {i}"));
        publish(&*t.bus, &e).await;
        expected.push(format!("good {i}"));
    }
    let options = ConsumerOptions {
        max_deliveries: 2,
        retry_delay: Duration::from_millis(100),
        batch: 16,
        ..ConsumerOptions::new(spec("batched", Duration::from_secs(30)))
    };
    let consumer = Consumer::new(t.bus.clone(), t.db.store.clone(), options);
    let committer = Committer::default();
    run_until(&consumer, &committer, || committer.committed().len() >= 40).await;
    let mut committed = committer.committed();
    committed.sort_by_key(|m| m[5..].parse::<u32>().unwrap());
    assert_eq!(
        committed, expected,
        "each good event committed exactly once"
    );
    let seen = committer.seen.lock().unwrap().clone();
    // Applied one at a time, each event is committed before the next is handled; a batch
    // that committed reports its events committed back to back (a batch rolled back by
    // the poison event handled several, but committed none).
    let together = seen
        .windows(2)
        .any(|w| w[0].starts_with("committed") && w[1].starts_with("committed"));
    assert!(
        together,
        "some events shared a committed transaction: {seen:?}"
    );
    t.cleanup().await;
}

/// A subscription that read everything due asks only when the next is due before it
/// waits (in process: no second look at an empty queue). A message published while the
/// batch is applied must still come at once, not at the next poll.
async fn a_message_published_while_a_batch_is_applied_comes_next(kind: BusKind) {
    let t = TestBus::new(kind).await;
    let spec = ConsumerSpec {
        take: Take::InTransaction(4),
        ..spec("short-batch", Duration::from_secs(30))
    };
    let mut sub = t.bus.subscribe(&spec).await.unwrap();
    publish(&*t.bus, &envelope("first")).await;
    let first = next(&mut sub, Duration::from_secs(5))
        .await
        .expect("delivered");
    publish(&*t.bus, &envelope("second")).await;
    let mut tx = t.db.store.begin().await.unwrap();
    first.ack_within(&mut tx).await.unwrap();
    tx.commit().await.unwrap();
    let began = std::time::Instant::now();
    let second = next(&mut sub, Duration::from_secs(5))
        .await
        .expect("delivered");
    let Ok(Event::NodeProgress(p)) = Envelope::from_slice(&second.payload).unwrap().decode() else {
        panic!("not the event published");
    };
    assert_eq!(p.message, "second");
    assert!(
        began.elapsed() < Duration::from_millis(200),
        "came at once, not at a poll: {:?}",
        began.elapsed()
    );
    t.cleanup().await;
}

/// On `gatehouse up` (SQLite): a transaction's events go onto the in-process bus in place,
/// with no relay running; each is applied once and acknowledged in the consumer's own
/// transaction, so nothing stays pending; a rolled-back transaction publishes nothing; the
/// outbox keeps what was published, as sent.
#[tokio::test]
async fn events_published_in_place_reach_consumers_without_a_relay() {
    let t = TestBus::new(BusKind::InProcessSqlite).await;
    let bus: Arc<dyn Bus> = Arc::new(InProcessBus::in_place(t.db.store.clone()));
    let mut expected = Vec::new();
    for i in 0..10 {
        let mut tx = t.db.store.begin().await.unwrap();
        tx.append_outbox(&envelope(&format!("kept {i}")))
            .await
            .unwrap();
        tx.commit().await.unwrap();
        expected.push(format!("kept {i}"));
    }
    let mut tx = t.db.store.begin().await.unwrap();
    tx.append_outbox(&envelope("rolled back")).await.unwrap();
    tx.rollback().await.unwrap();
    assert_eq!(
        t.db.store.outbox_backlog().await.unwrap(),
        0,
        "nothing is left for a relay"
    );

    let options = ConsumerOptions::new(spec("in-place", Duration::from_secs(30)));
    let consumer = Consumer::new(bus.clone(), t.db.store.clone(), options);
    let committer = Committer::default();
    run_until(&consumer, &committer, || committer.committed().len() >= 10).await;
    assert_eq!(committer.committed(), expected, "each once, in order");
    assert_eq!(
        t.db.store.queue_pending("in-place").await.unwrap(),
        0,
        "acknowledged in the transactions that applied them"
    );
    t.cleanup().await;
}

/// One transaction's events go onto the in-process bus together as it commits: each
/// consumer gets the ones its filter takes, in the order they were appended; an event that
/// is on the bus already is not put there again.
#[tokio::test]
async fn a_transactions_events_are_published_in_place_together_in_order() {
    let t = TestBus::new(BusKind::InProcessSqlite).await;
    let bus: Arc<dyn Bus> = Arc::new(InProcessBus::in_place(t.db.store.clone()));
    let mut progress = bus
        .subscribe(&spec("progress-only", Duration::from_secs(30)))
        .await
        .unwrap();
    let mut everything = bus
        .subscribe(&ConsumerSpec::new("everything", ">"))
        .await
        .unwrap();
    let earlier = envelope("earlier");
    let mut tx = t.db.store.begin().await.unwrap();
    tx.append_outbox(&earlier).await.unwrap();
    tx.commit().await.unwrap();

    let closed = Event::GateClosed(GateClosed {
        run_id: Uuid::now_v7(),
        node: "review".into(),
        attempt: 1,
        status: GateStatus::Approved,
        decided_by: Vec::new(),
        comment: None,
    });
    let closed = Envelope::new("contract", &closed, None).unwrap();
    let mut tx = t.db.store.begin().await.unwrap();
    for e in [&envelope("first"), &closed, &earlier, &envelope("second")] {
        tx.append_outbox(e).await.unwrap();
    }
    tx.commit().await.unwrap();

    let took = |taken: Vec<gatehouse_bus::Delivery>| -> Vec<String> {
        taken
            .iter()
            .map(
                |d| match Envelope::from_slice(&d.payload).unwrap().decode().unwrap() {
                    Event::NodeProgress(p) => p.message,
                    other => other.event_type().to_string(),
                },
            )
            .collect()
    };
    let wait = Duration::from_secs(5);
    let by_progress = timeout(wait, progress.next_up_to(10))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(took(by_progress), ["earlier", "first", "second"]);
    let by_everything = timeout(wait, everything.next_up_to(10))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        took(by_everything),
        ["earlier", "first", "gate.closed", "second"]
    );
    t.cleanup().await;
}

/// On `gatehouse up`, a subscription that had taken everything due is woken with what a
/// transaction then committed for it and takes that without reading it back: here the
/// delivery's row is gone before it looks, so only the hand-over can bring it. What it
/// takes so is settled as a read one would be.
#[tokio::test]
async fn a_caught_up_subscription_takes_what_a_commit_hands_it() {
    let t = TestBus::new(BusKind::InProcessSqlite).await;
    let bus: Arc<dyn Bus> = Arc::new(InProcessBus::in_place(t.db.store.clone()));
    let spec = ConsumerSpec {
        take: Take::InTransaction(4),
        ..spec("handed", Duration::from_secs(30))
    };
    let mut sub = bus.subscribe(&spec).await.unwrap();
    let commit = |message: &'static str| {
        let store = t.db.store.clone();
        async move {
            let mut tx = store.begin().await.unwrap();
            tx.append_outbox(&envelope(message)).await.unwrap();
            tx.commit().await.unwrap();
        }
    };
    let message = |d: &gatehouse_bus::Delivery| match Envelope::from_slice(&d.payload)
        .unwrap()
        .decode()
        .unwrap()
    {
        Event::NodeProgress(p) => p.message,
        other => panic!("not the event published: {other:?}"),
    };

    commit("looked up").await;
    let first = next(&mut sub, Duration::from_secs(5)).await.expect("read");
    assert_eq!(message(&first), "looked up");
    let mut tx = t.db.store.begin().await.unwrap();
    assert!(first.ack_within(&mut tx).await.unwrap());
    tx.commit().await.unwrap();

    commit("handed").await;
    let rows = t.db.store.queue_peek("handed", 10).await.unwrap();
    assert_eq!(rows.len(), 1);
    t.db.store
        .queue_ack("handed", StreamKind::Events, rows[0].seq, 0)
        .await
        .unwrap();
    let handed = next(&mut sub, Duration::from_secs(1))
        .await
        .expect("handed over with the wake-up, not read");
    assert_eq!((message(&handed), handed.deliveries), ("handed".into(), 1));

    commit("settled").await;
    let settled = next(&mut sub, Duration::from_secs(5))
        .await
        .expect("handed");
    assert_eq!(message(&settled), "settled");
    let mut tx = t.db.store.begin().await.unwrap();
    assert!(settled.ack_within(&mut tx).await.unwrap());
    tx.commit().await.unwrap();
    assert_eq!(t.db.store.queue_pending("handed").await.unwrap(), 0);
    assert!(next(&mut sub, Duration::from_millis(300)).await.is_none());
    t.cleanup().await;
}

/// A consumer that acknowledges in its transactions takes its deliveries on the in-process
/// bus without a lease (no write per delivery): one whose receiver went away unsettled is
/// due again at once rather than after the ack wait, a look does not count as a delivery
/// but a nak does, and the transaction that applies a delivery acknowledges it.
async fn deliveries_applied_in_transactions_are_taken_without_a_lease(kind: BusKind) {
    let t = TestBus::new(kind).await;
    publish(&*t.bus, &envelope("unleased")).await;
    let spec = ConsumerSpec {
        take: Take::InTransaction(4),
        ..spec("unleased", Duration::from_secs(30))
    };
    let mut sub = t.bus.subscribe(&spec).await.unwrap();
    let first = next(&mut sub, Duration::from_secs(5))
        .await
        .expect("delivered");
    assert_eq!(first.deliveries, 1);
    drop((first, sub));

    let mut sub = t.bus.subscribe(&spec).await.unwrap();
    let again = next(&mut sub, Duration::from_secs(1))
        .await
        .expect("due again at once, not after the 30 s ack wait");
    assert_eq!(again.deliveries, 1, "a look is not a delivery");
    again.nak(Duration::ZERO).await.unwrap();
    let retried = next(&mut sub, Duration::from_secs(5)).await.expect("naked");
    assert_eq!(retried.deliveries, 2, "a nak counts");

    let mut tx = t.db.store.begin().await.unwrap();
    assert!(retried.ack_within(&mut tx).await.unwrap());
    tx.rollback().await.unwrap();
    assert_eq!(
        t.db.store.queue_pending("unleased").await.unwrap(),
        1,
        "a rolled-back acknowledgement keeps it"
    );
    let mut tx = t.db.store.begin().await.unwrap();
    assert!(retried.ack_within(&mut tx).await.unwrap());
    tx.commit().await.unwrap();
    assert_eq!(t.db.store.queue_pending("unleased").await.unwrap(), 0);
    assert!(next(&mut sub, Duration::from_millis(500)).await.is_none());
    t.cleanup().await;
}

on_in_process_buses!(deliveries_applied_in_transactions_are_taken_without_a_lease);

/// On the in-process bus a consumer claims a delivery by deleting its row in the
/// transaction that applies it, with no inbox row: of two receivers that read the same
/// delivery, one applies it; a reading that a nak has since outdated claims nothing, and
/// the delivery comes again to be applied once.
async fn a_delivery_read_twice_is_claimed_once(kind: BusKind) {
    let t = TestBus::new(kind).await;
    let spec = ConsumerSpec {
        take: Take::InTransaction(4),
        ..spec("claimed", Duration::from_secs(30))
    };
    let consumer = Consumer::new(
        t.bus.clone(),
        t.db.store.clone(),
        ConsumerOptions::new(spec.clone()),
    );
    let recorder = Recorder::default();
    let (mut one, mut two) = (
        t.bus.subscribe(&spec).await.unwrap(),
        t.bus.subscribe(&spec).await.unwrap(),
    );
    publish(&*t.bus, &envelope("read twice")).await;
    let (first, second) = (
        next(&mut one, Duration::from_secs(5)).await.expect("read"),
        next(&mut two, Duration::from_secs(5))
            .await
            .expect("read too"),
    );
    assert_eq!(first.id, second.id);
    assert_eq!(
        consumer.process(&recorder, first).await.unwrap(),
        Outcome::Applied
    );
    assert_eq!(
        consumer.process(&recorder, second).await.unwrap(),
        Outcome::Duplicate
    );
    assert_eq!(recorder.applied(), ["read twice"]);
    assert_eq!(t.db.store.queue_pending("claimed").await.unwrap(), 0);

    publish(&*t.bus, &envelope("outdated")).await;
    let (stale, naked) = (
        next(&mut one, Duration::from_secs(5)).await.expect("read"),
        next(&mut two, Duration::from_secs(5))
            .await
            .expect("read too"),
    );
    naked.nak(Duration::ZERO).await.unwrap();
    assert_eq!(
        consumer.process(&recorder, stale).await.unwrap(),
        Outcome::Duplicate,
        "a nak outdated this reading: it claims nothing"
    );
    assert_eq!(t.db.store.queue_pending("claimed").await.unwrap(), 1);
    let again = next(&mut one, Duration::from_secs(5))
        .await
        .expect("comes again");
    assert_eq!(again.deliveries, 2);
    assert_eq!(
        consumer.process(&recorder, again).await.unwrap(),
        Outcome::Applied
    );
    assert_eq!(recorder.applied(), ["read twice", "outdated"]);
    assert_eq!(t.db.store.queue_pending("claimed").await.unwrap(), 0);
    t.cleanup().await;
}

on_in_process_buses!(a_delivery_read_twice_is_claimed_once);

/// Where transactions publish in place (`gatehouse up`), a job queued while a subscription
/// of this process waits for jobs is written leased to it and handed over as the commit
/// ends: no lease after the commit, and nobody else can take it meanwhile. A job handed to
/// a subscription that goes away before taking it is given back, and comes again at once
/// rather than after the ack wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_queued_for_a_waiting_subscription_is_handed_to_it_leased() {
    let t = TestBus::new(BusKind::InProcessSqlite).await;
    let bus: Arc<dyn Bus> = Arc::new(InProcessBus::in_place(t.db.store.clone()));
    let spec = ConsumerSpec {
        take: Take::Leased,
        ..spec("waiting", Duration::from_secs(30))
    };
    let commit = |messages: &'static [&'static str]| {
        let store = t.db.store.clone();
        async move {
            let mut tx = store.begin().await.unwrap();
            for message in messages {
                tx.append_outbox(&envelope(message)).await.unwrap();
            }
            tx.commit().await.unwrap();
        }
    };

    // The store's end: a commit leases to a waiting taker what it wants, and hands it over.
    let mut sub = bus.subscribe(&spec).await.unwrap();
    let mut taker =
        t.db.store
            .hand_jobs_here("waiting", Duration::from_secs(30));
    taker.wait_for(1);
    commit(&["handed"]).await;
    let handed = taker.take_handed().await;
    assert_eq!(handed.len(), 1, "handed over as the commit ended");
    assert_eq!(handed[0].deliveries, 1);
    assert!(
        t.db.store
            .queue_fetch_up_to("waiting", Duration::from_secs(30), 10)
            .await
            .unwrap()
            .is_empty(),
        "leased to the taker"
    );
    t.db.store
        .queue_ack("waiting", StreamKind::Events, handed[0].seq, 1)
        .await
        .unwrap();
    drop(taker);

    // A subscription waiting for two is handed two of three.
    let waiting = tokio::spawn(async move {
        let jobs = sub.next_up_to(2).await.unwrap();
        (sub, jobs)
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    commit(&["first", "second", "third"]).await;
    let (mut sub, jobs) = timeout(Duration::from_secs(5), waiting)
        .await
        .expect("handed over")
        .unwrap();
    assert_eq!(jobs.len(), 2, "as many as it waited for");
    assert!(jobs.iter().all(|j| j.deliveries == 1));
    assert_eq!(
        t.db.store
            .queue_fetch_up_to("waiting", Duration::from_secs(30), 10)
            .await
            .unwrap()
            .len(),
        1,
        "the two handed over are leased; the third is due"
    );
    for job in jobs {
        job.ack().await.unwrap();
    }
    assert_eq!(t.db.store.queue_pending("waiting").await.unwrap(), 1);

    // Waiting, then no longer taking: the job leased to it meanwhile goes back at once.
    assert!(
        timeout(Duration::from_millis(200), sub.next_up_to(1))
            .await
            .is_err()
    );
    commit(&["given back"]).await;
    drop(sub);
    let mut other = bus.subscribe(&spec).await.unwrap();
    let again = next(&mut other, Duration::from_secs(5))
        .await
        .expect("given back at once, not after the 30 s ack wait");
    assert_eq!(again.deliveries, 2);
    t.cleanup().await;
}
