//! Latency of the whole service, distributed (`gatehouse serve`: ingest, 2 schedulers,
//! 2 runners and the notifier as separate processes on Postgres and NATS JetStream) against
//! `gatehouse up` (one process, SQLite and the in-process bus), in one run:
//! - signed webhook → first node running: from just before a signed GitHub `issues.labeled`
//!   delivery is sent (the bench's clock) to the runner beginning the run's first node
//!   (`node_attempts.started_at`, the runner's clock; one machine, one clock);
//! - gate decision → next node running: from just before the approval is sent to the API
//!   to the runner beginning the node after the gate.
//!
//! Each at 1, 10 and 100 runs at once (the deliveries, or the decisions, sent together),
//! reported as p50 and p99 and the ratio of distributed to `up`.
//!
//! `cargo bench -p gatehouse --bench deployments` (needs the machine's Postgres and NATS).
//! The figures are printed, and written as JSON to the file `GATEHOUSE_BENCH_JSON` names,
//! when set.

#[path = "../tests/harness/mod.rs"]
mod harness;

use std::time::Duration;

use chrono::{DateTime, Utc};
use gatehouse_store::Store;
use gatehouse_tests::{Backend, TestDb, TestNats, nats_url, quick_retry};
use harness::{Deployment, Up};
use hdrhistogram::Histogram;
use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Value, json};
use uuid::Uuid;

const SECRET: &str = "bench-secret";
const SOP: &str = "name: bench\nnodes:\n  first: { kind: script, run: \"true\" }\n  check: { kind: gate, needs: [first], approvers: [ana] }\n  after: { kind: script, needs: [check], run: \"true\" }\n";
const LEVELS: [(usize, usize); 3] = [(1, 30), (10, 5), (100, 1)];

/// A deployment under measure: where to send requests and where to read timestamps.
struct Target {
    name: &'static str,
    url: String,
    store: Store,
    ana: String,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let extra = format!(
        "[github]\nwebhook_secrets = [\"{SECRET}\"]\n[[github.triggers]]\nlabel = \"sop:bench\"\nsop = \"bench\"\nrepos = [\"Codertocat/*\"]\n"
    );
    let mut results = Vec::new();

    // `gatehouse up` on its embedded defaults.
    let mut up = Up::builder()
        .sops(&[("bench", SOP)])
        .config(&format!("[server]\nsop_dirs = [\"sops\"]\n[[people]]\nid = \"ana\"\ngroups = [\"leads\"]\n{extra}"))
        .start();
    let store = Store::connect(
        &format!("sqlite:{}", up.data_dir().join("gatehouse.db").display()),
        quick_retry(),
    )
    .await
    .unwrap();
    let target = connect("up", up.url(), store, &up.data_dir()).await;
    results.push(measure(&target).await);
    up.kill_9();

    // The four services apart, two schedulers and two runners.
    let db = TestDb::unmigrated(Backend::Postgres).await;
    let nats = TestNats::new();
    let mut deployment = Deployment::new(&db.url, &nats_url(), nats.prefix.as_str(), &extra);
    std::fs::write(deployment.dir.path().join("sops/bench.yaml"), SOP).unwrap();
    assert!(
        deployment
            .gatehouse()
            .arg("migrate")
            .status()
            .unwrap()
            .success()
    );
    for (name, service) in [
        ("ingest", "ingest"),
        ("scheduler-1", "scheduler"),
        ("scheduler-2", "scheduler"),
        ("runner-1", "runner"),
        ("runner-2", "runner"),
        ("notifier", "notifier"),
    ] {
        deployment.start(name, service);
    }
    for name in [
        "ingest",
        "scheduler-1",
        "scheduler-2",
        "runner-1",
        "runner-2",
        "notifier",
    ] {
        deployment.wait_ready(name);
    }
    let url = deployment.url("ingest");
    let target = connect(
        "distributed",
        url,
        db.store.clone(),
        &deployment.data_dir("ingest"),
    )
    .await;
    results.push(measure(&target).await);
    drop(deployment);
    db.cleanup().await;
    nats.cleanup().await;

    println!("latency by runs at once (p50 / p99, milliseconds), distributed ÷ up at p50:");
    for (i, (what, level)) in results[0].iter().map(|(w, l, _)| (w, l)).enumerate() {
        let up = &results[0][i].2;
        let distributed = &results[1][i].2;
        println!(
            "  {what:<36} {level:>3} at once   up {:>7.1} / {:>7.1}   distributed {:>7.1} / {:>7.1}   {:.2}×",
            ms(up.value_at_quantile(0.5)),
            ms(up.value_at_quantile(0.99)),
            ms(distributed.value_at_quantile(0.5)),
            ms(distributed.value_at_quantile(0.99)),
            distributed.value_at_quantile(0.5) as f64 / up.value_at_quantile(0.5).max(1) as f64,
        );
    }

    let figure = |h: &Histogram<u64>| {
        json!({
            "p50": ms(h.value_at_quantile(0.5)),
            "p99": ms(h.value_at_quantile(0.99)),
            "n": h.len(),
        })
    };
    let rows: Vec<Value> = results[0]
        .iter()
        .zip(&results[1])
        .map(|((what, level, up), (_, _, distributed))| {
            json!({
                "figure": what,
                "at_once": level,
                "up_ms": figure(up),
                "distributed_ms": figure(distributed),
                "ratio_p50_distributed_to_up": distributed.value_at_quantile(0.5) as f64
                    / up.value_at_quantile(0.5).max(1) as f64,
            })
        })
        .collect();
    let figures = json!({
        "bench": "deployments",
        "up": "gatehouse up: one process, SQLite, the in-process bus",
        "distributed": "gatehouse serve: ingest, 2 schedulers, 2 runners, the notifier; Postgres, NATS JetStream",
        "levels": LEVELS
            .iter()
            .map(|(at_once, rounds)| json!({ "at_once": at_once, "rounds": rounds }))
            .collect::<Vec<_>>(),
        "figures": rows,
    });
    gatehouse_tests::latencies::write_figures(&figures);
}

