//! From a label to the agent's first step, on real repositories: a signed `issues.labeled`
//! webhook → the real Claude Code's first request to its model (the fake provider, reached
//! through the runner's gateway), the agent in the agents image's Docker sandbox, the run's
//! repository checked out into its workspace first.
//!
//! Three repositories made locally ([`gatehouse_tests::repos`]): small (≈ 5 MB, 5,000
//! files), large (≈ 200 MB, 50,000 files, 20,000 commits) and binaries (a ≈ 300 MB pack).
//! Each sample is a fresh Gatehouse (its own database and data directory, so its runner has
//! never seen the repository): its first run is a cold start, the runs after it warm ones.
//!
//! The floors, measured in the same run and interleaved with the samples:
//! - cold: `git clone --depth 1` of the same repository, then `docker run` of the same image
//!   with the CLI, until its first model request;
//! - warm (clone-less): the `docker run` alone, on the clone already made.
//!
//! `cargo bench -p gatehouse-tests --bench agent_start` (Docker, the agents image, Claude Code
//! in it, the static relay). `GATEHOUSE_BENCH_STARTS` (default 5) sets the samples per
//! repository, `GATEHOUSE_BENCH_WARM` (default 2) the warm runs in each,
//! `GATEHOUSE_BENCH_REPOS` (default `small,large,binaries`) which repositories,
//! `GATEHOUSE_BENCH_HISTORY` (default `shallow`, as the floor's clone) the project's history.
//! A warm run is labelled once the runner's spare checkout is ready. Figures are
//! printed and written as JSON to `GATEHOUSE_BENCH_JSON` when set.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use gatehouse_agent::{Executor, Role};
use gatehouse_fake_providers::{FakeProvider, Turn};
use gatehouse_gateway::{Provider, ProviderKind};
use gatehouse_ingest::{Person, Trigger};
use gatehouse_sandbox::{DockerSandbox, ProcessSandbox, Sandboxes};
use gatehouse_store::RunRow;
use gatehouse_tests::agents_image::{AGENTS_IMAGE, agents_docker, agents_profile};
use gatehouse_tests::gatehouse::github::fixture;
use gatehouse_tests::latencies::{Latencies, write_figures};
use gatehouse_tests::repos::{self, BINARIES, LARGE, SMALL, Shape};
use gatehouse_tests::{Backend, Gatehouse, TestDb, relay_binary};
use secrecy::SecretString;
use serde_json::{Value, json};

const KEY: &str = "sk-bench-agent-start";
const OWNER: &str = "Codertocat";
const PROMPT: &str = "Say hi.";

const SOP: &str =
    "name: start\nnodes:\n  code: { kind: agent, role: agent, prompt: \"Say hi.\" }\n";

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::main]
async fn main() {
    let starts = env_number("GATEHOUSE_BENCH_STARTS", 5);
    let warm_runs = env_number("GATEHOUSE_BENCH_WARM", 2);
    let wanted = std::env::var("GATEHOUSE_BENCH_REPOS")
        .unwrap_or_else(|_| "small,large,binaries".to_owned());
    let shapes: Vec<Shape> = [SMALL, LARGE, BINARIES]
        .into_iter()
        .filter(|s| wanted.split(',').any(|w| w.trim() == s.name))
        .collect();
    if let Err(why) = agents_docker("bench-agent-start").await {
        println!("skipped: {why}");
        write_figures(&json!({ "bench": "agent_start", "skipped": why }));
        return;
    }
    let fake = FakeProvider::start(KEY, vec![Turn::text("Hi.")]).await;
    fake.answer_side_requests_with_text();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/bench-repos");
    let mut figures = BTreeMap::new();
    for shape in &shapes {
        let made = Instant::now();
        let bare = repos::ensure(&root, shape);
        println!(
            "{}: {} ({} in the pack), ready in {:.1} s",
            shape.name,
            bare.display(),
            human(pack_bytes(&bare)),
            made.elapsed().as_secs_f64()
        );
        let mut figure = Figure::default();
        for sample in 0..starts {
            floors(&fake, &bare, &mut figure).await;
            gatehouse_starts(&fake, shape, &bare, warm_runs, sample, &mut figure).await;
        }
        figure.print(shape.name);
        figures.insert(shape.name, figure.json());
    }
    write_figures(&json!({ "bench": "agent_start", "repositories": figures }));
}

/// The samples of one repository.
#[derive(Default)]
struct Figure {
    cold: Latencies,
    warm: Latencies,
    clone_floor: Latencies,
    run_floor: Latencies,
}

