//! Chat-ops latency on Postgres with the whole of Gatehouse running (ingest's HTTP endpoints,
//! scheduler, runner and notifier, fake Slack and Discord APIs on loopback):
//! - gate opened → card posted: from the scheduler storing the run as waiting at the
//!   `check` gate (`runs.updated_at`, written with the process's clock) to the fake Slack
//!   storing the approvals card (its `ts`, microseconds of the same process's clock, as
//!   Slack hands them out). Both ends are recorded at their source, so polling intervals
//!   do not show in the figure; both come from this one process's system clock.
//! - button click → next node started: from just before the signed `block_actions` click
//!   on the card's approve button is sent (the bench's clock) to the runner beginning the
//!   `after` node (`node_attempts.started_at`, written by the runner with the same clock):
//!   the decision through ingest, the bus, the scheduler's dispatch and the runner's
//!   pickup. The scheduler's own dispatch leaves no timestamp that survives the run's next
//!   update, so the runner's start is the most precise end there is.
//!
//! Each beside a baseline measured in the same run, interleaved with the gates so that
//! noise hits both alike: one `chat.postMessage` of the same card through
//! `gatehouse_slack::SlackClient` to the same fake (the floor for "card posted"), and one
//! signed Slack `url_verification` request into ingest (the floor of an HTTP round trip
//! into ingest, which a click also pays).
//!
//! Gates are opened one at a time. Gatehouse's Slack client spaces `chat.postMessage` to
//! one per second per channel (Slack's documented limit) and the notifier posts messages
//! one after another, so a card posted less than a second after the previous post in its
//! channel waits for its slot, and every message behind it waits too. The main figure
//! starts each run as the API does (a `run.requested` event, no chat thread), so the card
//! is the only message in the approvals channel, and opens the next gate only once that
//! channel's slot is free again: it measures Gatehouse, not the pacing. Two smaller,
//! labelled figures show the pacing as users meet it: runs started by a Slack mention
//! (`@gatehouse run review` in the requests channel: the reply and the progress message
//! are posted first, in the thread), and a burst of gates opening together in one channel.
//!
//! `cargo bench -p gatehouse-tests --bench chat` (needs the machine's Postgres).
//! `GATEHOUSE_BENCH_GATES` (default 200) sets the gates opened one at a time (at least a
//! second each, for the pacing); `GATEHOUSE_BENCH_MENTIONS` (default 5) the runs started
//! by a mention; `GATEHOUSE_BENCH_BURST` (default 10) the gates opening together. The
//! figures are printed, and written as JSON to the file `GATEHOUSE_BENCH_JSON` names, when
//! set.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use gatehouse_slack::{Message, SlackClient};
use gatehouse_tests::fake_slack;
use gatehouse_tests::gatehouse::chat::{self, ANA, APPROVALS, CY, REQUESTS, control, now};
use gatehouse_tests::latencies::Latencies;
use gatehouse_tests::latencies::write_figures;
use gatehouse_tests::{Backend, Gatehouse};
use serde_json::{Value, json};
use uuid::Uuid;

/// How long one wait in the bench may take before it gives up.
const PATIENCE: Duration = Duration::from_secs(60);
/// How often the bench looks at the store while it waits (it measures nothing itself).
const POLL: Duration = Duration::from_millis(5);
/// Slack's pacing interval, with a margin, before a channel takes a post unpaced.
const SLOT: chrono::Duration = chrono::Duration::milliseconds(1010);

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A Slack `ts` (`1700000000.123456`) as the time it stands for.
fn slack_time(ts: &str) -> DateTime<Utc> {
    let (secs, micros) = ts.split_once('.').expect("a Slack ts");
    DateTime::from_timestamp(
        secs.parse().expect("seconds"),
        micros.parse::<u32>().expect("microseconds") * 1000,
    )
    .expect("a time")
}

/// How this bench prints a figure.
trait Line {
    fn line(&self, name: &str, baseline: Option<&Latencies>) -> String;
}

impl Line for Latencies {
    fn line(&self, name: &str, baseline: Option<&Latencies>) -> String {
        let ratio = baseline
            .map(|b| format!("   (p50 = {:.1}x the baseline)", self.p50() / b.p50()))
            .unwrap_or_default();
        format!(
            "  {name:<44} p50 {:>8.2} ms  p90 {:>8.2} ms  p99 {:>8.2} ms  max {:>8.2} ms  (n={}){ratio}",
            self.p50(),
            self.quantile(0.9),
            self.p99(),
            self.max(),
            self.count(),
        )
    }
}

