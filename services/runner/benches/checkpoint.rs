//! Workspace checkpoints of a large repository, as runners take them between nodes, against
//! copying the whole workspace (what a checkpoint that is not incremental costs).
//!
//! The workspace is a git repository of about `BENCH_MB` megabytes (default 200): half in
//! files of incompressible bytes (100 KiB each) beside 300 small source files, committed,
//! so `.git` holds the other half. Then, per backend (the data directory's blobs, and the
//! NATS object store when NATS answers at `BENCH_NATS_URL`, default
//! `nats://127.0.0.1:4222`):
//! - the first checkpoint (everything uploaded once);
//! - `BENCH_NODES` nodes (default 5), each editing 10 source files and committing, then
//!   checkpointed as the runner does after a node: only the new contents are uploaded;
//! - a restore of the last checkpoint onto another runner's empty disk.
//!
//! The baseline is `cp -a` of the whole workspace, timed in the same run. The figures and
//! ratios are printed, and written as JSON to the file `GATEHOUSE_BENCH_JSON` names.
//!
//! `cargo bench -p gatehouse-runner --bench checkpoint`.

mod common;

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{env_usize, git, median};
use gatehouse_blobs::{Blobs, LocalBlobs, NatsBlobs};
use gatehouse_runner::bench::CheckpointedWorkspace;
use serde_json::json;

const BIG_FILE: usize = 100 * 1024;
const SOURCES: usize = 300;
const EDITED_PER_NODE: usize = 10;

/// A committed repository of about `mb` megabytes (tree and `.git`) at `dir`.
fn repository(dir: &Path, mb: usize) {
    std::fs::create_dir_all(dir.join("assets")).expect("dir");
    std::fs::create_dir_all(dir.join("src")).expect("dir");
    git(dir, &["init", "--quiet"]);
    let mut rng = fastrand::Rng::with_seed(7);
    for n in 0..(mb * 1024 * 1024 / 2 / BIG_FILE).max(1) {
        let bytes: Vec<u8> = std::iter::repeat_with(|| rng.u8(..))
            .take(BIG_FILE)
            .collect();
        std::fs::write(dir.join(format!("assets/blob{n}.bin")), bytes).expect("file");
    }
    for n in 0..SOURCES {
        let line = format!("pub fn f{n}() -> usize {{ {n} }}\n");
        std::fs::write(dir.join(format!("src/f{n}.rs")), line.repeat(40)).expect("file");
    }
    git(dir, &["add", "--all"]);
    git(dir, &["commit", "--quiet", "-m", "init"]);
}

/// What a node does: edits a few source files and commits them.
fn node(dir: &Path, n: usize) {
    for k in 0..EDITED_PER_NODE {
        let file = dir.join(format!("src/f{}.rs", (n * EDITED_PER_NODE + k) % SOURCES));
        let mut text = std::fs::read_to_string(&file).expect("source");
        text.push_str(&format!("// node {n}\n"));
        std::fs::write(&file, text).expect("source");
    }
    git(dir, &["commit", "--quiet", "-am", &format!("node {n}")]);
}

/// The bytes of the files under `dir`.
fn du_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).expect("read_dir").flatten() {
        let meta = entry.metadata().expect("metadata");
        total += if meta.is_dir() {
            du_bytes(&entry.path())
        } else {
            meta.len()
        };
    }
    total
}

