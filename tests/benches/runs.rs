//! Runs through the SOP engine and the services, each figure beside a baseline measured in
//! the same run:
//! - engine overhead per node transition, against serialising the run state to JSON (what
//!   the scheduler stores after every transition);
//! - runs per second of a 10-node SOP of no-op scripts through `gatehouse up`'s services
//!   on SQLite, against spawning the same number of `sh -c true` processes one by one;
//! - resident memory with 10,000 runs waiting at gates, against the process before them.
//!
//! `cargo bench -p gatehouse-tests --bench runs`. `BENCH_RUNS` (default 50) and
//! `BENCH_WAITING` (default 10000) set the sizes. The figures are printed, and written as
//! JSON to the file `GATEHOUSE_BENCH_JSON` names, when set.

use std::time::{Duration, Instant};

use gatehouse_engine::{Input, Outcome, RunState, apply};
use gatehouse_sop::parse;
use gatehouse_store::Store;
use gatehouse_tests::latencies::write_figures;
use gatehouse_tests::{Backend, Gatehouse, TestDb};
use serde_json::{Value, json};

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn chain(nodes: usize) -> String {
    let mut yaml = String::from("name: noop10\nnodes:\n");
    for i in 0..nodes {
        let needs = if i == 0 {
            String::new()
        } else {
            format!(", needs: [n{}]", i - 1)
        };
        yaml.push_str(&format!(
            "  n{i}: {{ kind: script, run: \"true\"{needs} }}\n"
        ));
    }
    yaml
}

const WAITS: &str = "name: waits\nnodes:\n  ask: { kind: gate, approvers: [ana] }\n";

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// Kibibytes in mebibytes, to a tenth.
fn mib(kib: u64) -> f64 {
    (kib as f64 / 1024.0 * 10.0).round() / 10.0
}

/// Engine cost per transition against JSON serialisation of the same state; the figures.
fn engine(runs: usize) -> Value {
    let sop = parse("noop10.yaml", &chain(10)).expect("valid");
    let mut transitions = 0u64;
    let mut engine_time = Duration::ZERO;
    let mut json_time = Duration::ZERO;
    for _ in 0..runs {
        let mut state = RunState::new(&sop, Some("bob".into()));
        let mut inputs = vec![Input::Start];
        for n in &sop.nodes {
            inputs.push(Input::NodeStarted {
                node: n.id.clone(),
                attempt: 1,
            });
            inputs.push(Input::NodeFinished {
                node: n.id.clone(),
                attempt: 1,
                outcome: Outcome::Succeeded,
            });
        }
        for input in inputs {
            let start = Instant::now();
            let commands = apply(&sop, &mut state, input).expect("valid input");
            engine_time += start.elapsed();
            std::hint::black_box(commands);
            let start = Instant::now();
            std::hint::black_box(serde_json::to_string(&state).expect("serialises"));
            json_time += start.elapsed();
            transitions += 1;
        }
        assert!(state.is_terminal());
    }
    let per = |d: Duration| d.as_nanos() as f64 / transitions as f64;
    println!(
        "engine: {:.0} ns per node transition; serialising the state: {:.0} ns (engine = {:.2}x the store's JSON)",
        per(engine_time),
        per(json_time),
        per(engine_time) / per(json_time)
    );
    json!({
        "runs": runs,
        "transitions": transitions,
        "engine_ns_per_transition": per(engine_time),
        "serialise_state_ns": per(json_time),
        "ratio_engine_to_serialise": per(engine_time) / per(json_time),
    })
}

async fn count(store: &Store, status: &str, limit: usize) -> usize {
    store
        .runs(Some(status), &[], limit as i64)
        .await
        .expect("runs")
        .len()
}