/// A figure as JSON: `Latencies::json` with the p90 and the largest sample this bench also
/// prints, and its p50 over the baseline's when it is printed beside one.
fn figure_json(figure: &Latencies, baseline: Option<&Latencies>) -> Value {
    let round = |v: f64| (v * 1000.0).round() / 1000.0;
    let mut json = figure.json();
    json["p90"] = json!(round(figure.quantile(0.9)));
    json["max"] = json!(round(figure.max()));
    if let Some(b) = baseline {
        json["ratio_p50_to_baseline"] = json!(figure.p50() / b.p50());
    }
    json
}

/// Waits for `f` to find something, polling.
async fn until<T, F: Future<Output = Option<T>>>(what: &str, mut f: impl FnMut() -> F) -> T {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(found) = f().await {
            return found;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(POLL).await;
    }
}

/// Sleeps until the wall clock reads `at`.
async fn sleep_until(at: DateTime<Utc>) {
    if let Ok(left) = (at - Utc::now()).to_std() {
        tokio::time::sleep(left).await;
    }
}

/// The card of `run`'s gate in the approvals channel, once posted: the fake's message,
/// and when the notifier's poster first tried to post it (`chat_messages.first_try_at`).
async fn card(hub: &Gatehouse, run: Uuid) -> (fake_slack::SlackMessage, DateTime<Utc>) {
    let key = format!("card:{run}/check/1:slack:{APPROVALS}:-");
    let (ts, tried) = until("the approvals card", || async {
        let row = hub
            .db
            .store
            .chat_message(&key)
            .await
            .expect("chat message")?;
        Some((
            row.message_id?,
            row.first_try_at.expect("tried before posted"),
        ))
    })
    .await;
    let message = hub
        .slack
        .messages(APPROVALS)
        .into_iter()
        .find(|m| m.ts == ts)
        .expect("the card the notifier recorded is in the fake");
    (message, tried)
}

/// When the scheduler stored `run` as waiting at its gate. Called once the card is
/// posted and before anyone decides, so nothing has changed the run since.
async fn gate_opened(hub: &Gatehouse, run: Uuid) -> DateTime<Utc> {
    let row = hub.db.store.run(run).await.expect("run").expect("stored");
    let state: Value = serde_json::from_str(&row.state).expect("state");
    assert_eq!(row.status, "waiting", "{run}");
    assert_eq!(state["nodes"]["check"]["status"], "waiting_approval");
    row.updated_at
}

/// When the runner began `run`'s `after` node.
async fn after_started(hub: &Gatehouse, run: Uuid) -> DateTime<Utc> {
    until("the node after the gate", || async {
        hub.db
            .store
            .attempts(run)
            .await
            .expect("attempts")
            .into_iter()
            .find(|a| a.node == "after")
            .map(|a| a.started_at)
    })
    .await
}

async fn succeeded(hub: &Gatehouse, run: Uuid) {
    until("the run to succeed", || async {
        let row = hub.db.store.run(run).await.expect("run").expect("stored");
        (row.status == "succeeded").then_some(())
    })
    .await;
}

/// Until nothing is left to post, then a slot's length so that every channel is free.
async fn settle(hub: &Gatehouse) {
    until("chat to settle", || async {
        let dirty = hub.db.store.dirty_chat_messages(1).await.expect("dirty");
        dirty.is_empty().then_some(())
    })
    .await;
    sleep_until(Utc::now() + SLOT).await;
}

/// Approves the gate of `run` from its card, as ana, and returns when the click was sent.
async fn approve(hub: &Gatehouse, card: &fake_slack::SlackMessage) -> DateTime<Utc> {
    let approve = control(&card.blocks, "approve");
    let clicked = Utc::now();
    assert_eq!(hub.slack_click(ANA, APPROVALS, &approve).await, 200);
    clicked
}

struct Figures {
    card: Latencies,
    /// Gate opened → the poster's first try at the card.
    picked: Latencies,
    click: Latencies,
    /// Click → the decision event ingest made of it.
    decided: Latencies,
}

impl Figures {
    /// Cards that took half a second or more: held by something other than the path.
    fn slow(&self) -> (u64, u64) {
        (self.card.at_least(500), self.click.at_least(500))
    }

    fn new() -> Self {
        Self {
            card: Latencies::new(),
            picked: Latencies::new(),
            click: Latencies::new(),
            decided: Latencies::new(),
        }
    }
}