impl Figure {
    fn print(&self, name: &str) {
        println!("{name}: label → first model request (ms)");
        let cold_floor = self.clone_floor.p50() + self.run_floor.p50();
        for (what, l, floor) in [
            ("cold (first run on the runner)", &self.cold, cold_floor),
            ("warm (a later run)", &self.warm, self.run_floor.p50()),
            ("floor: git clone --depth 1", &self.clone_floor, f64::NAN),
            ("floor: docker run + CLI start", &self.run_floor, f64::NAN),
        ] {
            let ratio = if floor.is_nan() {
                String::new()
            } else {
                format!("  {:.2}× its floor", l.p50() / floor)
            };
            println!(
                "  {what:<32} p50 {:>8.0}  p99 {:>8.0}  n {:>3}{ratio}",
                l.p50(),
                l.p99(),
                l.count()
            );
        }
    }

    fn json(&self) -> Value {
        let cold_floor = self.clone_floor.p50() + self.run_floor.p50();
        json!({
            "cold_ms": self.cold.json(),
            "warm_ms": self.warm.json(),
            "clone_depth_1_ms": self.clone_floor.json(),
            "docker_run_cli_ms": self.run_floor.json(),
            "cold_vs_clone_and_run_p50": round(self.cold.p50() / cold_floor),
            "warm_vs_run_p50": round(self.warm.p50() / self.run_floor.p50()),
        })
    }
}