fn copy_all(from: &Path, to: &Path) -> Duration {
    let _ = std::fs::remove_dir_all(to);
    let begun = Instant::now();
    let status = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .expect("cp");
    assert!(status.success());
    begun.elapsed()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// The NATS object store, when NATS answers; `None` (and why, printed) otherwise.
async fn nats_blobs(bucket: &str) -> Option<(Blobs, async_nats::jetstream::Context)> {
    let url =
        std::env::var("BENCH_NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".to_owned());
    let client =
        match tokio::time::timeout(Duration::from_secs(3), async_nats::connect(url.as_str())).await
        {
            Ok(Ok(client)) => client,
            _ => {
                println!("NATS does not answer at {url}: the NATS backend is left out");
                return None;
            }
        };
    let js = async_nats::jetstream::new(client);
    let blobs = NatsBlobs::new(js.clone(), bucket).expect("a bucket name");
    Some((Arc::new(blobs), js))
}

/// One backend's figures.
async fn measure(
    name: &str,
    blobs: Blobs,
    root: &Path,
    source: &Path,
    nodes: usize,
) -> serde_json::Value {
    let data = root.join(format!("{name}-runner-one"));
    let workspace = CheckpointedWorkspace::new(blobs.clone(), &data);
    std::fs::create_dir_all(workspace.path().parent().expect("a parent")).expect("dir");
    copy_all(source, workspace.path());

    let begun = Instant::now();
    let first = workspace.checkpoint().await.expect("the first checkpoint");
    let first_time = begun.elapsed();

    let (mut times, mut uploads) = (Vec::new(), Vec::new());
    let mut last = first.clone();
    for n in 0..nodes {
        node(workspace.path(), n);
        let begun = Instant::now();
        last = workspace.checkpoint().await.expect("a node's checkpoint");
        times.push(begun.elapsed());
        uploads.push(last.uploaded);
    }
    let node_time = median(times);
    uploads.sort_unstable();
    let node_upload = uploads[uploads.len() / 2];

    let other = CheckpointedWorkspace::new(blobs, &root.join(format!("{name}-runner-two")));
    let begun = Instant::now();
    let fetched = other.restore(&last.manifest).await.expect("a restore");
    let restore_time = begun.elapsed();
    assert_eq!(
        du_bytes(&other.path().join("src")),
        du_bytes(&workspace.path().join("src")),
        "the restored workspace matches"
    );

    println!(
        "  {name:<5} first checkpoint {:>8.0} ms, {:>6.1} MiB uploaded",
        ms(first_time),
        mib(first.uploaded)
    );
    println!(
        "  {name:<5} after a node     {:>8.1} ms, {:>6.3} MiB uploaded (p50 of {nodes})",
        ms(node_time),
        mib(node_upload)
    );
    println!(
        "  {name:<5} restore elsewhere{:>8.0} ms, {:>6.1} MiB fetched",
        ms(restore_time),
        mib(fetched)
    );
    json!({
        "first_ms": ms(first_time),
        "first_uploaded_bytes": first.uploaded,
        "node_p50_ms": ms(node_time),
        "node_uploaded_p50_bytes": node_upload,
        "restore_ms": ms(restore_time),
        "restore_fetched_bytes": fetched,
    })
}

#[tokio::main]
async fn main() {
    let (mb, nodes) = (
        env_usize("BENCH_MB", 200),
        env_usize("BENCH_NODES", 5).max(1),
    );
    let root = tempfile::tempdir().expect("a temporary directory");
    let source = root.path().join("repository");
    let made = Instant::now();
    repository(&source, mb);
    let size = du_bytes(&source);
    println!(
        "workspace checkpoints of a {:.0} MiB repository ({:.0} MiB of it in .git; made in {:.1} s), {nodes} nodes:",
        mib(size),
        mib(du_bytes(&source.join(".git"))),
        made.elapsed().as_secs_f64()
    );
    let copies: Vec<Duration> = (0..3)
        .map(|_| copy_all(&source, &root.path().join("copy")))
        .collect();
    let copy = median(copies);
    let _ = std::fs::remove_dir_all(root.path().join("copy"));
    println!(
        "  cp -a of the whole workspace (baseline) {:>8.0} ms",
        ms(copy)
    );

    let mut backends = serde_json::Map::new();
    let local: Blobs = Arc::new(LocalBlobs::new(root.path().join("blobs")));
    backends.insert(
        "local".into(),
        measure("local", local, root.path(), &source, nodes).await,
    );
    let bucket = format!("bench_checkpoint_{}", std::process::id());
    if let Some((blobs, js)) = nats_blobs(&bucket).await {
        backends.insert(
            "nats".into(),
            measure("nats", blobs, root.path(), &source, nodes).await,
        );
        let _ = js.delete_object_store(&bucket).await;
    }
    for (name, figures) in &backends {
        let node_ms = figures["node_p50_ms"].as_f64().unwrap_or(0.0);
        let uploaded = figures["node_uploaded_p50_bytes"].as_u64().unwrap_or(0);
        println!(
            "  {name:<5} a node's checkpoint: {:.3}× the copy's time, {:.4}× the workspace's bytes",
            node_ms / ms(copy),
            uploaded as f64 / size as f64
        );
    }
    if let Ok(path) = std::env::var("GATEHOUSE_BENCH_JSON") {
        let figures = json!({
            "bench": "checkpoint",
            "workspace_bytes": size,
            "nodes": nodes,
            "copy_p50_ms": ms(copy),
            "backends": backends,
        });
        std::fs::write(&path, format!("{figures:#}\n")).expect("writing the figures");
    }
}