/// Gates opened one at a time, each in a free slot of the approvals channel, with one
/// sample of each baseline between them.
async fn sequential(
    hub: &Gatehouse,
    gates: usize,
    direct: &SlackClient,
    post: &mut Latencies,
    verify: &mut Latencies,
) -> Figures {
    let mut f = Figures::new();
    // Whatever was posted before (the warm-up) must be out of the way.
    settle(hub).await;
    let mut free_at = Utc::now();
    let challenge =
        json!({ "token": "t", "challenge": "3eZbrw1aB", "type": "url_verification" }).to_string();
    for i in 0..gates {
        // The previous card's slot must be over, or this card waits for it.
        sleep_until(free_at).await;
        let run = gatehouse_tests::request_runs(&hub.db.store, "review", 1, "cy").await[0];
        let (card, tried) = card(hub, run).await;
        let (opened, posted) = (gate_opened(hub, run).await, slack_time(&card.ts));
        f.card.between(opened, posted);
        f.picked.between(opened, tried);
        free_at = posted + SLOT;

        let clicked = approve(hub, &card).await;
        f.click.between(clicked, after_started(hub, run).await);
        let decision = hub.db.store.decisions(run).await.expect("decisions");
        assert_eq!(decision.len(), 1, "{decision:?}");
        assert_eq!(decision[0].outcome, "applied");
        f.decided.between(clicked, decision[0].decided_at);
        succeeded(hub, run).await;

        // Baselines, while the approvals channel waits for its next slot: the same card
        // posted straight to the fake (a channel of its own, so unpaced), and a signed
        // request ingest answers at once.
        let message = Message {
            text: card.text.clone(),
            blocks: card.blocks.clone(),
        };
        let start = Instant::now();
        direct
            .post_message(
                &format!("C0BASE{i:05}"),
                None,
                &message,
                &format!("bench:{i}"),
            )
            .await
            .expect("chat.postMessage");
        post.elapsed(start);
        let start = Instant::now();
        let (status, answer) = hub
            .slack_post("/webhooks/slack/events", challenge.as_bytes(), now(), None)
            .await;
        verify.elapsed(start);
        assert_eq!(status, 200, "{answer}");
    }
    f
}

/// Runs started by a Slack mention in the requests channel, one at a time: the reply and
/// the progress message go to the request's thread first, paced, and the cards follow.
async fn mentioned(hub: &Gatehouse, count: usize) -> Figures {
    let mut f = Figures::new();
    let mut known: HashSet<Uuid> = hub
        .db
        .store
        .runs(None, &[], 100_000)
        .await
        .expect("runs")
        .into_iter()
        .map(|r| r.id)
        .collect();
    for i in 0..count {
        settle(hub).await;
        hub.slack_mention(&format!("EvBench{i}"), REQUESTS, CY, "run review")
            .await;
        let run = until("the mentioned run", || async {
            let newest = hub.db.store.runs(None, &[], 1).await.expect("runs");
            newest
                .first()
                .map(|r| r.id)
                .filter(|id| !known.contains(id))
        })
        .await;
        known.insert(run);
        let (card, tried) = card(hub, run).await;
        let opened = gate_opened(hub, run).await;
        f.card.between(opened, slack_time(&card.ts));
        f.picked.between(opened, tried);
        let clicked = approve(hub, &card).await;
        f.click.between(clicked, after_started(hub, run).await);
        succeeded(hub, run).await;
    }
    f
}