fn round(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// One sample of each floor: a shallow clone, then the CLI in the image on it.
async fn floors(fake: &FakeProvider, bare: &Path, figure: &mut Figure) {
    let dir = tempfile::tempdir().expect("a directory");
    let clone = dir.path().join("clone");
    let started = Instant::now();
    let status = tokio::process::Command::new("git")
        .args(["clone", "--quiet", "--depth", "1"])
        .arg(format!("file://{}", bare.display()))
        .arg(&clone)
        .status()
        .await
        .expect("git clone");
    assert!(status.success(), "git clone --depth 1 failed");
    figure.clone_floor.elapsed(started);
    // The container's user writes the workspace, as in the sandbox.
    let chown = std::process::Command::new("chown")
        .args(["-R", "1000:1000"])
        .arg(&clone)
        .status()
        .expect("chown");
    assert!(chown.success());
    // Owners changed every file's ctime: the index learns them, as the runner's spare
    // checkout's does, or the CLI's first `git status` reads every file again.
    let refreshed = std::process::Command::new("git")
        .args(["-c", "safe.directory=*", "update-index", "-q", "--refresh"])
        .current_dir(&clone)
        .status()
        .expect("git update-index");
    assert!(refreshed.success());
    let since = fake.requests().len();
    let started = Instant::now();
    let mut docker = tokio::process::Command::new("docker");
    docker.args(["run", "--rm", "--network", "host", "--user", "1000:1000"]);
    docker
        .arg("-v")
        .arg(format!("{}:/workspace", clone.display()));
    docker.args(["-w", "/workspace", "-e", "HOME=/tmp"]);
    docker.args(["-e", &format!("ANTHROPIC_BASE_URL={}", fake.url())]);
    docker.args(["-e", &format!("ANTHROPIC_API_KEY={KEY}")]);
    // What the runner gives the CLI besides its model's, so the floor's does the same.
    for (name, value) in Role::new(Executor::ClaudeCode).cli_environment() {
        docker.args(["-e", &format!("{name}={value}")]);
    }
    docker.args([
        AGENTS_IMAGE,
        "claude",
        "-p",
        "--output-format",
        "stream-json",
    ]);
    docker.args(["--verbose", "--model", "claude-sonnet-4-5"]);
    docker.args(["--permission-mode", "bypassPermissions", PROMPT]);
    let mut child = docker
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("docker run");
    let first = first_request(fake, since, Duration::from_secs(120)).await;
    figure.run_floor.took(first - started);
    let _ = child.wait().await;
}

/// When the first request after the `since`-th reached the fake.
async fn first_request(fake: &FakeProvider, since: usize, within: Duration) -> Instant {
    let deadline = Instant::now() + within;
    loop {
        if let Some(request) = fake.requests().get(since) {
            return request.received;
        }
        assert!(
            Instant::now() < deadline,
            "no model request within {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// A fresh Gatehouse whose runner has never seen the repository: its first labelled issue
/// is the cold sample, each one after a warm sample.
async fn gatehouse_starts(
    fake: &FakeProvider,
    shape: &Shape,
    bare: &Path,
    warm_runs: usize,
    sample: usize,
    figure: &mut Figure,
) {
    let repo = format!("{OWNER}/{}", shape.name);
    let data = tempfile::tempdir().expect("a data directory");
    let git = data.path().join("git").join(OWNER);
    std::fs::create_dir_all(&git).expect("the fake GitHub's git directory");
    std::os::unix::fs::symlink(bare, git.join(format!("{}.git", shape.name)))
        .expect("linking the repository");
    let gh = stack(fake, &repo, data).await;
    for run in 0..=warm_runs {
        let number = 1 + run as u64;
        let mut payload = fixture("issues.labeled");
        payload["label"]["name"] = json!("start");
        payload["issue"]["number"] = json!(number);
        payload["sender"]["login"] = json!(OWNER);
        payload["repository"]["name"] = json!(shape.name);
        payload["repository"]["full_name"] = json!(repo);
        let since = fake.requests().len();
        let sent = Instant::now();
        gh.deliver_github("issues", &format!("start-{sample}-{number}"), &payload)
            .await;
        let first = first_request(fake, since, Duration::from_secs(300)).await;
        let took = first - sent;
        if run == 0 {
            figure.cold.took(took);
        } else {
            figure.warm.took(took);
        }
        finished(&gh, &repo, number).await;
        if std::env::var_os("GATEHOUSE_BENCH_LOGS").is_some() {
            print_log(&gh, &repo, number).await;
        }
        spare_ready(&gh.data.path().join("mirrors")).await;
    }
    gh.stop().await;
}

/// Gatehouse on Postgres with GitHub's label trigger on `repo`, its one role Claude Code in
/// the agents image through the gateway.
async fn stack(fake: &FakeProvider, repo: &str, data: tempfile::TempDir) -> Gatehouse {
    let ana = Person {
        id: "ana".into(),
        github: Some(OWNER.into()),
        slack: None,
        discord: None,
        groups: Vec::new(),
    };
    let history = std::env::var("GATEHOUSE_BENCH_HISTORY").unwrap_or_else(|_| "shallow".into());
    let projects = format!(
        "[[projects]]\nname = \"bench\"\nrepositories = [{{ repo = \"{repo}\" }}]\nrun = [\"ana\"]\nhistory = \"{history}\"\n"
    );
    let trigger =
        Trigger::new("start", "start", &[repo.to_owned()], false, false).expect("trigger");
    let docker = DockerSandbox::connect("bench-agent-start")
        .await
        .expect("Docker");
    let profile = agents_profile();
    let role = Role {
        model: Some("claude-sonnet-4-5".into()),
        provider: Some("model".into()),
        sandbox: Some("agents".into()),
        ..Role::new(Executor::ClaudeCode)
    };
    let provider = Provider {
        name: "model".into(),
        kind: ProviderKind::Anthropic,
        base_url: url::Url::parse(fake.url()).expect("the fake's url"),
        key: SecretString::from(KEY),
    };
    Gatehouse::builder_on(TestDb::new(Backend::Postgres).await, data)
        .sop("start", SOP)
        .people(vec![ana])
        .projects(&projects)
        .github(vec![trigger])
        .sandbox(Arc::new(Sandboxes::new(
            ProcessSandbox::default(),
            Ok(docker),
        )))
        .runner(move |options| {
            options.roles = BTreeMap::from([("agent".to_owned(), role)]);
            options.profiles.insert("agents".into(), profile);
            options.providers = vec![provider];
            options.relay = Some(relay_binary());
        })
        .start()
        .await
}

/// Waits until the run the issue started has ended, so the next sample finds the runner
/// idle; panics when it failed.
async fn finished(gh: &Gatehouse, repo: &str, number: u64) {
    for _ in 0..6000 {
        if let Some(run) = newest_run(gh, repo, number).await {
            match run.status.as_str() {
                "succeeded" => return,
                "failed" | "cancelled" => {
                    let attempts = gh.db.store.attempts(run.id).await.expect("store");
                    panic!("the run of {repo}#{number} {}: {attempts:#?}", run.status);
                }
                _ => {}
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the run of {repo}#{number} did not end within five minutes");
}

/// The newest run issue `number` of `repo` started, once there is one.
async fn newest_run(gh: &Gatehouse, repo: &str, number: u64) -> Option<RunRow> {
    let key = format!("github:{repo}#{number}");
    let requirement = gh.db.store.requirement_by_key(&key).await.expect("store")?;
    let runs = gh
        .db
        .store
        .runs_of_requirement(requirement.id)
        .await
        .expect("store");
    runs.into_iter().next()
}

/// The run's own lines (`[gatehouse] …`: checkout, checkpoint), with how long they took.
async fn print_log(gh: &Gatehouse, repo: &str, number: u64) {
    let Some(run) = newest_run(gh, repo, number).await else {
        return;
    };
    let lines = gh.db.store.logs(run.id, 0, 10_000).await.expect("store");
    for line in lines.iter().filter(|l| l.line.starts_with("[gatehouse]")) {
        println!("    {}", line.line);
    }
}

/// Waits (up to two minutes) until the runner's spare checkout of the repository is ready,
/// as it is when runs of a project are not seconds apart.
async fn spare_ready(mirrors: &Path) {
    for _ in 0..1200 {
        let ready = std::fs::read_dir(mirrors)
            .is_ok_and(|entries| entries.flatten().any(|e| e.path().join("ready").is_file()));
        if ready {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!("  (no spare checkout after two minutes)");
}

/// What the bare repository's packs hold.
fn pack_bytes(bare: &Path) -> u64 {
    std::fs::read_dir(bare.join("objects/pack"))
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

fn human(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}
