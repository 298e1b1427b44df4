//! What the Docker sandbox costs to start a node, against a plain `docker run`.
//!
//! Rounds interleave (a) `docker run --rm gatehouse-sandbox:busybox true`, timed as a
//! process, and (b) `DockerSandbox::run` of `echo started`, timed from the call to the
//! first log line (the process is running in the container) and to the return (the
//! container is removed). Without a Docker engine it says so and exits 0. The figures are
//! printed, and written as JSON to the file `GATEHOUSE_BENCH_JSON` names, when set (without
//! Docker, why nothing was measured).

use std::collections::BTreeMap;
use std::error::Error;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use gatehouse_sandbox::{DockerSandbox, Job, JobLabels, Profile, Sandbox, SandboxKind};
use hdrhistogram::Histogram;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const IMAGE: &str = "gatehouse-sandbox:busybox";
const ROUNDS: u32 = 30;

fn main() -> Result<(), Box<dyn Error>> {
    tokio::runtime::Runtime::new()?.block_on(bench())
}

async fn bench() -> Result<(), Box<dyn Error>> {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH)?.as_nanos();
    let owner = format!("bench-{}-{nanos:x}", std::process::id());
    let sandbox = match DockerSandbox::connect(owner).await {
        Ok(sandbox) => sandbox,
        Err(e) => {
            println!("start: nothing measured, {e}");
            write_figures(&json!({ "bench": "start", "skipped": e.to_string() }));
            return Ok(());
        }
    };
    if let Err(e) = sandbox.check_image(IMAGE).await {
        println!("start: nothing measured, {e}");
        write_figures(&json!({ "bench": "start", "skipped": e.to_string() }));
        return Ok(());
    }
    let dir = tempfile::tempdir()?;
    let run = format!("bench-{nanos:x}");
    let mut baseline = Histogram::<u64>::new(3)?;
    let mut first_line = Histogram::<u64>::new(3)?;
    let mut returned = Histogram::<u64>::new(3)?;

    for round in 0..ROUNDS {
        let started = Instant::now();
        let status = tokio::process::Command::new("docker")
            .args(["run", "--rm", IMAGE, "true"])
            .status()
            .await?;
        if !status.success() {
            return Err(format!("docker run failed: {status}").into());
        }
        baseline.record(micros(started.elapsed()))?;

        let job = Job {
            script: "echo started".into(),
            env: BTreeMap::new(),
            workspace: dir.path().join("workspace"),
            artifacts: dir.path().join("artifacts"),
            inputs: dir.path().join("inputs"),
            timeout: Some(Duration::from_secs(60)),
            profile: Profile {
                kind: SandboxKind::Docker,
                image: Some(IMAGE.into()),
                ..Profile::default()
            },
            labels: JobLabels {
                run: run.clone(),
                node: "bench".into(),
                attempt: round,
            },
            stdout_tail: 0,
            relay: None,
            home: None,
        };
        let (tx, mut rx) = mpsc::channel(16);
        let started = Instant::now();
        let first = tokio::spawn(async move {
            let first = rx.recv().await.map(|_| started.elapsed());
            while rx.recv().await.is_some() {}
            first
        });
        let exit = sandbox.run(&job, tx, CancellationToken::new()).await?;
        returned.record(micros(started.elapsed()))?;
        if !exit.succeeded() {
            return Err(format!("the job failed: {exit:?}").into());
        }
        let first = first.await?.ok_or("the job printed nothing")?;
        first_line.record(micros(first))?;
    }
    sandbox.remove_run_volume(&run).await?;

    let base = baseline.value_at_quantile(0.5) as f64;
    println!(
        "start: {ROUNDS} rounds, interleaved; milliseconds (p50 / p90), ratio of p50s to the baseline"
    );
    for (name, histogram) in [
        ("docker run --rm … true (baseline)", &baseline),
        ("DockerSandbox::run → first line", &first_line),
        ("DockerSandbox::run → returned", &returned),
    ] {
        let p50 = histogram.value_at_quantile(0.5);
        println!(
            "  {name:<36} {:>8.1} / {:>8.1}   ×{:.2}",
            p50 as f64 / 1000.0,
            histogram.value_at_quantile(0.9) as f64 / 1000.0,
            p50 as f64 / base,
        );
    }

    let figure = |histogram: &Histogram<u64>| {
        json!({
            "p50": histogram.value_at_quantile(0.5) as f64 / 1000.0,
            "p90": histogram.value_at_quantile(0.9) as f64 / 1000.0,
            "n": histogram.len(),
            "ratio_p50_to_baseline": histogram.value_at_quantile(0.5) as f64 / base,
        })
    };
    write_figures(&json!({
        "bench": "start",
        "image": IMAGE,
        "rounds": ROUNDS,
        "docker_run_ms": figure(&baseline),
        "sandbox_run_to_first_line_ms": figure(&first_line),
        "sandbox_run_to_returned_ms": figure(&returned),
    }));
    Ok(())
}

/// Writes `figures` to the file `GATEHOUSE_BENCH_JSON` names, when set.
fn write_figures(figures: &Value) {
    if let Ok(path) = std::env::var("GATEHOUSE_BENCH_JSON") {
        std::fs::write(&path, format!("{figures:#}\n")).expect("writing the figures");
    }
}

fn micros(elapsed: Duration) -> u64 {
    u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX)
}
