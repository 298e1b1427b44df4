//! An agent node's start with the model gateway against without: the real Claude Code (from
//! tests/agent-clis/install.sh) in the process sandbox, from the run's request to the CLI's
//! first request reaching the fake provider.
//!
//! - without: the role holds the key as a secret and `ANTHROPIC_BASE_URL` points at the
//!   fake; the CLI runs as a plain child process (the baseline);
//! - with: the role names the provider; the attempt gets a grant, runs in namespaces of its
//!   own behind the relay, and its requests go through the gateway.
//!
//! The two are interleaved so noise hits both alike. `cargo bench -p gatehouse-tests --bench
//! gateway_start` (needs the machine's Postgres, the CLIs and the static relay, built if
//! missing). `GATEHOUSE_BENCH_NODES` (default 10) sets the nodes per kind; figures are printed
//! and written as JSON to `GATEHOUSE_BENCH_JSON` when set.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use gatehouse_agent::{Executor, Role};
use gatehouse_fake_providers::{FakeProvider, Turn};
use gatehouse_gateway::{Provider, ProviderKind};
use gatehouse_sandbox::ProcessSandbox;
use gatehouse_tests::latencies::write_figures;
use gatehouse_tests::{Backend, Gatehouse, TestDb, relay_binary};
use hdrhistogram::Histogram;
use secrecy::SecretString;
use serde_json::json;

const KEY: &str = "sk-bench-provider-key";

const SOPS: [(&str, &str); 2] = [
    (
        "direct",
        "name: direct\nnodes:\n  code: { kind: agent, role: direct, prompt: \"Say hi.\" }\n",
    ),
    (
        "gateway",
        "name: gateway\nnodes:\n  code: { kind: agent, role: gateway, prompt: \"Say hi.\" }\n",
    ),
];

fn main() {
    // The direct role's key is a secret the runner reads from its environment, as a
    // runner's is. SAFETY: set before any other thread exists.
    unsafe { std::env::set_var("ANTHROPIC_API_KEY", KEY) };
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(bench());
}

async fn bench() {
    let nodes: usize = std::env::var("GATEHOUSE_BENCH_NODES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let dir = std::env::var_os("AGENT_CLIS_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/agent-clis"),
        PathBuf::from,
    );
    let bin = dir.join("node_modules/.bin");
    if !bin.join("claude").is_file() {
        let why = format!(
            "no Claude Code under {} (tests/agent-clis/install.sh)",
            dir.display()
        );
        println!("skipped: {why}");
        write_figures(&json!({ "bench": "gateway_start", "skipped": why }));
        return;
    }
    let fake = FakeProvider::start(KEY, vec![Turn::text("Hi.")]).await;
    let data = tempfile::tempdir().unwrap();
    let home = data.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let direct = Role {
        model: Some("claude-sonnet-4-5".into()),
        // The runner adds the CLI's own variables (no telemetry, IS_SANDBOX) to both.
        env: BTreeMap::from([
            ("PATH".to_owned(), path.clone()),
            ("HOME".to_owned(), home.display().to_string()),
            ("ANTHROPIC_BASE_URL".to_owned(), fake.url().to_owned()),
        ]),
        secrets: vec!["ANTHROPIC_API_KEY".into()],
        ..Role::new(Executor::ClaudeCode)
    };
    let gateway = Role {
        model: Some("claude-sonnet-4-5".into()),
        provider: Some("model".into()),
        env: BTreeMap::from([("PATH".to_owned(), path)]),
        ..Role::new(Executor::ClaudeCode)
    };
    let provider = Provider {
        name: "model".into(),
        kind: ProviderKind::Anthropic,
        base_url: url::Url::parse(fake.url()).unwrap(),
        key: SecretString::from(KEY),
    };
    let stack = Gatehouse::builder_on(TestDb::new(Backend::Postgres).await, data)
        .sops(&SOPS)
        .sandbox(Arc::new(ProcessSandbox::default()))
        .runner(move |options| {
            options.roles = BTreeMap::from([
                ("direct".to_owned(), direct),
                ("gateway".to_owned(), gateway),
            ]);
            options.providers = vec![provider];
            options.relay = Some(relay_binary());
        })
        .start()
        .await;

    let mut without = histogram();
    let mut with = histogram();
    for _ in 0..nodes {
        without
            .record(first_request(&stack, &fake, "direct").await)
            .unwrap();
        with.record(first_request(&stack, &fake, "gateway").await)
            .unwrap();
    }
    stack.stop().await;

    println!("agent node start, {nodes} nodes each (run requested → first model request):");
    let base = without.value_at_quantile(0.5) as f64;
    for (name, h) in [
        ("key in the sandbox, direct (baseline)", &without),
        ("through the gateway, in namespaces", &with),
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
        "bench": "gateway_start",
        "backend": "postgres",
        "nodes": nodes,
        "direct_ms": figure(&without),
        "gateway_ms": figure(&with),
    }));
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 600_000_000, 3).unwrap()
}

/// Runs `sop` and returns, in microseconds, the time from the request to the CLI's first
/// request at the fake provider.
async fn first_request(stack: &Gatehouse, fake: &FakeProvider, sop: &str) -> u64 {
    let seen = fake.requests().len();
    let begun = Instant::now();
    let run = stack.request(sop).await;
    stack.wait_run(run, "succeeded").await;
    let first = fake.requests()[seen..]
        .iter()
        .map(|r| r.received)
        .min()
        .expect("the CLI's request");
    u64::try_from(first.duration_since(begun).as_micros()).unwrap_or(u64::MAX)
}
