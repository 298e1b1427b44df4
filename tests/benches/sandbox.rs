//! Node start overhead in the Docker sandbox, through the whole runner: from the runner
//! taking the job (`node_attempts.started_at`, written when it begins the attempt) to the
//! script's first line of output (`node_logs.at`, written when the runner reads it) — the
//! attempt record, the `started` event, inputs, the workspace checkpoint, the run's volume,
//! and creating, attaching and starting a fresh container. Both ends come from this
//! process's clock.
//!
//! Baseline, measured in the same run and interleaved with the nodes so noise hits both
//! alike: `docker run --rm IMAGE true` timed as a whole (create, start, exit, remove). The
//! same node in the process sandbox is shown beside it for scale.
//!
//! `cargo bench -p gatehouse-tests --bench sandbox` (needs the machine's Postgres, a Docker
//! engine and the images from deploy/sandbox/build-images.sh). `GATEHOUSE_BENCH_NODES`
//! (default 30) sets the nodes per kind. The figures are printed, and written as JSON to the
//! file `GATEHOUSE_BENCH_JSON` names, when set (without Docker, why nothing was measured).

use std::sync::Arc;
use std::time::{Duration, Instant};

use gatehouse_sandbox::{DockerSandbox, ProcessSandbox, Profile, SandboxKind, Sandboxes};
use gatehouse_tests::latencies::write_figures;
use gatehouse_tests::{Backend, Gatehouse, TestDb};
use hdrhistogram::Histogram;
use serde_json::json;
use uuid::Uuid;

const IMAGE: &str = "gatehouse-sandbox:busybox";

const SOPS: [(&str, &str); 2] = [
    (
        "boxed",
        "name: boxed\nsandbox: box\nnodes:\n  hello: { kind: script, run: \"echo started\" }\n",
    ),
    (
        "local",
        "name: local\nnodes:\n  hello: { kind: script, run: \"echo started\" }\n",
    ),
];

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let nodes: usize = std::env::var("GATEHOUSE_BENCH_NODES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    let data = tempfile::tempdir().unwrap();
    let docker = match DockerSandbox::connect(data.path().display().to_string()).await {
        Ok(docker) if docker.check_image(IMAGE).await.is_ok() => docker,
        _ => {
            let why = format!("no Docker engine with {IMAGE} (deploy/sandbox/build-images.sh)");
            println!("skipped: {why}");
            write_figures(&json!({ "bench": "sandbox", "skipped": why }));
            return;
        }
    };
    let profile = Profile {
        kind: SandboxKind::Docker,
        image: Some(IMAGE.into()),
        ..Profile::default()
    };
    let stack = Gatehouse::builder_on(TestDb::new(Backend::Postgres).await, data)
        .sops(&SOPS)
        .sandbox(Arc::new(Sandboxes::new(
            ProcessSandbox::default(),
            Ok(docker),
        )))
        .runner(|options| {
            options.profiles.insert("box".into(), profile);
        })
        .start()
        .await;

    let mut docker_node = histogram();
    let mut process_node = histogram();
    let mut baseline = histogram();
    for _ in 0..nodes {
        docker_node
            .record(start_overhead(&stack, "boxed").await)
            .unwrap();
        process_node
            .record(start_overhead(&stack, "local").await)
            .unwrap();
        let begun = Instant::now();
        let status = std::process::Command::new("docker")
            .args(["run", "--rm", "--network", "none", IMAGE, "true"])
            .status()
            .unwrap();
        assert!(status.success());
        baseline.record(micros(begun.elapsed())).unwrap();
    }
    stack.stop().await;

    println!("node start overhead, {nodes} nodes each (job taken → first line of output):");
    let base = baseline.value_at_quantile(0.5) as f64;
    for (name, h) in [
        ("docker run --rm IMAGE true (baseline)", &baseline),
        ("docker sandbox node", &docker_node),
        ("process sandbox node", &process_node),
    ] {
        println!(
            "  {name:<40} p50 {:>7.1} ms  p90 {:>7.1} ms  max {:>7.1} ms  p50 ratio {:.2}×",
            h.value_at_quantile(0.5) as f64 / 1000.0,
            h.value_at_quantile(0.9) as f64 / 1000.0,
            h.max() as f64 / 1000.0,
            h.value_at_quantile(0.5) as f64 / base,
        );
    }

    let figure = |h: &Histogram<u64>| {
        json!({
            "p50": h.value_at_quantile(0.5) as f64 / 1000.0,
            "p90": h.value_at_quantile(0.9) as f64 / 1000.0,
            "max": h.max() as f64 / 1000.0,
            "n": h.len(),
            "ratio_p50_to_baseline": h.value_at_quantile(0.5) as f64 / base,
        })
    };
    write_figures(&json!({
        "bench": "sandbox",
        "backend": "postgres",
        "image": IMAGE,
        "nodes": nodes,
        "docker_run_ms": figure(&baseline),
        "docker_node_start_ms": figure(&docker_node),
        "process_node_start_ms": figure(&process_node),
    }));
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 600_000_000, 3).unwrap()
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// Runs one `hello` node of `sop` and returns, in microseconds, the time from the runner
/// beginning its attempt to its first output line.
async fn start_overhead(stack: &Gatehouse, sop: &str) -> u64 {
    let run: Uuid = stack.request(sop).await;
    stack.wait_run(run, "succeeded").await;
    let attempt = &stack.db.store.attempts(run).await.unwrap()[0];
    let logs = stack.db.store.logs(run, 0, 100).await.unwrap();
    let first = logs
        .iter()
        .find(|l| l.line == "started")
        .expect("the node's output");
    let overhead = first.at - attempt.started_at;
    u64::try_from(overhead.num_microseconds().unwrap_or(0)).unwrap_or(0)
}