/// Gates opening together: runs requested in one transaction, cards paced in one channel.
async fn burst(hub: &Gatehouse, count: usize) -> (Latencies, f64) {
    settle(hub).await;
    let runs = gatehouse_tests::request_runs(&hub.db.store, "review", count, "cy").await;
    let mut card_l = Latencies::new();
    let mut opened = Vec::with_capacity(count);
    let mut posted = Vec::with_capacity(count);
    for &run in &runs {
        let (card, _) = card(hub, run).await;
        let at = gate_opened(hub, run).await;
        card_l.between(at, slack_time(&card.ts));
        opened.push(at);
        posted.push(slack_time(&card.ts));
    }
    let first = opened.iter().min().copied().unwrap_or_default();
    let last = posted.iter().max().copied().unwrap_or_default();
    let spread_s = (last - first).num_milliseconds() as f64 / 1000.0;
    (card_l, spread_s)
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    // `cargo test --benches` runs this with --test too; keep that quick.
    let quick = std::env::args().any(|a| a == "--test");
    let (gates, mentions, together) = if quick {
        (3, 1, 2)
    } else {
        (
            env_usize("GATEHOUSE_BENCH_GATES", 200),
            env_usize("GATEHOUSE_BENCH_MENTIONS", 5),
            env_usize("GATEHOUSE_BENCH_BURST", 10),
        )
    };
    let started = Instant::now();
    let hub = chat::builder(Backend::Postgres).start().await;
    let direct =
        SlackClient::new(&hub.slack.api_url(), fake_slack::BOT_TOKEN.into()).expect("Slack client");

    // Warm up: one gate through, so pools, caches and connections exist.
    let (mut post, mut verify) = (Latencies::new(), Latencies::new());
    sequential(&hub, 1, &direct, &mut post, &mut verify).await;
    let (mut post, mut verify) = (Latencies::new(), Latencies::new());

    let one = sequential(&hub, gates, &direct, &mut post, &mut verify).await;
    let chat = mentioned(&hub, mentions).await;
    let (paced, spread_s) = burst(&hub, together).await;
    hub.stop().await;

    let total = started.elapsed();

    let (card, click) = (&one.card, &one.click);
    println!(
        "chat on Postgres, fake Slack and Discord: {gates} gates one at a time, each opened in a free slot of the approvals channel ({:.0} s in all)",
        total.as_secs_f64()
    );
    println!(
        "{}",
        post.line("baseline: chat.postMessage of the card", None)
    );
    println!("{}", verify.line("baseline: signed url_verification", None));
    println!("{}", card.line("gate opened → card posted", Some(&post)));
    println!(
        "{}",
        one.picked
            .line("  gate opened → poster tries the card", None)
    );
    let (slow_cards, slow_clicks) = one.slow();
    println!("  cards posted 500 ms or more after their gate opened: {slow_cards} of {gates}");
    println!(
        "{}",
        click.line("button click → next node started", Some(&verify))
    );
    println!("{}", one.decided.line("  click → decision event", None));
    println!("  clicks 500 ms or more before the next node started: {slow_clicks} of {gates}");
    println!(
        "paced by Slack's 1 msg/s per channel (the client's pacing; the notifier posts in turn):"
    );
    println!(
        "{}",
        chat.card
            .line("started by a mention: gate → card", Some(&post))
    );
    println!(
        "{}",
        chat.picked.line("  gate → poster tries the card", None)
    );
    println!(
        "{}",
        chat.click
            .line("started by a mention: click → next node", Some(&verify))
    );
    println!(
        "{}",
        paced.line(
            &format!("{together} gates together: gate → card"),
            Some(&post)
        )
    );
    println!(
        "  {together} gates together: first gate opened → last card posted in {spread_s:.2} s"
    );
    println!();
    println!("summary (p50 / p99, and p50 over its baseline's p50):");
    println!(
        "  gate opened → card posted:        {:.2} / {:.2} ms ({:.1}x chat.postMessage {:.2} ms); {slow_cards} of {gates} cards 500 ms or more",
        card.p50(),
        card.p99(),
        card.p50() / post.p50(),
        post.p50(),
    );
    println!(
        "  button click → next node started: {:.2} / {:.2} ms ({:.1}x url_verification {:.2} ms); {slow_clicks} of {gates} clicks 500 ms or more",
        click.p50(),
        click.p99(),
        click.p50() / verify.p50(),
        verify.p50()
    );
    println!(
        "  paced: mention-started gate → card {:.0} / {:.0} ms; {together} at once {:.0} / {:.0} ms",
        chat.card.p50(),
        chat.card.p99(),
        paced.p50(),
        paced.p99()
    );

    let figures = json!({
        "bench": "chat",
        "backend": "postgres",
        "gates": gates,
        "mentions": mentions,
        "burst": together,
        "baseline_post_message_ms": figure_json(&post, None),
        "baseline_url_verification_ms": figure_json(&verify, None),
        "gate_to_card_posted_ms": figure_json(card, Some(&post)),
        "gate_to_card_tried_ms": figure_json(&one.picked, None),
        "cards_500ms_or_more": slow_cards,
        "click_to_next_node_ms": figure_json(click, Some(&verify)),
        "click_to_decision_ms": figure_json(&one.decided, None),
        "clicks_500ms_or_more": slow_clicks,
        "paced": {
            "mention_gate_to_card_posted_ms": figure_json(&chat.card, Some(&post)),
            "mention_gate_to_card_tried_ms": figure_json(&chat.picked, None),
            "mention_click_to_next_node_ms": figure_json(&chat.click, Some(&verify)),
            "burst_gate_to_card_posted_ms": figure_json(&paced, Some(&post)),
            "burst_first_gate_to_last_card_s": spread_s,
        },
        "total_s": total.as_secs_f64(),
    });
    write_figures(&figures);
}