fn ms(micros: u64) -> f64 {
    micros as f64 / 1000.0
}

/// The deployment with an admin token (from its data directory) and a token for ana.
async fn connect(name: &'static str, url: String, store: Store, data: &std::path::Path) -> Target {
    let admin = std::fs::read_to_string(data.join("admin.token"))
        .unwrap()
        .trim()
        .to_owned();
    let created: Value = reqwest::Client::new()
        .post(format!("{url}/api/v1/tokens"))
        .bearer_auth(&admin)
        .json(&json!({ "name": "ana" }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ana = created["token"].as_str().unwrap().to_owned();
    Target {
        name,
        url,
        store,
        ana,
    }
}

/// The two figures at each level.
async fn measure(target: &Target) -> Vec<(&'static str, usize, Histogram<u64>)> {
    let mut figures = Vec::new();
    for (level, rounds) in LEVELS {
        let mut webhook = histogram();
        let mut decision = histogram();
        for _ in 0..rounds {
            let issues: Vec<u64> = (0..level).map(|_| issue_number()).collect();
            let sent = futures::future::join_all(issues.iter().map(|n| deliver(target, *n))).await;
            let mut runs = Vec::new();
            for (n, at) in issues.iter().zip(sent) {
                let run = run_of_issue(target, *n).await;
                let started = started(target, run, "first").await;
                webhook.record(micros(started - at)).unwrap();
                runs.push(run);
            }
            for run in &runs {
                wait_waiting(target, *run).await;
            }
            let sent = futures::future::join_all(runs.iter().map(|r| approve(target, *r))).await;
            for (run, at) in runs.iter().zip(sent) {
                let started = started(target, *run, "after").await;
                decision.record(micros(started - at)).unwrap();
            }
        }
        println!(
            "{}: {level} at once: webhook → first node p50 {:.1} ms, decision → next node p50 {:.1} ms",
            target.name,
            ms(webhook.value_at_quantile(0.5)),
            ms(decision.value_at_quantile(0.5))
        );
        figures.push(("signed webhook → first node running", level, webhook));
        figures.push(("gate decision → next node running", level, decision));
    }
    figures
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 600_000_000, 3).unwrap()
}

fn micros(d: chrono::Duration) -> u64 {
    u64::try_from(d.num_microseconds().unwrap_or(0)).unwrap_or(0)
}

/// A fresh issue number, so every delivery makes a new requirement.
fn issue_number() -> u64 {
    u64::from(Uuid::now_v7().as_u128() as u32) + 1000
}

/// Sends a signed `issues.labeled` for issue `n`; the time just before sending.
async fn deliver(target: &Target, n: u64) -> DateTime<Utc> {
    let mut body: Value = serde_json::from_str(include_str!(
        "../../../tests/fixtures/github/issues.labeled.json"
    ))
    .unwrap();
    body["issue"]["number"] = json!(n);
    body["label"]["name"] = json!("sop:bench");
    body["issue"]["labels"] = json!([{ "name": "sop:bench" }]);
    let body = serde_json::to_vec(&body).unwrap();
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(SECRET.as_bytes()).unwrap();
    mac.update(&body);
    let signature = format!("sha256={}", hex::encode(mac.finalize().into_bytes()));
    let at = Utc::now();
    let status = reqwest::Client::new()
        .post(format!("{}/webhooks/github", target.url))
        .header("X-GitHub-Event", "issues")
        .header("X-GitHub-Delivery", Uuid::now_v7().to_string())
        .header("X-Hub-Signature-256", signature)
        .body(body)
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status.as_u16(), 202);
    at
}

/// Approves the run's gate as ana; the time just before the first try. A busy store may
/// answer 503 ("try again"), which is retried.
async fn approve(target: &Target, run: Uuid) -> DateTime<Utc> {
    let at = Utc::now();
    for _ in 0..100 {
        let status = reqwest::Client::new()
            .post(format!(
                "{}/api/v1/runs/{run}/gates/check/decision",
                target.url
            ))
            .bearer_auth(&target.ana)
            .json(&json!({ "decision": "approve" }))
            .send()
            .await
            .unwrap()
            .status();
        if status.is_success() {
            return at;
        }
        assert_eq!(status.as_u16(), 503, "{status}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the decision on {run} was never accepted");
}

async fn run_of_issue(target: &Target, n: u64) -> Uuid {
    let key = format!("github:Codertocat/Hello-World#{n}");
    for _ in 0..6000 {
        if let Some(requirement) = target.store.requirement_by_key(&key).await.unwrap()
            && let Some(run) = target
                .store
                .runs_of_requirement(requirement.id)
                .await
                .unwrap()
                .first()
        {
            return run.id;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no run for issue {n} on {}", target.name);
}

async fn started(target: &Target, run: Uuid, node: &str) -> DateTime<Utc> {
    for _ in 0..6000 {
        if let Some(attempt) = target
            .store
            .attempts(run)
            .await
            .unwrap()
            .into_iter()
            .find(|a| a.node == node)
        {
            return attempt.started_at;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{node} of {run} never started on {}", target.name);
}

async fn wait_waiting(target: &Target, run: Uuid) {
    for _ in 0..6000 {
        if target
            .store
            .run(run)
            .await
            .unwrap()
            .is_some_and(|r| r.status == "waiting")
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{run} never waited at its gate on {}", target.name);
}