/// Runs per second through the services, against spawning the same processes directly;
/// the figures.
async fn throughput(runs: usize) -> Value {
    let nodes = runs * 10;
    let start = Instant::now();
    for _ in 0..nodes {
        tokio::process::Command::new("sh")
            .args(["-c", "true"])
            .status()
            .await
            .expect("sh");
    }
    let spawns_per_sec = nodes as f64 / start.elapsed().as_secs_f64();

    let db = TestDb::new(Backend::Sqlite).await;
    let data = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(data.path().join("sops")).expect("mkdir");
    std::fs::write(data.path().join("sops/noop10.yaml"), chain(10)).expect("write");
    let services = Gatehouse::builder_on(db, data)
        .lease(Duration::from_secs(30))
        .start()
        .await;
    let db = &services.db;
    let start = Instant::now();
    gatehouse_tests::request_runs(&db.store, "noop10", runs, "bench").await;
    while count(&db.store, "succeeded", runs).await < runs {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let elapsed = start.elapsed().as_secs_f64();
    services.stop().await;
    let nodes_per_sec = nodes as f64 / elapsed;
    println!(
        "10-node no-op SOP: {:.2} runs/s ({nodes_per_sec:.0} nodes/s) over {runs} runs; spawning `sh -c true` alone: {spawns_per_sec:.0}/s (services = {:.2}x raw spawning)",
        runs as f64 / elapsed,
        nodes_per_sec / spawns_per_sec
    );
    json!({
        "backend": "sqlite",
        "runs": runs,
        "nodes": nodes,
        "runs_per_s": runs as f64 / elapsed,
        "nodes_per_s": nodes_per_sec,
        "sh_spawns_per_s": spawns_per_sec,
        "ratio_nodes_to_spawns": nodes_per_sec / spawns_per_sec,
    })
}

/// Resident memory with many runs waiting at a gate; the figures.
async fn waiting(runs: usize) -> Value {
    let db = TestDb::new(Backend::Sqlite).await;
    let data = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(data.path().join("sops")).expect("mkdir");
    std::fs::write(data.path().join("sops/waits.yaml"), WAITS).expect("write");
    let services = Gatehouse::builder_on(db, data)
        .lease(Duration::from_secs(30))
        .start()
        .await;
    let db = &services.db;
    // Warm up: one run through, so pools and caches exist before the baseline.
    gatehouse_tests::request_runs(&db.store, "waits", 1, "bench").await;
    while count(&db.store, "waiting", 1).await < 1 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let before = rss_kib();
    let start = Instant::now();
    let ids = gatehouse_tests::request_runs(&db.store, "waits", runs, "bench").await;
    // Requests are applied in order, so the last one waiting means all are; polling one
    // run keeps the benchmark's own allocations out of the figure.
    let last = *ids.last().expect("at least one run");
    while db
        .store
        .run(last)
        .await
        .expect("run")
        .is_none_or(|r| r.status != "waiting")
    {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let after = rss_kib();
    assert_eq!(count(&db.store, "waiting", runs + 1).await, runs + 1);
    let created = start.elapsed();
    println!(
        "{runs} runs waiting at gates: resident {} MiB, before them {} MiB ({:.2}x; {:.1} KiB per waiting run); created in {:.1} s",
        after / 1024,
        before / 1024,
        after as f64 / before.max(1) as f64,
        after.saturating_sub(before) as f64 / runs as f64,
        created.as_secs_f64()
    );
    services.stop().await;
    json!({
        "runs": runs,
        "backend": "sqlite",
        "rss_mib": mib(after),
        "rss_before_mib": mib(before),
        "ratio_rss_to_before": after as f64 / before.max(1) as f64,
        "kib_per_waiting_run": after.saturating_sub(before) as f64 / runs as f64,
        "created_s": created.as_secs_f64(),
    })
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let quick = std::env::args().any(|a| a == "--test");
    let engine = engine(if quick { 20 } else { 2000 });
    let throughput = throughput(if quick {
        2
    } else {
        env_usize("BENCH_RUNS", 50)
    })
    .await;
    let waiting = waiting(if quick {
        20
    } else {
        env_usize("BENCH_WAITING", 10_000)
    })
    .await;

    let figures = json!({
        "bench": "runs",
        "engine": engine,
        "throughput": throughput,
        "waiting": waiting,
    });
    write_figures(&figures);
}
